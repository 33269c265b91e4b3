// chatgpt_fuzz: libFuzzer harness for `svc import --from chatgpt` (core/chatgpt.c): the
// input is the file imported as it is (conversations.json, or a .zip when it starts with
// PK\3\4: the zip reader and zlib's inflate), its last byte's low bit choosing a dry run.
// Every input must import or be refused cleanly, never crash or leak; a refused file writes
// nothing (the root is then still missing). Everything lives on /dev/shm when there is one.
// Built by `make fuzz` (build-fuzz/chatgpt_fuzz); run: build-fuzz/chatgpt_fuzz
// t/fuzz/corpus/chatgpt
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "chatgpt.h"
#include "config.h"
#include "fsio.h"

#include "sandbox.h"

static struct svc_config cfg;
static char work[256], root[320], file[320];

static void setup(void)
{
    snprintf(work, sizeof work, "%s", fuzz_sandbox("chatgpt"));
    struct svc_err err;
    if (svc_config_defaults(&cfg, &err) != 0)
        abort();
    fuzz_sandbox_config(&cfg, root, sizeof root);
    snprintf(file, sizeof file, "%s/export.zip", work);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.home)
        setup();
    if (svc_file_write_atomic(file, data, size, false, NULL) != 0)
        abort();
    struct svc_import_options opt = {.dry_run = size && (data[size - 1] & 1)};
    struct svc_err err;
    json_object *rep = NULL;
    struct stat sb;
    if (svc_chatgpt_import(&cfg, file, &opt, &rep, &err) != 0) {
        if (rep || stat(root, &sb) == 0)
            abort(); /* a refused file wrote something */
    } else if (!rep) {
        abort();
    }
    json_object_put(rep);
    svc_file_remove_tree(root);
    return 0;
}
