/* h_responses: OpenAI's Responses API (SPEC 4.1, 12, 15): POST /api/v1/responses (also
 * /api/responses), GET/DELETE /api/v1/responses/{id}, .../input_items, .../cancel and POST
 * .../input_tokens. respin.c reads the input, turnin.c the settings (echoed as OpenAI does);
 * the run goes through the lifecycle /api/chat uses (core/session.h) and is answered as a
 * response object or its event stream, stored through core/responses.h for any worker.
 * Session: `conversation` (an id or {"id"}), else previous_response_id's (a fork up to that
 * response when it is not the newest turn: a branch), else metadata.session_id, session_id,
 * X-Session-Id, else the session whose transcript the input's earlier items equal
 * (turn_in_continue), else a new one: the client sends only the new input. svc's own tool
 * calls are `svc.event` stream events, never function_call items; the request's function
 * tools (SPEC 12.1) end the run as function_call items, answered by function_call_output
 * items. `background: true` (SPEC 12.3) runs detached (runs.h): GET polls its record (with
 * stream=true, replays its events after starting_after), POST .../cancel stops it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "conversation.h"
#include "fork.h"
#include "handlers.h"
#include "idem.h"
#include "jsonx.h"
#include "labels.h"
#include "layout.h"
#include "log.h"
#include "query.h"
#include "respin.h"
#include "responses.h"
#include "runs.h"
#include "session.h"
#include "store.h"
#include "tools.h"
#include "toolsin.h"
#include "turnin.h"
#include "util.h"

struct resp_in {
    struct turn_in t;       /* results: of function_call_output items */
    json_object *items;     /* owned: the input as OpenAI items, for input_items (SPEC 12.3) */
    json_object *prev;      /* owned: the stored response previous_response_id names */
    json_object *branch;    /* owned: the summary of the session forked from it, or NULL */
    const char *prev_id;    /* borrowed */
    const char *conv;       /* borrowed: the conversation the request named, or NULL */
    json_object *metadata;  /* borrowed */
    json_object *mcp;       /* owned: the "type": "mcp" tools as run specs (toolsin.h) */
    json_object *mcp_shown; /* owned: the same as the response echoes them */
    bool store, background;
};

static void resp_in_free(struct resp_in *in)
{
    turn_in_free(&in->t);
    json_object_put(in->prev);
    json_object_put(in->branch);
    json_object_put(in->items);
    json_object_put(in->mcp);
    json_object_put(in->mcp_shown);
}

/* metadata: labels.h's rule (OpenAI's limits), some of whose keys svc reads. */
static int parse_metadata(struct resp_in *in, const char **msid, struct svc_err *err)
{
    json_object *meta = NULL;
    const char *fmt = NULL;
    if (http_field_obj(in->t.body, "metadata", NULL, false, &meta, err) < 0)
        return -1;
    in->metadata = meta;
    if (!meta)
        return 0;
    if (svc_labels_check_metadata(meta, err) < 0 ||
        turn_in_sid(meta, "session_id", "metadata.session_id", msid, err) < 0 ||
        http_field_str(meta, "event_format", "metadata.event_format", false, &fmt, err) < 0 ||
        http_field_str(meta, "locale", "metadata.locale", false, &in->t.req.locale, err) < 0 ||
        http_field_str(meta, "channel", "metadata.channel", false, &in->t.req.channel, err) < 0)
        return -1;
    if (fmt && strcmp(fmt, "openai.v1") != 0 && strcmp(fmt, "svc.v2") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata.event_format",
                            "'metadata.event_format' must be openai.v1 or svc.v2");
    in->t.svc_v2 = fmt && strcmp(fmt, "svc.v2") == 0;
    return 0;
}

/* The servers the previous response had are listed already (SPEC 16: once a conversation). */
static void mcp_listed_before(struct resp_in *in)
{
    json_object *tools = svc_json_arr(in->prev, "tools");
    for (size_t i = 0; in->mcp && i < json_object_array_length(in->mcp); i++) {
        json_object *spec = json_object_array_get_idx(in->mcp, i);
        for (size_t k = 0; tools && k < json_object_array_length(tools); k++) {
            json_object *t = json_object_array_get_idx(tools, k);
            if (strcmp(svc_json_str(t, "type", ""), "mcp") == 0 &&
                strcmp(svc_json_str(t, "server_label", ""), svc_json_str(spec, "label", "")) == 0)
                svc_json_set_bool(spec, "listed", true);
        }
    }
}

/* previous_response_id naming an older turn of its session: the turn runs in a fork holding
 * the messages up to that response's last one (SPEC 12.3); the newest continues in place,
 * and so does a response stored without last_message_id (from before branches). */
static int branch_from_prev(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    int64_t last = svc_json_int(in->prev, "last_message_id", -1), count = 0, next = 0;
    struct svc_sess s = SVC_SESS_INIT;
    if (last < 0 || !in->t.req.session_id ||
        svc_sess_open(r->cfg, in->t.req.session_id, &s, err) != 0)
        return last < 0 || !in->t.req.session_id ? 0 : -1;
    int64_t *ids = NULL;
    int rc = svc_sess_message_count(&s, -1, &count, &next, &ids, err);
    svc_sess_close(&s);
    free(ids);
    if (rc != 0 || next - 1 <= last)
        return rc != 0 ? -1 : 0;
    struct svc_fork_req f = {
        .session_id = in->t.req.session_id, .has_message_id = true, .message_id = last};
    if (svc_session_fork(r->cfg, &f, &in->branch, err) != 0)
        return -1;
    in->t.req.session_id = svc_json_str(in->branch, "session_id", NULL);
    in->t.continued = svc_xstrdup(in->t.req.session_id); /* turn_in_unfork's if refused */
    return 0;
}

