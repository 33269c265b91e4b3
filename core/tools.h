/* tools: the tools the model can call. Built in: `clock` (current UTC time).
 * Each enabled configured extension (SPEC 9) is a tool too; a call runs its command through
 * core/extension.h (timeout, output cap, clean environment). An unknown name is an error result.
 * svc_tools_spec returns the array the model sees: [{name, description, parameters}]. */
#ifndef SVC_TOOLS_H
#define SVC_TOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"

struct svc_tool_result {
    bool ok;
    char *content; /* heap: the tool's output text (error text when !ok) */
    bool truncated;
    long latency_ms;
};

json_object *svc_tools_spec(const struct svc_config *cfg); /* new reference */
/* Every tool as GET /api/extensions lists it: [{name, kind, description, parameters, enabled,
 * builtin}], built-ins first; commands and environment are never included. New reference. */
json_object *svc_tools_list(const struct svc_config *cfg);
/* Run tool name on input; a running extension is stopped when should_cancel (polled, may be
 * NULL) returns nonzero. */
void svc_tools_call_cancel(const struct svc_config *cfg, const char *name, json_object *input,
                           int (*should_cancel)(void *ctx), void *ctx, struct svc_tool_result *out);
void svc_tool_result_free(struct svc_tool_result *r);

#endif
