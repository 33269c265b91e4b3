#include "strands.h"

#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "parts.h"
#include "util.h"

/* The interrupt state when activated (borrowed), or NULL. */
static json_object *active(json_object *agent)
{
    json_object *is = svc_json_obj(svc_json_obj(agent, "_internal_state"), "interrupt_state");
    return svc_json_bool(is, "activated", false) ? is : NULL;
}

/* The item of the array arr (may be NULL) whose key is id (borrowed), or NULL. */
static json_object *by_id(json_object *arr, const char *key, const char *id)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *r = json_object_array_get_idx(arr, i);
        if (strcmp(svc_json_str(r, key, ""), id) == 0)
            return r;
    }
    return NULL;
}

json_object *svc_strands_pending(json_object *agent)
{
    json_object *is = active(agent);
    if (!is)
        return NULL;
    json_object *msg = svc_json_obj(svc_json_obj(is, "context"), "tool_use_message");
    json_object *c = svc_json_arr(msg, "content"), *out = json_object_new_array();
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *tu = svc_json_obj(json_object_array_get_idx(c, i), "toolUse");
        if (tu && !by_id(svc_json_arr(svc_json_obj(is, "context"), "tool_results"), "toolUseId",
                         svc_json_str(tu, "toolUseId", "")))
            json_object_array_add(out, json_object_get(tu));
    }
    return out;
}

/* The interrupt raised for call id (borrowed), or NULL: its id names the call
 * ("v1:before_tool_call:<toolUseId>:<uuid>", "v1:tool_call:<toolUseId>:<uuid>"). */
static json_object *interrupt_of(json_object *is, const char *id)
{
    json_object *all = svc_json_obj(is, "interrupts");
    if (!all)
        return NULL;
    json_object_object_foreach(all, key, intr)
    {
        const char *p = strchr(key, ':'), *q = p ? strchr(p + 1, ':') : NULL;
        const char *end = q ? strrchr(q + 1, ':') : NULL;
        if (end && (size_t)(end - q - 1) == strlen(id) && strncmp(q + 1, id, strlen(id)) == 0)
            return intr;
    }
    return NULL;
}

static json_object *declined(json_object *is, json_object *tu)
{
    const char *id = svc_json_str(tu, "toolUseId", "");
    json_object *intr = interrupt_of(is, id);
    char *text = NULL;
    svc_xasprintf(&text, "The user declined this call (interrupt '%s'); it was not run.",
                  svc_json_str(intr, "name", "?"));
    json_object *blk = svc_parts_result(id, "error", text);
    free(text);
    return blk;
}

int svc_strands_close(json_object *agent, json_object *results, json_object **out,
                      json_object *names, struct svc_err *err)
{
    *out = NULL;
    json_object *is = active(agent), *pending = svc_strands_pending(agent);
    size_t n = pending ? json_object_array_length(pending) : 0;
    for (size_t i = 0; results && i < json_object_array_length(results); i++) {
        json_object *r = json_object_array_get_idx(results, i);
        const char *id = svc_json_str(r, "call_id", ""), *param = svc_json_str(r, "param", "");
        if (!by_id(pending, "toolUseId", id)) {
            json_object_put(pending);
            return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                                "'%s': no interrupted call has the id '%.64s'", param, id);
        }
    }
    json_object *content = json_object_new_array();
    json_object *own = svc_json_arr(svc_json_obj(is, "context"), "tool_results");
    for (size_t i = 0; own && i < json_object_array_length(own); i++)
        json_object_array_add(
            content,
            svc_parts_wrap("toolResult", svc_json_copy(json_object_array_get_idx(own, i))));
    for (size_t k = 0; k < n; k++) {
        json_object *tu = json_object_array_get_idx(pending, k);
        json_object *r = by_id(results, "call_id", svc_json_str(tu, "toolUseId", ""));
        if (r)
            json_object_array_add(names, json_object_new_string(svc_json_str(tu, "name", "")));
        json_object_array_add(content,
                              r ? svc_parts_result(svc_json_str(tu, "toolUseId", ""), "success",
                                                   svc_json_str(r, "output", ""))
                                : declined(is, tu));
    }
    json_object_put(pending);
    *out = svc_parts_message("user", content);
    return 0;
}

void svc_strands_deactivate(json_object *agent)
{
    json_object *is = svc_json_obj(svc_json_obj(agent, "_internal_state"), "interrupt_state");
    if (!is)
        return;
    svc_json_set(is, "interrupts", json_object_new_object());
    svc_json_set(is, "context", json_object_new_object());
    svc_json_set_bool(is, "activated", false);
}

json_object *svc_strands_interrupts(json_object *agent)
{
    json_object *is = active(agent), *pending = svc_strands_pending(agent);
    if (!is)
        return NULL;
    json_object *out = json_object_new_array();
    for (size_t k = 0; k < json_object_array_length(pending); k++) {
        json_object *tu = json_object_array_get_idx(pending, k);
        const char *id = svc_json_str(tu, "toolUseId", "");
        json_object *intr = interrupt_of(is, id);
        json_object *v = svc_json_new_obj("id", svc_json_str(intr, "id", NULL), "name",
                                          svc_json_str(intr, "name", NULL), NULL);
        svc_json_set(v, "reason", json_object_get(json_object_object_get(intr, "reason")));
        svc_json_set_str(v, "tool_use_id", id);
        svc_json_set_str(v, "tool", svc_json_str(tu, "name", NULL));
        json_object_array_add(out, v);
    }
    json_object_put(pending);
    return out;
}

json_object *svc_strands_multi_agent(json_object *state)
{
    json_object *v = json_object_new_object(), *nodes = NULL;
    svc_json_set_str(v, "id", svc_json_str(state, "id", NULL));
    svc_json_set_str(v, "type", svc_json_str(state, "type", NULL));
    svc_json_set_str(v, "status", svc_json_str(state, "status", NULL));
    const char *key = svc_json_arr(state, "node_history") ? "node_history" : "completed_nodes";
    if (json_object_object_get_ex(state, key, &nodes))
        svc_json_set(v, key, json_object_get(nodes));
    return v;
}
