/* cmgr: the conversation manager of a session (SPEC 2.1, 17), its state in agent.json's
 * conversation_manager_state exactly as Strands stores it:
 *   SlidingWindowConversationManager  {"__name__", "removed_message_count", "model_call_count"}
 *   SummarizingConversationManager    {"summary_message", "__name__", "removed_message_count"}
 * The state names the manager that runs the session: svc never rewrites another manager's
 * state into its own, and a new agent.json names agent.conversation_manager.
 *   svc_cm_new_state     a fresh state (new reference) of the manager asked for.
 *   svc_cm_summarizing   whether agent.json's state is the summarizing manager's.
 *   svc_cm_summary       its summary_message (borrowed), or NULL.
 *   svc_cm_set_summary   the summary, into a summarizing state only (a new one's stays null
 *                        until one is made).
 *   svc_cm_split         how many of the window's oldest messages a summary takes, by Strands'
 *                        rule (summary_ratio of them, never the newest preserve_recent_messages,
 *                        never splitting a toolUse from its result; all: every message but
 *                        those, as compaction takes them); 0 when it cannot.
 *   svc_cm_request       the summarization call's messages (new reference): the messages taken,
 *                        then Strands' request; svc_cm_prompt is its system prompt (Strands'
 *                        default), svc_cm_is_request tells a call that carries it.
 *   svc_cm_echo_summary  the echo model's summary of messages (heap): one line per message,
 *                        deterministic, offline. */
#ifndef SVC_CMGR_H
#define SVC_CMGR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

json_object *svc_cm_new_state(enum svc_conv_manager kind);
bool svc_cm_summarizing(json_object *agent);
json_object *svc_cm_summary(json_object *agent);
void svc_cm_set_summary(json_object *agent, json_object *summary);
size_t svc_cm_split(const struct svc_config *cfg, json_object *window, bool all);
json_object *svc_cm_request(json_object *window, size_t count);
const char *svc_cm_prompt(void);
bool svc_cm_is_request(const char *system_prompt);
char *svc_cm_echo_summary(json_object *messages);

#endif
