/* run: the run lifecycle of SPEC 3 (contract in session.h): begin, finish, fail, cancel
 * and the repair of a run whose process died. The agent loop is agent_loop.c. What the
 * run's files say is decided here; the store writes them, in the order below, through a
 * turn (svc_turn_lock, svc_turn_start, svc_turn_store_output, svc_turn_end in turn.c).
 *
 * Crash order. begin writes svc_session.json `running` before any native file, so a process
 * killed at any later write leaves a `running` sidecar with nobody holding the run lock: the
 * next access repairs it to `error` (interrupted). The turn line is the run's commit record:
 * once it is appended, a dead process's run is completed from it (status idle for `done`).
 *
 * The fsync budget of a durable turn (sessions.fsync: true) on an existing session, echo
 * model: 9 calls.
 *   1 fdatasync  svc_session.json `running` (its spare)    begin
 *   1 fsync      the session directory (its rename)         begin
 *   1 fdatasync  per message file (temp file): user, answer as produced
 *   1 fsync      the messages directory, once for all       end
 *   1 fdatasync  agent.json (its spare)                     end
 *   1 fdatasync  the svc_turns.jsonl append                 end
 *   1 fdatasync  svc_memory.json, 1 the final svc_session.json (spares), after the line
 * Why this set: a completed run must survive a power cut after its answer was sent (SPEC
 * 2.3), and no native file may be durable before the `running` sidecar is. The messages
 * and the turn line are the run; they are synced before the answer is sent. agent.json,
 * svc_memory.json and the final svc_session.json have their data synced but not their
 * directories: a power cut may bring back the version before, never an empty file (a
 * rename can reach the disk before unsynced data, fsio.h svc_sync_spare; `make powercut`
 * found all three empty). The older versions are whole and the repair completes the run
 * from its turn line (status, counts recounted from the files); agent.json's counts only
 * steer the window (a stale removed_message_count makes the next restore slide it again).
 * A new session's first turn: 15 calls. Its directories are made without a sync and session.json
 * and agent.json written with fdatasync only; the directories naming them (agent_<id>/, agents/,
 * the session directory, the root) are synced once each at the run's end, before the commit record
 * (store.c's turn_sync_dirs), svc_turns.jsonl made empty just before so that its name is in the
 * session directory's sync. A run that dies first leaves them unsynced: every run syncs them again
 * until one of the session's runs completes (turn_count 0; without sidecars, model_call_count 0).
 * Before that sync a power cut can lose the session, which has answered nothing: the `running`
 * sidecar's own rename is synced before any native file, so the session never comes back as
 * natives without it. t/22 checks the order on strace's log. Memory sync (memory.c, after the turn
 * line, its memory_state in the run's final sidecar write) appends its digest without a sync:
 * digests are derived from the synced messages; a power cut can lose one, never a turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctools.h"
#include "fsio.h"
#include "jsonx.h"
#include "labels.h"
#include "lock.h"
#include "log.h"
#include "memory.h"
#include "metrics.h"
#include "openai.h"
#include "parts.h"
#include "runstate.h"
#include "sidecar.h"
#include "store.h"
#include "strands.h"
#include "title.h"
#include "util.h"

static void run_event_add(void *ctx, const char *line, size_t n, size_t off)
{
    (void)off;
    json_object *ev = svc_jsonl_object(line, n);
    if (ev)
        json_object_array_add(ctx, ev);
}

/* The events a run recorded, in order (new reference; empty when none or id invalid). */
static json_object *run_events(const char *root, const char *run_id)
{
    json_object *arr = json_object_new_array();
    char *buf = NULL;
    size_t len = 0;
    if (!run_id || strlen(run_id) > 64 || !svc_layout_id_valid(run_id))
        return arr;
    char *path = svc_layout_run_path(root, run_id, SVC_RUN_EVENTS);
    if (svc_file_read(path, &buf, &len, NULL) == 0)
        svc_jsonl_lines(buf, len, run_event_add, arr); /* a torn tail is not an event */
    free(buf);
    free(path);
    return arr;
}

static json_object *turn_line(const char *run_id, const char *status, int64_t input_id,
                              json_object *output_ids, json_object *events, json_object *trace,
                              int64_t p, int64_t c, json_object *error, const char *created)
{
    char now[SVC_TIME_LEN], tid[40];
    svc_random_id("turn", tid, sizeof tid);
    json_object *t = json_object_new_object();
    svc_json_set_int(t, "schema_version", 1);
    svc_json_set_str(t, "turn_id", tid);
    svc_json_set_str(t, "run_id", run_id);
    svc_json_set_str(t, "status", status);
    svc_json_set(t, "input_message_id", input_id >= 0 ? json_object_new_int64(input_id) : NULL);
    svc_json_set(t, "output_message_ids", output_ids ? output_ids : json_object_new_array());
    svc_json_set(t, "events", events ? events : json_object_new_array());
    svc_json_set(t, "tool_trace", trace ? trace : json_object_new_array());
    svc_json_set(t, "usage", svc_usage_new(p, c));
    svc_json_set(t, "error", error);
    svc_json_set_str(t, "created_at", created ? created : svc_time_now_iso(now));
    svc_json_set_str(t, "updated_at", svc_time_now_iso(now));
    return t;
}

