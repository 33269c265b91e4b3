#include "turn.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmgr.h"
#include "fsio.h"
#include "jsonx.h"
#include "sidecar.h"
#include "util.h"

/* The session directory before any lock: refused when it is not a plain directory, 1 when
 * missing and not create, made when create (synced at the run's end, turn_sync_dirs), its
 * layout checked when present. */
static int turn_dirs(struct svc_turn *t, bool create, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    struct stat lst;
    t->dirs_seen = false;
    if (create)
        return svc_mkdirs_durable(s->st.root, 0755, s->st.durable, err) != 0 ||
                       svc_mkdirs(s->dir, 0755, err) != 0
                   ? -1
                   : 0;
    if (lstat(s->dir, &lst) != 0)
        return 1;
    if (!S_ISDIR(lst.st_mode)) /* a symlink or a file: never follow it */
        return svc_err_set(err, SVC_E_IO, "session path of %s is not a plain directory", s->sid);
    return svc_sess_check_layout(s, &t->dirs_seen, err);
}

int svc_turn_count(struct svc_turn *t, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    free(t->ids);
    t->ids = NULL;
    json_object_put(t->last);
    t->last = NULL;
    t->counted = svc_sess_message_count(s, t->sc ? svc_json_int(t->sc, "message_count", -1) : -1,
                                        &t->stored, &t->next_id, &t->ids, err) == 0;
    if (!t->counted)
        return -1;
    /* through the window cache, where the restore finds it again */
    json_object *one = json_object_new_array();
    if (t->stored > 0 &&
        svc_sess_read_window(s, t->stored - 1, t->stored, t->ids, false, one, NULL) == 0)
        t->last = json_object_get(json_object_array_get_idx(one, 0));
    json_object_put(one);
    return 0;
}

int svc_turn_lock(struct svc_turn *t, bool create, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    int rc = turn_dirs(t, create, err);
    if (rc != 0)
        return rc;
    if (svc_lock_run_try(s->dir, &t->run_lock, err) != 0)
        return -1;
    if (svc_sess_lock(s, true, err) != 0 || svc_sidecar_get(s, &t->sc, err) != 0) {
        svc_turn_release(t);
        return -1;
    }
    svc_turn_count(t, NULL); /* a failure is reported by the caller's svc_turn_count */
    return 0;
}

void svc_turn_release(struct svc_turn *t)
{
    svc_sess_unlock(t->s);
    t->sc = NULL;
    svc_lock_release(&t->run_lock);
}

/* session.json and agent.json where missing (written synced, SVC_SYNC_FILE; the directories
 * naming them are synced once, at the run's end), and the agent record. */
static int turn_agent(struct svc_turn *t, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    bool made = false;
    if (svc_sess_ensure(s, t->dirs_seen, SVC_SYNC_STORE_FILE, &made, err) != 0)
        return -1;
    struct svc_err rerr;
    if (svc_sess_read_agent(s, &t->agent, &rerr) != 0) {
        if (rerr.code != SVC_E_NOT_FOUND) {
            *err = rerr;
            return -1;
        }
        t->agent = svc_store_new_agent(&s->st);
        made = true;
        if (svc_sess_write_agent(s, t->agent, SVC_SYNC_STORE_FILE, err) != 0)
            return -1;
    }
    /* and again by every run until one of the session's runs completes (a new session has
     * none): the run that made them may have died before its end synced them */
    bool completed = s->st.sidecars ? t->sc && svc_json_int(t->sc, "turn_count", 0) > 0
                                    : svc_agent_model_calls(t->agent) > 0;
    t->dirs_unsynced = s->st.durable && (made || !completed);
    t->removed = svc_agent_removed_count(t->agent);
    return 0;
}

/* The window (messages from removed_message_count on) into win; when a file of the trusted
 * range is missing (removed by another program), count by scanning and restore again. */
static int turn_window(struct svc_turn *t, json_object *win, struct svc_err *err)
{
    for (int pass = 0; pass < 2; pass++) {
        int64_t from = t->removed < t->stored ? t->removed : t->stored;
        if (svc_sess_read_window(t->s, from, t->stored, t->ids, true, win, err) == 0)
            return 0;
        if (pass || t->ids)
            return -1;
        json_object_array_del_idx(win, 0, json_object_array_length(win));
        if (svc_sess_message_count(t->s, -1, &t->stored, &t->next_id, &t->ids, err) != 0)
            return -1;
    }
    return -1;
}

/* Caller holds the exclusive session lock: msg as the next id, its file synced now, its
 * directory once at the end of the run. */
static int turn_write(struct svc_turn *t, json_object *msg, bool is_output, struct svc_err *err)
{
    if (svc_sess_write_message(t->s, t->next_id, msg, SVC_SYNC_STORE_FILE, NULL, err) != 0)
        return -1;
    t->msgs_unsynced = t->s->st.durable;
    if (is_output)
        json_object_array_add(t->output_ids, json_object_new_int64(t->next_id));
    t->next_id++;
    t->stored++;
    return 0;
}

/* The imported history, then the opening messages; the first of those is the input. */
static int turn_inputs(struct svc_turn *t, json_object *import, json_object *opening,
                       json_object *win, struct svc_err *err)
{
    for (int pass = 0; pass < 2; pass++) {
        json_object *list = pass ? opening : import;
        if (pass)
            t->input_id = t->next_id;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *m = json_object_array_get_idx(list, i);
            if (turn_write(t, m, false, err) != 0)
                return -1;
            json_object_array_add(win, json_object_get(m));
        }
    }
    return 0;
}