static int parse_responses(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    memset(in, 0, sizeof *in);
    if (http_body_json(r, false, &in->t.body, err) < 0)
        return -1;
    json_object *b = in->t.body, *input = json_object_object_get(b, "input");
    const char *model = NULL, *conv = NULL, *msid = NULL, *bsid = NULL, *trunc = NULL;
    if (http_field_str(b, "model", NULL, false, &model, err) < 0 ||
        http_field_str(b, "instructions", NULL, false, &in->t.req.instructions, err) < 0 ||
        http_field_str(b, "user", NULL, false, &in->t.req.user_id, err) < 0 ||
        http_field_bool(b, "stream", NULL, false, &in->t.stream, err) < 0 ||
        http_field_bool(b, "store", NULL, true, &in->store, err) < 0 ||
        http_field_bool(b, "background", NULL, false, &in->background, err) < 0 ||
        http_field_str(b, "previous_response_id", NULL, false, &in->prev_id, err) < 0 ||
        http_field_str(b, "session_id", NULL, false, &bsid, err) < 0 ||
        http_field_number_opt(b, "temperature", NULL, &in->t.req.has_temperature,
                              &in->t.req.temperature, err) < 0 ||
        http_field_int_opt(b, "max_output_tokens", NULL, &in->t.req.has_max_tokens,
                           &in->t.req.max_tokens, err) < 0 ||
        turn_in_conversation(b, &conv, err) < 0 || parse_metadata(in, &msid, err) < 0 ||
        toolsin_parse(b, false, &in->t.req.client_tools, &in->t.req.tool_choice, err) < 0 ||
        toolsin_mcp(r->cfg, &r->user, b, &in->mcp, &in->mcp_shown, err) < 0 ||
        turn_in_settings(&in->t, TURN_RESP, err) < 0)
        return -1;
    in->conv = conv;
    if (respin_input(r, &in->t, input, err) < 0 ||
        http_field_str(b, "truncation", NULL, false, &trunc, err) < 0)
        return -1;
    if (trunc && strcmp(trunc, "auto") != 0 && strcmp(trunc, "disabled") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "truncation",
                            "'truncation' must be auto or disabled"); /* SPEC 12.3 */
    in->t.req.no_truncation = trunc && strcmp(trunc, "disabled") == 0;
    if (resp_context_management(in->t.body, &in->t.req.compact_threshold, err) < 0)
        return -1;
    in->items = respin_items(input);
    if (!in->store && (conv || in->prev_id))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "store",
                            "'store': false runs without a session: send the whole input instead "
                            "of '%s'",
                            conv ? "conversation" : "previous_response_id");
    if (in->background && (!in->store || in->t.req.client_tools || in->mcp))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "background",
                            "'background': true is stored and polled: it takes neither "
                            "'store': false nor client or mcp 'tools'");
    if (in->background && !r->cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED,
                           "background responses need sessions.enabled: true");
    if (conv && in->prev_id)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "conversation",
                            "give either 'conversation' or 'previous_response_id', not both");
    if ((conv || in->prev_id) && !r->cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED,
                           "conversations need sessions.enabled: true");
    if (in->prev_id) {
        if (access_response(r, in->prev_id, &in->prev, err) < 0) {
            if (err->code == SVC_E_RESPONSE_NOT_FOUND)
                svc_err_setp(err, SVC_E_RESPONSE_NOT_FOUND, "previous_response_id",
                             "previous response %.64s not found", in->prev_id);
            return -1;
        }
        in->t.req.session_id = svc_json_str(in->prev, "session_id", NULL);
        mcp_listed_before(in);
    }
    const char *const named[] = {conv, msid, bsid};
    for (size_t k = 0; !in->t.req.session_id && k < 3; k++)
        in->t.req.session_id = named[k];
    if (!in->t.req.session_id && http_session_header(r, &in->t.req.session_id, err) < 0)
        return -1;
    if (!r->cfg->sessions.enabled)
        in->store = false; /* nothing is kept: nothing to find again */
    in->t.req.stateless = !in->store;
    in->t.req.max_tokens_param = "max_output_tokens";
    in->t.req.user = &r->user;
    in->t.req.mcp_tools = in->mcp;
    return 0;
}

/* ---- rendering ---- */

struct resp_ctx {
    struct http_req *r; /* first: the sink's http_sink_gone and http_sink_idle read it */
    const struct resp_in *in;
    struct svc_run *run;
    char id[SVC_RESPONSE_ID_LEN];
    char msg_id[48];
    int64_t created_at;
    int64_t seq;       /* the next event's sequence_number */
    int64_t from;      /* events numbered below it are not sent (a resumed stream) */
    bool msg_open;     /* streaming: the message item was announced */
    int64_t msg_index; /* its output index */
    int64_t next;      /* streaming: the next output index */
};
_Static_assert(offsetof(struct resp_ctx, r) == 0, "the sink's helpers read r first");

static json_object *usage_of(int64_t p, int64_t c, int64_t cached, int64_t reasoning)
{
    json_object *u = json_object_new_object(), *idet = json_object_new_object();
    json_object *odet = json_object_new_object();
    svc_json_set_int(idet, "cached_tokens", cached);
    svc_json_set_int(odet, "reasoning_tokens", reasoning);
    svc_json_set_int(u, "input_tokens", p);
    svc_json_set(u, "input_tokens_details", idet);
    svc_json_set_int(u, "output_tokens", c);
    svc_json_set(u, "output_tokens_details", odet);
    svc_json_set_int(u, "total_tokens", p + c);
    return u;
}

static json_object *text_part(const char *text)
{
    json_object *p = svc_json_new_obj("type", "output_text", "text", text, NULL);
    svc_json_set(p, "annotations", json_object_new_array());
    return p;
}

/* The assistant message item msg_id (text NULL: no content yet; incomplete: a failed run's). */
static json_object *message_item(const char *msg_id, const char *text, const char *status)
{
    json_object *m = svc_json_new_obj("id", msg_id, "type", "message", "status", status, "role",
                                      "assistant", NULL);
    json_object *content = json_object_new_array();
    if (text)
        json_object_array_add(content, text_part(text));
    svc_json_set(m, "content", content);
    return m;
}

/* The function_call item of the response's k-th client tool call: its id fc_<the response's
 * hex>_<k> is the same streamed and stored, and an item_reference to it finds the response. */
static json_object *function_call_out(const struct resp_ctx *c, json_object *tc, size_t k)
{
    json_object *fn = svc_json_obj(tc, "function");
    char id[64];
    snprintf(id, sizeof id, "fc_%s_%zu", c->id + 5, k);
    return svc_json_new_obj("id", id, "type", "function_call", "status", "completed", "call_id",
                            svc_json_str(tc, "id", ""), "name", svc_json_str(fn, "name", ""),
                            "arguments", svc_json_str(fn, "arguments", "{}"), NULL);
}

