#include "toolsin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "jsonx.h"
#include "mcp.h"
#include "util.h"

/* One tool appended to out as {name, description, parameters, strict}; seen: the names so far. */
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
    if (!nested && strcmp(type, "mcp") == 0)
        return 0; /* toolsin_mcp reads it */
    if (strcmp(type, "function") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q, "'%s' must be function%s", q,
                            nested ? "" : " or mcp");
    static const char *const keys[] = {"type", "name", "description", "parameters", "strict"};
    static const char *const outer[] = {"type", "function"};
    if (nested) {
        snprintf(q, sizeof q, "%s.function", p);
        if (http_known_fields(t, p, outer, 2, err) < 0 ||
            http_field_obj(t, "function", q, true, &fn, err) < 0)
            return -1;
        snprintf(p, sizeof p, "tools[%zu].function", i);
    }
    if (http_known_fields(fn, p, keys + nested, 5 - nested, err) < 0)
        return -1;
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
    json_object *strict =
        json_object_object_get(fn, "strict"); /* passed on to the model (SPEC 15) */
    snprintf(q, sizeof q, "%s.strict", p);
    if (strict && !json_object_is_type(strict, json_type_boolean))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q, "'%s' must be a boolean", q);
    if (json_object_object_get_ex(seen, name, NULL))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, qname, "tool '%.64s' is given twice", name);
    json_object_object_add(seen, name, NULL);
    json_object *o = svc_json_new_obj("name", name, NULL);
    if (desc)
        svc_json_set_str(o, "description", desc);
    if (params)
        svc_json_set(o, "parameters", svc_json_copy(params));
    if (strict)
        svc_json_set(o, "strict", json_object_get(strict));
    json_object_array_add(out, o);
    return 0;
}

/* tool_choice: a mode, or a function ({"function": {"name"}} in chat, {"name"} flat). */
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
    if (json_object_array_length(out) == 0)
        json_object_put(out);
    else
        *tools = out;
    return 0;
}

/* ---- remote MCP servers (SPEC 16) ---- */

/* A list of tool names, or {"tool_names": [...]}: a new array of the names. */
static int mcp_names(json_object *v, const char *param, json_object **out, struct svc_err *err)
{
    static const char *const filter[] = {"tool_names"};
    bool filtered = json_object_is_type(v, json_type_object);
    const char *k = filtered ? http_unknown_key(v, filter, 1) : NULL;
    json_object *names = filtered ? svc_json_arr(v, "tool_names") : v;
    *out = NULL;
    if (k)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                            "'%s' takes tool_names only (not %.32s)", param, k);
    if (!json_object_is_type(names, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                            "'%s' must be a list of tool names or {\"tool_names\": [...]}", param);
    for (size_t i = 0; i < json_object_array_length(names); i++)
        if (!json_object_is_type(json_object_array_get_idx(names, i), json_type_string))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must list strings", param);
    *out = json_object_get(names);
    return 0;
}

/* require_approval: "always", "never" or {"always": names, "never": names} as spec's approval. */
static int mcp_approval(json_object *t, const char *p, json_object *spec, struct svc_err *err)
{
    char q[128];
    json_object *v = NULL, *ap = svc_json_new_obj("default", "always", NULL);
    snprintf(q, sizeof q, "%s.require_approval", p);
    svc_json_set(spec, "approval", ap);
    if (!json_object_object_get_ex(t, "require_approval", &v) || !v)
        return 0;
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    if (strcmp(s, "always") == 0 || strcmp(s, "never") == 0) {
        svc_json_set_str(ap, "default", s);
        return 0;
    }
    if (!json_object_is_type(v, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q, "'%s' must be always, never or a filter",
                            q);
    json_object_object_foreach(v, k, val)
    {
        char r[160];
        json_object *names = NULL;
        snprintf(r, sizeof r, "%s.%.16s", q, k);
        if (strcmp(k, "always") != 0 && strcmp(k, "never") != 0)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, r, "'%s' is not always or never", r);
        if (mcp_names(val, r, &names, err) < 0)
            return -1;
        svc_json_set(ap, k, names);
    }
    return 0;
}

/* The headers of a remote server: headers (an object of strings) and authorization. */
static int mcp_headers(json_object *t, const char *p, json_object *spec, struct svc_err *err)
{
    char q[128];
    json_object *h = NULL, *out = json_object_new_object();
    const char *auth = NULL;
    svc_json_set(spec, "headers", out);
    snprintf(q, sizeof q, "%s.headers", p);
    if (http_field_obj(t, "headers", q, false, &h, err) < 0)
        return -1;
    if (!h)
        h = out; /* none: an empty object to walk */
    json_object_object_foreach(h, k, v)
    {
        if (!json_object_is_type(v, json_type_string) ||
            strpbrk(json_object_get_string(v), "\r\n") ||
            strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(k))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                                "'%s' must map header names to one-line strings", q);
        svc_json_set_str(out, k, json_object_get_string(v));
    }
    snprintf(q, sizeof q, "%s.authorization", p);
    if (http_field_str(t, "authorization", q, false, &auth, err) < 0)
        return -1;
    if (auth && strpbrk(auth, "\r\n"))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q, "'%s' must be one line", q);
    if (auth) {
        char *b = NULL;
        svc_xasprintf(&b, "Bearer %s", auth);
        svc_json_set_str(out, "Authorization", b);
        free(b);
    }
    return 0;
}

