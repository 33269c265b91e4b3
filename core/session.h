/* session: the run lifecycle of SPEC 3 (/api/chat, /api/chat/runs, jobs, `svc chat`);
 * run.c begins, ends and repairs, agent_loop.c runs the window, model and tools.
 *   svc_run_begin   takes the run lock (SVC_E_SESSION_BUSY), repairs a stale `running`,
 *                   refuses archived sessions, writes the sidecar (running) first, then the
 *                   native files and the user message (docs/FORMAT.md, "Writing rules").
 *   svc_run_execute runs the agent loop, storing each message as produced and emitting
 *                   events, then ends the run (idle, error or cancelled, with its turn line);
 *                   0 when it finished, -1 with err otherwise.
 *   svc_run_free    releases everything; a run begun but never executed ends as failed.
 * With sessions.enabled false a run is stateless. A failed begin leaves the session as it
 * was (a new session's directory may remain, which is not a session). */
#ifndef SVC_SESSION_H
#define SVC_SESSION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "store.h"
#include "user.h"

struct svc_run_request {
    const char *session_id; /* NULL: a new random id ("sess-<16 hex>") */
    const char *input;      /* the latest user input; required, non-empty (unless images or
                             * files are the input) */
    /* borrowed: the input's OpenAI content when it carries images or files (parts.h, checked
     * by the caller), or NULL: the input is its text */
    json_object *input_content;
    json_object *history; /* borrowed OpenAI messages before the input, or NULL */
    const char *user_id;  /* NULL: "anonymous"; never over an owner's id (user.h) */
    /* Who asks (core/user.h), NULL for the admin of server.api_token: a session it may not
     * see is SVC_E_SESSION_NOT_FOUND (never session_busy or session_archived), and a new
     * session records user->id as its owner. */
    const struct svc_user *user;
    const char *channel;      /* NULL: "api" */
    const char *locale;       /* NULL: "en" */
    const char *run_id;       /* NULL: generated "run-<16 hex>" */
    const char *instructions; /* NULL, or the Responses API's `instructions` */
    /* The request's own generation settings, over model.temperature and model.max_tokens
     * for this run (the echo model ignores them). svc_run_begin checks them (temperature
     * 0..2, max_tokens 1..2^31-1; invalid_field naming max_tokens_param, NULL "max_tokens"). */
    bool has_temperature;
    double temperature;
    bool has_max_tokens;
    int64_t max_tokens;
    const char *max_tokens_param;
    /* Client-side function tools (SPEC 12.1, core/ctools.h): offered next to svc's own, a
     * call of one ends the run with its toolUse pending. tool_results answer the pending
     * calls ([{call_id, output, param}]); with them, input may be NULL (no new user text). */
    json_object *client_tools; /* borrowed [{name, description, parameters}], or NULL */
    const char *tool_choice;   /* NULL (auto), "auto", "none", "required" or a tool's name */
    json_object *tool_results; /* borrowed, or NULL; an approval is {call_id, approve, param} */
    /* The Responses API's remote MCP servers (SPEC 16), checked by the caller: borrowed
     * [{label, url (null: the configured server of that name), headers (object), allowed
     * (array of tool names, or null: all), approval ({"default": "always"|"never", "always":
     * [names], "never": [names]}), listed (its tools were listed earlier in the
     * conversation)}], or NULL. */
    json_object *mcp_tools;
    /* SPEC 12.3: `store: false` runs stateless (history the context, nothing stored);
     * `truncation: "disabled"` fails with SVC_E_CONTEXT_LENGTH, before anything is stored
     * when it can, where the window would drop messages. */
    bool stateless;
    bool no_truncation;
    /* SPEC 15: generation settings in chat completions' spelling (top_p, stop, seed,
     * response_format, ...), checked at the edge: passed unchanged to an `openai` model; the
     * echo model honours stop, response_format and logprobs. Borrowed, or NULL. */
    json_object *settings;
    /* SPEC 15: the request's list ends with an assistant message: no input, the model
     * continues from the history (stored first on a new session) */
    bool no_input;
    /* history is stored before the input even on a session that has runs (the rest of a
     * list whose beginning is the session's transcript: chain.h) */
    bool append_history;
    /* > 0: the session must hold that many messages, else SVC_E_SESSION_BUSY (it changed
     * since the request was matched to it, chain.h) */
    int64_t expect_count;
    /* SPEC 15 context_management compaction: before a model call whose window passes this
     * many tokens (4 characters a token), its oldest messages are summarised as section
     * 17's summarizing manager does (kept in agent.json only when the session's manager is
     * the summarizing one); 0: never. */
    int64_t compact_threshold;
};
/* Receives every event as it happens (borrowed; copy to keep). Return nonzero to cancel
 * the run (client gone). should_cancel is polled between model chunks and tool calls;
 * on_idle is called about once a second while the model is silent (for `: ping`).
 * Any member may be NULL. */
