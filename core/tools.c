#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "util.h"

json_object *svc_tools_spec(const struct svc_config *cfg)
{
    json_object *arr = json_object_new_array();
    json_object *clock = json_object_new_object();
    svc_json_set_str(clock, "name", "clock");
    svc_json_set_str(clock, "description", "Current UTC time");
    json_object *params = json_object_new_object();
    svc_json_set_str(params, "type", "object");
    svc_json_set(params, "properties", json_object_new_object());
    svc_json_set(clock, "parameters", params);
    json_object_array_add(arr, clock);
    for (size_t i = 0; i < cfg->nextensions; i++) {
        const struct svc_extension *x = &cfg->extensions[i];
        if (!x->enabled)
            continue;
        json_object *t = json_object_new_object();
        svc_json_set_str(t, "name", x->name);
        svc_json_set_str(t, "description", x->description ? x->description : "");
        svc_json_set(t, "parameters", x->parameters ? svc_json_copy(x->parameters)
                                                    : json_object_new_object());
        json_object_array_add(arr, t);
    }
    return arr;
}

void svc_tools_call(const struct svc_config *cfg, const char *name, json_object *input,
                    struct svc_tool_result *out)
{
    double t0 = svc_time_monotonic();
    memset(out, 0, sizeof *out);
    if (strcmp(name, "clock") == 0) {
        char now[SVC_TIME_LEN];
        svc_time_now_iso(now);
        out->ok = true;
        out->content = strdup(now);
    } else {
        bool known = false;
        for (size_t i = 0; i < cfg->nextensions; i++)
            if (cfg->extensions[i].enabled && strcmp(cfg->extensions[i].name, name) == 0)
                known = true;
        out->ok = false;
        if (known)
            out->content = strdup("extension tools are not runnable in this version");
        else if (asprintf(&out->content, "unknown tool: %s", name) < 0)
            out->content = NULL;
    }
    out->latency_ms = (long)((svc_time_monotonic() - t0) * 1000);
}

void svc_tool_result_free(struct svc_tool_result *r)
{
    free(r->content);
    r->content = NULL;
}
