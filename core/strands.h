/* strands: state Strands keeps in a session that svc reads but does not own (SPEC 17).
 * An interrupt (agent.json's _internal_state.interrupt_state, Strands' _InterruptState):
 * while "activated", Strands waits on the calls of context.tool_use_message that have no
 * result in context.tool_results, and would run them when it resumes. A turn through svc
 * closes the interrupt as Strands closes a batch of tool calls: one user message with
 * Strands' results, then for each call still waiting the client's result (answered: the
 * client's output stands as the result, svc runs no Strands hook or tool) or an error
 * result (declined: new input came instead); then the state is deactivated exactly as
 * Strands' deactivate() leaves it, so Strands never runs the call again.
 *   svc_strands_pending     the calls an activated state waits on ([toolUse...], new
 *                           reference), or NULL when the state is not activated.
 *   svc_strands_close       the user message closing it (new reference, in *out): results
 *                           [{call_id, output, param}] answer calls (an id no call waits on
 *                           is 422 invalid_field naming param); the names of the calls
 *                           answered are appended to names.
 *   svc_strands_deactivate  the interrupt state as Strands' deactivate() leaves it.
 *   svc_strands_interrupts  the session detail's view of an activated state: [{id, name,
 *                           reason, tool_use_id, tool}] (new reference), or NULL.
 *   svc_strands_multi_agent the detail's view of one multi_agent.json a Swarm or Graph
 *                           wrote: {id, type, status, node_history | completed_nodes}. */
#ifndef SVC_STRANDS_H
#define SVC_STRANDS_H

#include <json-c/json.h>

#include "err.h"

json_object *svc_strands_pending(json_object *agent);
int svc_strands_close(json_object *agent, json_object *results, json_object **out,
                      json_object *names, struct svc_err *err);
void svc_strands_deactivate(json_object *agent);
json_object *svc_strands_interrupts(json_object *agent);
json_object *svc_strands_multi_agent(json_object *state);

#endif
