#include "retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bundle.h"
#include "cron.h"
#include "erase.h"
#include "jsonx.h"
#include "log.h"
#include "query.h"
#include "store.h"
#include "util.h"

bool svc_retention_enabled(const struct svc_config *cfg)
{
    return cfg->sessions.enabled &&
           (cfg->retention.archive_after_days > 0 || cfg->retention.delete_after_days > 0 ||
            cfg->retention.delete_archived_after_days > 0);
}

/* What the policy does to a summary at now: "archive", "delete" or NULL; why says why. */
static const char *decide(const struct svc_config *cfg, json_object *sum, time_t now, char *why,
                          size_t whysz)
{
    double t;
    if ((cfg->retention.keep_pinned && svc_json_bool(sum, "pinned", false)) ||
        svc_time_parse_iso(svc_json_str(sum, "updated_at", ""), &t) != 0)
        return NULL;
    int days = (int)(((double)now - t) / 86400.0);
    bool archived = svc_json_bool(sum, "archived", false);
    int del = cfg->retention.delete_after_days, adel = cfg->retention.delete_archived_after_days;
    int arch = cfg->retention.archive_after_days;
    snprintf(why, whysz, "%snot updated for %d days", archived ? "archived, " : "", days);
    if ((del > 0 && days >= del) || (archived && adel > 0 && days >= adel))
        return "delete";
    if (!archived && arch > 0 && days >= arch)
        return "archive";
    return NULL;
}

static void add_action(json_object *actions, const char *sid, const char *action, const char *why)
{
    json_object_array_add(
        actions, svc_json_new_obj("session_id", sid, "action", action, "reason", why, NULL));
}

struct plan {
    const struct svc_config *cfg;
    struct svc_store st;
    time_t now;
    json_object *actions;
};

/* The action for one session the index lists. */
static int plan_one(void *ctx, json_object *sum, struct svc_err *err)
{
    struct plan *p = ctx;
    const char *sid = svc_json_str(sum, "session_id", "");
    char why[96];
    const char *action = decide(p->cfg, sum, p->now, why, sizeof why);
    if (action && svc_store_run_held(&p->st, sid))
        add_action(p->actions, sid, "skip", "a run holds it");
    else if (action)
        add_action(p->actions, sid, action, why);
    return 0;
}

/* One bundle of the sessions to delete into export_before_delete; *out its answer. */
static int export_first(const struct svc_config *cfg, json_object *actions, json_object **out,
                        struct svc_err *err)
{
    size_t n = json_object_array_length(actions), k = 0;
    const char **ids = svc_xcalloc(n + 1, sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        json_object *a = json_object_array_get_idx(actions, i);
        if (strcmp(svc_json_str(a, "action", ""), "delete") == 0)
            ids[k++] = svc_json_str(a, "session_id", "");
    }
    struct svc_export_request req = {.session_ids = ids,
                                     .n_session_ids = k,
                                     .include_archived = true,
                                     .output_dir = cfg->retention.export_before_delete,
                                     .output_dir_trusted = true,
                                     .tar = true};
    struct svc_export *ex = NULL;
    int rc = k == 0 ? 0 : -1;
    if (k > 0 && svc_export_prepare(cfg, &req, &ex, err) == 0 &&
        svc_export_write(ex, NULL, out, err) == 0)
        rc = 0;
    svc_export_free(ex);
    free(ids);
    return rc;
}

/* Carry out the actions; a session that cannot be changed becomes a skip. */
static void carry_out(const struct svc_config *cfg, const struct svc_store *st,
                      json_object *actions)
{
    for (size_t i = 0; i < json_object_array_length(actions); i++) {
        json_object *a = json_object_array_get_idx(actions, i), *o = NULL;
        const char *sid = svc_json_str(a, "session_id", ""), *act = svc_json_str(a, "action", "");
        struct svc_err e;
        int rc = 0;
        if (strcmp(act, "archive") == 0)
            rc = svc_store_run_held(st, sid) ? svc_err_set(&e, SVC_E_SESSION_BUSY, "a run holds it")
                                             : svc_session_set_archived(cfg, sid, true, &o, &e);
        else if (strcmp(act, "delete") == 0)
            rc = svc_session_delete(cfg, sid, &o, &e);
        json_object_put(o);
        if (rc != 0) {
            svc_json_set_str(a, "action", "skip");
            svc_json_set_str(a, "reason",
                             e.code == SVC_E_SESSION_BUSY ? "a run holds it" : e.message);
        }
    }
}

static json_object *counts_of(json_object *actions)
{
    static const char *const what[][2] = {
        {"archive", "archived"}, {"delete", "deleted"}, {"skip", "skipped"}};
    json_object *c = json_object_new_object();
    for (size_t k = 0; k < 3; k++) {
        int64_t n = 0;
        for (size_t i = 0; i < json_object_array_length(actions); i++)
            n += strcmp(svc_json_str(json_object_array_get_idx(actions, i), "action", ""),
                        what[k][0]) == 0;
        svc_json_set_int(c, what[k][1], n);
    }
    return c;
}

