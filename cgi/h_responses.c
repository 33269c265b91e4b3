/* h_responses: the subset of OpenAI's Responses API that stock clients use (SPEC 4.1):
 * POST /api/v1/responses (also /api/responses) and GET /api/v1/responses/{id}.
 * The body becomes a core run request and goes through the run lifecycle /api/chat uses
 * (core/session.h: begin, execute with a sink, free), so locks, events, sidecars and the
 * turn line are the same; the answer is rendered as a response object or its event
 * stream, and stored through core/responses.h so that previous_response_id and GET find it
 * from any worker.
 * Session: `conversation` (an id or {"id"}), else the session of `previous_response_id`
 * (a fork of it up to that response when it is not the newest turn: a branch), else
 * metadata.session_id, session_id, the X-Session-Id header, else a new one. The client sends only
 * the new input: the session holds the history. Tool calls svc executes itself are reported as
 * `svc.event` stream events and stored in the transcript, never returned as function_call items
 * awaiting output; the request's own function tools (SPEC 12.1) are: their calls end the run as
 * function_call items, and function_call_output items answer them. `background: true`
 * (SPEC 12.3) runs detached (runs.h); GET polls the run's record (or, with stream=true,
 * replays its events after starting_after), POST .../cancel stops it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "fork.h"
#include "handlers.h"
#include "idem.h"
#include "jsonx.h"
#include "log.h"
#include "query.h"
#include "responses.h"
#include "runs.h"
#include "session.h"
#include "store.h"
#include "toolsin.h"
#include "turnin.h"
#include "util.h"

struct resp_in {
    struct turn_in t;         /* results: of function_call_output items */
    json_object *items;       /* owned: the input as OpenAI items, for input_items (SPEC 12.3) */
    bool no_truncation;       /* truncation: "disabled" */
    const char *sid;          /* borrowed from the body or the request */
    json_object *prev;        /* owned: the stored response previous_response_id names */
    json_object *branch;      /* owned: the summary of the session forked from it, or NULL */
    const char *prev_id;      /* borrowed */
    const char *instructions; /* borrowed */
    json_object *metadata;    /* borrowed */
    json_object *mcp;         /* owned: the "type": "mcp" tools as run specs (toolsin.h) */
    json_object *mcp_shown;   /* owned: the same as the response echoes them */
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

/* An input item as input_items lists it: typed, with an id, message text as parts. */
static json_object *input_item(json_object *item)
{
    json_object *o = svc_json_copy(item);
    if (!svc_json_str(o, "type", NULL))
        svc_json_set_str(o, "type", "message");
    const char *type = svc_json_str(o, "type", "message");
    json_object *content = NULL;
    json_object_object_get_ex(o, "content", &content);
    if (strcmp(type, "message") == 0 && json_object_is_type(content, json_type_string)) {
        bool out = strcmp(svc_json_str(o, "role", ""), "assistant") == 0;
        json_object *part = json_object_new_object();
        svc_json_set_str(part, "type", out ? "output_text" : "input_text");
        svc_json_set_str(part, "text", json_object_get_string(content));
        json_object *parts = json_object_new_array();
        json_object_array_add(parts, part);
        svc_json_set(o, "content", parts);
    }
    bool ref = strcmp(type, "item_reference") == 0;
    if (!ref && !svc_json_str(o, "id", NULL)) {
        char id[48];
        svc_responses_new_id(strcmp(type, "message") == 0 ? "msg_" : "fco_", id, sizeof id);
        svc_json_set_str(o, "id", id);
    }
    if (!ref && !svc_json_str(o, "status", NULL))
        svc_json_set_str(o, "status", "completed");
    return o;
}

/* The input as items: a string is one user message. */
static json_object *input_items_of(json_object *input)
{
    json_object *items = json_object_new_array();
    if (json_object_is_type(input, json_type_string)) {
        json_object *m = json_object_new_object();
        svc_json_set_str(m, "role", "user");
        svc_json_set(m, "content", json_object_get(input));
        json_object_array_add(items, input_item(m));
        json_object_put(m);
        return items;
    }
    for (size_t i = 0; i < json_object_array_length(input); i++)
        json_object_array_add(items, input_item(json_object_array_get_idx(input, i)));
    return items;
}

/* A string without NUL bytes: 0, or -1 with 422 invalid_field. */
static int text_ok(json_object *v, const char *param, struct svc_err *err)
{
    if (!json_object_is_type(v, json_type_string))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must be a string", param);
    if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must not contain NUL", param);
    return 0;
}

/* The text of an input item's content: a string, or the text parts (input_text,
 * output_text, text) of a list, joined by newlines; other parts (images, files) carry no
 * text and are left out. *out is heap. */
static int content_text(json_object *content, const char *param, char **out, struct svc_err *err)
{
    *out = NULL;
    if (json_object_is_type(content, json_type_string)) {
        if (text_ok(content, param, err) < 0)
            return -1;
        *out = svc_xstrdup(json_object_get_string(content));
        return 0;
    }
    if (!json_object_is_type(content, json_type_array))
        return svc_err_setp(err, content ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, param,
                            "'%s' must be a string or a list of content parts", param);
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t k = 0; k < json_object_array_length(content); k++) {
        json_object *part = json_object_array_get_idx(content, k), *text = NULL;
        char pp[160];
        snprintf(pp, sizeof pp, "%s[%zu]", param, k);
        const char *type = NULL;
        if (!json_object_is_type(part, json_type_object)) {
            svc_buf_free(&b);
            return svc_err_setp(err, SVC_E_INVALID_FIELD, pp, "'%s' must be an object", pp);
        }
        char tp[176];
        snprintf(tp, sizeof tp, "%s.type", pp);
        if (http_field_str(part, "type", tp, true, &type, err) < 0) {
            svc_buf_free(&b);
            return -1;
        }
        if (strcmp(type, "input_text") != 0 && strcmp(type, "output_text") != 0 &&
            strcmp(type, "text") != 0)
            continue;
        snprintf(tp, sizeof tp, "%s.text", pp);
        json_object_object_get_ex(part, "text", &text);
        if (text_ok(text, tp, err) < 0) {
            svc_buf_free(&b);
            return -1;
        }
        if (b.len)
            svc_buf_adds(&b, "\n");
        svc_buf_adds(&b, json_object_get_string(text));
    }
    *out = b.data ? svc_buf_steal(&b) : svc_xstrdup("");
    return 0;
}

