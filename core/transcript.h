/* transcript: a session as Markdown a person wants to read (SPEC 5, transcripts/<id>.md).
 *   # <title>
 *   a metadata line: session id, agent, created, updated, message count, status
 *   ## <role> · <time>      one section per message, then its content:
 *     text as it is; tool calls and tool results as fenced json blocks (the fence is longer
 *     than any run of backticks inside); images and documents named with their format and
 *     size, never their base64; reasoning quoted; other blocks as fenced json.
 * rows are message rows as svc_message_row makes them (borrowed). Heap result, never NULL. */
#ifndef SVC_TRANSCRIPT_H
#define SVC_TRANSCRIPT_H

#include <json-c/json.h>

char *svc_transcript_markdown(const char *sid, const char *agent_id, json_object *summary,
                              json_object *rows);

#endif
