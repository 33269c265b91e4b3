/* respin: a Responses request's `input` (SPEC 4.1, 12.1, 15): a string, or a list of items:
 * messages ({"role", "content"}, "type": "message" optional; text parts of any kind, other
 * parts carry no text), function_call and function_call_output items, and item_reference
 * items, which stand for the item they name (a stored response's output item of the asker,
 * or an item of a conversation of theirs; an unknown id is 422 naming input[i].id). The
 * items become chat messages, split as turnin.h says.
 *   respin_input  the input into t (input, history, results, no_input); 0 or -1 with 422
 *   respin_items  the input as input_items lists it (typed, ids, text as parts; new array) */
#ifndef SVC_RESPIN_H
#define SVC_RESPIN_H

#include <json-c/json.h>

#include "http.h"
#include "turnin.h"

int respin_input(struct http_req *r, struct turn_in *t, json_object *input, struct svc_err *err);
json_object *respin_items(json_object *input);

#endif