/* A function_call item as the chat message it stands for: an assistant tool_calls entry,
 * added to msgs' last message when that is an assistant's (parallel calls). */
static int function_call_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL, *name = NULL, *args = NULL;
    char p[3][96];
    snprintf(p[0], sizeof p[0], "input[%zu].call_id", i);
    snprintf(p[1], sizeof p[1], "input[%zu].name", i);
    snprintf(p[2], sizeof p[2], "input[%zu].arguments", i);
    if (http_field_str(item, "call_id", p[0], true, &id, err) < 0 ||
        http_field_str(item, "name", p[1], true, &name, err) < 0 ||
        http_field_str(item, "arguments", p[2], false, &args, err) < 0)
        return -1;
    size_t n = json_object_array_length(msgs);
    json_object *m = n ? json_object_array_get_idx(msgs, n - 1) : NULL;
    if (!m || strcmp(svc_json_str(m, "role", ""), "assistant") != 0) {
        m = json_object_new_object();
        svc_json_set_str(m, "role", "assistant");
        svc_json_set(m, "content", NULL);
        json_object_array_add(msgs, m);
    }
    json_object *calls = svc_json_arr(m, "tool_calls");
    if (!calls) {
        calls = json_object_new_array();
        svc_json_set(m, "tool_calls", calls);
    }
    json_object *fn = json_object_new_object();
    svc_json_set_str(fn, "name", name);
    svc_json_set_str(fn, "arguments", args ? args : "{}");
    json_object *tc = json_object_new_object();
    svc_json_set_str(tc, "id", id);
    svc_json_set_str(tc, "type", "function");
    svc_json_set(tc, "function", fn);
    json_object_array_add(calls, tc);
    return 0;
}

/* A function_call_output item as a role "tool" chat message (param: where it was). */
static int function_output_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL;
    json_object *output = NULL;
    char p[96], q[96];
    snprintf(p, sizeof p, "input[%zu].call_id", i);
    snprintf(q, sizeof q, "input[%zu].output", i);
    if (http_field_str(item, "call_id", p, true, &id, err) < 0)
        return -1;
    json_object_object_get_ex(item, "output", &output);
    char *text = NULL;
    if (content_text(output, q, &text, err) < 0)
        return -1;
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "role", "tool");
    svc_json_set_str(m, "tool_call_id", id);
    svc_json_set_str(m, "content", text);
    svc_json_set_str(m, "param", p);
    json_object_array_add(msgs, m);
    free(text);
    return 0;
}

/* The trailing function_call_output items of msgs[end, n) as tool results. */
static json_object *results_of(json_object *msgs, size_t end)
{
    json_object *out = json_object_new_array();
    for (size_t i = end; i < json_object_array_length(msgs); i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        json_object *r = json_object_new_object();
        svc_json_set_str(r, "call_id", svc_json_str(m, "tool_call_id", ""));
        svc_json_set_str(r, "output", svc_json_str(m, "content", ""));
        svc_json_set_str(r, "param", svc_json_str(m, "param", "input"));
        json_object *approve = NULL;
        if (json_object_object_get_ex(m, "approve", &approve))
            svc_json_set(r, "approve", json_object_get(approve));
        json_object_array_add(out, r);
    }
    return out;
}

/* A message item as the chat message it stands for ({role, content} with its text). */
static int message_in(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    static const char *roles[] = {"user", "assistant", "system", "developer", NULL};
    const char *role = NULL;
    json_object *content = NULL;
    char p[96];
    snprintf(p, sizeof p, "input[%zu].role", i);
    if (http_field_str(item, "role", p, true, &role, err) < 0)
        return -1;
    bool known = false;
    for (int k = 0; roles[k]; k++)
        known = known || strcmp(role, roles[k]) == 0;
    if (!known)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s' must be user, assistant, system or developer", p);
    snprintf(p, sizeof p, "input[%zu].content", i);
    json_object_object_get_ex(item, "content", &content);
    char *text = NULL;
    if (content_text(content, p, &text, err) < 0)
        return -1;
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "role", role);
    svc_json_set_str(m, "content", text);
    json_object_array_add(msgs, m);
    free(text);
    return 0;
}

/* An mcp_approval_response item (SPEC 16) as the answer to the call it approves or declines:
 * a role "tool" message with "approve", like a function_call_output. */
static int approval_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL;
    bool approve = false;
    char p[96], q[96];
    snprintf(p, sizeof p, "input[%zu].approval_request_id", i);
    snprintf(q, sizeof q, "input[%zu].approve", i);
    json_object *v = NULL;
    if (http_field_str(item, "approval_request_id", p, true, &id, err) < 0)
        return -1;
    if (!json_object_object_get_ex(item, "approve", &v) ||
        !json_object_is_type(v, json_type_boolean))
        return svc_err_setp(err, v ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, q,
                            "'%s' must be true or false", q);
    approve = json_object_get_boolean(v);
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "role", "tool");
    svc_json_set_str(m, "tool_call_id", strncmp(id, "mcpr_", 5) == 0 ? id + 5 : id);
    svc_json_set_bool(m, "approve", approve);
    svc_json_set_str(m, "param", p);
    json_object_array_add(msgs, m);
    return 0;
}

/* An mcp_call item a client sends back (a stateless history): the call and its result, as
 * a function_call and its output. */
static int mcp_call_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *label = NULL, *name = NULL, *id = NULL;
    char p[96], *full = NULL;
    snprintf(p, sizeof p, "input[%zu].server_label", i);
    if (http_field_str(item, "server_label", p, true, &label, err) < 0)
        return -1;
    snprintf(p, sizeof p, "input[%zu].name", i);
    if (http_field_str(item, "name", p, true, &name, err) < 0)
        return -1;
    snprintf(p, sizeof p, "input[%zu].id", i);
    if (http_field_str(item, "id", p, true, &id, err) < 0)
        return -1;
    json_object *call = svc_json_copy(item), *out = json_object_new_object();
    svc_xasprintf(&full, "%s__%s", label, name);
    svc_json_set_str(call, "name", full);
    svc_json_set_str(call, "call_id", id);
    svc_json_set_str(out, "call_id", id);
    const char *error = svc_json_str(item, "error", NULL);
    svc_json_set_str(out, "output", error ? error : svc_json_str(item, "output", ""));
    int rc =
        function_call_item(call, i, msgs, err) < 0 || function_output_item(out, i, msgs, err) < 0
            ? -1
            : 0;
    free(full);
    json_object_put(call);
    json_object_put(out);
    return rc;
}