/* The sidecar as a run leaves it: its status (idle for done), no current run, count
 * messages; done: one more turn and no last_error, else error (taken, may be NULL). */
static void leave_sidecar(json_object *sc, const char *status, int64_t count, json_object *error)
{
    char now[SVC_TIME_LEN];
    bool done = strcmp(status, "done") == 0;
    svc_json_set_str(sc, "status", done ? "idle" : status);
    svc_json_set(sc, "current_run", NULL);
    svc_json_set_int(sc, "message_count", count);
    svc_json_set_str(sc, "updated_at", svc_time_now_iso(now));
    if (done)
        svc_json_set_int(sc, "turn_count", svc_json_int(sc, "turn_count", 0) + 1);
    svc_json_set(sc, "last_error", error);
}

/* ---- stale repair ---- */

/* Repair sc (status running, no live run) in place. Caller holds the exclusive session
 * lock. A run whose turn line was appended had completed: it is finished from that line
 * (its token_state is not recovered). Otherwise the run was cut: status error,
 * last_error interrupted, and a turn line saying so. */
static int repair_locked(struct svc_sess *s, json_object *sc, struct svc_err *err)
{
    const char *sid = s->sid;
    json_object *cur = svc_json_obj(sc, "current_run");
    bool had_run = cur != NULL;
    char run_id[64], started[64];
    snprintf(run_id, sizeof run_id, "%s",
             svc_json_str(cur, "run_id", svc_json_str(sc, "last_run_id", "")));
    snprintf(started, sizeof started, "%s", svc_json_str(cur, "started_at", ""));
    int64_t *ids = NULL;
    size_t n = 0;
    if (svc_sess_message_ids(s, &ids, &n, err) != 0)
        return -1;
    /* begin_run counted the input in message_count before it stored it: the input is the
     * message at that position (when it was stored), the run's outputs the ones after */
    int64_t input_id = -1, mc = svc_json_int(sc, "message_count", 0);
    json_object *outputs = json_object_new_array();
    if (mc >= 1 && (size_t)mc <= n) {
        input_id = ids[mc - 1];
        for (size_t i = (size_t)mc; i < n; i++)
            json_object_array_add(outputs, json_object_new_int64(ids[i]));
    }
    free(ids);
    json_object *last = NULL;
    svc_turns_last(s, &last, NULL);
    int rc;
    /* only a sidecar a run wrote (with current_run) can be completed from its line */
    if (last && had_run && *run_id && strcmp(svc_json_str(last, "run_id", ""), run_id) == 0) {
        const char *status = svc_json_str(last, "status", "error");
        json_object *e = svc_json_obj(last, "error");
        bool done = strcmp(status, "done") == 0;
        leave_sidecar(sc, status, (int64_t)n, done || !e ? NULL : svc_json_copy(e));
        rc = svc_sidecar_write(s, sc, SVC_SYNC_STORE, err);
        if (rc == 0)
            svc_logf("completed run %s of session %s from its turn line: status %s", run_id, sid,
                     done ? "idle" : status);
    } else {
        struct svc_err ie;
        svc_err_set(&ie, SVC_E_INTERRUPTED, "the run's process ended before the run finished");
        leave_sidecar(sc, "error", (int64_t)n, svc_memory_failure(&ie, run_id));
        /* the events the run recorded (asynchronous runs), ended by the one error event */
        json_object *events = run_events(s->st.root, run_id);
        size_t nev = json_object_array_length(events);
        const char *last_type =
            nev ? svc_json_str(json_object_array_get_idx(events, nev - 1), "type", "") : "";
        if (strcmp(last_type, "error") != 0 && strcmp(last_type, "done") != 0) {
            json_object *ev = svc_event_new(run_id, sid, (int64_t)nev + 1, "error");
            svc_json_set_str(ev, "message", ie.message);
            svc_json_set_str(ev, "code", svc_err_name(ie.code));
            json_object_array_add(events, ev);
        }
        json_object *turn =
            turn_line(run_id, "error", input_id, json_object_get(outputs), events, NULL, 0, 0,
                      svc_memory_failure(&ie, run_id), *started ? started : NULL);
        rc = svc_turns_append(s, turn, err);
        json_object_put(turn);
        if (rc == 0)
            rc = svc_sidecar_write(s, sc, SVC_SYNC_STORE, err);
        if (rc == 0)
            svc_logf("repaired stale run %s of session %s: status error (interrupted)", run_id,
                     sid);
    }
    json_object_put(last);
    json_object_put(outputs);
    return rc;
}

