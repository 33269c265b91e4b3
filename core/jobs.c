#include "jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cron.h"
#include "fsio.h"
#include "jsonx.h"
#include "lock.h"
#include "log.h"
#include "memory.h"
#include "retention.h"
#include "session.h"
#include "util.h"

time_t svc_jobs_now(void)
{
#ifdef SVC_TEST_HOOKS /* only in test builds (make TEST_HOOKS=1) */
    const char *knob = getenv("SVC_TEST_JOBS_NOW");
    double t;
    if (knob && *knob && svc_time_parse_iso(knob, &t) == 0)
        return (time_t)t;
#endif
    return (time_t)svc_time_now();
}

/* $SVC_HOME/jobs, or <root>/.svc_jobs on a shared root: a job runs once across hosts only
 * when they read and lock one state. */
static char *jobs_path(const struct svc_config *cfg, const char *name)
{
    bool shared = svc_fs_shared(cfg->sessions.shared, cfg->sessions.root);
    char *dir =
        shared ? svc_path_join(cfg->sessions.root, ".svc_jobs") : svc_path_join(cfg->home, "jobs");
    char *p = name ? svc_path_join(dir, name) : dir;
    if (p != dir)
        free(dir);
    return p;
}

/* The state's per-job map (borrowed from *state, which is a new reference, never NULL).
 * Accepts the map at the top level too (hand-written files). */
static json_object *read_state(const struct svc_config *cfg, json_object **state)
{
    char *path = jobs_path(cfg, "state.json");
    json_object *o = NULL;
    if (svc_json_read_object_file(path, &o, NULL) != 0)
        o = json_object_new_object();
    free(path);
    *state = o;
    json_object *jobs = svc_json_obj(o, "jobs");
    return jobs ? jobs : o;
}

json_object *svc_jobs_list(const struct svc_config *cfg, time_t now)
{
    json_object *state = NULL;
    json_object *by_id = read_state(cfg, &state);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < cfg->njobs; i++) {
        const struct svc_job *j = &cfg->jobs[i];
        json_object *st = svc_json_obj(by_id, j->id);
        json_object *o = svc_json_new_obj("id", j->id, "schedule", j->schedule, "session_id",
                                          j->session_id, NULL);
        svc_json_set_bool(o, "enabled", j->enabled);
        struct svc_cron c;
        time_t next = -1;
        if (j->enabled && svc_cron_parse(j->schedule, &c, NULL) == 0)
            next = svc_cron_next(&c, svc_cron_base(svc_json_str(st, "last_due_at", NULL), now));
        char buf[SVC_TIME_LEN];
        svc_json_set_str(o, "next_run_at",
                         next >= 0 ? svc_time_format_iso((double)next, buf) : NULL);
        static const char *const keys[] = {"last_run_at", "last_status", "last_run_id"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            svc_json_set_str(o, keys[k], svc_json_str(st, keys[k], NULL));
        json_object_array_add(arr, o);
    }
    json_object_put(state);
    json_object *retention = svc_retention_job(cfg, now);
    if (retention)
        json_object_array_add(arr, retention);
    return arr;
}

/* Merge upd into the state entry of id under the state lock (fresh read, atomic write). */
static int save_entry(const struct svc_config *cfg, const char *id, json_object *upd,
                      struct svc_err *err)
{
    char *lpath = jobs_path(cfg, ".state.lock");
    int fd = svc_lock_file(lpath, LOCK_EX, true);
    free(lpath);
    if (fd < 0)
        return svc_err_errno(err, "job lock");
    json_object *state = NULL;
    read_state(cfg, &state);
    json_object *jobs = svc_json_obj(state, "jobs");
    if (!jobs) {
        /* a hand-written top-level map becomes the "jobs" map */
        json_object *fresh = json_object_new_object();
        svc_json_set_int(fresh, "schema_version", 1);
        jobs = json_object_new_object();
        json_object_object_foreach(state, k, v)
        {
            if (json_object_is_type(v, json_type_object))
                svc_json_set(jobs, k, json_object_get(v));
        }
        svc_json_set(fresh, "jobs", jobs);
        json_object_put(state);
        state = fresh;
    }
    json_object *entry = svc_json_obj(jobs, id);
    if (!entry) {
        entry = json_object_new_object();
        svc_json_set(jobs, id, entry);
    }
    svc_json_merge(entry, upd);
    char *spath = jobs_path(cfg, "state.json");
    int rc = svc_json_write_pretty(spath, state, cfg->sessions.fsync, err);
    close(fd);
    json_object_put(state);
    free(spath);
    return rc;
}

