/* schema: a JSON value that a JSON Schema accepts, made up deterministically, for the echo
 * model's structured output (SPEC 15). Required properties are filled (all of them when the
 * schema lists none as required), enums and consts take their first value, anyOf / oneOf
 * their first branch that is not null, local $refs (#/$defs/..., #/definitions/...) are
 * followed; the first string met holds text, later ones are "" (or what their format or
 * minLength asks: a date-time, an email, a uri, a uuid), numbers their minimum or 0,
 * booleans false, arrays minItems items (at least one when maxItems allows). Recursion
 * deeper than 32 levels, and any value past the 4,096th, gives null. New reference. */
#ifndef SVC_SCHEMA_H
#define SVC_SCHEMA_H

#include <json-c/json.h>

json_object *svc_schema_example(json_object *schema, const char *text);

#endif
