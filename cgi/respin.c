#include "respin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "conversation.h"
#include "jsonx.h"
#include "responses.h"
#include "user.h"
#include "util.h"

/* An input item as input_items lists it: typed, with an id, message text as parts. */
static json_object *input_item(json_object *item)
{
    json_object *o = svc_json_copy(item);
    if (!svc_json_str(o, "type", NULL))
        svc_json_set_str(o, "type", "message");
    const char *type = svc_json_str(o, "type", "message");
    json_object *content = json_object_object_get(o, "content");
    if (strcmp(type, "message") == 0 && json_object_is_type(content, json_type_string)) {
        bool out = strcmp(svc_json_str(o, "role", ""), "assistant") == 0;
        json_object *part = svc_json_new_obj("type", out ? "output_text" : "input_text", "text",
                                             json_object_get_string(content), NULL);
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

json_object *respin_items(json_object *input)
{
    json_object *items = json_object_new_array();
    if (json_object_is_type(input, json_type_string)) {
        json_object *m =
            svc_json_new_obj("role", "user", "content", json_object_get_string(input), NULL);
        json_object_array_add(items, input_item(m));
        json_object_put(m);
        return items;
    }
    for (size_t i = 0; i < json_object_array_length(input); i++)
        json_object_array_add(items, input_item(json_object_array_get_idx(input, i)));
    return items;
}

/* The text of an input item's content (heap): a string, or the text parts of a list joined
 * by newlines (images and files carry none). */
static int content_text(json_object *content, const char *param, char **out, struct svc_err *err)
{
    *out = NULL;
    if (json_object_is_type(content, json_type_string)) {
        if (turn_in_text(content, param, err) < 0)
            return -1;
        *out = svc_xstrdup(json_object_get_string(content));
        return 0;
    }
    if (!json_object_is_type(content, json_type_array))
        return svc_err_setp(err, content ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, param,
                            "'%s' must be a string or a list of content parts", param);
    struct svc_buf b;
    svc_buf_init(&b);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < json_object_array_length(content); k++) {
        json_object *part = json_object_array_get_idx(content, k), *text = NULL;
        const char *type = NULL;
        char pp[160], tp[176];
        snprintf(pp, sizeof pp, "%s[%zu]", param, k);
        snprintf(tp, sizeof tp, "%s.type", pp);
        if (!json_object_is_type(part, json_type_object))
            rc = svc_err_setp(err, SVC_E_INVALID_FIELD, pp, "'%s' must be an object", pp);
        else if (http_field_str(part, "type", tp, true, &type, err) < 0)
            rc = -1;
        else if (!strcmp(type, "input_text") || !strcmp(type, "output_text") ||
                 !strcmp(type, "text")) {
            snprintf(tp, sizeof tp, "%s.text", pp);
            json_object_object_get_ex(part, "text", &text);
            if ((rc = turn_in_text(text, tp, err)) == 0) {
                svc_buf_adds(&b, b.len ? "\n" : "");
                svc_buf_adds(&b, json_object_get_string(text));
            }
        }
    }
    if (rc < 0) {
        svc_buf_free(&b);
        return -1;
    }
    *out = b.data ? svc_buf_steal(&b) : svc_xstrdup("");
    return 0;
}

/* item's string key, named input[i].key in errors. */
static int item_str(json_object *item, size_t i, const char *key, bool required, const char **out,
                    struct svc_err *err)
{
    char p[96];
    snprintf(p, sizeof p, "input[%zu].%s", i, key);
    return http_field_str(item, key, p, required, out, err);
}

/* A function_call item as a tool_calls entry of msgs' last assistant message (or a new one). */
static int function_call_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL, *name = NULL, *args = NULL;
    if (item_str(item, i, "call_id", true, &id, err) < 0 ||
        item_str(item, i, "name", true, &name, err) < 0 ||
        item_str(item, i, "arguments", false, &args, err) < 0)
        return -1;
    char p[48];
    snprintf(p, sizeof p, "input[%zu]", i);
    if (turn_in_call(name, args, p, err) < 0)
        return -1;
    size_t n = json_object_array_length(msgs);
    json_object *m = n ? json_object_array_get_idx(msgs, n - 1) : NULL;
    if (!m || strcmp(svc_json_str(m, "role", ""), "assistant") != 0) {
        m = svc_json_new_obj("role", "assistant", "content", NULL, NULL);
        json_object_array_add(msgs, m);
    }
    json_object *calls = svc_json_arr(m, "tool_calls");
    if (!calls) {
        calls = json_object_new_array();
        svc_json_set(m, "tool_calls", calls);
    }
    json_object *tc = svc_json_new_obj("id", id, "type", "function", NULL);
    svc_json_set(tc, "function",
                 svc_json_new_obj("name", name, "arguments", args ? args : "{}", NULL));
    json_object_array_add(calls, tc);
    return 0;
}

