/* jstream: read one JSON object from a file a member at a time, so that a large document
 * (an import's manifest.json, a line a file) is never held whole. Each member's value is
 * parsed alone (svc_json_parse, at most value_max bytes of text) and given to member();
 * the member named each, when its value is an array, is given to member() as an empty
 * array, then an element at a time to element(). Callbacks borrow the value; a non-zero return
 * stops the read and is returned. Text that is not one JSON object (and only whitespace after it):
 * -1 with err SVC_E_INVALID_JSON (SVC_E_IO when the file cannot be read). */
#ifndef SVC_JSTREAM_H
#define SVC_JSTREAM_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

struct svc_jstream_fns {
    int (*member)(void *ctx, const char *key, json_object *value);
    const char *each;
    int (*element)(void *ctx, size_t i, json_object *value);
    void *ctx;
};

int svc_jstream_object(FILE *f, size_t value_max, const struct svc_jstream_fns *fns,
                       struct svc_err *err);

#endif
