/* toolsin: the client-side function tools of a request body (SPEC 12.1), in either shape:
 * chat completions' {"type": "function", "function": {name, description, parameters}} or
 * the Responses API's flat {"type": "function", name, description, parameters}.
 *   toolsin_parse  reads `tools`, `tool_choice` and `parallel_tool_calls` (accepted): *tools
 *                  is a new array of {name, description, parameters} or NULL when none were
 *                  given, *choice is borrowed from the body (NULL, a mode, or a tool's name).
 *                  A malformed field is 422 naming it; core checks clashes (core/ctools.h). */
#ifndef SVC_TOOLSIN_H
#define SVC_TOOLSIN_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"
#include "user.h"

int toolsin_parse(json_object *body, bool nested, json_object **tools, const char **choice,
                  struct svc_err *err);
/* The Responses API's {"type": "mcp"} tools (SPEC 16), which toolsin_parse leaves out:
 * *specs the run request's mcp_tools (session.h; listed false), *shown the tools as the
 * response echoes them (headers and authorization left out); both NULL when there are none.
 * A server_url not under mcp.remote_allow, a label that names no server u may use, or a
 * field svc does not take is 422 naming tools[i].<field>. The caller frees both. */
int toolsin_mcp(const struct svc_config *cfg, const struct svc_user *u, json_object *body,
                json_object **specs, json_object **shown, struct svc_err *err);

#endif
