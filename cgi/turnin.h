/* turnin: what chat completions (h_chat.c) and the Responses API (h_responses.c) both read
 * from a request body for one turn, and the core run request it makes (session.h).
 *   turn_in_free     releases what the struct owns.
 *   turn_in_request  the run request, borrowing from in; the caller adds what only its API
 *                    has (instructions, store, truncation, the asker). */
#ifndef SVC_TURNIN_H
#define SVC_TURNIN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "session.h"

struct turn_in {
    json_object *body;          /* owned */
    json_object *history;       /* owned array of chat messages before the input, or NULL */
    char *input;                /* heap, or NULL when the request only answers tool calls */
    json_object *input_content; /* owned: the input's OpenAI content (chat parts), or NULL */
    json_object *tools;         /* owned: client tools (toolsin.h), or NULL */
    const char *tool_choice;    /* borrowed */
    json_object *results; /* owned: [{call_id, output, param}] answering tool calls, or NULL */
    const char *sid;      /* borrowed (body or request) */
    const char *user, *locale, *channel; /* borrowed */
    bool stream, svc_v2;
    bool has_temperature, has_max_tokens; /* generation settings, core checks the range */
    double temperature;
    int64_t max_tokens;
    int64_t compact_threshold; /* context_management (Responses), or 0 */
};

void turn_in_free(struct turn_in *in);
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

#endif