/* One input item appended to msgs as chat messages, by its type. */
static int item_in(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    char p[96];
    const char *type = NULL;
    snprintf(p, sizeof p, "input[%zu]", i);
    if (!json_object_is_type(item, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be an object", p);
    snprintf(p, sizeof p, "input[%zu].type", i);
    if (http_field_str(item, "type", p, false, &type, err) < 0)
        return -1;
    if (!type || strcmp(type, "message") == 0)
        return message_in(item, i, msgs, err);
    if (strcmp(type, "item_reference") == 0 || strcmp(type, "mcp_list_tools") == 0 ||
        strcmp(type, "mcp_approval_request") == 0)
        return 0; /* what the session holds, or a listing (SPEC 16) */
    if (strcmp(type, "mcp_approval_response") == 0)
        return approval_item(item, i, msgs, err);
    if (strcmp(type, "mcp_call") == 0)
        return mcp_call_item(item, i, msgs, err);
    if (strcmp(type, "function_call") == 0)
        return function_call_item(item, i, msgs, err);
    if (strcmp(type, "function_call_output") == 0)
        return function_output_item(item, i, msgs, err);
    return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                        "'%s' must be message, function_call or function_call_output, not %.64s", p,
                        type);
}

/* `input`: a string, or a list of items: messages ({"role", "content"}, "type": "message"
 * optional), function_call and function_call_output items (SPEC 12.1). The last user
 * message with text is the input, unless function_call_output items end the list: they
 * answer the pending client tool calls. What comes before is history (imported on a
 * session's first run, as for /api/chat). item_reference items point at what the session
 * already holds and are skipped; other item types are refused. */
static int parse_input(struct resp_in *in, json_object *input, struct svc_err *err)
{
    if (!input)
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "input", "'input' is required");
    if (json_object_is_type(input, json_type_string)) {
        if (text_ok(input, "input", err) < 0)
            return -1;
        if (!*json_object_get_string(input))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "input", "'input' must not be empty");
        in->t.input = svc_xstrdup(json_object_get_string(input));
        return 0;
    }
    if (!json_object_is_type(input, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "input",
                            "'input' must be a string or a list of messages");
    json_object *msgs = json_object_new_array();
    int rc = -1;
    for (size_t i = 0; i < json_object_array_length(input); i++)
        if (item_in(json_object_array_get_idx(input, i), i, msgs, err) < 0)
            goto out;
    size_t n = json_object_array_length(msgs), end = n;
    long last = -1;
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        if (strcmp(svc_json_str(m, "role", ""), "user") == 0 && *svc_json_str(m, "content", ""))
            last = (long)i;
    }
    while (end > 0 &&
           strcmp(svc_json_str(json_object_array_get_idx(msgs, end - 1), "role", ""), "tool") == 0)
        end--;
    if (end < n) { /* trailing results, no new input */
        in->t.results = results_of(msgs, end);
        last = (long)end;
    } else if (last < 0) {
        svc_err_setp(err, SVC_E_MISSING_FIELD, "input", "no user message with text in 'input'");
        goto out;
    } else {
        in->t.input =
            svc_xstrdup(svc_json_str(json_object_array_get_idx(msgs, (size_t)last), "content", ""));
    }
    if (last > 0) {
        in->t.history = json_object_new_array();
        for (long i = 0; i < last; i++)
            json_object_array_add(in->t.history,
                                  json_object_get(json_object_array_get_idx(msgs, (size_t)i)));
    }
    rc = 0;
out:
    json_object_put(msgs);
    return rc;
}

/* metadata: an object of strings (OpenAI's rule); event_format, locale, channel and
 * session_id are read from it. */
static int parse_metadata(struct resp_in *in, const char **msid, struct svc_err *err)
{
    json_object *meta = NULL;
    const char *fmt = NULL;
    if (http_field_obj(in->t.body, "metadata", NULL, false, &meta, err) < 0)
        return -1;
    in->metadata = meta;
    if (!meta)
        return 0;
    json_object_object_foreach(meta, key, val)
    {
        char p[96];
        snprintf(p, sizeof p, "metadata.%.64s", key);
        if (text_ok(val, p, err) < 0)
            return -1;
    }
    if (http_field_str(meta, "session_id", "metadata.session_id", false, msid, err) < 0 ||
        http_field_str(meta, "event_format", "metadata.event_format", false, &fmt, err) < 0 ||
        http_field_str(meta, "locale", "metadata.locale", false, &in->t.locale, err) < 0 ||
        http_field_str(meta, "channel", "metadata.channel", false, &in->t.channel, err) < 0)
        return -1;
    if (fmt && strcmp(fmt, "openai.v1") != 0 && strcmp(fmt, "svc.v2") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata.event_format",
                            "'metadata.event_format' must be openai.v1 or svc.v2");
    in->t.svc_v2 = fmt && strcmp(fmt, "svc.v2") == 0;
    return 0;
}

/* `conversation`: a session id, or an object with one ("id"). */
static int parse_conversation(json_object *b, const char **out, struct svc_err *err)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(b, "conversation", &v) || !v)
        return 0;
    if (json_object_is_type(v, json_type_object))
        return http_field_str(v, "id", "conversation.id", true, out, err);
    if (text_ok(v, "conversation", err) < 0)
        return -1;
    *out = json_object_get_string(v);
    return 0;
}

/* A server whose tools the previous response had was listed then or before (SPEC 16: once
 * per server and conversation): no mcp_list_tools item again. */
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

/* `truncation`: "auto" (the sliding window) or "disabled" (SPEC 12.3). */
static int parse_truncation(struct resp_in *in, struct svc_err *err)
{
    const char *t = NULL;
    if (http_field_str(in->t.body, "truncation", NULL, false, &t, err) < 0)
        return -1;
    if (t && strcmp(t, "auto") != 0 && strcmp(t, "disabled") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "truncation",
                            "'truncation' must be auto or disabled");
    in->no_truncation = t && strcmp(t, "disabled") == 0;
    return 0;
}

/* previous_response_id naming an older turn of its session: the turn runs in a fork holding
 * the messages up to that response's last one (SPEC 12.3); the newest continues in place,
 * and so does a response stored without last_message_id (from before branches). */