int svc_retention_apply(const struct svc_config *cfg, time_t now, bool dry_run,
                        json_object **report, struct svc_err *err)
{
    *report = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    struct svc_list_query q = {.include_archived = true}; /* every session the index lists */
    struct plan p = {.cfg = cfg, .now = now, .actions = json_object_new_array()};
    svc_store_from_config(cfg, &p.st);
    json_object *actions = p.actions, *exported = NULL;
    if ((svc_retention_enabled(cfg) && svc_sessions_each(cfg, &q, plan_one, &p, err) != 0) ||
        (!dry_run && *cfg->retention.export_before_delete &&
         export_first(cfg, actions, &exported, err) != 0)) {
        json_object_put(actions);
        return -1;
    }
    if (!dry_run)
        carry_out(cfg, &p.st, actions);
    json_object *counts = counts_of(actions);
    if (!dry_run)
        svc_logf("retention: %lld archived, %lld deleted, %lld skipped",
                 (long long)svc_json_int(counts, "archived", 0),
                 (long long)svc_json_int(counts, "deleted", 0),
                 (long long)svc_json_int(counts, "skipped", 0));
    *report = json_object_new_object();
    svc_json_set_bool(*report, "dry_run", dry_run);
    svc_json_set(*report, "actions", actions);
    svc_json_set(*report, "counts", counts);
    if (exported)
        svc_json_set(*report, "export", exported);
    return 0;
}

/* ---- the job ---- */

/* The state (new reference, {} when missing or damaged). */
static json_object *state_read(const struct svc_store *st)
{
    char *path = svc_layout_root_path(st->root, SVC_F_RETENTION, NULL);
    json_object *o = NULL;
    if (svc_json_read_object_file(path, &o, NULL) != 0)
        o = json_object_new_object();
    free(path);
    return o;
}

/* A pass, recorded in the state (the lock is held). */
static void run_recorded(const struct svc_config *cfg, const struct svc_store *st, time_t now,
                         time_t now_min, json_object *state, json_object *res)
{
    struct svc_err err;
    json_object *rep = NULL;
    char buf[SVC_TIME_LEN];
    bool ok = svc_retention_apply(cfg, now, false, &rep, &err) == 0;
    svc_json_set_str(res, "result", ok ? "done" : "error");
    svc_json_set_str(state, "last_due_at", svc_time_format_iso((double)now_min, buf));
    svc_json_set_str(state, "last_run_at", svc_time_now_iso(buf));
    svc_json_set_str(state, "last_status", ok ? "done" : "error");
    if (ok) {
        svc_json_set(res, "counts", json_object_get(svc_json_obj(rep, "counts")));
        svc_json_set(state, "last_counts", json_object_get(svc_json_obj(rep, "counts")));
        svc_json_set(state, "last_error", NULL);
    } else {
        svc_json_set_str(res, "error", err.message);
        svc_json_set_str(state, "last_error", err.message);
        svc_logf("retention: %s", err.message);
    }
    json_object_put(rep);
    char *path = svc_layout_root_path(st->root, SVC_F_RETENTION, NULL);
    if (svc_json_write_pretty(path, state, st->durable, &err) != 0)
        svc_logf("retention: its state could not be written: %s", err.message);
    free(path);
}

json_object *svc_retention_run_due(const struct svc_config *cfg, time_t now)
{
    if (!svc_retention_enabled(cfg))
        return NULL;
    json_object *res = svc_json_new_obj("id", "retention", NULL);
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    struct svc_cron c;
    time_t now_min = svc_cron_minute(now);
    char *lpath = svc_layout_root_path(st.root, SVC_F_RETENTION_LOCK, NULL);
    struct svc_err err;
    int fd = svc_cron_parse(cfg->retention.schedule, &c, &err) == 0 &&
                     svc_mkdirs(st.root, 0755, &err) == 0
                 ? svc_lock_file(lpath, LOCK_EX | LOCK_NB, true)
                 : -2;
    free(lpath);
    if (fd < 0) {
        bool held = fd == -1 && errno == EWOULDBLOCK; /* another host or invocation has it */
        svc_json_set_str(res, "result", held ? "locked" : "error");
        if (!held)
            svc_json_set_str(res, "error", fd == -2 ? err.message : strerror(errno));
        return res;
    }
    /* read only now: whoever held the lock before has recorded its pass */
    json_object *state = state_read(&st);
    time_t next =
        svc_cron_next(&c, svc_cron_base(svc_json_str(state, "last_due_at", NULL), now_min));
    if (next < 0 || next > now_min)
        svc_json_set_str(res, "result", "not_due");
    else
        run_recorded(cfg, &st, now, now_min, state, res);
    json_object_put(state);
    close(fd);
    return res;
}

json_object *svc_retention_job(const struct svc_config *cfg, time_t now)
{
    if (!svc_retention_enabled(cfg))
        return NULL;
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    json_object *state = state_read(&st),
                *o = svc_json_new_obj("id", "retention", "schedule", cfg->retention.schedule, NULL);
    struct svc_cron c;
    time_t next =
        svc_cron_parse(cfg->retention.schedule, &c, NULL) == 0
            ? svc_cron_next(&c, svc_cron_base(svc_json_str(state, "last_due_at", NULL), now))
            : -1;
    char buf[SVC_TIME_LEN];
    svc_json_set_bool(o, "enabled", true);
    svc_json_set_str(o, "next_run_at", next >= 0 ? svc_time_format_iso((double)next, buf) : NULL);
    static const char *const keys[] = {"last_run_at", "last_status", "last_counts", "last_error"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        svc_json_set(o, keys[i], json_object_get(json_object_object_get(state, keys[i])));
    json_object_put(state);
    return o;
}