/* Whether the output has a message item: text came, or nothing else did (SPEC 15: a
 * streamed turn has the same items as a plain one, no empty message before its calls). */
static bool has_message(const struct svc_run_answer *a, const struct svc_err *failure)
{
    bool text = a->content && *a->content;
    size_t nc = failure || !a->client_calls ? 0 : json_object_array_length(a->client_calls);
    return failure ? text : text || nc == 0;
}

/* The label of the request's MCP server a tool name "<label>__<tool>" belongs to, or NULL. */
static const char *mcp_label_of(const struct resp_ctx *c, const char *name, const char **tool)
{
    const char *sep = strstr(name, "__");
    for (size_t i = 0; sep && c->in->mcp && i < json_object_array_length(c->in->mcp); i++) {
        const char *label = svc_json_str(json_object_array_get_idx(c->in->mcp, i), "label", "");
        if (strlen(label) == (size_t)(sep - name) && strncmp(label, name, strlen(label)) == 0)
            return *tool = sep + 2, label;
    }
    return NULL;
}

/* The mcp_approval_request item of a call awaiting approval (SPEC 16). */
static json_object *approval_out(json_object *tc, const char *label, const char *tool)
{
    char id[160];
    snprintf(id, sizeof id, "mcpr_%s", svc_json_str(tc, "id", ""));
    return svc_json_new_obj("id", id, "type", "mcp_approval_request", "arguments",
                            svc_json_str(svc_json_obj(tc, "function"), "arguments", "{}"), "name",
                            tool, "server_label", label, NULL);
}

/* The mcp_call item of a call's tool_result event (the arguments from its tool_start). */
static json_object *mcp_call_out(json_object *events, json_object *ev, const char *label,
                                 const char *tool)
{
    const char *id = svc_json_str(ev, "call_id", "");
    char mid[160], rid[160];
    snprintf(mid, sizeof mid, "mcp_%s", id);
    snprintf(rid, sizeof rid, "mcpr_%s", id);
    json_object *o = svc_json_new_obj("id", mid, "type", "mcp_call", "approval_request_id",
                                      svc_json_bool(ev, "approved", false) ? rid : NULL, NULL);
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *st = json_object_array_get_idx(events, i);
        if (strcmp(svc_json_str(st, "type", ""), "tool_start") == 0 &&
            strcmp(svc_json_str(st, "call_id", ""), id) == 0) {
            char *args = svc_json_dump_compact(svc_json_obj(st, "arguments"));
            svc_json_set_str(o, "arguments", args);
            free(args);
        }
    }
    svc_json_set_str(o, "error", svc_json_str(ev, "error", NULL));
    svc_json_set_str(o, "name", tool);
    svc_json_set_str(o, "output", svc_json_str(ev, "content", NULL));
    svc_json_set_str(o, "server_label", label);
    svc_json_set_str(o, "status", svc_json_bool(ev, "ok", false) ? "completed" : "failed");
    return o;
}

/* The mcp_list_tools or mcp_call item a run event stands for (SPEC 16), or NULL. */
static json_object *mcp_event_item(const struct resp_ctx *c, json_object *events, json_object *ev)
{
    const char *type = svc_json_str(ev, "type", ""), *tool = NULL, *label;
    if (!c->in->mcp)
        return NULL;
    if (strcmp(type, "mcp_list_tools") == 0) {
        char id[160];
        const char *server = svc_json_str(ev, "server_label", "");
        snprintf(id, sizeof id, "mcpl_%s_%s", c->id + 5, server);
        json_object *o =
            svc_json_new_obj("id", id, "type", "mcp_list_tools", "server_label", server, NULL);
        svc_json_set(o, "tools", json_object_get(svc_json_arr(ev, "tools")));
        svc_json_set_str(o, "error", svc_json_str(ev, "error", NULL));
        return o;
    }
    if (strcmp(type, "tool_result") == 0 &&
        (label = mcp_label_of(c, svc_json_str(ev, "tool", ""), &tool)))
        return mcp_call_out(events, ev, label, tool);
    return NULL;
}

/* The output of an ended run in the order things happened, as a stream announces them (SPEC
 * 15): the MCP items, the message where its first text came, then the calls awaiting answers. */
static json_object *output_items(const struct resp_ctx *c, const struct svc_run_answer *a,
                                 const char *status, const struct svc_err *failure)
{
    json_object *output = json_object_new_array(), *m = NULL;
    json_object *calls = failure ? NULL : a->client_calls;
    size_t nc = calls ? json_object_array_length(calls) : 0;
    /* the window this run compacted (context_management, SPEC 15) */
    json_object *compacted = a->summary && c->in->t.req.compact_threshold > 0
                                 ? resp_compaction_item(c->r, a->summary, NULL)
                                 : NULL;
    if (compacted)
        json_object_array_add(output, compacted);
    if (has_message(a, failure)) {
        m = message_item(c->msg_id, a->content, failure ? "incomplete" : status);
        json_object *part = json_object_array_get_idx(svc_json_arr(m, "content"), 0);
        svc_json_set(part, "logprobs",
                     a->logprobs ? svc_json_copy(a->logprobs) : json_object_new_array());
    }
    for (size_t i = 0; i < json_object_array_length(a->events); i++) {
        json_object *ev = json_object_array_get_idx(a->events, i), *item;
        if (m && strcmp(svc_json_str(ev, "type", ""), "delta") == 0) {
            json_object_array_add(output, m);
            m = NULL;
        } else if ((item = mcp_event_item(c, a->events, ev))) {
            json_object_array_add(output, item);
        }
    }
    if (m)
        json_object_array_add(output, m);
    for (size_t i = 0; i < nc; i++) { /* a function_call item, or an mcp_approval_request */
        json_object *tc = json_object_array_get_idx(calls, i);
        const char *tool = NULL, *name = svc_json_str(svc_json_obj(tc, "function"), "name", "");
        const char *label = mcp_label_of(c, name, &tool);
        json_object_array_add(output,
                              label ? approval_out(tc, label, tool) : function_call_out(c, tc, i));
    }
    return output;
}

