#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extension.h"
#include "jsonx.h"
#include "util.h"

static json_object *empty_schema(void)
{
    json_object *params = json_object_new_object();
    svc_json_set_str(params, "type", "object");
    svc_json_set(params, "properties", json_object_new_object());
    return params;
}

static json_object *tool_row(const char *name, const char *kind, const char *description,
                             json_object *parameters, bool enabled, bool builtin)
{
    json_object *t = json_object_new_object();
    svc_json_set_str(t, "name", name);
    svc_json_set_str(t, "kind", kind ? kind : "tool");
    svc_json_set_str(t, "description", description ? description : "");
    svc_json_set(t, "parameters", parameters ? svc_json_copy(parameters) : empty_schema());
    svc_json_set_bool(t, "enabled", enabled);
    svc_json_set_bool(t, "builtin", builtin);
    return t;
}

json_object *svc_tools_list(const struct svc_config *cfg)
{
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, tool_row("clock", "tool", "Current UTC time", NULL, true, true));
    for (size_t i = 0; i < cfg->nextensions; i++) {
        const struct svc_extension *x = &cfg->extensions[i];
        json_object_array_add(
            arr, tool_row(x->name, x->kind, x->description, x->parameters, x->enabled, false));
    }
    return arr;
}

json_object *svc_tools_spec(const struct svc_config *cfg)
{
    json_object *all = svc_tools_list(cfg);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        json_object *t = json_object_array_get_idx(all, i);
        if (!svc_json_bool(t, "enabled", false))
            continue;
        json_object *s = json_object_new_object();
        static const char *keys[] = {"name", "description", "parameters"};
        for (int k = 0; k < 3; k++) {
            json_object *v = NULL;
            json_object_object_get_ex(t, keys[k], &v);
            svc_json_set(s, keys[k], json_object_get(v));
        }
        json_object_array_add(arr, s);
    }
    json_object_put(all);
    return arr;
}

void svc_tools_call_cancel(const struct svc_config *cfg, const char *name, json_object *input,
                           int (*should_cancel)(void *ctx), void *ctx, struct svc_tool_result *out)
{
    double t0 = svc_time_monotonic();
    memset(out, 0, sizeof *out);
    if (strcmp(name, "clock") == 0) {
        char now[SVC_TIME_LEN];
        svc_time_now_iso(now);
        out->ok = true;
        out->content = svc_xstrdup(now);
    } else {
        for (size_t i = 0; i < cfg->nextensions; i++)
            if (cfg->extensions[i].enabled && strcmp(cfg->extensions[i].name, name) == 0) {
                svc_ext_run(&cfg->extensions[i], input, should_cancel, ctx,
                            out); /* core/extension.h */
                return;
            }
        out->ok = false;
        svc_xasprintf(&out->content, "unknown tool: %s", name);
    }
    out->latency_ms = (long)((svc_time_monotonic() - t0) * 1000);
}

void svc_tool_result_free(struct svc_tool_result *r)
{
    free(r->content);
    r->content = NULL;
}
