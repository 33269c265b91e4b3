// files_fuzz: libFuzzer harness for the line files and run files as found on disk: the
// input becomes a session's svc_turns.jsonl, a run record (<root>/.svc_runs/<id>.json) and
// that run's event file; then the readers (messages with turns, run record, run events
// from a cursor) and `svc fsck` (check and repair) must cope: answer or fail cleanly, never
// crash or leak. The first byte picks a run id of odd shape. Root on /dev/shm when present.
// Built by `make fuzz` (build-fuzz/files_fuzz); run: build-fuzz/files_fuzz -max_total_time=600
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fsck.h"
#include "fsio.h"
#include "jsonx.h"
#include "query.h"
#include "runs.h"
#include "session.h"
#include "util.h"

#include "sandbox.h"

static struct svc_config cfg;
static char root[256];

static void setup(void)
{
    fuzz_sandbox("files");
    svc_config_defaults(&cfg, NULL);
    fuzz_sandbox_config(&cfg, root, sizeof root);
    struct svc_run_request req = {.session_id = "f", .input = "hello"};
    struct svc_run *run = NULL;
    if (svc_run_begin(&cfg, &req, &run, NULL) == 0)
        svc_run_execute(run, NULL, NULL);
    svc_run_free(run);
    char p[512];
    snprintf(p, sizeof p, "%s/.svc_runs", root);
    svc_mkdirs(p, 0755, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.sessions.root)
        setup();
    static const char *ids[] = {"run-fuzz", "run-0000000000000000", "a", "x.y-z_1"};
    const char *id = ids[size ? data[0] % 4 : 0];
    char p[512];
    snprintf(p, sizeof p, "%s/session_f/svc_turns.jsonl", root);
    svc_file_write_atomic(p, data, size, false, NULL);
    snprintf(p, sizeof p, "%s/.svc_runs/%s.json", root, id);
    svc_file_write_atomic(p, data, size, false, NULL);
    snprintf(p, sizeof p, "%s/.svc_runs/%s.events.jsonl", root, id);
    svc_file_write_atomic(p, data, size, false, NULL);

    json_object *out = NULL;
    struct svc_messages_query mq = {.limit = 5, .include_turns = true};
    if (svc_session_messages(&cfg, "f", &mq, &out, NULL) == 0)
        json_object_put(out);
    if (svc_runs_get(&cfg, id, &out, NULL) == 0)
        json_object_put(out);
    long next = 0;
    bool fin = false;
    if (svc_runs_events(&cfg, id, size > 1 ? data[1] % 4 : 0, &out, &next, &fin, NULL) == 0)
        json_object_put(out);
    struct svc_fsck_opts o = {.repair = size > 2 && (data[2] & 1)};
    if (svc_fsck(&cfg, &o, &out, NULL) == 0)
        json_object_put(out);
    return 0;
}
