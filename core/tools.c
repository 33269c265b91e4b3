#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extension.h"
#include "jsonx.h"
#include "mcp.h"
#include "util.h"

/* The tool a model may call, named name; with kind, also a row of GET /api/extensions. */
static json_object *spec(const char *name, const char *kind, const char *description,
                         json_object *parameters)
{
    json_object *s = svc_json_new_obj("name", name, NULL);
    if (kind)
        svc_json_set_str(s, "kind", kind);
    svc_json_set_str(s, "description", description ? description : "");
    svc_json_set(s, "parameters",
                 parameters ? svc_json_copy(parameters)
                            : json_tokener_parse("{\"type\": \"object\", \"properties\": {}}"));
    return s;
}

static json_object *tool_row(const char *name, const char *kind, const char *description,
                             json_object *parameters, bool enabled, bool builtin)
{
    json_object *t = spec(name, kind ? kind : "tool", description, parameters);
    svc_json_set_bool(t, "enabled", enabled);
    svc_json_set_bool(t, "builtin", builtin);
    return t;
}

/* The enabled extension named name, or NULL. */
static const struct svc_extension *extension(const struct svc_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nextensions; i++)
        if (cfg->extensions[i].enabled && strcmp(cfg->extensions[i].name, name) == 0)
            return &cfg->extensions[i];
    return NULL;
}

json_object *svc_tools_list(const struct svc_config *cfg, const char *user, bool all)
{
    json_object *out = json_object_new_object(), *own = json_object_new_array(),
                *servers = json_object_new_array();
    json_object_array_add(own, tool_row("clock", "tool", "Current UTC time", NULL, true, true));
    for (size_t i = 0; i < cfg->nextensions; i++) {
        const struct svc_extension *x = &cfg->extensions[i];
        json_object_array_add(
            own, tool_row(x->name, x->kind, x->description, x->parameters, x->enabled, false));
    }
    svc_json_set(out, "extensions", own);
    for (size_t i = 0; i < cfg->nmcp_servers; i++) {
        const struct svc_mcp_server *s = &cfg->mcp_servers[i];
        if (all || svc_mcp_usable(s, user))
            json_object_array_add(servers,
                                  svc_mcp_status(svc_mcp_configured(cfg, s->name), s->enabled));
    }
    svc_json_set(out, "mcp_servers", servers);
    return out;
}

/* "<server>__<tool>": a name the model accepts (1..64 of A-Za-z0-9_-), in buf. */
static bool mcp_name(const char *server, const char *tool, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s__%s", server, tool);
    return n > 0 && n <= 64 && (size_t)n < size &&
           strspn(buf, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
               (size_t)n;
}

json_object *svc_tools_spec(const struct svc_config *cfg, const char *user)
{
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, spec("clock", NULL, "Current UTC time", NULL));
    for (size_t i = 0; i < cfg->nextensions; i++) {
        const struct svc_extension *x = &cfg->extensions[i];
        if (x->enabled)
            json_object_array_add(arr, spec(x->name, NULL, x->description, x->parameters));
    }
    for (size_t i = 0; i < cfg->nmcp_servers; i++) {
        const struct svc_mcp_server *s = &cfg->mcp_servers[i];
        json_object *tools = NULL;
        struct svc_err err;
        if (!svc_mcp_usable(s, user) ||
            svc_mcp_list(svc_mcp_configured(cfg, s->name), &tools, &err) != 0)
            continue; /* its state says why (GET /api/extensions) */
        for (size_t k = 0; k < json_object_array_length(tools); k++) {
            json_object *t = json_object_array_get_idx(tools, k);
            char name[80];
            if (mcp_name(s->name, svc_json_str(t, "name", ""), name, sizeof name))
                json_object_array_add(arr, spec(name, NULL, svc_json_str(t, "description", NULL),
                                                svc_json_obj(t, "inputSchema")));
        }
    }
    return arr;
}

/* The server of name ("<server>__<tool>") if user may use it, else NULL; *tool: the tool. */
static const struct svc_mcp_server *server_of(const struct svc_config *cfg, const char *user,
                                              const char *name, const char **tool)
{
    const char *sep = strstr(name, "__");
    for (size_t i = 0; sep && i < cfg->nmcp_servers; i++) {
        const struct svc_mcp_server *s = &cfg->mcp_servers[i];
        if (strlen(s->name) == (size_t)(sep - name) &&
            strncmp(s->name, name, (size_t)(sep - name)) == 0)
            return *tool = sep + 2, svc_mcp_usable(s, user) ? s : NULL;
    }
    return NULL;
}

bool svc_tools_owns(const struct svc_config *cfg, const char *user, const char *name)
{
    const char *tool;
    return strcmp(name, "clock") == 0 || server_of(cfg, user, name, &tool) || extension(cfg, name);
}

void svc_tools_call(const struct svc_config *cfg, const char *user, const char *name,
                    json_object *input, int (*should_cancel)(void *ctx), void *ctx,
                    struct svc_tool_result *out)
{
    const char *tool = NULL;
    const struct svc_mcp_server *s = server_of(cfg, user, name, &tool);
    const struct svc_extension *x = extension(cfg, name);
    char now[SVC_TIME_LEN];
    memset(out, 0, sizeof *out); /* the clock and an unknown name take no time: latency 0 */
    if (s) {
        svc_mcp_call(svc_mcp_configured(cfg, s->name), tool, input, should_cancel, ctx, out);
    } else if (x) {
        svc_ext_run(x, input, should_cancel, ctx, out);
    } else if (strcmp(name, "clock") == 0) {
        out->ok = true;
        out->content = svc_xstrdup(svc_time_now_iso(now));
    } else {
        svc_xasprintf(&out->content, "unknown tool: %s", name);
    }
}

void svc_tool_result_free(struct svc_tool_result *r)
{
    free(r->content);
    r->content = NULL;
    json_object_put(r->blocks);
    r->blocks = NULL;
    json_object_put(r->structured);
    r->structured = NULL;
}
