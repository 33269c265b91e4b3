#include "toolsin.h"

#include <stdio.h>
#include <string.h>

#include "http.h"
#include "jsonx.h"

/* One tool: {name, description, parameters} appended to out; seen holds the names so far
 * (a hash: the check stays linear in the number of tools). */
static int tool_one(json_object *t, size_t i, bool nested, json_object *out, json_object *seen,
                    struct svc_err *err)
{
    char p[96], q[128], qname[128];
    const char *type = NULL, *name = NULL, *desc = NULL;
    json_object *fn = t, *params = NULL;
    snprintf(p, sizeof p, "tools[%zu]", i);
    if (!json_object_is_type(t, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be an object", p);
    snprintf(q, sizeof q, "%s.type", p);
    if (http_field_str(t, "type", q, true, &type, err) < 0)
        return -1;
    if (strcmp(type, "function") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' must be function: svc takes function tools only", q);
    if (nested) {
        snprintf(q, sizeof q, "%s.function", p);
        if (http_field_obj(t, "function", q, true, &fn, err) < 0)
            return -1;
        snprintf(p, sizeof p, "tools[%zu].function", i);
    }
    snprintf(qname, sizeof qname, "%s.name", p);
    if (http_field_str(fn, "name", qname, true, &name, err) < 0)
        return -1;
    if (!*name || strlen(name) > 64 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
                     "UVWXYZ0123456789_-") != strlen(name))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, qname,
                            "'%s' must be 1 to 64 letters, digits, '_' or '-'", qname);
    snprintf(q, sizeof q, "%s.description", p);
    if (http_field_str(fn, "description", q, false, &desc, err) < 0)
        return -1;
    snprintf(q, sizeof q, "%s.parameters", p);
    if (http_field_obj(fn, "parameters", q, false, &params, err) < 0)
        return -1;
    if (json_object_object_get_ex(seen, name, NULL))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, qname, "tool '%.64s' is given twice", name);
    json_object_object_add(seen, name, NULL);
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "name", name);
    if (desc)
        svc_json_set_str(o, "description", desc);
    if (params)
        svc_json_set(o, "parameters", svc_json_copy(params));
    json_object_array_add(out, o);
    return 0;
}

/* tool_choice: a mode, or {"type": "function", "function": {"name"}} (chat) /
 * {"type": "function", "name"} (Responses). */
static int choice_of(json_object *body, bool nested, const char **choice, struct svc_err *err)
{
    json_object *v = NULL, *fn = NULL;
    *choice = NULL;
    if (!json_object_object_get_ex(body, "tool_choice", &v) || !v)
        return 0;
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        if (strcmp(s, "auto") != 0 && strcmp(s, "none") != 0 && strcmp(s, "required") != 0)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "tool_choice",
                                "'tool_choice' must be auto, none, required or a function");
        *choice = s;
        return 0;
    }
    const char *type = NULL;
    if (!json_object_is_type(v, json_type_object) ||
        http_field_str(v, "type", "tool_choice.type", true, &type, err) < 0 ||
        strcmp(type, "function") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "tool_choice",
                            "'tool_choice' must be auto, none, required or a function");
    if (!nested)
        return http_field_str(v, "name", "tool_choice.name", true, choice, err);
    if (http_field_obj(v, "function", "tool_choice.function", true, &fn, err) < 0)
        return -1;
    return http_field_str(fn, "name", "tool_choice.function.name", true, choice, err);
}

int toolsin_parse(json_object *body, bool nested, json_object **tools, const char **choice,
                  struct svc_err *err)
{
    json_object *arr = NULL;
    bool parallel = true;
    *tools = NULL;
    if (http_field_arr(body, "tools", NULL, false, &arr, err) < 0 ||
        http_field_bool(body, "parallel_tool_calls", NULL, true, &parallel, err) < 0 ||
        choice_of(body, nested, choice, err) < 0)
        return -1;
    if (!arr || json_object_array_length(arr) == 0)
        return 0;
    json_object *out = json_object_new_array(), *seen = json_object_new_object();
    int rc = 0;
    for (size_t i = 0; i < json_object_array_length(arr) && rc == 0; i++)
        rc = tool_one(json_object_array_get_idx(arr, i), i, nested, out, seen, err);
    json_object_put(seen);
    if (rc < 0) {
        json_object_put(out);
        return -1;
    }
    *tools = out;
    return 0;
}
