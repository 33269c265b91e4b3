// sse_fuzz: libFuzzer harness for the OpenAI SSE reader of core/model_openai.c (through
// svc_openai_sse_parse, the reader libcurl's write callback feeds). The input's first byte
// chooses the piece size the stream arrives in (0: whole, else 1..255 bytes), the rest is
// the body of a text/event-stream answer. Every input must give a reply or an abort, never
// crash or leak; a reply's text is a string and its tool uses an array of objects with a
// name, an id and an input object, as the run loop expects.
// Built by `make fuzz` (build-fuzz/sse_fuzz); run: build-fuzz/sse_fuzz t/fuzz/corpus/sse
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "model_openai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = NULL;
    json_object *uses = NULL;
    if (svc_openai_sse_parse((const char *)data + 1, size - 1, data[0], &text, &uses) == 0) {
        if (!text || !json_object_is_type(uses, json_type_array))
            abort();
        size_t n = json_object_array_length(uses);
        for (size_t i = 0; i < n; i++) {
            json_object *u = json_object_array_get_idx(uses, i);
            const char *name = svc_json_str(u, "name", NULL);
            const char *id = svc_json_str(u, "toolUseId", NULL);
            if (!name || !*name || !id || !*id || !svc_json_obj(u, "input"))
                abort();
        }
        free(text);
        json_object_put(uses);
    } else if (text || uses) {
        abort();
    }
    return 0;
}
