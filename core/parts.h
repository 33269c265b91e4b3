/* parts: images and documents between the OpenAI wires and Strands' content blocks (SPEC 17).
 * Strands keeps bytes as {"__bytes_encoded__": true, "data": "<base64>"}; svc writes the
 * base64 Python's b64encode would (decoded and encoded again). Chat content parts in:
 *   {"type": "text", "text"}
 *   {"type": "image_url", "image_url": {"url": "data:image/<png|jpeg|gif|webp>;base64,..."}}
 *       -> {"image": {"format", "source": {"bytes": <bytes>}}}
 *   {"type": "image_url", "image_url": {"url": "http(s)://..."}}  (never fetched)
 *       -> {"image": {"format", "source": {"location": {"type": "url", "url"}}}}
 *   {"type": "file", "file": {"file_data": "data:<mime>;base64,...", "filename"}}
 *       -> {"document": {"format", "name", "source": {"bytes": <bytes>}}}
 * Responses parts (input_text, input_image, input_file) become chat parts at the edge
 * (svc_parts_from_responses); everything else is refused there, by name.
 *   svc_parts_check      a chat content part: 0, or -1 with 422 invalid_field, or 413
 *                        body_too_large past max_bytes (decoded), naming param.
 *   svc_parts_block      the Strands block of a checked part (new reference).
 *   svc_parts_openai     the chat part of an image or document block, data URL or URL (new
 *                        reference), NULL for other blocks; svc_parts_responses the same as
 *                        a Responses input part.
 *   svc_parts_view       the session API's part of any block ({"type": "text" | "image" |
 *                        "document" | "video" | "tool_use" | "tool_result" | "reasoning" |
 *                        "citations" | "cache_point" | "guard" | "other", ...}); media give
 *                        format, name and size, and their data URL when bytes is true.
 *   svc_parts_describe   what a message carries besides text, for the echo model: heap, NULL
 *                        when it carries nothing else.
 *   svc_parts_bytes_size the decoded size of Strands' {"__bytes_encoded__": true, "data"}
 *                        value (or of a bare base64 string), -1 when it has no data.
 *   svc_parts_wrap       {key: v}, a content block (v taken); svc_parts_text {"text": t};
 *                        svc_parts_result a toolResult block of one text.
 *   svc_parts_message    a native message {"role", "content"}: content an array of blocks,
 *                        or one block (a new array holds it); taken. */
#ifndef SVC_PARTS_H
#define SVC_PARTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

int svc_parts_check(json_object *part, const char *param, int64_t max_bytes, struct svc_err *err);
json_object *svc_parts_block(json_object *part);
json_object *svc_parts_openai(json_object *block);
json_object *svc_parts_responses(json_object *block);
json_object *svc_parts_view(json_object *block, bool bytes);
char *svc_parts_describe(json_object *msg);
int svc_parts_from_responses(json_object *part, const char *param, json_object **out,
                             struct svc_err *err);

long long svc_parts_bytes_size(json_object *bytes);
json_object *svc_parts_wrap(const char *key, json_object *v);
json_object *svc_parts_text(const char *t);
json_object *svc_parts_result(const char *id, const char *status, const char *text);
json_object *svc_parts_message(const char *role, json_object *content);

#endif
