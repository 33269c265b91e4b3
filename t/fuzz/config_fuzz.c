// config_fuzz: libFuzzer harness for the agents.yaml loader (svc_config_load_buffer).
// Every input must either load or fail with SVC_E_CONFIG, and leave nothing
// behind after svc_config_free (ASan's leak check runs at exit).
//
// Not built by default. From the top directory (one command line):
//   clang -fsanitize=fuzzer,address -std=c11 -D_GNU_SOURCE -Icore $(pkg-config --cflags json-c)
//     -DSVC_VERSION=\"$(cat VERSION)\"
//     t/fuzz/config_fuzz.c core/*.c
//     $(pkg-config --libs json-c yaml-0.1 zlib libcurl libcrypto fcgi) -o build/config_fuzz
// then seed a corpus with the reference file and run it:
//   mkdir -p /tmp/config-corpus && cp conf/agents.yaml /tmp/config-corpus/
//   ./build/config_fuzz -max_total_time=60 /tmp/config-corpus
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