/* Whether sc says running while no process holds s's run lock. */
static bool stale_running(const struct svc_sess *s, json_object *sc)
{
    return sc && strcmp(svc_json_str(sc, "status", ""), "running") == 0 &&
           !svc_lock_run_held(s->dir);
}

int svc_run_repair(struct svc_sess *s, struct svc_err *err)
{
    if (!s->st.sidecars)
        return 0;
    json_object *sc = NULL;
    /* cheap path first: sidecars are replaced atomically, so an unlocked read is whole */
    bool stale = svc_sidecar_read(s, &sc, NULL) == 0 && stale_running(s, sc);
    json_object_put(sc);
    if (!stale)
        return 0;
    bool held = s->lock.fd >= 0;
    svc_sess_forget_sidecar(s);
    if (svc_sess_lock(s, true, err) != 0) {
        char why[512]; /* on a root nobody can write, it is read as it is on disk */
        return svc_dir_writable("session root", s->st.root, why, sizeof why) ? -1 : 0;
    }
    int rc = 0;
    if (svc_sidecar_get(s, &sc, NULL) == 0 && stale_running(s, sc))
        rc = repair_locked(s, sc, err) == 0 ? 1 : -1;
    if (held)
        svc_sess_forget_sidecar(s);
    else
        svc_sess_unlock(s);
    return rc;
}

int svc_session_repair_stale(const struct svc_config *cfg, const char *sid, struct svc_err *err)
{
    struct svc_sess s;
    if (svc_sess_open(cfg, sid, &s, err) != 0)
        return -1;
    int rc = svc_run_repair(&s, err);
    svc_sess_close(&s);
    return rc;
}

/* ---- begin ---- */

static struct svc_run *run_alloc(const struct svc_config *cfg, const struct svc_run_request *req)
{
    struct svc_run *run = svc_xcalloc(1, sizeof *run);
    run->cfg = cfg;
    run->stateful = cfg->sessions.enabled && !req->stateless;
    run->sidecars = cfg->sessions.provider == SVC_PROVIDER_SVC_REPOSITORY;
    if (req->run_id && *req->run_id)
        snprintf(run->run_id, sizeof run->run_id, "%s", req->run_id);
    else
        svc_random_id("run", run->run_id, sizeof run->run_id);
    char sid[SVC_ID_MAX + 1];
    if (req->session_id)
        snprintf(sid, sizeof sid, "%s", req->session_id);
    else
        svc_random_id("sess", sid, sizeof sid);
    svc_sess_open(cfg, sid, &run->sess, NULL); /* svc_run_begin checked the id */
    svc_time_now_iso(run->started_at);
    svc_loop_init(&run->loop, cfg, run->run_id, run->sess.sid, req);
    run->loop.model = cfg->model.name;
    run->turn = (struct svc_turn){.s = &run->sess, .run_lock = SVC_LOCK_INIT, .input_id = -1};
    run->turn.output_ids = json_object_new_array();
    if (run->stateful) { /* a stateless run stores nothing */
        run->loop.store = svc_turn_store_output;
        run->loop.store_ctx = &run->turn;
    }
    return run;
}

/* Whether the calls a Strands interrupt waits on (pending, strands.h) are those of last. */
static bool waits_on(json_object *last, json_object *pending)
{
    json_object *calls = svc_ctools_pending(last);
    size_t found = 0;
    for (size_t i = 0; i < json_object_array_length(pending); i++)
        for (size_t k = 0; k < json_object_array_length(calls); k++)
            found +=
                strcmp(svc_json_str(json_object_array_get_idx(pending, i), "toolUseId", ""),
                       svc_json_str(json_object_array_get_idx(calls, k), "toolUseId", "-")) == 0;
    json_object_put(calls);
    return found == json_object_array_length(pending);
}

/* The messages a run stores before its first model call (SPEC 12.1, 17): the results of
 * the calls the newest message (last, may be NULL) awaits (a Strands interrupt's, closed as
 * strands.h says, when agent.json holds one), or error results for them when new input
 * comes instead, then the user input. */