/* The server a tool names: a URL under mcp.remote_allow, or a configured server u may use. */
static int mcp_where(const struct svc_config *cfg, const struct svc_user *u, json_object *t,
                     const char *p, json_object *spec, struct svc_err *err)
{
    char q[128];
    const char *label = NULL, *url = NULL;
    snprintf(q, sizeof q, "%s.server_label", p);
    if (http_field_str(t, "server_label", q, true, &label, err) < 0)
        return -1;
    size_t n = strlen(label);
    if (n < 1 || n > 32 || strstr(label, "__") ||
        strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' must be 1 to 32 letters, digits, '_' or '-' (no \"__\")", q);
    svc_json_set_str(spec, "label", label);
    const struct svc_mcp_server *conf = NULL;
    for (size_t i = 0; i < cfg->nmcp_servers; i++)
        if (strcmp(cfg->mcp_servers[i].name, label) == 0 &&
            svc_mcp_usable(&cfg->mcp_servers[i], u->id))
            conf = &cfg->mcp_servers[i];
    snprintf(q, sizeof q, "%s.server_url", p);
    if (http_field_str(t, "server_url", q, false, &url, err) < 0)
        return -1;
    if (url && conf)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' names a configured MCP server: leave out '%s' to use it", label,
                            q);
    if (url && !svc_mcp_url_allowed(cfg->mcp.remote_allow, url))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' is not under mcp.remote_allow: svc calls only the MCP servers "
                            "its operator allowed",
                            q);
    if (!url && !conf)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' is required: no configured MCP server is named '%.32s'", q,
                            label);
    svc_json_set_str(spec, "url", url);
    return 0;
}

/* One "type": "mcp" tool: its spec (session.h, mcp_tools) and the tool as a response shows it. */
static int mcp_one(const struct svc_config *cfg, const struct svc_user *u, json_object *t, size_t i,
                   json_object *specs, json_object *shown, struct svc_err *err)
{
    static const char *const keys[] = {
        "type",    "server_label",     "server_url",         "allowed_tools",
        "headers", "require_approval", "server_description", "authorization"};
    char p[64], q[128];
    json_object *v = NULL, *allowed = NULL, *spec = json_object_new_object();
    json_object_array_add(specs, spec);
    snprintf(p, sizeof p, "tools[%zu]", i);
    const char *k = http_unknown_key(t, keys, sizeof keys / sizeof *keys);
    snprintf(q, sizeof q, "%s.%.32s", p, k ? k : "");
    if (k)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q, "'%s' is not supported", q);
    if (mcp_where(cfg, u, t, p, spec, err) < 0 || mcp_approval(t, p, spec, err) < 0 ||
        mcp_headers(t, p, spec, err) < 0)
        return -1;
    snprintf(q, sizeof q, "%s.headers", p);
    if (!svc_json_str(spec, "url", NULL) &&
        json_object_object_length(svc_json_obj(spec, "headers")))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, q,
                            "'%s' is for a server_url: a configured server has its own", q);
    snprintf(q, sizeof q, "%s.allowed_tools", p);
    if ((v = json_object_object_get(t, "allowed_tools")) && mcp_names(v, q, &allowed, err) < 0)
        return -1;
    svc_json_set(spec, "allowed", allowed);
    for (size_t j = 0; j + 1 < json_object_array_length(specs); j++)
        if (strcmp(svc_json_str(json_object_array_get_idx(specs, j), "label", ""),
                   svc_json_str(spec, "label", "")) == 0)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                                "'%s': server_label '%.32s' is given twice", p,
                                svc_json_str(spec, "label", ""));
    json_object *echo = svc_json_copy(t);
    json_object_object_del(echo, "authorization");
    if (json_object_object_get_ex(echo, "headers", &v))
        svc_json_set(echo, "headers", NULL); /* never shown nor stored */
    json_object_array_add(shown, echo);
    return 0;
}

int toolsin_mcp(const struct svc_config *cfg, const struct svc_user *u, json_object *body,
                json_object **specs, json_object **shown, struct svc_err *err)
{
    json_object *arr = svc_json_arr(body, "tools");
    *specs = *shown = NULL;
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *t = json_object_array_get_idx(arr, i);
        if (strcmp(svc_json_str(t, "type", ""), "mcp") != 0)
            continue;
        if (!*specs) {
            *specs = json_object_new_array();
            *shown = json_object_new_array();
        }
        if (mcp_one(cfg, u, t, i, *specs, *shown, err) < 0)
            return -1;
    }
    return 0;
}
