// jobs_fuzz: libFuzzer harness for the jobs state file ($SVC_HOME/jobs/state.json,
// core/jobs.c). The input becomes the state file as found on disk; then the jobs are listed
// (GET /api/jobs) and run-due is run at a fixed minute with three configured jobs (one due
// every minute, one hourly, one disabled) on sessions of the echo model, which rewrites the
// state. Listing and run-due must answer or fail cleanly, never crash or leak, and after a
// run-due that answered the state file must be a JSON object again. Everything lives on
// /dev/shm when there is one (speed).
// Built by `make fuzz` (build-fuzz/jobs_fuzz); run: build-fuzz/jobs_fuzz t/fuzz/corpus/jobs
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "jobs.h"
#include "jsonx.h"
#include "util.h"

#include "sandbox.h"

static struct svc_config cfg;
static char work[256], state[320], root[320];

static const char yaml[] = "jobs:\n"
                           "  - id: every\n"
                           "    schedule: \"* * * * *\"\n"
                           "    session_id: job-every\n"
                           "    input: tick\n"
                           "  - id: hourly\n"
                           "    schedule: \"7 * * * *\"\n"
                           "    session_id: job-hourly\n"
                           "    input: hour\n"
                           "  - id: off\n"
                           "    schedule: \"* * * * *\"\n"
                           "    session_id: job-off\n"
                           "    input: never\n"
                           "    enabled: false\n";

static void setup(void)
{
    snprintf(work, sizeof work, "%s", fuzz_sandbox("jobs"));
    struct svc_err err;
    if (svc_config_load_buffer(&cfg, yaml, sizeof yaml - 1, "jobs_fuzz.yaml", &err) != 0) {
        fprintf(stderr, "jobs_fuzz: %s\n", err.message);
        abort();
    }
    fuzz_sandbox_config(&cfg, root, sizeof root);
    char p[320];
    snprintf(p, sizeof p, "%s/home/jobs", work);
    if (svc_mkdirs(p, 0755, &err) != 0)
        abort();
    snprintf(state, sizeof state, "%s/state.json", p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.home)
        setup();
    if (svc_file_write_atomic(state, data, size, false, NULL) != 0)
        abort();
    /* 2026-11-22T10:07:00Z plus 0..7 minutes chosen by the first byte */
    time_t now = 1795342020 + 60 * (time_t)(size ? data[0] % 8 : 0);
    json_object *list = svc_jobs_list(&cfg, now);
    if (!json_object_is_type(list, json_type_array))
        abort();
    json_object_put(list);
    json_object *rep = NULL;
    struct svc_err err;
    if (svc_jobs_run_due(&cfg, now, &rep, &err) == 0) {
        bool ran = false;
        json_object *jobs = svc_json_arr(rep, "jobs");
        for (size_t i = 0; jobs && i < json_object_array_length(jobs); i++) {
            const char *r = svc_json_str(json_object_array_get_idx(jobs, i), "result", "");
            ran |= strcmp(r, "done") == 0 || strcmp(r, "error") == 0 ||
                   strcmp(r, "cancelled") == 0 || strcmp(r, "skipped") == 0;
        }
        json_object *st = NULL;
        if (ran && (svc_json_read_file(state, &st, NULL) != 0 || !svc_json_obj(st, "jobs")))
            abort(); /* a job ran: its entry was written into a state file we can read */
        json_object_put(st);
        json_object_put(rep);
    }
    svc_file_remove_tree(root); /* the sessions do not grow run after run */
    return 0;
}
