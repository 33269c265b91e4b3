/* runstate: the state of one run, private to the run lifecycle (run.c: begin, finish,
 * fail, cancel, repair) and the agent loop (agent_loop.c); everyone else goes through
 * session.h. The loop gets its own struct (the request's settings, the window, the tokens,
 * the trace), never the run: it stores each message through loop->store.
 *   svc_loop_init/free    the loop of a run (run_id and sid borrowed from it) / its memory.
 *   svc_loop_run          the loop over a begun run, from its start event to its final one
 *                         (loop->final): 0 when the model answered, -1 with err otherwise.
 *   svc_loop_final_event  the run's one final event (done, or error with the failure's code
 *                         and message), recorded; borrowed: the lifecycle delivers it.
 *   svc_loop_token_state  the token_state object of the run (prev: the stored one or NULL).
 *   svc_loop_manager      the conversation manager of the window from agent.json (NULL: a
 *                         stateless run, the configured one), its summary put first. */
#ifndef SVC_RUNSTATE_H
#define SVC_RUNSTATE_H

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcp.h"
#include "session.h"
#include "store.h"
#include "turn.h"
#include "util.h"

struct svc_loop {
    const struct svc_config *cfg;
    const char *run_id, *sid; /* the run's, borrowed */
    const char *model;        /* the model's name, borrowed */
    const char *owner;        /* the session's owner (user.h), borrowed, or NULL: the admins' */
    const char *user;         /* who asks (user.h), borrowed, or NULL: the api_token admin */
    double started_mono;
    /* the request's settings (session.h) */
    char *request_system; /* the request's system prompt, heap, or NULL */
    bool no_truncation;   /* the window may not drop messages (SVC_E_CONTEXT_LENGTH) */
    bool has_temperature, has_max_tokens;
    double temperature;
    int64_t max_tokens;
    char *max_tokens_param;    /* heap, or NULL */
    json_object *settings;     /* the request's generation settings (a copy), or NULL */
    json_object *client_tools; /* the request's client tools (ctools.h), or NULL */
    json_object *client_names; /* names whose results come from the client: offered, answered */
    char *tool_choice;         /* heap, or NULL */
    json_object *resume; /* pending toolUses to answer before the first model call (ctools.h) */
    /* the request's remote MCP servers (SPEC 16): spec borrowed from the request, conn a
     * request's own (closed with the loop) or a configured one's, tools a new reference */
    struct svc_loop_mcp {
        json_object *spec;
        const char *label;
        struct svc_mcp_conn *conn;
        bool remote;
        json_object *tools;
    } * mcp;
    size_t nmcp;
    /* the window: effective native messages from removed_message_count on, after the
     * summary of those before when the session's manager summarises (cmgr.h) */
    json_object *msgs;
    int64_t removed;
    bool summarizing;          /* past the window, the oldest messages are summarised */
    json_object *summary;      /* the window's first message when it is the summary, or NULL */
    bool summary_new;          /* this run made it: agent.json takes it at the run's end */
    int64_t compact_threshold; /* the request's context_management (session.h), or 0 */
    /* the tokens */
    json_object *prev_tokens; /* the session's token_state before this run, or NULL */
    int64_t prompt_tokens, completion_tokens, loop_count, tool_steps;
    int64_t cached_tokens, reasoning_tokens;
    json_object *logprobs; /* of the answer's model calls, when asked for, or NULL */
    /* the trace */
    json_object *events;
    int64_t seq;
    json_object *final; /* the final event svc_loop_run recorded (in events), or NULL */
    json_object *tool_trace;
    json_object *tool_calls;   /* OpenAI-shaped tool_calls of the run */
    json_object *client_calls; /* OpenAI tool_calls of client tools the run ended on */
    struct svc_buf content;
    char finish_reason[16];
    /* the run around it: its sink, its cancel flag, where a message is stored (the next
     * id; 0, or -1 with err) before the loop keeps it in the window */
    const struct svc_run_sink *sink;
    volatile sig_atomic_t cancel; /* 1 cancel, 2 timeout */
    int (*store)(void *ctx, json_object *msg, struct svc_err *err);
    void *store_ctx;
};

struct svc_run {
    const struct svc_config *cfg;
    struct svc_sess sess; /* the session handle: store, id, paths, session lock */
    bool stateful;        /* sessions.enabled, and the request does not ask for stateless */
    bool sidecars;        /* provider svc_repository */
    char run_id[64];
    char started_at[SVC_TIME_LEN];
    /* why run_end could not record the run's end, for the caller's error */
    struct svc_err end_err;
    struct svc_turn turn; /* the store's side of the run: locks, counts, what it stored */
    char *owner;          /* the session's owner (user.h), heap, or NULL: the admins' */
    char *content_str;
    struct svc_loop loop;
    bool begun, ended;
    bool interrupt_closed; /* it closes agent.json's Strands interrupt (strands.h) */
    bool memory_due;       /* finished well: memory sync still to do (svc_run_sync_memory) */
    bool memory_defer;     /* the caller syncs memory itself, after publishing the run's end */
    bool memory_synced;    /* memory synced inside the run's end (run.c) */
};

void svc_loop_init(struct svc_loop *loop, const struct svc_config *cfg, const char *run_id,
                   const char *sid, const struct svc_run_request *req);
void svc_loop_free(struct svc_loop *loop);
int svc_loop_run(struct svc_loop *loop, struct svc_err *err);
json_object *svc_loop_final_event(struct svc_loop *loop, const struct svc_err *failure);
json_object *svc_loop_token_state(const struct svc_loop *loop, json_object *prev);
void svc_loop_manager(struct svc_loop *loop, json_object *agent);

#endif
