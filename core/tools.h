/* tools: the tools the model can call. Built in: `clock` (current UTC time). Each enabled
 * configured extension (SPEC 9) is a tool too; a call runs its command through
 * core/extension.h (timeout, output cap, clean environment). So is each tool of a configured
 * MCP server (SPEC 16) the asking user may use, named "<server>__<tool>" and called through
 * core/mcp.h. An unknown name, or one of a server the user may not use, is an error result.
 * user is the asker's id (NULL: the admin of server.api_token, or no users). */
#ifndef SVC_TOOLS_H
#define SVC_TOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"

struct svc_tool_result {
    bool ok;
    char *content;           /* heap: the tool's output text (error text when !ok) */
    json_object *blocks;     /* the Strands toolResult content, or NULL: [{"text": content}] */
    json_object *structured; /* the toolResult's structuredContent (MCP), or NULL */
    bool truncated;
    long latency_ms;
};

/* The array the model sees: [{name, description, parameters}], MCP servers started and
 * listed as needed (one that fails is left out). New reference. */
json_object *svc_tools_spec(const struct svc_config *cfg, const char *user);
/* Whether name is one of svc's tools for user, without starting anything (an MCP tool by
 * its server's prefix). */
bool svc_tools_owns(const struct svc_config *cfg, const char *user, const char *name);
/* GET /api/extensions: {"extensions": [{name, kind, description, parameters, enabled,
 * builtin}] (built-ins first; commands and environment never shown), "mcp_servers":
 * [svc_mcp_status of each server user may use, or of every one when all]}. New reference. */
json_object *svc_tools_list(const struct svc_config *cfg, const char *user, bool all);
/* Call name with input (borrowed, may be NULL); a running tool is stopped when should_cancel
 * (polled, may be NULL) returns nonzero. */
void svc_tools_call(const struct svc_config *cfg, const char *user, const char *name,
                    json_object *input, int (*should_cancel)(void *ctx), void *ctx,
                    struct svc_tool_result *out);
void svc_tool_result_free(struct svc_tool_result *r);

#endif