/* A function_call_output item as a role "tool" chat message (param: where it was). */
static int function_output_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL;
    char p[96], q[96];
    snprintf(p, sizeof p, "input[%zu].call_id", i);
    snprintf(q, sizeof q, "input[%zu].output", i);
    if (http_field_str(item, "call_id", p, true, &id, err) < 0)
        return -1;
    char *text = NULL;
    if (content_text(json_object_object_get(item, "output"), q, &text, err) < 0)
        return -1;
    json_object_array_add(msgs, svc_json_new_obj("role", "tool", "tool_call_id", id, "content",
                                                 text, "param", p, NULL));
    free(text);
    return 0;
}

/* A message item as its chat message (a user message's images and files as parts, SPEC 17). */
static int message_in(struct http_req *r, json_object *item, size_t i, json_object *msgs,
                      struct svc_err *err)
{
    static const char *roles[] = {"user", "assistant", "system", "developer", NULL};
    const char *role = NULL;
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
    json_object *content = json_object_object_get(item, "content");
    char *text = NULL;
    json_object *parts = NULL;
    if (content_text(content, p, &text, err) < 0 ||
        (strcmp(role, "user") == 0 && resp_media_parts(r, content, p, &parts, err) < 0)) {
        free(text);
        return -1;
    }
    json_object *m = svc_json_new_obj("role", role, NULL);
    if (parts)
        svc_json_set(m, "content", parts);
    else
        svc_json_set_str(m, "content", text);
    json_object_array_add(msgs, m);
    free(text);
    return 0;
}

/* An mcp_approval_response item (SPEC 16) as a role "tool" message with "approve". */
static int approval_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *id = NULL;
    char p[96], q[96];
    snprintf(p, sizeof p, "input[%zu].approval_request_id", i);
    snprintf(q, sizeof q, "input[%zu].approve", i);
    json_object *v = json_object_object_get(item, "approve");
    if (http_field_str(item, "approval_request_id", p, true, &id, err) < 0)
        return -1;
    if (!json_object_is_type(v, json_type_boolean))
        return svc_err_setp(err, v ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, q,
                            "'%s' must be true or false", q);
    json_object *m = svc_json_new_obj("role", "tool", "tool_call_id",
                                      strncmp(id, "mcpr_", 5) == 0 ? id + 5 : id, NULL);
    svc_json_set_bool(m, "approve", json_object_get_boolean(v));
    svc_json_set_str(m, "param", p);
    json_object_array_add(msgs, m);
    return 0;
}

/* An mcp_call item sent back (a stateless history) as a function_call and its output. */
static int mcp_call_item(json_object *item, size_t i, json_object *msgs, struct svc_err *err)
{
    const char *label = NULL, *name = NULL, *id = NULL;
    char *full = NULL;
    if (item_str(item, i, "server_label", true, &label, err) < 0 ||
        item_str(item, i, "name", true, &name, err) < 0 ||
        item_str(item, i, "id", true, &id, err) < 0)
        return -1;
    json_object *call = svc_json_copy(item);
    svc_xasprintf(&full, "%s__%s", label, name);
    svc_json_set_str(call, "name", full);
    svc_json_set_str(call, "call_id", id);
    const char *error = svc_json_str(item, "error", NULL);
    json_object *out = svc_json_new_obj("call_id", id, "output",
                                        error ? error : svc_json_str(item, "output", ""), NULL);
    int rc =
        function_call_item(call, i, msgs, err) < 0 || function_output_item(out, i, msgs, err) < 0
            ? -1
            : 0;
    free(full);
    json_object_put(call);
    json_object_put(out);
    return rc;
}

