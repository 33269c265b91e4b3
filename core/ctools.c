#include "ctools.h"

#include <string.h>

#include "jsonx.h"
#include "parts.h"
#include "tools.h"

bool svc_ctools_named(json_object *tools, const char *name)
{
    size_t n = tools ? json_object_array_length(tools) : 0;
    for (size_t i = 0; i < n && name; i++) {
        json_object *t = json_object_array_get_idx(tools, i);
        const char *tn = json_object_is_type(t, json_type_string) ? json_object_get_string(t)
                                                                  : svc_json_str(t, "name", "");
        if (strcmp(tn, name) == 0)
            return true;
    }
    return false;
}

int svc_ctools_check(const struct svc_config *cfg, const char *user, json_object *tools,
                     const char *tool_choice, struct svc_err *err)
{
    size_t n = tools ? json_object_array_length(tools) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = svc_json_str(json_object_array_get_idx(tools, i), "name", "");
        if (svc_tools_owns(cfg, user, name))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "tools",
                                "tool '%.64s' clashes with a tool svc runs itself; rename it",
                                name);
    }
    if (tool_choice && strcmp(tool_choice, "auto") != 0 && strcmp(tool_choice, "none") != 0 &&
        strcmp(tool_choice, "required") != 0 && !svc_ctools_named(tools, tool_choice))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "tool_choice",
                            "'tool_choice' names '%.64s', which is not among 'tools'", tool_choice);
    return 0;
}

json_object *svc_ctools_pending(json_object *msg)
{
    json_object *out = json_object_new_array();
    if (!msg || strcmp(svc_json_str(msg, "role", ""), "assistant") != 0)
        return out;
    json_object *c = svc_json_arr(msg, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *tu = svc_json_obj(json_object_array_get_idx(c, i), "toolUse");
        if (tu)
            json_object_array_add(out, json_object_get(tu));
    }
    return out;
}

/* Each result answers a pending call, once: the results by call id (a hash: linear in the
 * body, however long; new reference), or NULL with err. */
static json_object *check_results(json_object *pending, json_object *results, struct svc_err *err)
{
    json_object *open = json_object_new_object(), *answered = json_object_new_object();
    for (size_t k = 0; k < json_object_array_length(pending); k++)
        json_object_object_add(
            open, svc_json_str(json_object_array_get_idx(pending, k), "toolUseId", ""), NULL);
    int rc = 0;
    size_t n = json_object_array_length(results);
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *r = json_object_array_get_idx(results, i);
        const char *id = svc_json_str(r, "call_id", "");
        const char *param = svc_json_str(r, "param", "tool_call_id");
        if (!json_object_object_get_ex(open, id, NULL))
            rc = svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                              "'%s': no pending tool call has the id '%.64s' (unknown or "
                              "already answered)",
                              param, id);
        else if (json_object_object_get_ex(answered, id, NULL))
            rc = svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                              "'%s': tool call '%.64s' is answered twice", param, id);
        else
            json_object_object_add(answered, id, json_object_get(r));
    }
    json_object_put(open);
    if (rc < 0) {
        json_object_put(answered);
        return NULL;
    }
    return answered;
}

int svc_ctools_answer(json_object *pending, json_object *results, json_object **out,
                      json_object *names, struct svc_err *err)
{
    *out = NULL;
    json_object *answered = check_results(pending, results, err);
    if (!answered)
        return -1;
    json_object *content = json_object_new_array();
    for (size_t k = 0; k < json_object_array_length(pending); k++) {
        json_object *tu = json_object_array_get_idx(pending, k);
        const char *id = svc_json_str(tu, "toolUseId", "");
        json_object *r = svc_json_obj(answered, id);
        if (r)
            json_object_array_add(names, json_object_new_string(svc_json_str(tu, "name", "")));
        json_object_array_add(content,
                              r ? svc_parts_result(id, "success", svc_json_str(r, "output", ""))
                                : svc_parts_result(id, "error", "No result was given."));
    }
    json_object_put(answered);
    *out = svc_parts_message("user", content);
    return 0;
}

bool svc_ctools_approvals(json_object *results)
{
    json_object *v = NULL;
    for (size_t i = 0; results && i < json_object_array_length(results); i++)
        if (json_object_object_get_ex(json_object_array_get_idx(results, i), "approve", &v))
            return true;
    return false;
}

int svc_ctools_resume(json_object *pending, json_object *results, json_object **out,
                      struct svc_err *err)
{
    *out = NULL;
    json_object *answered = check_results(pending, results, err);
    if (!answered)
        return -1;
    *out = json_object_new_array();
    for (size_t k = 0; k < json_object_array_length(pending); k++) {
        json_object *tu = svc_json_copy(json_object_array_get_idx(pending, k));
        json_object *r = svc_json_obj(answered, svc_json_str(tu, "toolUseId", ""));
        if (r)
            svc_json_set(tu, "answer", json_object_get(r));
        json_object_array_add(*out, tu);
    }
    json_object_put(answered);
    return 0;
}

json_object *svc_ctools_interrupted(json_object *pending)
{
    size_t n = pending ? json_object_array_length(pending) : 0;
    if (n == 0)
        return NULL;
    json_object *content = json_object_new_array();
    for (size_t k = 0; k < n; k++)
        json_object_array_add(
            content,
            svc_parts_result(svc_json_str(json_object_array_get_idx(pending, k), "toolUseId", ""),
                             "error", "Tool call was interrupted; no result is available."));
    return svc_parts_message("user", content);
}