/* Run job j now (the job lock is held). Fills res and upd. */
static void run_job(const struct svc_config *cfg, const struct svc_job *j, time_t now_min,
                    time_t base, const struct svc_cron *c, json_object *res, json_object *upd)
{
    char buf[SVC_TIME_LEN];
    struct svc_err err;
    svc_err_clear(&err);
    struct svc_user user;
    svc_user_of_job(cfg, j->user, &user);
    struct svc_run_request req = {.session_id = j->session_id,
                                  .input = j->input,
                                  .channel = "job",
                                  .user_id = "job",
                                  .user = &user};
    struct svc_run *run = NULL;
    const char *status;
    bool advance = true;
    if (svc_run_begin(cfg, &req, &run, &err) != 0) {
        advance = err.code != SVC_E_SESSION_BUSY; /* busy: skipped, tried again next minute */
        status = advance ? "error" : "skipped";
    } else {
        struct svc_run_answer a;
        svc_run_answer(run, &a);
        svc_json_set_str(res, "run_id", a.run_id);
        svc_json_set_str(upd, "last_run_id", a.run_id);
        svc_json_set_str(upd, "last_run_at", svc_time_now_iso(buf));
        status = svc_run_status_of(svc_run_execute(run, NULL, &err) == 0 ? SVC_OK : err.code);
        svc_run_free(run);
    }
    svc_json_set_str(res, "result", status);
    svc_json_set_str(upd, "last_status", status);
    json_object *eo = NULL;
    if (strcmp(status, "done") != 0) {
        eo = svc_memory_failure(&err, NULL);
        svc_json_set(res, "error", json_object_get(eo));
        svc_logf("job %s on session %s: %s: %s", j->id, j->session_id, status, err.message);
    }
    svc_json_set(upd, "last_error", eo);
    if (advance)
        base = now_min; /* every minute up to now is handled: missed ones are not run again */
    /* skipped: unchanged, so still due */
    svc_json_set_str(upd, "last_due_at", svc_time_format_iso((double)base, buf));
    time_t next = svc_cron_next(c, base);
    if (next >= 0)
        svc_json_set_str(upd, "next_run_at", svc_time_format_iso((double)next, buf));
}

int svc_jobs_run_due(const struct svc_config *cfg, time_t now, json_object **report,
                     struct svc_err *err)
{
    *report = NULL;
    char *dir = jobs_path(cfg, NULL);
    int rc = svc_mkdirs(dir, 0755, err);
    free(dir);
    if (rc != 0)
        return -1;
    time_t now_min = svc_cron_minute(now);
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < cfg->njobs; i++) {
        const struct svc_job *j = &cfg->jobs[i];
        json_object *res = svc_json_new_obj("id", j->id, NULL);
        json_object_array_add(out, res);
        struct svc_cron c;
        if (!j->enabled || svc_cron_parse(j->schedule, &c, NULL) != 0) {
            svc_json_set_str(res, "result", "disabled");
            continue;
        }
        char name[160];
        snprintf(name, sizeof name, "%s.lock", j->id);
        char *lpath = jobs_path(cfg, name);
        int fd = svc_lock_file(lpath, LOCK_EX | LOCK_NB, true);
        free(lpath);
        if (fd < 0 && errno == EWOULDBLOCK) {
            svc_json_set_str(res, "result", "locked"); /* another invocation has it */
            continue;
        }
        if (fd < 0) {
            rc = svc_err_errno(err, "job lock");
            break;
        }
        /* read the state only now: whoever held the lock before us has recorded its run */
        json_object *state = NULL;
        json_object *st = svc_json_obj(read_state(cfg, &state), j->id);
        time_t base = svc_cron_base(svc_json_str(st, "last_due_at", NULL), now_min);
        time_t next = svc_cron_next(&c, base);
        json_object_put(state);
        if (next < 0 || next > now_min) {
            svc_json_set_str(res, "result", "not_due");
            close(fd);
            continue;
        }
        json_object *upd = json_object_new_object();
        run_job(cfg, j, now_min, base, &c, res, upd);
        rc = save_entry(cfg, j->id, upd, err);
        json_object_put(upd);
        close(fd);
        if (rc != 0)
            break;
    }
    if (rc != 0) {
        json_object_put(out);
        return -1;
    }
    json_object *retention = svc_retention_run_due(cfg, now);
    if (retention)
        json_object_array_add(out, retention);
    *report = json_object_new_object();
    svc_json_set(*report, "jobs", out);
    return 0;
}