static int begin_messages(struct svc_run *run, const struct svc_run_request *req, json_object *last,
                          json_object *agent, json_object **out, struct svc_err *err)
{
    json_object *pending = svc_ctools_pending(last), *res = NULL;
    json_object *intr = svc_strands_pending(agent);
    bool answers = req->tool_results && json_object_array_length(req->tool_results) > 0;
    *out = json_object_new_array();
    int rc = 0;
    run->interrupt_closed = intr != NULL; /* a state left activated is stale otherwise */
    if (intr && waits_on(last, intr)) {
        rc = svc_strands_close(agent, answers ? req->tool_results : NULL, &res,
                               run->loop.client_names, err);
    } else if (svc_ctools_approvals(req->tool_results)) {
        json_object_put(run->loop.resume);
        rc = svc_ctools_resume(pending, req->tool_results, &run->loop.resume, err);
    } else if (answers) {
        rc = svc_ctools_answer(pending, req->tool_results, &res, run->loop.client_names, err);
    } else {
        res = svc_ctools_interrupted(pending);
    }
    json_object_put(pending);
    json_object_put(intr);
    if (rc != 0)
        return -1;
    if (res)
        json_object_array_add(*out, res);
    if (svc_openai_has_media(req->input_content)) {
        json_object *om = svc_parts_message("user", json_object_get(req->input_content));
        json_object_array_add(*out, svc_openai_to_native(om));
        json_object_put(om);
    } else if (req->input && *req->input) {
        json_object_array_add(*out, svc_parts_message("user", svc_parts_text(req->input)));
    }
    return 0;
}

/* The sidecar of a run that begins: status running, current_run, counts. sc is the
 * sidecar read (borrowed, may be NULL); returns a new reference. */
static json_object *running_sidecar(struct svc_run *run, const struct svc_run_request *req,
                                    json_object *sc, json_object *meta, int64_t message_count)
{
    const struct svc_store *st = &run->sess.st;
    json_object *out = NULL;
    if (sc)
        out = svc_json_copy(sc);
    else if (run->turn.stored > 0 && svc_sidecar_derive(&run->sess, &out, NULL) == 0)
        svc_json_set_int(out, "schema_version", 1); /* a session Strands wrote */
    else
        out = svc_sidecar_new(run->sess.sid, st->agent_id, run->cfg->model.name);
    if (!*svc_json_str(out, "title", "") && req->input && *req->input)
        svc_title_derive(out, req->input);
    json_object_object_del(out, "pending_tool_calls"); /* this run answers them */
    if (req->user_id && !svc_user_owner(out))
        svc_json_set_str(out, "user_id", req->user_id);
    if (!sc && run->turn.stored == 0 && req->user && req->user->id)
        svc_user_own(out, req->user->id); /* a new session: the asker owns it */
    if (req->channel)
        svc_json_set_str(out, "channel", req->channel);
    if (req->locale)
        svc_json_set_str(out, "locale", req->locale);
    if (meta)
        svc_json_set(out, "metadata", json_object_get(meta));
    svc_json_set_str(out, "model", run->cfg->model.name);
    svc_json_set_str(out, "updated_at", run->started_at);
    svc_json_set_int(out, "message_count", message_count);
    svc_json_set_int(out, "run_count", svc_json_int(out, "run_count", 0) + 1);
    svc_json_set_str(out, "last_run_id", run->run_id);
    svc_json_set_str(out, "status", "running");
    json_object *cur = svc_json_new_obj("run_id", run->run_id, NULL);
    svc_json_set_int(cur, "pid", (int64_t)svc_pid());
    svc_json_set_str(cur, "started_at", run->started_at);
    svc_json_set(out, "current_run", cur);
    return out;
}

/* truncation "disabled": a window of count messages may not be cut (SPEC 12.3). */
static int window_full(const struct svc_run *run, int64_t count, struct svc_err *err)
{
    if (!run->loop.no_truncation || count <= run->cfg->agent.window_size)
        return 0;
    return svc_err_setp(err, SVC_E_CONTEXT_LENGTH, "truncation",
                        "the conversation holds %lld messages, more than the window of %lld, and "
                        "'truncation' is disabled",
                        (long long)count, (long long)run->cfg->agent.window_size);
}

/* How many stored messages the window restores (agent.json's removed_message_count read
 * ahead of the restore, which comes after the `running` sidecar). */
static int64_t stored_window(struct svc_run *run)
{
    json_object *agent = NULL;
    int64_t removed = 0;
    if (svc_sess_read_agent(&run->sess, &agent, NULL) == 0)
        removed = svc_agent_removed_count(agent);
    json_object_put(agent);
    int64_t stored = run->turn.stored;
    return stored - (removed < stored ? removed : stored);
}

/* A new session awaits only the calls at the end of the history it imports: results that
 * answer none are refused before its directory is made. */
static int check_new_answers(struct svc_run *run, const struct svc_run_request *req,
                             struct svc_err *err)
{
    if (!req->tool_results || json_object_array_length(req->tool_results) == 0)
        return 0;
    json_object *last = NULL, *opening = NULL;
    size_t n = req->history && run->cfg->sessions.persist_openai_history
                   ? json_object_array_length(req->history)
                   : 0;
    while (n > 0 && !last)
        last = svc_openai_to_native(json_object_array_get_idx(req->history, --n));
    int rc = begin_messages(run, req, last, NULL, &opening, err);
    json_object_put(last);
    json_object_put(opening);
    return rc;
}

/* SPEC 14: a session the asker may not see is missing to them. sc is its sidecar (NULL:
 * none); without one, a directory holding native files is a session of the admins. */
