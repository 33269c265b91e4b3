/* ctools: client-side function tools (SPEC 12.1), the tools a request offers and the client
 * runs itself. A model call naming one ends the run; its toolUse stays pending in the
 * transcript (the newest message) until a request brings the results.
 *   svc_ctools_check        the request's tools ({name, description, parameters}) and
 *                           tool_choice: a name clashing with svc's tools, or a named choice
 *                           no tool has, is 422 invalid_field.
 *   svc_ctools_pending      the toolUse blocks of the newest message (msg, may be NULL) that
 *                           await results: [{toolUseId, name, input}], new reference.
 *   svc_ctools_answer       the toolResult user message answering pending with the client's
 *                           results ([{call_id, output, param}]): an unknown or repeated
 *                           call_id is 422 invalid_field (param names the item); a pending
 *                           call the client left out gets an error result. New reference;
 *                           the names of the calls answered are appended to names.
 *   svc_ctools_interrupted  error results for every pending call (new user input came
 *                           first, as Strands does), or NULL when nothing is pending.
 *   svc_ctools_named        whether name is one of tools (an array of specs or of names). */
#ifndef SVC_CTOOLS_H
#define SVC_CTOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"

int svc_ctools_check(const struct svc_config *cfg, json_object *tools, const char *tool_choice,
                     struct svc_err *err);
json_object *svc_ctools_pending(json_object *msg);
int svc_ctools_answer(json_object *pending, json_object *results, json_object **out,
                      json_object *names, struct svc_err *err);
json_object *svc_ctools_interrupted(json_object *pending);
bool svc_ctools_named(json_object *tools, const char *name);

#endif
