/* turnin: what chat completions (h_chat.c) and the Responses API (h_responses.c) both read
 * from a request body for one turn, and the core run request it makes (session.h).
 *   turn_in_free     releases what the struct owns.
 *   turn_in_request  the run request (in->req, where each API also puts what only it has:
 *                    instructions, store, truncation, the asker), borrowing from in.
 *   turn_in_settings the generation settings of the body (SPEC 15): every field of the body is
 *                    one svc reads, one passed on to the model (into in->req.settings, in chat
 *                    completions' spelling: text.format is response_format, reasoning.effort
 *                    reasoning_effort, ...) or refused; an unknown field is refused too (422
 *                    invalid_field naming it), as is n other than 1. */
#ifndef SVC_TURNIN_H
#define SVC_TURNIN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "session.h"
#include "user.h"

struct turn_in {
    json_object *body; /* owned */
    /* What the run request gets (turn_in_request); owned here: history, input_content,
     * client_tools (toolsin.h), tool_results ([{call_id, output, param}] answering tool
     * calls), settings (turn_in_settings) and metadata; the strings are borrowed from the
     * body. */
    struct svc_run_request req;
    char *input;     /* heap, or NULL when the request only answers tool calls */
    char *continued; /* heap: the session turn_in_continue (or a branch) chose, or NULL */
    bool stream, svc_v2;
};

#define TURN_CHAT 1u
#define TURN_RESP 2u

void turn_in_free(struct turn_in *in);
int turn_in_settings(struct turn_in *in, unsigned api, struct svc_err *err);
/* The request's whole list of chat messages (checked; tool messages with tool_call_id and
 * the param naming them) split as SPEC 15 says: trailing tool messages are results, else a
 * last user message is the input, else (an assistant message ends it) there is no new
 * input and the model continues from the whole list; everything else is history, in order.
 * param names the list in errors. */
int turn_in_split(struct turn_in *in, json_object *msgs, const char *param, struct svc_err *err);
/* A session id field (absent: *out NULL), named in errors as sent (param, else key): a string
 * (one with a NUL inside is an invalid session id) that is a session id. */
int turn_in_sid(json_object *o, const char *key, const char *param, const char **out,
                struct svc_err *err);
/* A Responses body's `conversation` (absent: *out NULL): a session id, or an object with one
 * ("id"), named as sent in errors. */
int turn_in_conversation(json_object *b, const char **out, struct svc_err *err);
/* A string without NUL bytes: 0, or -1 with 422 invalid_field naming param. */
int turn_in_text(json_object *v, const char *param, struct svc_err *err);
/* A history tool call's name and arguments (strings already checked, NULL when absent),
 * param naming the call: a non-empty name; arguments absent, "" (none) or a JSON object's
 * text, as stored (a Strands toolUse input is an object: other text was stored as {}).
 * 0, or -1 with 422 invalid_field naming param.name or param.arguments. */
int turn_in_call(const char *name, const char *args, const char *param, struct svc_err *err);
/* SPEC 15, sessions.continue_stateless: a request naming no session whose history begins
 * with the whole transcript of a session of the asker's continues it (a fork of it where
 * the history leaves it: chain.h): in->req.session_id names it, history keeps the rest.
 * 1 when it did, 0 when not (a failed lookup is logged and makes a new session).
 * turn_in_unfork deletes the fork it made when the turn is refused before it began. */
int turn_in_continue(struct turn_in *in, const struct svc_config *cfg, const struct svc_user *user);
void turn_in_unfork(struct turn_in *in, const struct svc_config *cfg);
/* The Responses input's pieces of SPEC 15 and 17 (h_compact.c): a user message's content
 * list with input_image / input_file parts as chat parts (*out, new reference; NULL when it
 * has none); a compaction item as the user message holding its summary, appended to msgs;
 * context_management's compaction threshold (0 when absent). 0, or -1 with err. */
int resp_media_parts(struct http_req *r, json_object *content, const char *param, json_object **out,
                     struct svc_err *err);
int resp_compaction_in(struct http_req *r, json_object *item, size_t i, json_object *msgs,
                       struct svc_err *err);
int resp_context_management(json_object *body, int64_t *threshold, struct svc_err *err);
/* The compaction item sealing summary for r's caller (new reference), or NULL with err. */
json_object *resp_compaction_item(struct http_req *r, json_object *summary, struct svc_err *err);
struct svc_run_request turn_in_request(const struct turn_in *in);
/* Follow run_id's events (runs.h) from cursor to the run's end, each(ctx, ev) sending each
 * (-1: the client is gone, the run goes on), pinging while the run is quiet. An end event
 * is sent once the run's record says it ended too, so a client that reads the run right
 * after sees it ended. 0, or -1 with err when the events cannot be read. */
int turn_follow(struct http_req *r, const char *run_id, long cursor,
                int (*each)(void *ctx, json_object *ev), void *ctx, struct svc_err *err);
/* An answer's "svc" member in svc.v2: {"schema_version": "2.0", "run_id", "events"} (copied). */
json_object *turn_svc_block(const char *run_id, json_object *events);

#endif