static int check_user(struct svc_run *run, const struct svc_run_request *req, json_object *sc,
                      struct svc_err *err)
{
    const char *scope = svc_user_scope(req->user);
    json_object *derived = NULL;
    if (!scope ||
        (sc ? svc_user_sees(scope, sc) : svc_sidecar_derive(&run->sess, &derived, NULL) != 0))
        return 0;
    json_object_put(derived);
    return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", run->sess.sid);
}

/* The same without the session lock, for a session whose run lock is taken: another
 * user's session is never busy to them. */
static int check_user_unlocked(struct svc_run *run, const struct svc_run_request *req,
                               struct svc_err *err)
{
    if (!svc_user_scope(req->user))
        return 0;
    json_object *sc = NULL;
    svc_sidecar_read(&run->sess, &sc, NULL);
    int rc = check_user(run, req, sc, err);
    json_object_put(sc);
    return rc;
}

/* The session's directory (a new session's id and answers checked before it is made) and
 * both locks, then the sidecar (run->turn.sc) and the count: another user's session
 * missing, a stale `running` repaired (we hold the run lock) and counted again, an
 * archived session refused, even under native_file. */
static int begin_lock(struct svc_run *run, const struct svc_run_request *req, struct svc_err *err)
{
    struct svc_turn *t = &run->turn;
    const char *sid = run->sess.sid;
    int rc = svc_turn_lock(t, false, err);
    /* GET /api/v1/chat/sessions/export and .../search are routes' paths (cgi/routes.c): svc
     * makes no session it could not show there (one another program made is still served) */
    if (rc == 1 && (strcmp(sid, "export") == 0 || strcmp(sid, "search") == 0))
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id '%s' is reserved (the path of the %s route); choose "
                            "another",
                            sid, sid);
    if (rc == 1)
        rc = check_new_answers(run, req, err) != 0 ? -1 : svc_turn_lock(t, true, err);
    if (rc != 0) {
        if (err && err->code == SVC_E_SESSION_BUSY)
            check_user_unlocked(run, req, err); /* another's is missing, not busy */
        return -1;
    }
    json_object *sc = t->sc;
    bool stale = sc && run->sidecars && strcmp(svc_json_str(sc, "status", ""), "running") == 0;
    if (check_user(run, req, sc, err) != 0 || (stale && repair_locked(&run->sess, sc, err) != 0))
        rc = -1;
    else if (sc && svc_json_bool(sc, "archived", false))
        rc = svc_err_set(err, SVC_E_SESSION_ARCHIVED, "session %s is archived; unarchive it first",
                         sid);
    else if ((stale || !t->counted) && svc_turn_count(t, err) != 0)
        rc = -1;
    if (rc != 0)
        svc_turn_release(t);
    return rc;
}

/* The request's OpenAI history (may be NULL) as native messages, appended to into. */
static void add_history(json_object *into, json_object *history)
{
    for (size_t i = 0; history && i < json_object_array_length(history); i++) {
        json_object *nm = svc_openai_to_native(json_object_array_get_idx(history, i));
        if (nm)
            json_object_array_add(into, nm);
    }
}

/* The history stored on a session's first run when sessions.persist_openai_history (new
 * reference, maybe empty). */
static json_object *begin_history(struct svc_run *run, const struct svc_run_request *req,
                                  json_object *sc)
{
    json_object *import = json_object_new_array();
    bool first_run = run->turn.stored == 0 && (!sc || svc_json_int(sc, "run_count", 0) == 0);
    if ((first_run || req->append_history) && run->cfg->sessions.persist_openai_history)
        add_history(import, req->history);
    return import;
}

/* The Strands interrupt this run closed (strands.h) deactivated in agent.json at once,
 * right after the message that closes it: Strands never runs its calls again. Should that
 * write fail, the run's end writes the same record. */
static void close_interrupt(struct svc_run *run)
{
    struct svc_turn *t = &run->turn;
    struct svc_err err;
    svc_strands_deactivate(t->agent);
    if (svc_sess_lock(&run->sess, true, &err) != 0 ||
        svc_sess_write_agent(&run->sess, t->agent, SVC_SYNC_STORE, &err) != 0)
        svc_logf("session %s: the closed interrupt is recorded at the run's end: %s", run->sess.sid,
                 err.message);
    svc_sess_unlock(&run->sess);
}

/* Locked, the run's meaning: its opening messages, the `running` sidecar; then the store
 * writes them in its order (svc_turn_start). */
