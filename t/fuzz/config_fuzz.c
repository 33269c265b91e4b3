// config_fuzz: libFuzzer harness for the agents.yaml loader (svc_config_load_buffer).
// Every input must either load or fail with SVC_E_CONFIG, and leave nothing
// behind after svc_config_free (ASan's leak check runs at exit).
// Built by `make fuzz` (build-fuzz/config_fuzz) and run by `make check` on
// t/fuzz/corpus/config; alone: build-fuzz/config_fuzz -max_total_time=60 t/fuzz/corpus/config
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct svc_config cfg;
    struct svc_err err;
    if (svc_config_load_buffer(&cfg, (const char *)data, size, "fuzz.yaml", &err) == 0) {
        json_object *j = svc_config_to_json(&cfg);
        json_object_put(j);
        svc_config_free(&cfg);
    } else {
        if (err.code != SVC_E_CONFIG)
            abort();
        svc_config_free(&cfg);
    }
    return 0;
}