/* The settings echoed as OpenAI does (SPEC 15): the request's, else OpenAI's defaults. */
static void echo_settings(json_object *o, json_object *b)
{
    static const char *const keys[] = {
        "top_p",         "top_logprobs", "service_tier", "prompt_cache_key", "safety_identifier",
        "max_tool_calls"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        svc_json_set(o, keys[i], json_object_get(json_object_object_get(b, keys[i])));
    /* a boolean when given (toolsin_parse checked it) */
    svc_json_set_bool(o, "parallel_tool_calls", svc_json_bool(b, "parallel_tool_calls", true));
    svc_json_set(o, "reasoning",
                 svc_json_new_obj("effort",
                                  svc_json_str(svc_json_obj(b, "reasoning"), "effort", NULL),
                                  "summary", NULL, NULL));
    json_object *text = json_object_new_object();
    json_object *fmt = svc_json_copy(svc_json_obj(svc_json_obj(b, "text"), "format"));
    svc_json_set(text, "format", fmt ? fmt : svc_json_new_obj("type", "text", NULL));
    svc_json_set_str(text, "verbosity",
                     svc_json_str(svc_json_obj(b, "text"), "verbosity", "medium"));
    svc_json_set(o, "text", text);
}

/* The members of every response object, output empty and error and usage null; bg: a
 * background response's, without the members of a run svc makes itself. */
static json_object *object_of(const struct resp_in *in, const char *id, int64_t created_at,
                              const char *model, const char *sid, const char *run_id, bool bg)
{
    json_object *o = svc_json_new_obj("id", id, "object", "response", NULL);
    svc_json_set_int(o, "created_at", created_at);
    svc_json_set_str(o, "status", "in_progress");
    if (bg)
        svc_json_set_bool(o, "background", true);
    svc_json_set(o, "error", NULL);
    svc_json_set(o, "incomplete_details", NULL);
    svc_json_set_str(o, "instructions", in->t.req.instructions);
    if (!bg)
        svc_json_set(o, "max_output_tokens",
                     in->t.req.has_max_tokens ? json_object_new_int64(in->t.req.max_tokens) : NULL);
    svc_json_set_str(o, "model", model);
    svc_json_set(o, "output", json_object_new_array());
    svc_json_set_str(o, "previous_response_id", in->prev_id);
    svc_json_set_bool(o, "store", in->store);
    if (!bg)
        svc_json_set(o, "temperature",
                     in->t.req.has_temperature ? json_object_new_double(in->t.req.temperature)
                                               : NULL);
    echo_settings(o, in->t.body);
    if (!bg) {
        svc_json_set_str(o, "tool_choice", in->t.req.tool_choice ? in->t.req.tool_choice : "auto");
        json_object *tools = json_object_new_array(), *fns = in->t.req.client_tools;
        for (size_t i = 0; fns && i < json_object_array_length(fns); i++) {
            json_object *t = svc_json_copy(json_object_array_get_idx(fns, i));
            svc_json_set_str(t, "type", "function"); /* as the Responses API shows them */
            json_object_array_add(tools, t);
        }
        for (size_t i = 0; in->mcp_shown && i < json_object_array_length(in->mcp_shown); i++)
            json_object_array_add(tools,
                                  json_object_get(json_object_array_get_idx(in->mcp_shown, i)));
        svc_json_set(o, "tools", tools);
    }
    svc_json_set_str(o, "truncation", in->t.req.no_truncation ? "disabled" : "auto");
    svc_json_set(o, "usage", NULL);
    svc_json_set_str(o, "user", in->t.req.user_id); /* and conversation: null unless named */
    svc_json_set(o, "metadata",
                 in->metadata ? svc_json_copy(in->metadata) : json_object_new_object());
    svc_json_set(o, "conversation", in->conv ? svc_json_new_obj("id", sid, NULL) : NULL);
    svc_json_set_str(o, "session_id", sid);
    svc_json_set_str(o, "run_id", run_id);
    return o;
}

/* The response object: in_progress before the run ended (no output, no usage yet), then
 * completed, incomplete at the token limit (SPEC 15) or failed (failure set; output holds
 * what was produced, if anything). */
static json_object *response_object(const struct resp_ctx *c, bool ended,
                                    const struct svc_err *failure)
{
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    json_object *o = object_of(c->in, c->id, c->created_at, a.model, a.session_id, a.run_id, false);
    if (!ended)
        return o;
    const char *status = failure                                  ? "failed"
                         : strcmp(a.finish_reason, "length") == 0 ? "incomplete"
                                                                  : "completed";
    svc_json_set_str(o, "status", status);
    if (failure)
        svc_json_set(o, "error",
                     svc_json_new_obj("code", svc_err_name(failure->code), "message",
                                      failure->message, NULL));
    if (strcmp(status, "incomplete") == 0)
        svc_json_set(o, "incomplete_details",
                     svc_json_new_obj("reason", "max_output_tokens", NULL));
    svc_json_set(o, "output", output_items(c, &a, status, failure));
    svc_json_set(
        o, "usage",
        usage_of(a.prompt_tokens, a.completion_tokens, a.cached_tokens, a.reasoning_tokens));
    if (c->in->store && c->r->cfg->sessions.enabled) /* where a branch from it forks */
        svc_json_set_int(o, "last_message_id", a.last_message_id);
    if (c->in->t.svc_v2)
        svc_json_set(o, "svc", turn_svc_block(a.run_id, a.events));
    return o;
}

/* The ended run's response stored (store true) and the run recorded; a store that fails
 * turns `store` false in the answer; failures are logged, never fatal (the turn is kept). */
static void keep_response(struct resp_ctx *c, json_object *resp, const struct svc_err *failure)
{
    struct svc_err e;
    const struct svc_config *cfg = c->r->cfg;
    json_object *kept = c->in->store ? svc_json_copy(resp) : NULL;
    if (kept)
        svc_json_set(kept, "input_items", json_object_get(c->in->items));
    if (kept && svc_responses_put(cfg, kept, &e) < 0) {
        svc_logf("response %s could not be stored: %s", c->id, e.message);
        svc_json_set_bool(resp, "store", false);
    }
    json_object_put(kept);
    /* a completed, stored response is what a retry with the same key gets (responses.h) */
    if (!failure && c->in->store && svc_json_bool(resp, "store", false) && c->r->idempotency_key &&
        svc_responses_put_key(cfg, c->r->idempotency_key, c->id, &e) < 0)
        svc_logf("response %s: idempotency key not recorded: %s", c->id, e.message);
    if (c->in->store) /* store false touches nothing: no run record either */
        svc_idem_record_sync(cfg, c->run, NULL, failure); /* keyed by response, not by run */
}

static int resp_plain(struct resp_ctx *c, struct svc_err *err)
{
    int rc = svc_run_execute(c->run, NULL, err);
    json_object *resp = response_object(c, true, rc == 0 ? NULL : err);
    keep_response(c, resp, rc == 0 ? NULL : err);
    if (rc == 0)
        http_send_json(c->r, 200, resp);
    json_object_put(resp);
    return rc; /* a failure is answered as the error object, with its status */
}

/* One stream event: "type" and "sequence_number" first, then the fields of o (consumed). */
static int emit(struct resp_ctx *c, const char *type, json_object *o)
{
    int64_t seq = c->seq++;
    if (seq < c->from) {
        json_object_put(o);
        return 0;
    }
    json_object *ev = svc_json_new_obj("type", type, NULL);
    svc_json_set_int(ev, "sequence_number", seq);
    json_object_object_foreach(o, k, v) svc_json_set(ev, k, json_object_get(v));
    json_object_put(o);
    int rc = http_sse_event(c->r, type, ev);
    json_object_put(ev);
    return rc;
}

/* o with key set to v (both taken): the body of an event. */
static json_object *with(json_object *o, const char *key, json_object *v)
{
    svc_json_set(o, key, v);
    return o;
}

static json_object *with_response(json_object *resp)
{
    return with(json_object_new_object(), "response", resp);
}

/* {"output_index": i}, an output item's position. */
static json_object *at_index(int64_t i)
{
    json_object *o = json_object_new_object();
    svc_json_set_int(o, "output_index", i);
    return o;
}

/* The position fields of the text part: item_id, output_index, content_index. */
static json_object *at_part(const struct resp_ctx *c)
{
    json_object *o = svc_json_new_obj("item_id", c->msg_id, NULL);
    svc_json_set_int(o, "output_index", c->msg_index);
    svc_json_set_int(o, "content_index", 0);
    return o;
}

/* A stream's created and in_progress events with pending (the response, taken). */
static int emit_opening(struct resp_ctx *c, json_object *pending)
{
    if (emit(c, "response.created", with_response(json_object_get(pending))) < 0) {
        json_object_put(pending);
        return -1;
    }
    return emit(c, "response.in_progress", with_response(pending));
}

/* The message item announced (output_item.added, content_part.added) before its first
 * text: a turn with no text has none (SPEC 15). 0, or -1 when the client is gone. */
static int open_message(struct resp_ctx *c)
{
    if (c->msg_open)
        return 0;
    c->msg_open = true;
    c->msg_index = c->next++;
    if (emit(c, "response.output_item.added",
             with(at_index(c->msg_index), "item", message_item(c->msg_id, NULL, "in_progress"))) <
        0)
        return -1;
    return emit(c, "response.content_part.added", with(at_part(c), "part", text_part("")));
}

/* A delta of the message's text, the message announced first if it was not. */
static int emit_delta(struct resp_ctx *c, const char *text)
{
    if (open_message(c) < 0)
        return -1;
    json_object *o = at_part(c);
    svc_json_set_str(o, "delta", text);
    svc_json_set(o, "logprobs", json_object_new_array());
    return emit(c, "response.output_text.delta", o);
}

/* The message item's closing events with item's text and logprobs (NULL: an empty text). */
static int emit_closing(struct resp_ctx *c, json_object *item)
{
    json_object *m = item ? json_object_get(item) : message_item(c->msg_id, "", "completed");
    json_object *part = json_object_array_get_idx(svc_json_arr(m, "content"), 0);
    json_object *lp = svc_json_arr(part, "logprobs"), *done = at_part(c);
    svc_json_set_str(done, "text", svc_json_str(part, "text", ""));
    svc_json_set(done, "logprobs", lp ? json_object_get(lp) : json_object_new_array());
    if (emit(c, "response.output_text.done", done) < 0 ||
        emit(c, "response.content_part.done", with(at_part(c), "part", json_object_get(part))) <
            0) {
        json_object_put(m);
        return -1;
    }
    return emit(c, "response.output_item.done", with(at_index(c->msg_index), "item", m));
}

/* An item whole when it appears (an MCP one, consumed) at index i: added, then done. */
static int emit_item(struct resp_ctx *c, int64_t i, json_object *item)
{
    json_object *added = with(at_index(i), "item", json_object_get(item));
    if (emit(c, "response.output_item.added", added) < 0) {
        json_object_put(item);
        return -1;
    }
    return emit(c, "response.output_item.done", with(at_index(i), "item", item));
}

static int on_event(void *ctx, json_object *ev)
{
    struct resp_ctx *c = ctx;
    if (c->r->client_gone)
        return 1;
    const char *type = svc_json_str(ev, "type", "");
    if (strcmp(type, "delta") == 0)
        return emit_delta(c, svc_json_str(ev, "text", "")) < 0 ? 1 : 0;
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    json_object *item = mcp_event_item(c, a.events, ev);
    if (item && emit_item(c, c->next++, item) < 0)
        return 1;
    bool tool = strcmp(type, "tool_start") == 0 || strcmp(type, "tool_result") == 0;
    bool end = strcmp(type, "done") == 0 || strcmp(type, "error") == 0;
    if (!tool && (!c->in->t.svc_v2 || end))
        return 0; /* the end is rendered after the run */
    /* svc's own event (tools always, the rest in svc.v2): a type clients skip */
    json_object *o = with(json_object_new_object(), "svc_event", json_object_get(ev));
    return emit(c, "svc.event", o) < 0 ? 1 : 0;
}

/* A function call's arguments event: item's output index, its id, and key its arguments. */
static json_object *args_event(size_t i, json_object *item, const char *key)
{
    json_object *o = at_index((int64_t)i);
    svc_json_set_str(o, "item_id", svc_json_str(item, "id", ""));
    svc_json_set_str(o, key, svc_json_str(item, "arguments", "{}"));
    return o;
}

/* The output items a stream has not announced, at their index: the calls the run ended on
 * (function_call: four events, the arguments in one delta) and, replaying (all), the MCP items. */
static int emit_calls(struct resp_ctx *c, json_object *resp, bool all)
{
    json_object *out = svc_json_arr(resp, "output");
    for (size_t i = 0; i < json_object_array_length(out); i++) {
        json_object *item = json_object_array_get_idx(out, i);
        const char *type = svc_json_str(item, "type", "");
        if (strcmp(type, "mcp_approval_request") == 0 ||
            (all && strcmp(type, "message") != 0 && strcmp(type, "function_call") != 0)) {
            if (emit_item(c, (int64_t)i, json_object_get(item)) < 0)
                return -1;
            continue;
        }
        if (strcmp(type, "function_call") != 0)
            continue;
        json_object *added = svc_json_copy(item);
        svc_json_set_str(added, "status", "in_progress");
        svc_json_set_str(added, "arguments", "");
        if (emit(c, "response.output_item.added", with(at_index((int64_t)i), "item", added)) < 0 ||
            emit(c, "response.function_call_arguments.delta", args_event(i, item, "delta")) < 0 ||
            emit(c, "response.function_call_arguments.done", args_event(i, item, "arguments")) <
                0 ||
            emit(c, "response.output_item.done",
                 with(at_index((int64_t)i), "item", json_object_get(item))) < 0)
            return -1;
    }
    return 0;
}

/* The rest of a stream once the run ended: the message item (text, if not NULL, in one delta),
 * the calls, then response.completed (or .incomplete) with resp, which is consumed. */
static void emit_end(struct resp_ctx *c, json_object *resp, bool msg, const char *text, bool all)
{
    json_object *out = svc_json_arr(resp, "output");
    bool ok =
        !msg ||
        (open_message(c) == 0 && (!text || emit_delta(c, text) == 0) &&
         emit_closing(c, out ? json_object_array_get_idx(out, (size_t)c->msg_index) : NULL) == 0);
    if (ok && emit_calls(c, resp, all) == 0)
        emit(c,
             strcmp(svc_json_str(resp, "status", ""), "incomplete") == 0 ? "response.incomplete"
                                                                         : "response.completed",
             with_response(resp));
    else
        json_object_put(resp);
}

static int resp_stream(struct resp_ctx *c)
{
    struct http_req *r = c->r;
    if (http_sse_begin(r) < 0 || emit_opening(c, response_object(c, false, NULL)) < 0)
        return 0; /* client gone: svc_run_free ends the run */
    struct svc_run_sink sink = {on_event, http_sink_gone, http_sink_idle, c};
    struct svc_err ferr;
    svc_err_clear(&ferr);
    int rc = svc_run_execute(c->run, &sink, &ferr);
    const struct svc_err *failure = rc == 0 ? NULL : &ferr;
    json_object *resp = response_object(c, true, failure);
    keep_response(c, resp, failure); /* what response.completed carries */
    if (r->client_gone) {
        json_object_put(resp);
        return 0;
    }
    if (rc != 0) {
        /* response.failed, then the error event (which ends the stream for every client) */
        emit(c, "response.failed", with_response(resp));
        json_object *e = http_error_object(&ferr);
        json_object *o = svc_json_new_obj("code", svc_err_name(ferr.code), "message", ferr.message,
                                          "param", NULL, NULL);
        svc_json_set(o, "error", json_object_get(svc_json_obj(e, "error")));
        json_object_put(e);
        emit(c, "error", o);
        return 0;
    }
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    emit_end(c, resp, has_message(&a, NULL), NULL, false);
    return 0;
}

/* Answer again with a stored response (Idempotency-Key seen before): the object as it was,
 * or, streamed, the events of a run that produced its text in one delta and its calls. */
static int resp_replay(struct http_req *r, const struct resp_in *in, json_object *stored)
{
    http_set_session(r, svc_json_str(stored, "session_id", NULL), false);
    if (!in->t.stream)
        return http_reply(r, 200, stored);
    struct resp_ctx c = {.r = r, .in = in};
    json_object *out = svc_json_arr(stored, "output"), *first = NULL;
    for (size_t i = 0; out && !first && i < json_object_array_length(out); i++)
        if (strcmp(svc_json_str(json_object_array_get_idx(out, i), "type", ""), "message") == 0)
            first = json_object_array_get_idx(out, (size_t)(c.next = (int64_t)i));
    snprintf(c.msg_id, sizeof c.msg_id, "%s", svc_json_str(first, "id", ""));
    if (http_sse_begin(r) < 0) {
        json_object_put(stored);
        return 0;
    }
    json_object *pending = svc_json_copy(stored);
    svc_json_set_str(pending, "status", "in_progress");
    svc_json_set(pending, "output", json_object_new_array());
    svc_json_set(pending, "usage", NULL);
    json_object *parts = svc_json_arr(first, "content");
    json_object *part = parts ? json_object_array_get_idx(parts, 0) : NULL;
    if (emit_opening(&c, pending) == 0)
        emit_end(&c, stored, first != NULL, svc_json_str(part, "text", ""), true);
    else
        json_object_put(stored);
    return 0;
}

/* ---- background responses (SPEC 12.3): an asynchronous run (runs.h) polled by GET ---- */

/* A background response as its run's record says now: status, output, usage, error. */
static void background_refresh(struct http_req *r, json_object *o)
{
    json_object *rec = NULL;
    if (!svc_json_bool(o, "background", false) ||
        svc_runs_get(r->cfg, svc_json_str(o, "run_id", ""), &rec, NULL) < 0)
        return;
    const char *st = svc_json_str(rec, "status", "running");
    static const char *const map[][2] = {
        {"done", "completed"}, {"cancelled", "cancelled"}, {"error", "failed"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(st, map[i][0]) == 0)
            svc_json_set_str(o, "status", map[i][1]);
    if (strcmp(st, "done") == 0) {
        char msg[48];
        snprintf(msg, sizeof msg, "msg_%s", svc_json_str(o, "id", "resp_") + 5);
        json_object *out = json_object_new_array();
        json_object_array_add(out,
                              message_item(msg, svc_json_str(rec, "content", ""), "completed"));
        svc_json_set(o, "output", out);
        json_object *u = svc_json_obj(rec, "usage");
        svc_json_set(
            o, "usage",
            usage_of(
                svc_json_int(u, "prompt_tokens", 0), svc_json_int(u, "completion_tokens", 0),
                svc_json_int(svc_json_obj(u, "prompt_tokens_details"), "cached_tokens", 0),
                svc_json_int(svc_json_obj(u, "completion_tokens_details"), "reasoning_tokens", 0)));
    }
    json_object *e = svc_json_obj(rec, "error");
    if (strcmp(st, "error") == 0 && e)
        svc_json_set(o, "error",
                     svc_json_new_obj("code", svc_json_str(e, "code", "internal_error"), "message",
                                      svc_json_str(e, "message", ""), NULL));
    json_object_put(rec);
}

/* ---- a background response's event stream, resumable (SPEC 12.3) ----
 * Numbered from the run's events so that every replay numbers alike: 0..3 open the message,
 * run event seq k is 3 + k (output_text.delta or svc.event), its done closes with 3 + k..6 + k
 * (ending with response.completed) and its error is response.failed at 3 + k. */

struct bg_stream {
    struct resp_ctx c; /* msg_id, the numbering (from the run's events) and from */
    json_object *resp; /* the stored object, refreshed at the end */
};

/* One run event (turn_follow's each); its done closes the message and the response, its
 * error fails the response. 0, or -1 when the client is gone. */
static int bg_event(void *ctx, json_object *ev)
{
    struct bg_stream *b = ctx;
    const char *type = svc_json_str(ev, "type", "");
    bool done = strcmp(type, "done") == 0, error = strcmp(type, "error") == 0;
    b->c.seq = 3 + svc_json_int(ev, "seq", 0);
    if (done || error)
        background_refresh(b->c.r, b->resp);
    if (error)
        return emit(&b->c, "response.failed", with_response(svc_json_copy(b->resp)));
    json_object *out = svc_json_arr(b->resp, "output");
    if (done && emit_closing(&b->c, out ? json_object_array_get_idx(out, 0) : NULL) < 0)
        return -1;
    if (done)
        return emit(&b->c, "response.completed", with_response(svc_json_copy(b->resp)));
    if (strcmp(type, "delta") == 0)
        return emit_delta(&b->c, svc_json_str(ev, "text", ""));
    return emit(&b->c, "svc.event",
                with(json_object_new_object(), "svc_event", json_object_get(ev)));
}

/* Follow the run's events from the start, sending those from b->c.from, until its end. */
static int bg_follow(struct bg_stream *b)
{
    snprintf(b->c.msg_id, sizeof b->c.msg_id, "msg_%s", svc_json_str(b->resp, "id", "resp_") + 5);
    if (http_sse_begin(b->c.r) == 0 && emit_opening(&b->c, svc_json_copy(b->resp)) == 0 &&
        open_message(&b->c) == 0)
        turn_follow(b->c.r, svc_json_str(b->resp, "run_id", ""), 0, bg_event, b, NULL);
    return 0;
}

/* The last sequence number of a finished run's stream, or -1 while it runs. */
static int64_t bg_last_seq(const struct svc_config *cfg, const char *run_id)
{
    json_object *events = NULL;
    bool finished = false;
    if (svc_runs_events(cfg, run_id, 0, &events, NULL, &finished, NULL) < 0)
        return -1;
    size_t n = json_object_array_length(events);
    json_object *last = n ? json_object_array_get_idx(events, n - 1) : NULL;
    int64_t k = svc_json_int(last, "seq", 0);
    bool done = strcmp(svc_json_str(last, "type", ""), "done") == 0;
    json_object_put(events);
    return finished && last ? 3 + k + (done ? 3 : 0) : -1;
}

/* GET /api/v1/responses/{id}?stream=true&starting_after=N: o is the stored object (taken). */
static int bg_resume(struct http_req *r, json_object *o, struct svc_err *err)
{
    int64_t after = -1;
    struct bg_stream b = {.c = {.r = r}, .resp = o};
    int rc = http_query_int(r, "starting_after", -1, -1, INT32_MAX, &after, err);
    if (rc == 0 && !svc_json_bool(o, "background", false))
        rc = svc_err_setp(err, SVC_E_INVALID_QUERY, "stream",
                          "only a response created with 'background': true can be streamed "
                          "again");
    int64_t last = rc == 0 ? bg_last_seq(r->cfg, svc_json_str(o, "run_id", "")) : -1;
    if (rc == 0 && last >= 0 && after > last)
        rc = svc_err_setp(err, SVC_E_INVALID_QUERY, "starting_after",
                          "starting_after %lld is past the stream's end (%lld)", (long long)after,
                          (long long)last);
    if (rc == 0) {
        b.c.from = after + 1;
        rc = bg_follow(&b);
    }
    json_object_put(o);
    return rc;
}

/* background: true: the run spawned detached, the response stored in_progress and answered. */
static int resp_background(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    struct svc_run_request req = turn_in_request(&in->t);
    json_object *run = NULL;
    bool replayed = false;
    if (svc_runs_spawn(r->cfg, &req, NULL, &run, &replayed, err) < 0) {
        turn_in_unfork(&in->t, r->cfg);
        return -1;
    }
    http_mark_run_began(r);
    http_set_session(r, svc_json_str(run, "session_id", NULL), true);
    char id[SVC_RESPONSE_ID_LEN];
    svc_responses_new_id("resp_", id, sizeof id);
    const char *sid = svc_json_str(run, "session_id", NULL);
    json_object *o = object_of(in, id, (int64_t)svc_time_now(), svc_json_str(run, "model", NULL),
                               sid, svc_json_str(run, "run_id", NULL), true);
    json_object *kept = svc_json_copy(o);
    svc_json_set(kept, "input_items", json_object_get(in->items));
    int rc = svc_responses_put(r->cfg, kept, err);
    if (rc < 0) { /* nobody could poll it: stop it */
        json_object *c = NULL;
        svc_runs_cancel(r->cfg, svc_json_str(run, "run_id", ""), &c, NULL);
        json_object_put(c);
    } else if (in->t.stream) { /* the stream that bg_resume replays */
        struct bg_stream b = {.c = {.r = r}, .resp = o};
        bg_follow(&b);
    } else {
        http_send_json(r, 200, o);
    }
    json_object_put(kept);
    json_object_put(o);
    json_object_put(run);
    return rc;
}

int h_responses_create(struct http_req *r, struct svc_err *err)
{
    struct resp_in in;
    struct svc_run *run = NULL;
    int rc = -1;
    if (parse_responses(r, &in, err) < 0)
        goto out;
    if (r->idempotency_key && r->user.id) { /* each user's keys are their own */
        char *key = svc_user_key(&r->user, r->idempotency_key);
        free(r->idempotency_key);
        r->idempotency_key = key;
    }
    json_object *stored = NULL;
    if (r->idempotency_key &&
        svc_responses_by_key(r->cfg, r->idempotency_key, &stored, NULL) == 0) {
        if (strcmp(svc_json_str(stored, "status", ""), "completed") == 0) {
            rc = resp_replay(r, &in, stored);
            goto out;
        }
        json_object_put(stored);
    }
    if (in.prev && branch_from_prev(r, &in, err) < 0)
        goto out;
    if (in.store)
        turn_in_continue(&in.t, r->cfg, &r->user);
    http_set_session(r, in.t.req.session_id, false);
    if (in.background) {
        rc = resp_background(r, &in, err);
        goto out;
    }
    struct svc_run_request req = turn_in_request(&in.t);
    if (svc_run_begin(r->cfg, &req, &run, err) < 0) {
        turn_in_unfork(&in.t, r->cfg);
        goto out;
    }
    http_mark_run_began(r);
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    http_set_session(r, a.session_id, true);
    struct resp_ctx c = {.r = r, .in = &in, .run = run, .created_at = (int64_t)svc_time_now()};
    svc_responses_new_id("resp_", c.id, sizeof c.id);
    snprintf(c.msg_id, sizeof c.msg_id, "msg_%.32s", c.id + 5); /* item_reference finds it */
    rc = in.t.stream ? resp_stream(&c) : resp_plain(&c, err);
out:
    svc_run_free(run);
    resp_in_free(&in);
    return rc;
}

/* POST /api/v1/responses/input_tokens (SPEC 15): what a create request with this body would
 * send (prompts, tools, the session's and the request's messages), 4 characters a token. */
int h_responses_input_tokens(struct http_req *r, struct svc_err *err)
{
    struct resp_in in;
    int rc = -1;
    if (parse_responses(r, &in, err) < 0)
        goto out;
    const char *sys = r->cfg->model.system_prompt;
    size_t chars = (sys ? strlen(sys) : 0) +
                   (in.t.req.instructions ? strlen(in.t.req.instructions) : 0) +
                   (in.t.input ? strlen(in.t.input) : 0);
    json_object *items = NULL;
    if (in.t.req.session_id &&
        svc_conv_items_seen(r->cfg, svc_user_scope(&r->user), in.t.req.session_id, &items, err) < 0)
        goto out;
    json_object *own = svc_tools_spec(r->cfg, r->user.id);
    json_object *parts[] = {in.t.req.history, in.t.req.tool_results, in.t.req.client_tools, own,
                            items};
    for (int k = 0; k < 5; k++) {
        char *j = parts[k] ? svc_json_dump_compact(parts[k]) : NULL;
        chars += j ? strlen(j) : 0;
        free(j);
    }
    json_object_put(own);
    json_object_put(items);
    json_object *o = svc_json_new_obj("object", "response.input_tokens", NULL);
    svc_json_set_int(o, "input_tokens", (int64_t)((chars + 3) / 4));
    rc = http_reply(r, 200, o);
out:
    resp_in_free(&in);
    return rc;
}

int h_response_delete(struct http_req *r, struct svc_err *err)
{
    const char *id = http_param(r, "response_id");
    if (svc_responses_delete(r->cfg, id, err) < 0)
        return -1;
    json_object *o = svc_json_new_obj("id", id, "object", "response", NULL);
    svc_json_set_bool(o, "deleted", true);
    return http_reply(r, 200, o);
}

/* GET /api/v1/responses/{id}/input_items?limit=20&order=desc&after= (SPEC 12.3). */
int h_response_input_items(struct http_req *r, struct svc_err *err)
{
    json_object *items = NULL;
    if (svc_responses_input_items(r->cfg, http_param(r, "response_id"), &items, err) < 0)
        return -1;
    return http_send_page(r, items, false, err);
}

int h_response_get(struct http_req *r, struct svc_err *err)
{
    json_object *o = NULL;
    const char *id = http_param(r, "response_id");
    if (svc_responses_get(r->cfg, id, &o, err) < 0)
        return -1;
    http_set_session(r, svc_json_str(o, "session_id", NULL), false);
    bool stream = false;
    if (http_query_bool(r, "stream", false, &stream, err) < 0) {
        json_object_put(o);
        return -1;
    }
    if (stream)
        return bg_resume(r, o, err);
    background_refresh(r, o);
    return http_reply(r, 200, o);
}

/* POST /api/v1/responses/{id}/cancel: a background response's run is asked to stop and the
 * answer waits (at most 5 s) for it to end; one already ended is answered as it is. */
int h_response_cancel(struct http_req *r, struct svc_err *err)
{
    json_object *o = NULL, *c = NULL;
    const char *id = http_param(r, "response_id");
    if (svc_responses_get(r->cfg, id, &o, err) < 0)
        return -1;
    const char *run_id = svc_json_str(o, "run_id", "");
    if (!svc_json_bool(o, "background", false)) {
        json_object_put(o);
        return svc_err_set(err, SVC_E_RUN_NOT_ACTIVE,
                           "only a response created with 'background': true can be cancelled");
    }
    http_set_session(r, svc_json_str(o, "session_id", NULL), false);
    if (svc_runs_cancel(r->cfg, run_id, &c, NULL) == 0)
        for (int i = 0; i < 50; i++) {
            background_refresh(r, o);
            if (strcmp(svc_json_str(o, "status", ""), "in_progress") != 0)
                break;
            svc_runs_wait(r->cfg, run_id, 100);
        }
    json_object_put(c);
    background_refresh(r, o);
    return http_reply(r, 200, o);
}