static int branch_from_prev(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    int64_t last = svc_json_int(in->prev, "last_message_id", -1), count = 0, next = 0;
    struct svc_sess s = SVC_SESS_INIT;
    if (last < 0 || !in->t.sid || svc_sess_open(r->cfg, in->t.sid, &s, err) != 0)
        return last < 0 || !in->t.sid ? 0 : -1;
    int64_t *ids = NULL;
    int rc = svc_sess_message_count(&s, -1, &count, &next, &ids, err);
    svc_sess_close(&s);
    free(ids);
    if (rc != 0 || next - 1 <= last)
        return rc != 0 ? -1 : 0;
    struct svc_fork_req f = {.session_id = in->t.sid, .has_message_id = true, .message_id = last};
    if (svc_session_fork(r->cfg, &f, &in->branch, err) != 0)
        return -1;
    in->t.sid = svc_json_str(in->branch, "session_id", NULL);
    return 0;
}

static int parse_responses(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    memset(in, 0, sizeof *in);
    if (http_body_json(r, false, &in->t.body, err) < 0)
        return -1;
    json_object *b = in->t.body, *input = NULL;
    const char *model = NULL, *conv = NULL, *msid = NULL, *bsid = NULL;
    if (http_field_str(b, "model", NULL, false, &model, err) < 0 ||
        http_field_str(b, "instructions", NULL, false, &in->instructions, err) < 0 ||
        http_field_str(b, "user", NULL, false, &in->t.user, err) < 0 ||
        http_field_bool(b, "stream", NULL, false, &in->t.stream, err) < 0 ||
        http_field_bool(b, "store", NULL, true, &in->store, err) < 0 ||
        http_field_bool(b, "background", NULL, false, &in->background, err) < 0 ||
        http_field_str(b, "previous_response_id", NULL, false, &in->prev_id, err) < 0 ||
        http_field_str(b, "session_id", NULL, false, &bsid, err) < 0 ||
        http_field_number_opt(b, "temperature", NULL, &in->t.has_temperature, &in->t.temperature,
                              err) < 0 ||
        http_field_int_opt(b, "max_output_tokens", NULL, &in->t.has_max_tokens, &in->t.max_tokens,
                           err) < 0 ||
        parse_conversation(b, &conv, err) < 0 || parse_metadata(in, &msid, err) < 0 ||
        toolsin_parse(b, false, &in->t.tools, &in->t.tool_choice, err) < 0 ||
        toolsin_mcp(r->cfg, &r->user, b, &in->mcp, &in->mcp_shown, err) < 0)
        return -1;
    json_object_object_get_ex(b, "input", &input);
    if (parse_input(in, input, err) < 0 || parse_truncation(in, err) < 0)
        return -1;
    in->items = input_items_of(input);
    if (!in->store && (conv || in->prev_id))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "store",
                            "'store': false runs without a session: send the whole input instead "
                            "of '%s'",
                            conv ? "conversation" : "previous_response_id");
    if (in->background && (!in->store || in->t.tools || in->mcp))
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
        in->t.sid = svc_json_str(in->prev, "session_id", NULL);
        mcp_listed_before(in);
    }
    if (!in->t.sid)
        in->t.sid = conv;
    if (!in->t.sid)
        in->t.sid = msid;
    if (!in->t.sid)
        in->t.sid = bsid;
    if (!in->t.sid)
        in->t.sid = r->x_session_id;
    if (!r->cfg->sessions.enabled)
        in->store = false; /* nothing is kept: nothing to find again */
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
    int64_t seq;  /* the next event's sequence_number */
    int64_t from; /* events numbered below it are not sent (a resumed stream) */
};
_Static_assert(offsetof(struct resp_ctx, r) == 0, "the sink's helpers read r first");

static json_object *usage_of(int64_t p, int64_t c)
{
    json_object *u = json_object_new_object();
    svc_json_set_int(u, "input_tokens", p);
    json_object *idet = json_object_new_object();
    svc_json_set_int(idet, "cached_tokens", 0);
    svc_json_set(u, "input_tokens_details", idet);
    svc_json_set_int(u, "output_tokens", c);
    json_object *odet = json_object_new_object();
    svc_json_set_int(odet, "reasoning_tokens", 0);
    svc_json_set(u, "output_tokens_details", odet);
    svc_json_set_int(u, "total_tokens", p + c);
    return u;
}

static json_object *text_part(const char *text)
{
    json_object *p = json_object_new_object();
    svc_json_set_str(p, "type", "output_text");
    svc_json_set_str(p, "text", text);
    svc_json_set(p, "annotations", json_object_new_array());
    return p;
}

/* The assistant message item msg_id; text NULL: in progress, no content yet. status:
 * in_progress, completed, or incomplete (a failed run's partial text). */
static json_object *message_item(const char *msg_id, const char *text, const char *status)
{
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "id", msg_id);
    svc_json_set_str(m, "type", "message");
    svc_json_set_str(m, "status", status);
    svc_json_set_str(m, "role", "assistant");
    json_object *content = json_object_new_array();
    if (text)
        json_object_array_add(content, text_part(text));
    svc_json_set(m, "content", content);
    return m;
}

/* The function_call item of a client tool call (an OpenAI tool_calls entry); its id is
 * derived from the call's, so the streamed item and the stored one agree. */
static json_object *function_call_out(json_object *tc, bool done)
{
    json_object *fn = svc_json_obj(tc, "function");
    char id[160];
    snprintf(id, sizeof id, "fc_%s", svc_json_str(tc, "id", ""));
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "id", id);
    svc_json_set_str(o, "type", "function_call");
    svc_json_set_str(o, "status", done ? "completed" : "in_progress");
    svc_json_set_str(o, "call_id", svc_json_str(tc, "id", ""));
    svc_json_set_str(o, "name", svc_json_str(fn, "name", ""));
    svc_json_set_str(o, "arguments", done ? svc_json_str(fn, "arguments", "{}") : "");
    return o;
}

/* The request's remote MCP server a tool name ("<label>__<tool>") belongs to: its label
 * (borrowed), *tool the bare name; NULL when none. */
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
    json_object *fn = svc_json_obj(tc, "function"), *o = json_object_new_object();
    char id[160];
    snprintf(id, sizeof id, "mcpr_%s", svc_json_str(tc, "id", ""));
    svc_json_set_str(o, "id", id);
    svc_json_set_str(o, "type", "mcp_approval_request");
    svc_json_set_str(o, "arguments", svc_json_str(fn, "arguments", "{}"));
    svc_json_set_str(o, "name", tool);
    svc_json_set_str(o, "server_label", label);
    return o;
}

/* The mcp_call item of a call the run made (its tool_result event; the arguments from its
 * tool_start). */