/* An item_reference (SPEC 15): the item (new reference) of the asker's stored response
 * (msg_<hex>, fc_<hex>_<k>: resp_<hex>) or conversation it names; else 422 naming input[i].id. */
static int item_ref(struct http_req *r, json_object *item, size_t i, json_object **out,
                    struct svc_err *err)
{
    const char *id = NULL, *hex = NULL;
    char p[64], rid[SVC_RESPONSE_ID_LEN];
    snprintf(p, sizeof p, "input[%zu].id", i);
    *out = NULL;
    if (http_field_str(item, "id", p, true, &id, err) < 0)
        return -1;
    if (strncmp(id, "msg_", 4) == 0 || strncmp(id, "fc_", 3) == 0)
        hex = strchr(id, '_') + 1;
    json_object *resp = NULL;
    if (hex && strspn(hex, "0123456789abcdef") == 32 && (!hex[32] || hex[32] == '_')) {
        snprintf(rid, sizeof rid, "resp_%.32s", hex);
        json_object *output =
            access_response(r, rid, &resp, NULL) == 0 ? svc_json_arr(resp, "output") : NULL;
        for (size_t k = 0; output && !*out && k < json_object_array_length(output); k++)
            if (strcmp(svc_json_str(json_object_array_get_idx(output, k), "id", ""), id) == 0)
                *out = json_object_get(json_object_array_get_idx(output, k));
    } else {
        svc_conv_find_item(r->cfg, svc_user_scope(&r->user), id, out, NULL);
    }
    json_object_put(resp);
    return *out ? 0
                : svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                               "'%s': no stored item '%.64s' (of a response or conversation)", p,
                               id);
}

/* One input item appended to msgs as chat messages, by its type. */
static int item_in(struct http_req *r, json_object *item, size_t i, json_object *msgs,
                   struct svc_err *err)
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
        return message_in(r, item, i, msgs, err);
    if (strcmp(type, "compaction") == 0)
        return resp_compaction_in(r, item, i, msgs, err);
    if (strcmp(type, "item_reference") == 0) {
        json_object *ref = NULL;
        int rc = item_ref(r, item, i, &ref, err);
        if (rc == 0 && strcmp(svc_json_str(ref, "type", ""), "item_reference") != 0)
            rc = item_in(r, ref, i, msgs, err);
        json_object_put(ref);
        return rc;
    }
    if (strcmp(type, "mcp_list_tools") == 0 || strcmp(type, "mcp_approval_request") == 0)
        return 0; /* a listing, or what the session holds (SPEC 16) */
    if (strcmp(type, "mcp_approval_response") == 0)
        return approval_item(item, i, msgs, err);
    if (strcmp(type, "mcp_call") == 0)
        return mcp_call_item(item, i, msgs, err);
    if (strcmp(type, "function_call") == 0)
        return function_call_item(item, i, msgs, err);
    if (strcmp(type, "function_call_output") == 0)
        return function_output_item(item, i, msgs, err);
    return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                        "'%s' must be message, function_call, function_call_output, "
                        "item_reference, compaction or an mcp_ item, not %.64s",
                        p, type);
}

int respin_input(struct http_req *r, struct turn_in *t, json_object *input, struct svc_err *err)
{
    if (!input)
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "input", "'input' is required");
    if (json_object_is_type(input, json_type_string)) {
        if (turn_in_text(input, "input", err) < 0)
            return -1;
        if (!*json_object_get_string(input))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "input", "'input' must not be empty");
        t->input = svc_xstrdup(json_object_get_string(input));
        return 0;
    }
    if (!json_object_is_type(input, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "input",
                            "'input' must be a string or a list of messages");
    json_object *msgs = json_object_new_array();
    int rc = -1;
    for (size_t i = 0; i < json_object_array_length(input); i++)
        if (item_in(r, json_object_array_get_idx(input, i), i, msgs, err) < 0)
            goto out;
    rc = turn_in_split(t, msgs, "input", err);
out:
    json_object_put(msgs);
    return rc;
}
