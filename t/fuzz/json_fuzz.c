// json_fuzz: libFuzzer harness for the request-body JSON parser (svc_json_parse) and the
// two dumpers. Whatever parses must dump, and the compact dump must parse back to a
// document that dumps to the same bytes.
// Built by `make fuzz` (build-fuzz/json_fuzz); run: build-fuzz/json_fuzz -max_total_time=60
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *o = NULL;
    if (svc_json_parse((const char *)data, size, &o, NULL) != 0)
        return 0;
    char *native = svc_json_dump_native(o);
    char *compact = svc_json_dump_compact(o);
    if (compact) {
        json_object *again = NULL;
        if (svc_json_parse(compact, strlen(compact), &again, NULL) != 0)
            abort(); /* our own output must be valid JSON */
        char *compact2 = svc_json_dump_compact(again);
        if (!compact2 || strcmp(compact, compact2) != 0)
            abort(); /* and stable */
        free(compact2);
        json_object_put(again);
    }
    free(native);
    free(compact);
    json_object_put(o);
    return 0;
}