/* Begin failed after the sidecar said `running`: back to what it was (t->sc, or none); if
 * that cannot be written either, the `running` left is repaired as interrupted. Through the
 * spare, which holds that very file: on a full disk, bytes rewritten in place need no space. */
static void turn_undo(struct svc_turn *t)
{
    const struct svc_store *st = &t->s->st;
    char *path = svc_sess_path(t->s, SVC_F_SIDECAR, SVC_FROM_ABS);
    if (t->sc)
        svc_sidecar_write(t->s, t->sc, svc_sync_spare(svc_sync_full(st->durable), st->durable),
                          NULL);
    else if (path)
        unlink(path);
    free(path);
}

int svc_turn_start(struct svc_turn *t, json_object *running, json_object *import,
                   json_object *opening, json_object *win, struct svc_err *err)
{
    const struct svc_store *st = &t->s->st;
    /* SPEC 3: the sidecar says `running` before any native file is written; the session
     * lock is held, so the sidecar's spare may be used (core/fsio.h) */
    if (running &&
        svc_sidecar_write(t->s, running, svc_sync_spare(svc_sync_full(st->durable), st->durable),
                          err) != 0) {
        svc_turn_release(t);
        return -1;
    }
    int rc = turn_agent(t, err) == 0 && turn_window(t, win, err) == 0 &&
                     turn_inputs(t, import, opening, win, err) == 0
                 ? 0
                 : -1;
    if (rc != 0 && running)
        turn_undo(t);
    svc_sess_unlock(t->s); /* never held across a model call */
    t->sc = NULL;
    if (rc != 0)
        svc_lock_release(&t->run_lock);
    return rc;
}

int svc_turn_store_output(void *turn, json_object *msg, struct svc_err *err)
{
    struct svc_turn *t = turn;
    int rc = svc_sess_lock(t->s, true, err);
    if (rc == 0)
        rc = turn_write(t, msg, true, err);
    svc_sess_unlock(t->s);
    return rc;
}

/* The directories above messages/, each synced once: agent_<id>/, agents/, the session
 * directory and the root, naming a new session's files. Before the commit record, so a
 * completed run's session cannot vanish in a power cut. */
static int turn_sync_dirs(const struct svc_sess *s, struct svc_err *err)
{
    char *agent = svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_ABS);
    char *agents = svc_sess_path(s, SVC_F_AGENTS, SVC_FROM_ABS);
    int rc = 0;
    if (svc_fsync_dir(agent, err) != 0 || svc_fsync_dir(agents, err) != 0 ||
        svc_fsync_dir(s->dir, err) != 0 || svc_fsync_dir(s->st.root, err) != 0)
        rc = -1;
    free(agent);
    free(agents);
    return rc;
}

/* Under the session lock, what the commit record depends on: the message names synced, the
 * directories a new session made synced, agent.json's counts written. */
static int turn_flush(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    const struct svc_store *st = &s->st;
    if (svc_sess_lock(s, true, err) != 0)
        return -1;
    if (t->msgs_unsynced && svc_fsync_dir(s->msg_dir, err) != 0)
        return -1;
    t->msgs_unsynced = false;
    if (t->dirs_unsynced &&
        ((st->sidecars && svc_turns_create(s, err) != 0) || turn_sync_dirs(s, err) != 0))
        return -1;
    t->dirs_unsynced = false;
    if (!t->agent)
        return 0;
    svc_agent_set_counts(t->agent, e->removed, svc_agent_model_calls(t->agent) + e->model_calls);
    svc_cm_set_summary(t->agent, e->summary);
    /* with sidecars the turn line is the commit record and agent.json's name is not synced
     * (see core/run.c's budget); native_file has no other record */
    int sync = st->sidecars ? SVC_SYNC_NONE : svc_sync_full(st->durable);
    return svc_sess_write_agent(s, t->agent, svc_sync_spare(sync, st->durable), err);
}

/* The sidecar read under the lock, or a new one (new reference); the handle forgets it. */
static json_object *turn_sidecar(struct svc_turn *t, const char *model)
{
    struct svc_sess *s = t->s;
    json_object *cur = NULL, *sc;
    if (svc_sidecar_get(s, &cur, NULL) == 0 && cur)
        sc = json_object_get(cur);
    else
        sc = svc_sidecar_new(s->sid, s->st.agent_id, model);
    svc_sess_forget_sidecar(s);
    return sc;
}

/* native_file writes no sidecar; the listing index still learns of the turn. */
static int turn_commit(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    if (!s->st.sidecars) {
        svc_sidecar_resync(&s->st, s->sid);
        return 0;
    }
    json_object *sc = turn_sidecar(t, e->model);
    /* the commit record, synced (fdatasync); then the sidecar, its name not synced */
    int rc = svc_turns_append(s, e->line, err);
    if (rc == 0) {
        e->leave(e->ctx, sc);
        rc = svc_sidecar_write(s, sc, svc_sync_spare(SVC_SYNC_NONE, s->st.durable), err);
    }
    json_object_put(sc);
    return rc;
}

int svc_turn_end(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    int rc = turn_flush(t, e, err) == 0 && turn_commit(t, e, err) == 0 ? 0 : -1;
    svc_sess_unlock(t->s);
    svc_lock_release(&t->run_lock);
    return rc;
}