static int begin_stateful(struct svc_run *run, const struct svc_run_request *req,
                          struct svc_err *err)
{
    struct svc_turn *t = &run->turn;
    if (begin_lock(run, req, err) != 0)
        return -1;
    if (req->expect_count > 0 && t->stored != req->expect_count) {
        /* it grew since the request was matched to it: a retry matches again (a fork now) */
        svc_turn_release(t);
        return svc_err_set(err, SVC_E_SESSION_BUSY,
                           "session %s changed while this request was matched to it; retry",
                           run->sess.sid);
    }
    json_object *sc = t->sc, *opening = NULL, *running = NULL, *meta = NULL;
    if (svc_labels_metadata_merge(sc, req->metadata, &meta, err) != 0) {
        svc_turn_release(t);
        return -1;
    }
    run->loop.prev_tokens = sc ? svc_json_copy(svc_json_obj(sc, "token_state")) : NULL;
    json_object *import = begin_history(run, req, sc);
    int64_t nimport = (int64_t)json_object_array_length(import);
    json_object *last =
        json_object_get(nimport > 0 ? json_object_array_get_idx(import, nimport - 1) : t->last);
    json_object *agent = NULL;
    svc_sess_read_agent(&run->sess, &agent, NULL);
    int rc = begin_messages(run, req, last, agent, &opening, err);
    json_object_put(agent);
    json_object_put(last);
    int64_t nopen = rc == 0 ? (int64_t)json_object_array_length(opening) : 0;
    if (rc == 0 && run->loop.no_truncation &&
        window_full(run, stored_window(run) + nimport + nopen, err) != 0)
        rc = -1;
    if (rc != 0) {
        svc_turn_release(t);
        goto out;
    }
    if (run->sidecars) {
        running = running_sidecar(run, req, sc, meta, t->stored + nimport + nopen);
        const char *owner = svc_user_owner(running);
        run->owner = owner ? svc_xstrdup(owner) : NULL;
        run->loop.owner = run->owner; /* memory recall's scope */
    }
    rc = svc_turn_start(t, running, import, opening, run->loop.msgs, err);
    run->loop.removed = t->removed;
    if (rc == 0)
        svc_loop_manager(&run->loop, t->agent);
    if (rc == 0 && run->interrupt_closed)
        close_interrupt(run);
out:
    json_object_put(import);
    json_object_put(opening);
    json_object_put(running);
    json_object_put(meta);
    return rc;
}

/* A stateless run's messages: the request's history, then the opening messages. */
static int begin_stateless(struct svc_run *run, const struct svc_run_request *req,
                           struct svc_err *err)
{
    json_object *msgs = run->loop.msgs, *opening = NULL;
    add_history(msgs, req->history);
    svc_loop_manager(&run->loop, NULL);
    size_t n = json_object_array_length(msgs);
    if (begin_messages(run, req, n ? json_object_array_get_idx(msgs, n - 1) : NULL, NULL, &opening,
                       err) != 0)
        return -1;
    for (size_t i = 0; i < json_object_array_length(opening); i++)
        json_object_array_add(msgs, json_object_get(json_object_array_get_idx(opening, i)));
    json_object_put(opening);
    return window_full(run, (int64_t)json_object_array_length(msgs), err);
}

int svc_run_begin(const struct svc_config *cfg, const struct svc_run_request *req,
                  struct svc_run **out, struct svc_err *err)
{
    *out = NULL;
    bool answers = req->tool_results && json_object_array_length(req->tool_results) > 0;
    if ((!req->input || !*req->input) && !answers && !req->no_input &&
        !svc_openai_has_media(req->input_content))
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "messages",
                            "no user input: the last user message is empty");
    if (svc_ctools_check(cfg, req->user ? req->user->id : NULL, req->client_tools, req->tool_choice,
                         err) != 0)
        return -1;
    if (req->session_id && svc_layout_id_check(req->session_id, err) != 0)
        return -1;
    if (req->has_temperature && !(req->temperature >= 0 && req->temperature <= 2))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "temperature",
                            "'temperature' must be between 0 and 2");
    const char *mtp = req->max_tokens_param ? req->max_tokens_param : "max_tokens";
    if (req->has_max_tokens && (req->max_tokens < 1 || req->max_tokens > INT32_MAX))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, mtp, "'%s' must be between 1 and %d", mtp,
                            INT32_MAX);
    struct svc_run *run = run_alloc(cfg, req);
    bool stateful = run->stateful;
    if ((stateful ? begin_stateful(run, req, err) : begin_stateless(run, req, err)) != 0) {
        run->ended = true;
        svc_run_free(run);
        return stateful ? svc_err_unwritable(cfg->sessions.root, err) : -1;
    }
    run->begun = true;
    *out = run;
    return 0;
}

/* ---- end: finish, fail, cancel ---- */

/* The messages this run stored (its input and outputs) are the tail of the window with ids
 * input_id .. next_id - 1: memory sync finds the pair there without reading a file. *recent
 * (new reference) and *ids (heap) are NULL when the tail is not whole (memory.c then reads
 * the files). */
