/* openai: conversions between native (Bedrock Converse) messages and OpenAI chat messages.
 * svc_openai_project turns one native message into the OpenAI messages it stands for:
 * text -> content, toolUse -> assistant tool_calls with JSON-string arguments, toolResult ->
 * one role "tool" message per result with tool_call_id; a user message's images and
 * documents make its content a list of parts (text, image_url, file: parts.h), and those of
 * tool results follow the tool messages in a user message. svc_openai_to_native turns an OpenAI
 * message (user/assistant/tool/system) into a native message; system messages give NULL.
 * All results are new references. */
#ifndef SVC_OPENAI_H
#define SVC_OPENAI_H

#include <json-c/json.h>
#include <stdbool.h>

json_object *svc_openai_project(json_object *native_msg);
/* The API role of a native message: "user", "assistant", or "tool" when it carries results. */
const char *svc_openai_role(json_object *native_msg);
/* Concatenated text blocks of a native message (heap string, "" when none). */
char *svc_native_text(json_object *native_msg);
/* The characters of the text blocks of an array of native messages (may be NULL). */
size_t svc_native_chars(json_object *msgs);
/* Whether a block of a native message has the member key (an object: "toolUse"...). */
bool svc_native_has(json_object *native_msg, const char *key);
/* Text of an OpenAI content value: a string, or the text parts of an array (heap, NULL when
 * it is neither). */
char *svc_openai_content_text(json_object *content);
/* Whether a native message was redacted to nothing (every block an empty text, as a
 * deleted conversation item leaves it): it stands for no message in the model's context. */
bool svc_native_erased(json_object *native_msg);
/* Whether OpenAI content (a string or parts, checked by parts.h) has image or file parts. */
bool svc_openai_has_media(json_object *content);
/* OpenAI message -> native message; NULL for system messages or unusable ones. A user
 * message's image and file parts become Strands image and document blocks (parts.h), each
 * part a block in order; without them its text parts are one text block, as before. */
json_object *svc_openai_to_native(json_object *openai_msg);
/* The object a function call's arguments (JSON text, Python's floats) hold, or {} (new). */
json_object *svc_openai_args(const char *args);

#endif
