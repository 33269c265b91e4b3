/* toolsin: the client-side function tools of a request body (SPEC 12.1), in either shape:
 * chat completions' {"type": "function", "function": {name, description, parameters}} or
 * the Responses API's flat {"type": "function", name, description, parameters}.
 *   toolsin_parse  reads `tools`, `tool_choice` and `parallel_tool_calls` (accepted): *tools
 *                  is a new array of {name, description, parameters, strict} or NULL when none were
 *                  given, *choice is borrowed from the body (NULL, a mode, or a tool's name).
 *                  A malformed field is 422 naming it; core checks clashes (core/ctools.h). */
#ifndef SVC_TOOLSIN_H
#define SVC_TOOLSIN_H

#include <json-c/json.h>
#include <stdbool.h>

#include "err.h"

int toolsin_parse(json_object *body, bool nested, json_object **tools, const char **choice,
                  struct svc_err *err);

#endif
