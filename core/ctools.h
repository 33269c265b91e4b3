/* ctools: client-side function tools (SPEC 12.1), the tools a request offers and the client
 * runs itself. A model call naming one ends the run; its toolUse stays pending in the
 * transcript (the newest message) until a request brings the results, or new user input
 * gets error results for them first (as Strands does). Bad input is 422 invalid_field. */
#ifndef SVC_CTOOLS_H
#define SVC_CTOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"

/* The request's tools ({name, description, parameters}) and tool_choice: a name clashing
 * with svc's tools for user (tools.h), or a named choice no tool has, is refused. */
int svc_ctools_check(const struct svc_config *cfg, const char *user, json_object *tools,
                     const char *tool_choice, struct svc_err *err);
/* The toolUse blocks of the newest message (msg, may be NULL) that await results:
 * [{toolUseId, name, input}], new reference. */
json_object *svc_ctools_pending(json_object *msg);
/* The toolResult user message answering pending with the client's results ([{call_id,
 * output, param}]): an unknown or repeated call_id is refused (param names the item); a
 * pending call the client left out gets an error result. *out is a new reference; the
 * names of the calls answered are appended to names. */
int svc_ctools_answer(json_object *pending, json_object *results, json_object **out,
                      json_object *names, struct svc_err *err);
/* Whether results hold an approval ({call_id, approve: true|false, param}: a Responses
 * mcp_approval_response, SPEC 16). Such results do not make a message here: the run resumes
 * the pending calls itself (svc_ctools_resume: each toolUse of pending, checked as above,
 * with "answer" the client's result for it when there is one; *out a new array), running
 * the approved ones and those of svc's own tools, declining the rest. */
bool svc_ctools_approvals(json_object *results);
int svc_ctools_resume(json_object *pending, json_object *results, json_object **out,
                      struct svc_err *err);
/* Error results for every pending call, or NULL when nothing is pending. */
json_object *svc_ctools_interrupted(json_object *pending);
/* Whether name is one of tools (an array of specs or of names). */
bool svc_ctools_named(json_object *tools, const char *name);

#endif
