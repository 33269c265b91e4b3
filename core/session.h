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
    const char *session_id;     /* NULL: a new random id ("sess-<16 hex>") */
    const char *input;          /* the latest user input; non-empty unless input_content */
    json_object *input_content; /* borrowed OpenAI content with images or files (parts.h), or
                                 * NULL: the input is its text */
    json_object *history;       /* borrowed OpenAI messages before the input, or NULL */
    const char *user_id;        /* NULL: "anonymous"; never over an owner's id (user.h) */
    /* Who asks (user.h), NULL: the server.api_token admin. A session it may not see is
     * SVC_E_SESSION_NOT_FOUND (never busy or archived); a new one records it as owner. */
    const struct svc_user *user;
    const char *channel; /* NULL: "api" */
    const char *locale;  /* NULL: "en" */
    /* Borrowed: the request's other metadata keys, set in the session's `metadata` (the
     * summary's, as PATCH sets it) when the run begins, or NULL. */
    json_object *metadata;
    const char *run_id;       /* NULL: generated "run-<16 hex>" */
    const char *instructions; /* NULL, or the Responses API's `instructions` */
    /* Over model.temperature and model.max_tokens for this run (echo ignores them), checked
     * by svc_run_begin: 0..2, 1..2^31-1 (invalid_field naming max_tokens_param or "max_tokens"). */
    bool has_temperature;
    double temperature;
    bool has_max_tokens;
    int64_t max_tokens;
    const char *max_tokens_param;
    /* Client-side function tools (SPEC 12.1, ctools.h): a call of one ends the run with its
     * toolUse pending; tool_results ([{call_id, output, param}]) answer it (input may then be
     * NULL). */
    json_object *client_tools; /* borrowed [{name, description, parameters}], or NULL */
    const char *tool_choice;   /* NULL (auto), "auto", "none", "required" or a tool's name */
    json_object *tool_results; /* borrowed, or NULL; an approval is {call_id, approve, param} */
    /* Remote MCP servers (SPEC 16), checked by the caller: borrowed [{label, url (null: the
     * configured one), headers, allowed (names, null: all), approval ({"default":
     * "always"|"never", "always": [..], "never": [..]}), listed (listed earlier)}], or NULL. */
    json_object *mcp_tools;
    /* SPEC 12.3: `store: false` stores nothing; `truncation: "disabled"` fails with
     * SVC_E_CONTEXT_LENGTH (before storing when it can) where the window would drop messages. */
    bool stateless;
    bool no_truncation;
    /* SPEC 15: chat completions' settings (top_p, stop, seed, ...), checked at the edge, passed
     * to an `openai` model; echo honours stop, response_format and logprobs. Borrowed/NULL. */
    json_object *settings;
    /* SPEC 15: the list ends with an assistant message: the model continues the history */
    bool no_input;
    /* history is stored even on a session with runs (the rest of its transcript: chain.h) */
    bool append_history;
    /* > 0: the session must hold that many messages, else SVC_E_SESSION_BUSY (chain.h) */
    int64_t expect_count;
    /* SPEC 15 compaction: before a model call whose window passes this many tokens (4
     * characters each), its oldest messages are summarised as SPEC 17's summarizing manager
     * does (kept in agent.json only with that manager); 0: never. */
    int64_t compact_threshold;
};
/* Every event as it happens (borrowed), nonzero to cancel (client gone); should_cancel is
 * polled between chunks and tool calls, on_idle each second the model is silent (`: ping`).
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
/* Memory sync (SPEC 8) ends a successful svc_run_execute, unless deferred (by a caller that
 * publishes the run's end first) to svc_run_sync_memory, which runs it at most once. */
void svc_run_defer_memory(struct svc_run *run);
void svc_run_sync_memory(struct svc_run *run);
/* In a parent that forked a runner: free the memory; the child's run lock keeps the run. */
void svc_run_abandon(struct svc_run *run);
/* In a forked runner: record this process as current_run.pid. */
int svc_run_note_runner(struct svc_run *run, struct svc_err *err);
/* The run lock's descriptor (-1 when stateless), and where a runner moved it (dup2). */
int svc_run_lock_fd(const struct svc_run *run);
void svc_run_set_lock_fd(struct svc_run *run, int fd);

/* What a run answers with (borrowed until svc_run_free); content and finish_reason are
 * final once it executed ("" and "stop" before). */
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

/* Repair a stale `running` session (run lock free): status error, last_error and a turn
 * line interrupted, message_count recounted; 1 when it repaired, 0: nothing to do. s is
 * unlocked or exclusively locked, and left so (the exclusive lock taken to repair). */
int svc_run_repair(struct svc_sess *s, struct svc_err *err);
/* The same for a caller without a handle (it opens one). */
int svc_session_repair_stale(const struct svc_config *cfg, const char *sid, struct svc_err *err);

/* An answer's usage as chat completions gives it (SPEC 15): svc_usage_new's, with
 * prompt_tokens_details.cached_tokens and completion_tokens_details.reasoning_tokens. */
json_object *svc_usage_of(const struct svc_run_answer *a);
/* The one shape of a run's usage: {"prompt_tokens", "completion_tokens", "total_tokens"}. */
json_object *svc_usage_new(int64_t prompt, int64_t completion);
/* A svc.v2 event's envelope: type, run_id, seq, session_id, schema_version and timestamp. */
json_object *svc_event_new(const char *run_id, const char *sid, int64_t seq, const char *type);
/* The status a run ends in: "done" (SVC_OK), "cancelled" (cancelled or timed out), "error". */
const char *svc_run_status_of(enum svc_errcode failure);

#endif