struct svc_run_sink {
    int (*on_event)(void *ctx, json_object *event);
    int (*should_cancel)(void *ctx);
    int (*on_idle)(void *ctx);
    void *ctx;
};

struct svc_run;

int svc_run_begin(const struct svc_config *cfg, const struct svc_run_request *req,
                  struct svc_run **out, struct svc_err *err);
int svc_run_execute(struct svc_run *run, const struct svc_run_sink *sink, struct svc_err *err);
void svc_run_free(struct svc_run *run);
/* Memory sync (SPEC 8) runs at the end of svc_run_execute after a successful run. A caller
 * that publishes the run's end elsewhere first (the detached runner's record) calls
 * svc_run_defer_memory before executing and svc_run_sync_memory once it has published;
 * svc_run_sync_memory does nothing when there is nothing to sync or it already ran. */
void svc_run_defer_memory(struct svc_run *run);
void svc_run_sync_memory(struct svc_run *run);
/* In a parent that forked a runner for this run: free the memory without ending the run.
 * The run lock stays held through the child's copy of the descriptor. */
void svc_run_abandon(struct svc_run *run);
/* In a forked runner: record this process as current_run.pid (the process that holds the
 * run lock and executes the run). */
int svc_run_note_runner(struct svc_run *run, struct svc_err *err);
/* The run lock's descriptor (-1 when stateless), for a runner that closes all others. */
int svc_run_lock_fd(const struct svc_run *run);
/* After the runner moved the descriptor (dup2), tell the run where it is now. */
void svc_run_set_lock_fd(struct svc_run *run, int fd);

/* What a run answers with, filled at once by svc_run_answer; borrowed, valid until
 * svc_run_free. content and finish_reason are final once the run executed ("" and "stop"
 * before: fill it again after svc_run_execute). */
struct svc_run_answer {
    const char *run_id, *session_id, *model;
    const char *content;       /* the answer's text */
    const char *finish_reason; /* "stop", "length", "tool_calls", ... */
    int64_t prompt_tokens, completion_tokens;
    int64_t cached_tokens, reasoning_tokens; /* the model server's usage details, or 0 */
    json_object *logprobs;                   /* chat's logprobs.content of the answer, or NULL */
    int64_t last_message_id;                 /* the session's, -1 if none */
    json_object *events;                     /* array of svc.v2 events */
    json_object *tool_calls;   /* OpenAI tool_calls made during the run (maybe empty) */
    json_object *client_calls; /* those of client tools the run ended on, awaiting results */
    json_object *summary;      /* the summary this run made of its window (cmgr.h), or NULL */
};
void svc_run_answer(const struct svc_run *run, struct svc_run_answer *out);

/* Repair a stale `running` session (run lock free): status error, last_error interrupted,
 * message_count recounted, a turn line with error.code interrupted. No-op otherwise.
 * A method of the caller's handle, unlocked or exclusively locked: it takes the exclusive
 * lock on it when there is something to repair, and leaves it as it found it. Returns 1
 * when it repaired, 0 when nothing to do. */
int svc_run_repair(struct svc_sess *s, struct svc_err *err);
/* The same for a caller without a handle (it opens one). */
int svc_session_repair_stale(const struct svc_config *cfg, const char *sid, struct svc_err *err);

/* An answer's usage as chat completions gives it (SPEC 15): svc_usage_new's and OpenAI's
 * prompt_tokens_details.cached_tokens and completion_tokens_details.reasoning_tokens. */
json_object *svc_usage_of(const struct svc_run_answer *a);
/* The one shape of a run's usage: {"prompt_tokens", "completion_tokens", "total_tokens"}. */
json_object *svc_usage_new(int64_t prompt, int64_t completion);
/* A svc.v2 event's envelope: type, run_id, seq, session_id, schema_version and timestamp. */
json_object *svc_event_new(const char *run_id, const char *sid, int64_t seq, const char *type);
/* The status a run ends in: "done" (SVC_OK), "cancelled" (cancelled or timed out), "error". */
const char *svc_run_status_of(enum svc_errcode failure);

#endif