static json_object *mcp_call_out(json_object *events, json_object *ev, const char *label,
                                 const char *tool)
{
    const char *id = svc_json_str(ev, "call_id", "");
    json_object *o = json_object_new_object();
    char buf[160];
    snprintf(buf, sizeof buf, "mcp_%s", id);
    svc_json_set_str(o, "id", buf);
    svc_json_set_str(o, "type", "mcp_call");
    snprintf(buf, sizeof buf, "mcpr_%s", id);
    svc_json_set_str(o, "approval_request_id", svc_json_bool(ev, "approved", false) ? buf : NULL);
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

/* The MCP items of a run (SPEC 16), in order: each server's mcp_list_tools, each call's
 * mcp_call. */
static void mcp_items(const struct resp_ctx *c, const struct svc_run_answer *a, json_object *out)
{
    const char *tool = NULL, *label;
    for (size_t i = 0; c->in->mcp && i < json_object_array_length(a->events); i++) {
        json_object *ev = json_object_array_get_idx(a->events, i);
        const char *type = svc_json_str(ev, "type", "");
        if (strcmp(type, "mcp_list_tools") == 0) {
            char id[160];
            json_object *o = json_object_new_object();
            snprintf(id, sizeof id, "mcpl_%s_%s", c->id + 5, svc_json_str(ev, "server_label", ""));
            svc_json_set_str(o, "id", id);
            svc_json_set_str(o, "type", "mcp_list_tools");
            svc_json_set_str(o, "server_label", svc_json_str(ev, "server_label", ""));
            svc_json_set(o, "tools", json_object_get(svc_json_arr(ev, "tools")));
            svc_json_set_str(o, "error", svc_json_str(ev, "error", NULL));
            json_object_array_add(out, o);
        } else if (strcmp(type, "tool_result") == 0 &&
                   (label = mcp_label_of(c, svc_json_str(ev, "tool", ""), &tool))) {
            json_object_array_add(out, mcp_call_out(a->events, ev, label, tool));
        }
    }
}

/* A call the run ended on: a function_call item, or an mcp_approval_request item. */
static json_object *call_out(const struct resp_ctx *c, json_object *tc)
{
    const char *tool = NULL;
    const char *label =
        mcp_label_of(c, svc_json_str(svc_json_obj(tc, "function"), "name", ""), &tool);
    return label ? approval_out(tc, label, tool) : function_call_out(tc, true);
}

/* The output of an ended run: the MCP items, the message, then an item per call awaiting its
 * result or approval. A stream has its message first: its events went out at index 0. */
static json_object *output_items(const struct resp_ctx *c, const struct svc_run_answer *a,
                                 const struct svc_err *failure)
{
    json_object *output = json_object_new_array();
    const char *text = a->content;
    json_object *calls = failure ? NULL : a->client_calls;
    size_t nc = calls ? json_object_array_length(calls) : 0;
    bool has_text = text && *text;
    if (!c->in->t.stream)
        mcp_items(c, a, output);
    if ((!failure || has_text) && (c->in->t.stream || nc == 0 || has_text))
        json_object_array_add(output,
                              message_item(c->msg_id, text, failure ? "incomplete" : "completed"));
    if (c->in->t.stream)
        mcp_items(c, a, output);
    for (size_t i = 0; i < nc; i++)
        json_object_array_add(output, call_out(c, json_object_array_get_idx(calls, i)));
    return output;
}

/* The request's tools as the Responses API shows them. */
static json_object *tools_shown(json_object *tools)
{
    json_object *out = json_object_new_array();
    for (size_t i = 0; tools && i < json_object_array_length(tools); i++) {
        json_object *t = svc_json_copy(json_object_array_get_idx(tools, i));
        svc_json_set_str(t, "type", "function");
        json_object_array_add(out, t);
    }
    return out;
}

/* The response object. status: in_progress (no output, no usage yet), completed (the
 * answer), failed (failure set; output holds what was produced, if anything). */
static json_object *response_object(const struct resp_ctx *c, const char *status,
                                    const struct svc_err *failure)
{
    const struct resp_in *in = c->in;
    bool ended = strcmp(status, "in_progress") != 0;
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "id", c->id);
    svc_json_set_str(o, "object", "response");
    svc_json_set_int(o, "created_at", c->created_at);
    svc_json_set_str(o, "status", status);
    if (failure) {
        json_object *e = json_object_new_object();
        svc_json_set_str(e, "code", svc_err_name(failure->code));
        svc_json_set_str(e, "message", failure->message);
        svc_json_set(o, "error", e);
    } else {
        svc_json_set(o, "error", NULL);
    }
    svc_json_set(o, "incomplete_details", NULL);
    svc_json_set_str(o, "instructions", in->instructions);
    svc_json_set(o, "max_output_tokens",
                 in->t.has_max_tokens ? json_object_new_int64(in->t.max_tokens) : NULL);
    svc_json_set_str(o, "model", a.model);
    svc_json_set(o, "output", ended ? output_items(c, &a, failure) : json_object_new_array());
    svc_json_set_bool(o, "parallel_tool_calls", true);
    svc_json_set_str(o, "previous_response_id", in->prev_id);
    svc_json_set_bool(o, "store", in->store);
    svc_json_set(o, "temperature",
                 in->t.has_temperature ? json_object_new_double(in->t.temperature) : NULL);
    json_object *fmt = json_object_new_object();
    svc_json_set_str(fmt, "type", "text");
    json_object *textcfg = json_object_new_object();
    svc_json_set(textcfg, "format", fmt);
    svc_json_set(o, "text", textcfg);
    svc_json_set_str(o, "tool_choice", in->t.tool_choice ? in->t.tool_choice : "auto");
    json_object *tools = tools_shown(in->t.tools);
    for (size_t i = 0; in->mcp_shown && i < json_object_array_length(in->mcp_shown); i++)
        json_object_array_add(tools, json_object_get(json_object_array_get_idx(in->mcp_shown, i)));
    svc_json_set(o, "tools", tools);
    svc_json_set(o, "top_p", NULL);
    svc_json_set_str(o, "truncation", in->no_truncation ? "disabled" : "auto");
    svc_json_set(o, "usage", ended ? usage_of(a.prompt_tokens, a.completion_tokens) : NULL);
    svc_json_set_str(o, "user", in->t.user);
    svc_json_set(o, "metadata",
                 in->metadata ? svc_json_copy(in->metadata) : json_object_new_object());
    if (c->r->cfg->sessions.enabled && in->store) {
        json_object *conv = json_object_new_object();
        svc_json_set_str(conv, "id", a.session_id);
        svc_json_set(o, "conversation", conv);
    } else {
        svc_json_set(o, "conversation", NULL);
    }
    svc_json_set_str(o, "session_id", a.session_id);
    svc_json_set_str(o, "run_id", a.run_id);
    if (ended && in->store && c->r->cfg->sessions.enabled) /* where a branch from it forks */
        svc_json_set_int(o, "last_message_id", a.last_message_id);
    if (in->t.svc_v2 && ended) {
        json_object *svc = json_object_new_object();
        svc_json_set_str(svc, "schema_version", "2.0");
        svc_json_set_str(svc, "run_id", a.run_id);
        svc_json_set(svc, "events", svc_json_copy(a.events));
        svc_json_set(o, "svc", svc);
    }
    return o;
}