static void run_recent(struct svc_run *run, json_object **recent, int64_t **ids)
{
    *recent = NULL;
    *ids = NULL;
    size_t n = json_object_array_length(run->loop.msgs);
    int64_t k = run->turn.next_id - run->turn.input_id;
    if (run->turn.input_id < 0 || k <= 0 || (size_t)k > n)
        return;
    *recent = json_object_new_array_ext((int)k);
    *ids = svc_xcalloc((size_t)k, sizeof **ids);
    for (int64_t i = 0; i < k; i++) {
        json_object_array_add(
            *recent, json_object_get(json_object_array_get_idx(run->loop.msgs, n - (size_t)k + i)));
        (*ids)[i] = run->turn.input_id + i;
    }
}

/* Memory sync of the run's pair: inside the run's end with sc (the session lock held:
 * memory_state goes into sc), else after it (core/memory.h). */
static void sync_memory(struct svc_run *run, json_object *sc)
{
    json_object *recent = NULL;
    int64_t *ids = NULL;
    run_recent(run, &recent, &ids);
    if (sc)
        svc_memory_sync_run(run->cfg, &run->sess, recent, ids, sc, NULL);
    else
        svc_memory_sync_recent(run->cfg, &run->sess, recent, ids, NULL);
    json_object_put(recent);
    free(ids);
}

static void deliver_final_event(struct svc_run *run, json_object *ev)
{
    if (run->loop.sink && run->loop.sink->on_event)
        run->loop.sink->on_event(run->loop.sink->ctx, ev);
}

struct end_ctx {
    struct svc_run *run;
    const char *status;
    const struct svc_err *failure;
};

/* The sidecar as the run leaves it (sc read under the lock, after the turn line): status,
 * counts, error, token state; SPEC 3 step 4, memory sync, follows the turn line. Done
 * here, under the lock already held, its memory_state rides in the store's one sidecar
 * write; a caller that publishes the run's end first (svc_run_defer_memory) syncs
 * afterwards. A crash between the two leaves the `running` sidecar, completed from the
 * turn line (memory.c finds a digest already written). */
static void end_leave(void *ctx, json_object *sc)
{
    const struct end_ctx *c = ctx;
    struct svc_run *run = c->run;
    leave_sidecar(sc, c->status, run->turn.stored, svc_memory_failure(c->failure, run->run_id));
    /* SPEC 12.1: the client tool calls the run ended on, until a request answers them */
    if (json_object_array_length(run->loop.client_calls) > 0)
        svc_json_set(sc, "pending_tool_calls", svc_json_copy(run->loop.client_calls));
    else
        json_object_object_del(sc, "pending_tool_calls");
    svc_json_set(sc, "token_state",
                 svc_loop_token_state(&run->loop, svc_json_obj(sc, "token_state")));
    if (!c->failure && run->cfg->sessions.sync_memory && !run->memory_defer) {
        sync_memory(run, sc);
        run->memory_synced = true;
    }
}

static int run_end(struct svc_run *run, const struct svc_err *failure)
{
    struct svc_err err;
    run->ended = true;
    run->content_str = svc_buf_steal(&run->loop.content);
    const char *status = svc_run_status_of(failure ? failure->code : SVC_OK);
    svc_metrics_run(status, svc_time_monotonic() - run->loop.started_mono);
    /* recorded in the turn line below; delivered to the sink only once the session is
     * committed and the run lock released, so whoever sees the final event (a stream, a
     * runner's record) can start the next run at once instead of meeting session_busy */
    json_object *ev = run->loop.final ? run->loop.final : svc_loop_final_event(&run->loop, failure);
    if (!run->stateful) {
        deliver_final_event(run, ev);
        return 0;
    }
    struct svc_turn *t = &run->turn;
    struct end_ctx c = {run, status, failure};
    json_object *line =
        run->sidecars
            ? turn_line(run->run_id, status, t->input_id, json_object_get(t->output_ids),
                        json_object_get(run->loop.events), json_object_get(run->loop.tool_trace),
                        run->loop.prompt_tokens, run->loop.completion_tokens,
                        svc_memory_failure(failure, run->run_id), run->started_at)
            : NULL;
    struct svc_turn_end e = {.removed = run->loop.removed,
                             .model_calls = run->loop.loop_count,
                             .summary = run->loop.summary_new ? run->loop.summary : NULL,
                             .line = line,
                             .model = run->cfg->model.name,
                             .leave = end_leave,
                             .ctx = &c};
    int rc = svc_turn_end(t, &e, &err);
    if (rc != 0) {
        svc_logf("session %s run %s: could not record the run's end: %s", run->sess.sid,
                 run->run_id, err.message);
        run->end_err = err;
    }
    json_object_put(line);
    deliver_final_event(run, ev);
    return rc;
}

