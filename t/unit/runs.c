/* runs: the on-disk run registry without a server: ids, unknown runs, pruning of old
 * finished records and idempotency keys (running ones kept), at most once an hour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "runs.h"
#include "tap.h"
#include "util.h"

static char root[64];

static void put(const char *name, const char *body, double age_s)
{
    char path[256];
    snprintf(path, sizeof path, "%s/.svc_runs/%s", root, name);
    svc_file_write_atomic(path, body, strlen(body), false, NULL);
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= (time_t)age_s;
    tv[1] = tv[0];
    utimes(path, tv);
}

static int exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/.svc_runs/%s", root, name);
    return access(path, F_OK) == 0;
}

int main(void)
{
    struct svc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (svc_config_defaults(&cfg, NULL) != 0)
        return 1;
    snprintf(root, sizeof root, "/tmp/svc-runs-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    free(cfg.sessions.root);
    cfg.sessions.root = strdup(root);
    cfg.sessions.fsync = false;

    ok(svc_run_id_valid("run-0123456789abcdef"), "a run id is valid");
    ok(!svc_run_id_valid("..") && !svc_run_id_valid(".svc_runs") && !svc_run_id_valid("a/b") &&
           !svc_run_id_valid(""),
       "dot, slash and empty run ids are refused");
    json_object *o = NULL;
    struct svc_err e;
    is_int(svc_runs_get(&cfg, "run-nope", &o, &e), -1, "unknown run");
    is_int(e.code, SVC_E_RUN_NOT_FOUND, "unknown run: run_not_found");
    is_int(svc_runs_get(&cfg, "../../etc/passwd", &o, &e), -1, "a path is not a run id");
    is_int(e.code, SVC_E_RUN_NOT_FOUND, "a path: run_not_found");

    /* no spawner set (spawn.h): a background run is refused before anything is written */
    struct svc_run_request req = {.session_id = "s1", .input = "hi"};
    bool replayed = true;
    is_int(svc_runs_spawn(&cfg, &req, NULL, &o, &replayed, &e), -1, "no spawner: refused");
    ok(e.code == SVC_E_INTERNAL && strstr(e.message, "cannot start background runs") && !o &&
           !replayed,
       "no spawner: internal_error naming it");
    char dir[128];
    snprintf(dir, sizeof dir, "%s/.svc_runs", root);
    ok(access(dir, F_OK) != 0, "no spawner: nothing written");
    svc_mkdirs(dir, 0755, NULL);
    const double day = 24 * 3600;
    put("run-old.json", "{\"run_id\":\"run-old\",\"status\":\"done\"}", 10 * day);
    put("run-old.events.jsonl", "{}\n", 10 * day);
    put("run-oldlive.json", "{\"run_id\":\"run-oldlive\",\"status\":\"running\"}", 10 * day);
    put("run-new.json", "{\"run_id\":\"run-new\",\"status\":\"done\"}", 1 * day);
    put("idem-aaaa.json", "{\"run_id\":\"run-old\"}", 10 * day);
    put("idem-bbbb.json", "{\"run_id\":\"run-new\"}", 1 * day);
    is_int(svc_runs_prune(&cfg, SVC_RUNS_KEEP_S), 2, "two old entries pruned");
    ok(!exists("run-old.json") && !exists("run-old.events.jsonl"), "the old finished run is gone");
    ok(exists("run-oldlive.json"), "an old record still running is kept");
    ok(exists("run-new.json"), "a record younger than the keep time is kept");
    ok(!exists("idem-aaaa.json") && exists("idem-bbbb.json"), "only old idempotency keys go");
    put("run-old2.json", "{\"run_id\":\"run-old2\",\"status\":\"done\"}", 10 * day);
    is_int(svc_runs_prune(&cfg, SVC_RUNS_KEEP_S), 0, "a second prune within the hour does nothing");
    ok(exists("run-old2.json"), "so the new old record waits for the next hour");

    svc_config_free(&cfg);
    tap_rm_rf(root);
    return done_testing();
}