/* After the run ended: the response object stored (store true) and the run recorded for
 * GET /api/chat/runs/{id}. A store that fails turns `store` false in the answer (it could
 * not be continued); both failures are logged, never fatal: the turn is in the session. */
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
    json_object *resp = response_object(c, rc == 0 ? "completed" : "failed", rc == 0 ? NULL : err);
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
    json_object *ev = json_object_new_object();
    svc_json_set_str(ev, "type", type);
    svc_json_set_int(ev, "sequence_number", seq);
    if (o) {
        json_object_object_foreach(o, k, v) svc_json_set(ev, k, json_object_get(v));
        json_object_put(o);
    }
    int rc = http_sse_event(c->r, type, ev);
    json_object_put(ev);
    return rc;
}

/* Emit n events in order; on the first failure the objects not yet sent are released.
 * Returns 0, or -1 when the client is gone. */
static int emit_seq(struct resp_ctx *c, size_t n, const char *const *types, json_object **objs)
{
    size_t i = 0;
    while (i < n && emit(c, types[i], objs[i]) == 0)
        i++;
    if (i == n)
        return 0;
    for (i++; i < n; i++)
        json_object_put(objs[i]);
    return -1;
}

static json_object *with_response(json_object *resp)
{
    json_object *o = json_object_new_object();
    svc_json_set(o, "response", resp);
    return o;
}

/* The position fields of the text part: item_id, output_index, content_index. */
static json_object *at_part(const struct resp_ctx *c)
{
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "item_id", c->msg_id);
    svc_json_set_int(o, "output_index", 0);
    svc_json_set_int(o, "content_index", 0);
    return o;
}

/* The opening events of a streamed answer: created and in_progress with pending (the
 * response before its output, taken), the message item and its text part added. */
static int emit_opening(struct resp_ctx *c, json_object *pending)
{
    json_object *item = json_object_new_object();
    svc_json_set_int(item, "output_index", 0);
    svc_json_set(item, "item", message_item(c->msg_id, NULL, "in_progress"));
    json_object *part = at_part(c);
    svc_json_set(part, "part", text_part(""));
    static const char *const types[] = {"response.created", "response.in_progress",
                                        "response.output_item.added",
                                        "response.content_part.added"};
    json_object *objs[] = {with_response(json_object_get(pending)), with_response(pending), item,
                           part};
    return emit_seq(c, 4, types, objs);
}

/* The events that close the message's text (its whole text). */
static int emit_closing(struct resp_ctx *c, const char *text)
{
    json_object *done = at_part(c);
    svc_json_set_str(done, "text", text);
    svc_json_set(done, "logprobs", json_object_new_array());
    json_object *part = at_part(c);
    svc_json_set(part, "part", text_part(text));
    json_object *item = json_object_new_object();
    svc_json_set_int(item, "output_index", 0);
    svc_json_set(item, "item", message_item(c->msg_id, text, "completed"));
    static const char *const types[] = {"response.output_text.done", "response.content_part.done",
                                        "response.output_item.done"};
    json_object *objs[] = {done, part, item};
    return emit_seq(c, 3, types, objs);
}

/* A delta of the message's text. */
static int emit_delta(struct resp_ctx *c, const char *text)
{
    json_object *o = at_part(c);
    svc_json_set_str(o, "delta", text);
    svc_json_set(o, "logprobs", json_object_new_array());
    return emit(c, "response.output_text.delta", o);
}

static int on_event(void *ctx, json_object *ev)
{
    struct resp_ctx *c = ctx;
    if (c->r->client_gone)
        return 1;
    const char *type = svc_json_str(ev, "type", "");
    if (strcmp(type, "delta") == 0)
        return emit_delta(c, svc_json_str(ev, "text", "")) < 0 ? 1 : 0;
    bool tool = strcmp(type, "tool_start") == 0 || strcmp(type, "tool_result") == 0;
    bool end = strcmp(type, "done") == 0 || strcmp(type, "error") == 0;
    if (!tool && (!c->in->t.svc_v2 || end))
        return 0; /* the end is rendered after the run */
    /* svc's own event (tools always, the rest in svc.v2): a type clients skip */
    json_object *o = json_object_new_object();
    svc_json_set(o, "svc_event", json_object_get(ev));
    return emit(c, "svc.event", o) < 0 ? 1 : 0;
}

/* The client tool calls the run ended on, each as an output item from index 1 with its
 * arguments in one delta. 0, or -1 when the client is gone. */
static int emit_calls(struct resp_ctx *c)
{
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    json_object *calls = a.client_calls, *mcp = json_object_new_array();
    mcp_items(c, &a, mcp); /* then the MCP items (SPEC 16), each added and done */
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *tc = json_object_array_get_idx(calls, i);
        const char *tool = NULL;
        if (mcp_label_of(c, svc_json_str(svc_json_obj(tc, "function"), "name", ""), &tool))
            json_object_array_add(mcp, call_out(c, tc));
    }
    size_t nm = json_object_array_length(mcp), at = 1;
    for (size_t i = 0; i < nm; i++, at++) {
        json_object *objs[2] = {json_object_new_object(), json_object_new_object()};
        for (int k = 0; k < 2; k++) {
            svc_json_set_int(objs[k], "output_index", (int64_t)at);
            svc_json_set(objs[k], "item", json_object_get(json_object_array_get_idx(mcp, i)));
        }
        static const char *const types[] = {"response.output_item.added",
                                            "response.output_item.done"};
        if (emit_seq(c, 2, types, objs) < 0) {
            json_object_put(mcp);
            return -1;
        }
    }
    json_object_put(mcp);
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *tc = json_object_array_get_idx(calls, i);
        const char *tool = NULL;
        if (mcp_label_of(c, svc_json_str(svc_json_obj(tc, "function"), "name", ""), &tool))
            continue;
        json_object *item = function_call_out(tc, true);
        const char *args = svc_json_str(item, "arguments", "{}");
        json_object *objs[4];
        for (int k = 0; k < 4; k++) {
            objs[k] = json_object_new_object();
            svc_json_set_int(objs[k], "output_index", (int64_t)at);
        }
        at++;
        svc_json_set(objs[0], "item", function_call_out(tc, false));
        svc_json_set_str(objs[1], "item_id", svc_json_str(item, "id", ""));
        svc_json_set_str(objs[1], "delta", args);
        svc_json_set_str(objs[2], "item_id", svc_json_str(item, "id", ""));
        svc_json_set_str(objs[2], "arguments", args);
        svc_json_set(objs[3], "item", item);
        static const char *const types[] = {
            "response.output_item.added", "response.function_call_arguments.delta",
            "response.function_call_arguments.done", "response.output_item.done"};
        if (emit_seq(c, 4, types, objs) < 0)
            return -1;
    }
    return 0;
}