int svc_run_execute(struct svc_run *run, const struct svc_run_sink *sink, struct svc_err *err)
{
    if (!run->begun || run->ended)
        return svc_err_set(err, SVC_E_INTERNAL, "run is not active");
    run->loop.sink = sink;
    struct svc_err lerr;
    int rc = svc_loop_run(&run->loop, &lerr);
    int erc = run_end(run, rc == 0 ? NULL : &lerr);
    run->loop.sink = NULL;
    /* SPEC 3.4 / 8: memory sync after finish_run; logged and recorded, never fails the run */
    run->memory_due = rc == 0 && erc == 0 && run->stateful && run->sidecars &&
                      run->cfg->sessions.sync_memory && !run->memory_synced;
    if (!run->memory_defer)
        svc_run_sync_memory(run);
    if (rc != 0) {
        if (err)
            *err = lerr;
        return -1;
    }
    if (erc != 0)
        return svc_err_set(err, SVC_E_IO, "the answer was produced but could not be recorded: %s",
                           run->end_err.message);
    return 0;
}

void svc_run_defer_memory(struct svc_run *run)
{
    run->memory_defer = true;
}

void svc_run_sync_memory(struct svc_run *run)
{
    if (!run->memory_due)
        return;
    run->memory_due = false;
    sync_memory(run, NULL);
}

void svc_run_free(struct svc_run *run)
{
    if (!run)
        return;
    if (run->begun && !run->ended) {
        struct svc_err e;
        svc_err_set(&e, SVC_E_INTERNAL, "the run was abandoned before it executed");
        run_end(run, &e);
    }
    svc_lock_release(&run->turn.run_lock);
    svc_sess_close(&run->sess);
    json_object_put(run->turn.agent);
    json_object_put(run->turn.output_ids);
    json_object_put(run->turn.last);
    free(run->turn.ids);
    free(run->owner);
    svc_loop_free(&run->loop);
    free(run->content_str);
    free(run);
}

void svc_run_abandon(struct svc_run *run)
{
    if (!run)
        return;
    run->ended = true; /* the child ends it */
    svc_run_free(run);
}

int svc_run_note_runner(struct svc_run *run, struct svc_err *err)
{
    if (!run->stateful || !run->sidecars)
        return 0;
    struct svc_sess *s = &run->sess;
    json_object *sc = NULL;
    int rc = svc_sess_lock(s, true, err) != 0 || svc_sidecar_get(s, &sc, err) != 0 ? -1 : 0;
    json_object *cur = rc == 0 ? svc_json_obj(sc, "current_run") : NULL;
    if (cur && strcmp(svc_json_str(cur, "run_id", ""), run->run_id) == 0) { /* else not ours */
        svc_json_set_int(cur, "pid", (int64_t)svc_pid());
        rc = svc_sidecar_write(s, sc, SVC_SYNC_STORE, err);
    }
    svc_sess_unlock(s);
    return rc;
}

int svc_run_lock_fd(const struct svc_run *run)
{
    return run->turn.run_lock.fd;
}

void svc_run_set_lock_fd(struct svc_run *run, int fd)
{
    run->turn.run_lock.fd = fd;
}

void svc_run_answer(const struct svc_run *run, struct svc_run_answer *out)
{
    const struct svc_loop *loop = &run->loop;
    *out = (struct svc_run_answer){
        .run_id = run->run_id,
        .session_id = run->sess.sid,
        .model = run->cfg->model.name,
        .content = run->content_str     ? run->content_str
                   : loop->content.data ? loop->content.data
                                        : "",
        .finish_reason = loop->finish_reason[0] ? loop->finish_reason : "stop",
        .prompt_tokens = loop->prompt_tokens,
        .completion_tokens = loop->completion_tokens,
        .cached_tokens = loop->cached_tokens,
        .reasoning_tokens = loop->reasoning_tokens,
        .logprobs = loop->logprobs,
        .last_message_id = run->turn.next_id - 1,
        .events = loop->events,
        .tool_calls = loop->tool_calls,
        .client_calls = loop->client_calls,
        .summary = loop->summary_new ? loop->summary : NULL,
    };
}

json_object *svc_usage_of(const struct svc_run_answer *a)
{
    json_object *u = svc_usage_new(a->prompt_tokens, a->completion_tokens);
    svc_json_set(u, "prompt_tokens_details",
                 svc_parts_wrap("cached_tokens", json_object_new_int64(a->cached_tokens)));
    svc_json_set(u, "completion_tokens_details",
                 svc_parts_wrap("reasoning_tokens", json_object_new_int64(a->reasoning_tokens)));
    return u;
}

json_object *svc_usage_new(int64_t prompt, int64_t completion)
{
    json_object *u = json_object_new_object();
    svc_json_set_int(u, "prompt_tokens", prompt);
    svc_json_set_int(u, "completion_tokens", completion);
    svc_json_set_int(u, "total_tokens", prompt + completion);
    return u;
}

const char *svc_run_status_of(enum svc_errcode failure)
{
    if (failure == SVC_OK)
        return "done";
    return failure == SVC_E_CANCELLED || failure == SVC_E_RUN_TIMEOUT ? "cancelled" : "error";
}