static int resp_stream(struct resp_ctx *c, struct svc_err *err)
{
    struct http_req *r = c->r;
    if (http_sse_begin(r) < 0 || emit_opening(c, response_object(c, "in_progress", NULL)) < 0)
        return 0; /* client gone: svc_run_free ends the run */
    struct svc_run_sink sink = {on_event, http_sink_gone, http_sink_idle, c};
    struct svc_err ferr;
    svc_err_clear(&ferr);
    int rc = svc_run_execute(c->run, &sink, &ferr);
    json_object *resp =
        response_object(c, rc == 0 ? "completed" : "failed", rc == 0 ? NULL : &ferr);
    keep_response(c, resp, rc == 0 ? NULL : &ferr);
    if (r->client_gone) {
        json_object_put(resp);
        return 0;
    }
    if (rc != 0) {
        /* response.failed, then the error event (which ends the stream for every client) */
        emit(c, "response.failed", with_response(resp));
        json_object *e = http_error_object(&ferr);
        json_object *o = json_object_new_object();
        json_object *inner = svc_json_obj(e, "error");
        svc_json_set_str(o, "code", svc_err_name(ferr.code));
        svc_json_set_str(o, "message", ferr.message);
        svc_json_set(o, "param", NULL);
        svc_json_set(o, "error", json_object_get(inner));
        json_object_put(e);
        emit(c, "error", o);
        (void)err;
        return 0;
    }
    struct svc_run_answer a;
    svc_run_answer(c->run, &a);
    if (emit_closing(c, a.content) == 0 && emit_calls(c) == 0)
        emit(c, "response.completed", with_response(resp));
    else
        json_object_put(resp);
    return 0;
}

/* The text and message id of a stored, completed response's first output item. */
static const char *stored_text(json_object *resp, const char **msg_id)
{
    json_object *item = json_object_array_get_idx(svc_json_arr(resp, "output"), 0);
    json_object *part = json_object_array_get_idx(svc_json_arr(item, "content"), 0);
    *msg_id = svc_json_str(item, "id", "");
    return svc_json_str(part, "text", "");
}

/* Answer again with a stored response (Idempotency-Key seen before): the object as it was,
 * or, streamed, the event sequence of a run that produced its text in one delta. */
static int resp_replay(struct http_req *r, const struct resp_in *in, json_object *stored)
{
    http_set_session(r, svc_json_str(stored, "session_id", NULL), false);
    if (!in->t.stream)
        return http_reply(r, 200, stored);
    struct resp_ctx c = {.r = r, .in = in};
    const char *msg_id = "";
    const char *text = stored_text(stored, &msg_id);
    snprintf(c.msg_id, sizeof c.msg_id, "%s", msg_id);
    if (http_sse_begin(r) < 0) {
        json_object_put(stored);
        return 0;
    }
    json_object *pending = svc_json_copy(stored);
    svc_json_set_str(pending, "status", "in_progress");
    svc_json_set(pending, "output", json_object_new_array());
    svc_json_set(pending, "usage", NULL);
    if (emit_opening(&c, pending) == 0 && emit_delta(&c, text) == 0 && emit_closing(&c, text) == 0)
        emit(&c, "response.completed", with_response(stored));
    else
        json_object_put(stored);
    return 0;
}

/* The core run request of a Responses request (borrows from in and r). */
static struct svc_run_request run_request_of(struct http_req *r, const struct resp_in *in)
{
    struct svc_run_request req = turn_in_request(&in->t);
    req.instructions = in->instructions;
    req.max_tokens_param = "max_output_tokens";
    req.user = &r->user;
    req.stateless = !in->store;
    req.no_truncation = in->no_truncation;
    req.mcp_tools = in->mcp;
    return req;
}

/* ---- background responses (SPEC 12.3): an asynchronous run (runs.h) polled by GET ---- */

/* The object of a background response before its run ended, as stored at creation. */
static json_object *background_object(const struct resp_in *in, const char *id, json_object *run)
{
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "id", id);
    svc_json_set_str(o, "object", "response");
    svc_json_set_int(o, "created_at", (int64_t)svc_time_now());
    svc_json_set_str(o, "status", "in_progress");
    svc_json_set_bool(o, "background", true);
    svc_json_set(o, "error", NULL);
    svc_json_set(o, "incomplete_details", NULL);
    svc_json_set_str(o, "instructions", in->instructions);
    svc_json_set_str(o, "model", svc_json_str(run, "model", NULL));
    svc_json_set(o, "output", json_object_new_array());
    svc_json_set_str(o, "previous_response_id", in->prev_id);
    svc_json_set_bool(o, "store", true);
    svc_json_set_str(o, "truncation", in->no_truncation ? "disabled" : "auto");
    svc_json_set(o, "usage", NULL);
    svc_json_set_str(o, "user", in->t.user);
    svc_json_set(o, "metadata",
                 in->metadata ? svc_json_copy(in->metadata) : json_object_new_object());
    json_object *conv = json_object_new_object();
    svc_json_set_str(conv, "id", svc_json_str(run, "session_id", NULL));
    svc_json_set(o, "conversation", conv);
    svc_json_set_str(o, "session_id", svc_json_str(run, "session_id", NULL));
    svc_json_set_str(o, "run_id", svc_json_str(run, "run_id", NULL));
    return o;
}

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
            usage_of(svc_json_int(u, "prompt_tokens", 0), svc_json_int(u, "completion_tokens", 0)));
    }
    json_object *e = svc_json_obj(rec, "error");
    if (strcmp(st, "error") == 0 && e) {
        json_object *oe = json_object_new_object();
        svc_json_set_str(oe, "code", svc_json_str(e, "code", "internal_error"));
        svc_json_set_str(oe, "message", svc_json_str(e, "message", ""));
        svc_json_set(o, "error", oe);
    }
    json_object_put(rec);
}

/* ---- a background response's event stream, resumable (SPEC 12.3) ----
 * Numbered from the run's events so that every replay numbers alike: 0..3 open the
 * message (created, in_progress, output_item.added, content_part.added), run event seq k
 * is 3 + k (delta: output_text.delta; others: svc.event), and its done closes with 3 + k..
 * 6 + k (output_text.done, content_part.done, output_item.done, response.completed); its
 * error is response.failed at 3 + k. The events are those of a foreground stream (emit_*),
 * numbered here. */

struct bg_stream {
    struct resp_ctx c; /* msg_id, the numbering (from the run's events) and from */
    json_object *resp; /* the stored object, refreshed at the end */
};

/* The closing events after the run's done (seq k) or error. */
static int bg_close(struct bg_stream *b, int64_t k, bool done)
{
    background_refresh(b->c.r, b->resp);
    b->c.seq = 3 + k;
    if (!done)
        return emit(&b->c, "response.failed", with_response(svc_json_copy(b->resp)));
    const char *msg_id = "";
    return emit_closing(&b->c, stored_text(b->resp, &msg_id)) < 0 ||
                   emit(&b->c, "response.completed", with_response(svc_json_copy(b->resp))) < 0
               ? -1
               : 0;
}

/* One run event; *ended set on its done or error. 0, or -1 when the client is gone. */
static int bg_event(struct bg_stream *b, json_object *ev, bool *ended)
{
    const char *type = svc_json_str(ev, "type", "");
    int64_t k = svc_json_int(ev, "seq", 0);
    if (strcmp(type, "done") == 0 || strcmp(type, "error") == 0) {
        *ended = true;
        return bg_close(b, k, strcmp(type, "done") == 0);
    }
    b->c.seq = 3 + k;
    if (strcmp(type, "delta") == 0)
        return emit_delta(&b->c, svc_json_str(ev, "text", ""));
    json_object *o = json_object_new_object();
    svc_json_set(o, "svc_event", json_object_get(ev));
    return emit(&b->c, "svc.event", o);
}

/* Follow the run's events from the start, sending those from b->c.from, until its end. */
static int bg_follow(struct bg_stream *b)
{
    const char *run_id = svc_json_str(b->resp, "run_id", "");
    if (http_sse_begin(b->c.r) < 0 || emit_opening(&b->c, svc_json_copy(b->resp)) < 0)
        return 0;
    long cursor = 0;
    for (;;) {
        json_object *events = NULL;
        bool finished = false, ended = false;
        long next = cursor;
        if (svc_runs_events(b->c.r->cfg, run_id, cursor, &events, &next, &finished, NULL) < 0)
            return 0;
        int rc = 0;
        for (size_t i = 0; i < json_object_array_length(events) && !ended && rc == 0; i++)
            rc = bg_event(b, json_object_array_get_idx(events, i), &ended);
        size_t n = json_object_array_length(events);
        json_object_put(events);
        cursor = next;
        if (rc < 0 || ended || (finished && n == 0))
            return 0;
        if (!finished && svc_runs_wait(b->c.r->cfg, run_id, 1000) == 0 &&
            svc_time_monotonic() - b->c.r->last_write >= HTTP_PING_AFTER_S &&
            http_sse_ping(b->c.r) < 0)
            return 0;
    }
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
        snprintf(b.c.msg_id, sizeof b.c.msg_id, "msg_%s", svc_json_str(o, "id", "resp_") + 5);
        rc = bg_follow(&b);
    }
    json_object_put(o);
    return rc;
}

/* background: true: the run is spawned detached (it outlives this worker), the response is
 * stored in_progress and answered at once; GET reads the run's record for the rest. */
static int resp_background(struct http_req *r, struct resp_in *in, struct svc_err *err)
{
    struct svc_run_request req = run_request_of(r, in);
    json_object *run = NULL;
    bool replayed = false;
    if (svc_runs_spawn(r->cfg, &req, NULL, &run, &replayed, err) < 0)
        return -1;
    http_mark_run_began(r);
    http_set_session(r, svc_json_str(run, "session_id", NULL), true);
    char id[SVC_RESPONSE_ID_LEN];
    svc_responses_new_id("resp_", id, sizeof id);
    json_object *o = background_object(in, id, run), *kept = svc_json_copy(o);
    svc_json_set(kept, "input_items", json_object_get(in->items));
    int rc = svc_responses_put(r->cfg, kept, err);
    if (rc < 0) { /* nobody could poll it: stop it */
        json_object *c = NULL;
        svc_runs_cancel(r->cfg, svc_json_str(run, "run_id", ""), &c, NULL);
        json_object_put(c);
    } else if (in->t.stream) { /* the stream that bg_resume replays */
        struct bg_stream b = {.c = {.r = r}, .resp = o};
        snprintf(b.c.msg_id, sizeof b.c.msg_id, "msg_%s", id + 5);
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
    http_set_session(r, in.t.sid, false);
    if (in.background) {
        rc = resp_background(r, &in, err);
        goto out;
    }
    struct svc_run_request req = run_request_of(r, &in);
    if (svc_run_begin(r->cfg, &req, &run, err) < 0)
        goto out;
    http_mark_run_began(r);
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    http_set_session(r, a.session_id, true);
    struct resp_ctx c = {.r = r, .in = &in, .run = run, .created_at = (int64_t)svc_time_now()};
    svc_responses_new_id("resp_", c.id, sizeof c.id);
    svc_responses_new_id("msg_", c.msg_id, sizeof c.msg_id);
    rc = in.t.stream ? resp_stream(&c, err) : resp_plain(&c, err);
out:
    svc_run_free(run);
    resp_in_free(&in);
    return rc;
}

int h_response_delete(struct http_req *r, struct svc_err *err)
{
    const char *id = http_param(r, "response_id");
    if (svc_responses_delete(r->cfg, id, err) < 0)
        return -1;
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "id", id);
    svc_json_set_str(o, "object", "response");
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
