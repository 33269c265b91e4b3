#include "session.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index.h"
#include "jsonx.h"
#include "lock.h"
#include "log.h"
#include "memory.h"
#include "model.h"
#include "openai.h"
#include "runs.h"
#include "sidecar.h"
#include "store.h"
#include "tools.h"
#include "util.h"

struct svc_run {
    const struct svc_config *cfg;
    struct svc_store st;
    bool stateful;      /* sessions.enabled */
    bool sidecars;      /* provider svc_repository */
    char sid[129];
    char run_id[64];
    char started_at[SVC_TIME_LEN];
    double started_mono;
    struct svc_lock run_lock;
    json_object *agent;  /* agent.json (stateful) */
    json_object *msgs;   /* effective native messages from removed_message_count on */
    int64_t removed;     /* removed_message_count */
    int64_t stored;      /* number of message files */
    int64_t next_id;     /* largest stored id + 1 */
    int64_t input_id;
    json_object *output_ids;
    json_object *events;
    json_object *prev_tokens; /* the session's token_state before this run, or NULL */
    int64_t seq;
    json_object *tool_trace;
    json_object *tool_calls; /* OpenAI-shaped tool_calls of the run */
    struct svc_buf content;
    char *content_str;
    char finish_reason[16];
    int64_t prompt_tokens, completion_tokens, loop_count, tool_steps;
    volatile sig_atomic_t cancel; /* 1 cancel, 2 timeout */
    const struct svc_run_sink *sink;
    bool begun, ended;
    bool memory_due;   /* finished well: memory sync still to do (svc_run_sync_memory) */
    bool memory_defer; /* the caller syncs memory itself, after publishing the run's end */
};

static const char *model_name(const struct svc_config *cfg)
{
    return cfg->model.name ? cfg->model.name : "echo-1";
}

/* ---- events ---- */

static json_object *event_new(struct svc_run *run, const char *type)
{
    char now[SVC_TIME_LEN];
    json_object *ev = json_object_new_object();
    svc_json_set_str(ev, "type", type);
    svc_json_set_str(ev, "run_id", run->run_id);
    svc_json_set_int(ev, "seq", ++run->seq);
    svc_json_set_str(ev, "session_id", run->sid);
    svc_json_set_str(ev, "schema_version", "2.0");
    svc_json_set_str(ev, "timestamp", svc_time_now_iso(now));
    return ev;
}

/* Record the event, hand it to the sink; returns nonzero when the sink wants to cancel. */
static int event_emit(struct svc_run *run, json_object *ev)
{
    json_object_array_add(run->events, ev);
    if (run->sink && run->sink->on_event && run->sink->on_event(run->sink->ctx, ev)) {
        run->cancel = run->cancel ? run->cancel : 1;
        return 1;
    }
    return 0;
}

/* ---- cancellation ---- */

static int run_should_cancel(void *ctx)
{
    struct svc_run *run = ctx;
    if (run->cancel)
        return 1;
    if (run->sink && run->sink->should_cancel && run->sink->should_cancel(run->sink->ctx))
        run->cancel = 1;
    else if (run->cfg->server.run_timeout_s > 0 &&
             svc_time_monotonic() - run->started_mono > run->cfg->server.run_timeout_s)
        run->cancel = 2;
    return run->cancel != 0;
}

static int run_on_idle(void *ctx)
{
    struct svc_run *run = ctx;
    if (run->sink && run->sink->on_idle && run->sink->on_idle(run->sink->ctx))
        run->cancel = run->cancel ? run->cancel : 1;
    return run_should_cancel(run);
}

static int run_on_delta(void *ctx, const char *text)
{
    struct svc_run *run = ctx;
    svc_buf_adds(&run->content, text);
    json_object *ev = event_new(run, "delta");
    svc_json_set_str(ev, "text", text);
    if (event_emit(run, ev))
        return 1;
    return run_should_cancel(run);
}

static void run_on_retry(void *ctx, int attempt, int max_attempts, const char *text)
{
    struct svc_run *run = ctx;
    json_object *ev = event_new(run, "retry");
    svc_json_set_int(ev, "attempt", attempt);
    svc_json_set_int(ev, "max_attempts", max_attempts);
    svc_json_set_str(ev, "text", text);
    event_emit(run, ev);
}

/* ---- helpers ---- */

static bool msg_has_block(json_object *msg, const char *key)
{
    json_object *c = svc_json_arr(msg, "content");
    size_t n = c ? json_object_array_length(c) : 0;
    for (size_t i = 0; i < n; i++)
        if (svc_json_obj(json_object_array_get_idx(c, i), key))
            return true;
    return false;
}

static json_object *user_text_message(const char *text)
{
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "role", "user");
    json_object *c = json_object_new_array();
    json_object *b = json_object_new_object();
    svc_json_set_str(b, "text", text);
    json_object_array_add(c, b);
    svc_json_set(m, "content", c);
    return m;
}

/* Store a native message as the next id under the session lock; keeps it in the window. */
static int run_store_message(struct svc_run *run, json_object *msg, bool is_output,
                             struct svc_err *err)
{
    if (run->stateful) {
        char *dir = svc_store_session_dir(&run->st, run->sid);
        struct svc_lock l = SVC_LOCK_INIT;
        int rc = dir ? svc_lock_session(dir, true, &l, err)
                     : svc_err_set(err, SVC_E_NOMEM, "out of memory");
        free(dir);
        if (rc == 0)
            rc = svc_store_write_message(&run->st, run->sid, run->next_id, msg, err);
        svc_lock_release(&l);
        if (rc != 0)
            return -1;
        if (is_output)
            json_object_array_add(run->output_ids, json_object_new_int64(run->next_id));
        run->next_id++;
        run->stored++;
    }
    json_object_array_add(run->msgs, json_object_get(msg));
    return 0;
}

/* A window may start at a user message that is not a tool result. */
static bool window_start_ok(json_object *msgs, size_t i)
{
    json_object *m = json_object_array_get_idx(msgs, i);
    return strcmp(svc_json_str(m, "role", ""), "assistant") != 0 && !msg_has_block(m, "toolResult");
}

/* Slide the window so that at most window_size messages stay, starting at a user message
 * that is not a tool result. Emits context_compacted when it moved. */
static void run_apply_window(struct svc_run *run)
{
    size_t count = json_object_array_length(run->msgs);
    size_t win = (size_t)run->cfg->agent.window_size;
    if (count <= win)
        return;
    /* the first valid start at or after count - win; failing that, the nearest one before
     * it (a window a little larger than asked beats one that starts mid tool exchange) */
    size_t trim = count - win;
    while (trim < count && !window_start_ok(run->msgs, trim))
        trim++;
    if (trim == count) {
        trim = count - win;
        while (trim > 0 && !window_start_ok(run->msgs, trim))
            trim--;
    }
    if (trim == 0)
        return;
    json_object_array_del_idx(run->msgs, 0, trim);
    run->removed += (int64_t)trim;
    json_object *ev = event_new(run, "context_compacted");
    svc_json_set_int(ev, "removed_message_count", run->removed);
    event_emit(run, ev);
}

/* The messages the model is given: the window without a leading orphan toolResult, and with
 * a synthetic error result after any toolUse that has none. New reference. */
static json_object *run_model_request(struct svc_run *run)
{
    json_object *req = json_object_new_array();
    size_t n = json_object_array_length(run->msgs), start = 0;
    while (start < n && msg_has_block(json_object_array_get_idx(run->msgs, start), "toolResult"))
        start++;
    for (size_t i = start; i < n; i++) {
        json_object *m = json_object_array_get_idx(run->msgs, i);
        json_object_array_add(req, json_object_get(m));
        if (strcmp(svc_json_str(m, "role", ""), "assistant") != 0 || !msg_has_block(m, "toolUse"))
            continue;
        json_object *next = i + 1 < n ? json_object_array_get_idx(run->msgs, i + 1) : NULL;
        if (next && msg_has_block(next, "toolResult"))
            continue;
        if (i + 1 == n)
            continue; /* the tool calls of this very run are about to be answered */
        json_object *res = json_object_new_object();
        svc_json_set_str(res, "role", "user");
        json_object *content = json_object_new_array();
        json_object *c = svc_json_arr(m, "content");
        for (size_t k = 0; k < json_object_array_length(c); k++) {
            json_object *tu = svc_json_obj(json_object_array_get_idx(c, k), "toolUse");
            if (!tu)
                continue;
            json_object *tr = json_object_new_object();
            svc_json_set_str(tr, "toolUseId", svc_json_str(tu, "toolUseId", ""));
            svc_json_set_str(tr, "status", "error");
            json_object *items = json_object_new_array();
            json_object *t = json_object_new_object();
            svc_json_set_str(t, "text", "Tool call was interrupted; no result is available.");
            json_object_array_add(items, t);
            svc_json_set(tr, "content", items);
            json_object *blk = json_object_new_object();
            svc_json_set(blk, "toolResult", tr);
            json_object_array_add(content, blk);
        }
        svc_json_set(res, "content", content);
        json_object_array_add(req, res);
    }
    return req;
}

static json_object *token_state(struct svc_run *run, json_object *prev)
{
    json_object *ts = json_object_new_object();
    int64_t total = run->prompt_tokens + run->completion_tokens;
    svc_json_set_int(ts, "last_prompt_tokens", run->prompt_tokens);
    svc_json_set_int(ts, "last_completion_tokens", run->completion_tokens);
    svc_json_set_int(ts, "last_total_tokens", total);
    svc_json_set_int(ts, "cumulative_prompt_tokens",
                     svc_json_int(prev, "cumulative_prompt_tokens", 0) + run->prompt_tokens);
    svc_json_set_int(ts, "cumulative_completion_tokens",
                     svc_json_int(prev, "cumulative_completion_tokens", 0) +
                         run->completion_tokens);
    svc_json_set_int(ts, "cumulative_total_tokens",
                     svc_json_int(prev, "cumulative_total_tokens", 0) + total);
    int64_t cw = run->cfg->model.context_window;
    svc_json_set_int(ts, "model_context_window", cw);
    double ratio = cw > 0 ? (double)run->prompt_tokens / (double)cw : 0.0;
    svc_json_set(ts, "utilization_ratio", json_object_new_double(ratio));
    svc_json_set_int(ts, "loop_count", run->loop_count);
    svc_json_set_int(ts, "removed_message_count", run->removed);
    return ts;
}

static json_object *error_object(const struct svc_err *e, const char *run_id)
{
    char now[SVC_TIME_LEN];
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "code", svc_err_name(e->code));
    svc_json_set_str(o, "message", e->message);
    svc_json_set_str(o, "run_id", run_id);
    svc_json_set_str(o, "at", svc_time_now_iso(now));
    return o;
}

static void index_note(const struct svc_store *st, const char *sid, json_object *sc)
{
    json_object *sum = svc_sidecar_summary(sc);
    if (sum)
        svc_index_update(st, sid, sum);
    json_object_put(sum);
}

/* Append the turn line and rewrite the sidecar for a run that ended with `status`.
 * Caller holds the exclusive session lock. */
static int write_run_end(const struct svc_store *st, const char *sid, json_object *sc,
                         json_object *turn, struct svc_err *err)
{
    if (svc_turns_append(st, sid, turn, err) != 0)
        return -1;
    if (svc_sidecar_write(st, sid, sc, err) != 0)
        return -1;
    index_note(st, sid, sc);
    return 0;
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
    if (input_id >= 0)
        svc_json_set_int(t, "input_message_id", input_id);
    else
        svc_json_set(t, "input_message_id", NULL);
    svc_json_set(t, "output_message_ids", output_ids ? output_ids : json_object_new_array());
    svc_json_set(t, "events", events ? events : json_object_new_array());
    svc_json_set(t, "tool_trace", trace ? trace : json_object_new_array());
    json_object *u = json_object_new_object();
    svc_json_set_int(u, "prompt_tokens", p);
    svc_json_set_int(u, "completion_tokens", c);
    svc_json_set_int(u, "total_tokens", p + c);
    svc_json_set(t, "usage", u);
    svc_json_set(t, "error", error);
    svc_json_set_str(t, "created_at", created ? created : svc_time_now_iso(now));
    svc_json_set_str(t, "updated_at", svc_time_now_iso(now));
    return t;
}

/* ---- stale repair ---- */

/* Repair sc (status running, no live run) in place and append the interrupted turn line.
 * Caller holds the exclusive session lock. */
static int repair_locked(const struct svc_store *st, const char *sid, json_object *sc,
                         struct svc_err *err)
{
    json_object *cur = svc_json_obj(sc, "current_run");
    const char *run_id = svc_json_str(cur, "run_id", svc_json_str(sc, "last_run_id", ""));
    char *run_id_copy = strdup(run_id ? run_id : "");
    const char *started = svc_json_str(cur, "started_at", NULL);
    char *started_copy = started ? strdup(started) : NULL;
    struct svc_err ie;
    svc_err_set(&ie, SVC_E_INTERRUPTED, "the run's process ended before the run finished");
    int64_t *ids = NULL;
    size_t n = 0;
    if (svc_store_message_ids(st, sid, &ids, &n, err) != 0) {
        free(run_id_copy);
        free(started_copy);
        return -1;
    }
    /* begin_run stored the input last before it wrote message_count: the input is the
     * message at that position, the run's outputs are the ones after it */
    int64_t input_id = -1, mc = svc_json_int(sc, "message_count", 0);
    json_object *outputs = json_object_new_array();
    if (mc >= 1 && (size_t)mc <= n) {
        input_id = ids[mc - 1];
        for (size_t i = (size_t)mc; i < n; i++)
            json_object_array_add(outputs, json_object_new_int64(ids[i]));
    }
    free(ids);
    /* the events the run recorded (asynchronous runs), ended by the one error event */
    json_object *events = svc_runs_events_at(st->root, run_id_copy);
    size_t nev = json_object_array_length(events);
    const char *last_type =
        nev ? svc_json_str(json_object_array_get_idx(events, nev - 1), "type", "") : "";
    if (strcmp(last_type, "error") != 0 && strcmp(last_type, "done") != 0) {
        char ts[SVC_TIME_LEN];
        json_object *ev = json_object_new_object();
        svc_json_set_str(ev, "type", "error");
        svc_json_set_str(ev, "run_id", run_id_copy);
        svc_json_set_int(ev, "seq", (int64_t)nev + 1);
        svc_json_set_str(ev, "session_id", sid);
        svc_json_set_str(ev, "schema_version", "2.0");
        svc_json_set_str(ev, "timestamp", svc_time_now_iso(ts));
        svc_json_set_str(ev, "message", ie.message);
        svc_json_set_str(ev, "code", svc_err_name(ie.code));
        json_object_array_add(events, ev);
    }
    char now[SVC_TIME_LEN];
    svc_json_set_str(sc, "status", "error");
    svc_json_set(sc, "current_run", NULL);
    svc_json_set(sc, "last_error", error_object(&ie, run_id_copy));
    svc_json_set_int(sc, "message_count", (int64_t)n);
    svc_json_set_str(sc, "updated_at", svc_time_now_iso(now));
    json_object *turn = turn_line(run_id_copy, "error", input_id, outputs, events, NULL, 0, 0,
                                  error_object(&ie, run_id_copy), started_copy);
    int rc = write_run_end(st, sid, sc, turn, err);
    json_object_put(turn);
    if (rc == 0)
        svc_logf("repaired stale run %s of session %s: status error (interrupted)",
                run_id_copy, sid);
    free(run_id_copy);
    free(started_copy);
    return rc;
}

static void store_from_cfg(const struct svc_config *cfg, struct svc_store *st)
{
    st->root = cfg->sessions.root;
    st->agent_id = cfg->sessions.agent_id;
    st->durable = cfg->sessions.fsync;
}

int svc_session_repair_stale(const struct svc_config *cfg, const char *sid, struct svc_err *err)
{
    struct svc_store st;
    store_from_cfg(cfg, &st);
    if (cfg->sessions.provider != SVC_PROVIDER_SVC_REPOSITORY)
        return 0;
    char *dir = svc_store_session_dir(&st, sid);
    if (!dir)
        return svc_err_set(err, SVC_E_NOMEM, "out of memory");
    int rc = 0;
    struct svc_lock l = SVC_LOCK_INIT;
    json_object *sc = NULL;
    /* cheap path first: sidecars are replaced atomically, so an unlocked read is whole */
    if (svc_sidecar_read(&st, sid, &sc, NULL) != 0 ||
        strcmp(svc_json_str(sc, "status", ""), "running") != 0 || svc_lock_run_held(dir))
        goto out;
    json_object_put(sc);
    sc = NULL;
    if (svc_lock_session(dir, true, &l, err) != 0) {
        rc = -1;
        goto out;
    }
    if (svc_sidecar_read(&st, sid, &sc, NULL) != 0)
        goto out;
    if (strcmp(svc_json_str(sc, "status", ""), "running") != 0 || svc_lock_run_held(dir))
        goto out;
    rc = repair_locked(&st, sid, sc, err) == 0 ? 1 : -1;
out:
    json_object_put(sc);
    svc_lock_release(&l);
    free(dir);
    return rc;
}

/* ---- begin ---- */

static struct svc_run *run_alloc(const struct svc_config *cfg, const struct svc_run_request *req)
{
    struct svc_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->cfg = cfg;
    store_from_cfg(cfg, &run->st);
    run->stateful = cfg->sessions.enabled;
    run->sidecars = cfg->sessions.provider == SVC_PROVIDER_SVC_REPOSITORY;
    run->run_lock.fd = -1;
    run->msgs = json_object_new_array();
    run->output_ids = json_object_new_array();
    run->events = json_object_new_array();
    run->tool_trace = json_object_new_array();
    run->tool_calls = json_object_new_array();
    run->input_id = -1;
    svc_buf_init(&run->content);
    if (req->run_id && *req->run_id)
        snprintf(run->run_id, sizeof run->run_id, "%s", req->run_id);
    else
        svc_random_id("run", run->run_id, sizeof run->run_id);
    if (req->session_id)
        snprintf(run->sid, sizeof run->sid, "%s", req->session_id);
    else
        svc_random_id("sess", run->sid, sizeof run->sid);
    svc_time_now_iso(run->started_at);
    run->started_mono = svc_time_monotonic();
    return run;
}

/* Import earlier OpenAI history as native messages (first run only). */
static int import_history(struct svc_run *run, json_object *history, struct svc_err *err)
{
    size_t n = json_object_array_length(history);
    for (size_t i = 0; i < n; i++) {
        json_object *nm = svc_openai_to_native(json_object_array_get_idx(history, i));
        if (!nm)
            continue;
        int rc = run_store_message(run, nm, false, err);
        json_object_put(nm);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int begin_stateful(struct svc_run *run, const struct svc_run_request *req,
                          struct svc_err *err)
{
    const struct svc_store *st = &run->st;
    int rc = -1;
    struct svc_lock l = SVC_LOCK_INIT;
    json_object *sc = NULL;
    int64_t *ids = NULL;
    size_t nids = 0;
    char *dir = svc_store_session_dir(st, run->sid);
    if (!dir) {
        svc_err_set(err, SVC_E_NOMEM, "out of memory");
        goto out;
    }
    struct stat lst;
    if (lstat(dir, &lst) == 0 && !S_ISDIR(lst.st_mode)) {
        /* a symlink (or a file) where the session directory should be: never follow it */
        svc_err_set(err, SVC_E_IO, "session path of %s is not a plain directory", run->sid);
        goto out;
    }
    if (!svc_store_session_exists(st, run->sid)) {
        if (svc_mkdirs_durable(st->root, 0755, st->durable, err) != 0 ||
            svc_mkdirs_durable(dir, 0755, st->durable, err) != 0)
            goto out;
    }
    if (svc_store_check_layout(st, run->sid, err) != 0)
        goto out;
    if (svc_lock_run_try(dir, &run->run_lock, err) != 0)
        goto out;
    if (svc_lock_session(dir, true, &l, err) != 0)
        goto out;
    struct svc_err rerr;
    /* read even under native_file: an archived session (sidecar written by archive) must
     * refuse runs there too */
    if (svc_sidecar_read(st, run->sid, &sc, &rerr) != 0) {
        if (rerr.code != SVC_E_NOT_FOUND) {
            *err = rerr;
            goto out;
        }
        sc = NULL;
    }
    if (sc && run->sidecars && strcmp(svc_json_str(sc, "status", ""), "running") == 0 &&
        repair_locked(st, run->sid, sc, err) != 0)
        goto out; /* we hold the run lock: a `running` on disk is stale */
    if (sc && svc_json_bool(sc, "archived", false)) {
        svc_err_set(err, SVC_E_SESSION_ARCHIVED, "session %s is archived; unarchive it first",
                    run->sid);
        goto out;
    }
    run->prev_tokens = sc ? svc_json_copy(svc_json_obj(sc, "token_state")) : NULL;
    char *mdir = svc_store_messages_dir(st, run->sid);
    int mrc = mdir ? svc_mkdirs_durable(mdir, 0755, st->durable, err)
                   : svc_err_set(err, SVC_E_NOMEM, "out of memory");
    free(mdir);
    if (mrc != 0 || svc_store_ensure_session(st, run->sid, err) != 0)
        goto out;
    if (svc_store_read_agent(st, run->sid, &run->agent, &rerr) != 0) {
        if (rerr.code != SVC_E_NOT_FOUND) {
            *err = rerr;
            goto out;
        }
        run->agent = svc_store_new_agent(st->agent_id);
        if (svc_store_write_agent(st, run->sid, run->agent, err) != 0)
            goto out;
    }
    run->removed = svc_agent_removed_count(run->agent);
    if (svc_store_message_ids(st, run->sid, &ids, &nids, err) != 0)
        goto out;
    run->stored = (int64_t)nids;
    run->next_id = nids ? ids[nids - 1] + 1 : 0;
    /* restore the window: positions removed.. in numeric order */
    for (size_t i = (size_t)(run->removed < (int64_t)nids ? run->removed : (int64_t)nids);
         i < nids; i++) {
        json_object *rec = NULL;
        if (svc_store_read_message(st, run->sid, ids[i], &rec, err) != 0)
            goto out;
        json_object *m = svc_store_effective_message(rec);
        json_object_array_add(run->msgs, json_object_get(m));
        json_object_put(rec);
    }
    svc_lock_release(&l); /* run_store_message takes it per message */
    bool first_run = nids == 0 && (!sc || svc_json_int(sc, "run_count", 0) == 0);
    if (first_run && req->history && run->cfg->sessions.persist_openai_history &&
        import_history(run, req->history, err) != 0)
        goto out;
    json_object *um = user_text_message(req->input);
    run->input_id = run->next_id;
    int src = run_store_message(run, um, false, err);
    json_object_put(um);
    if (src != 0)
        goto out;
    if (run->sidecars) {
        if (svc_lock_session(dir, true, &l, err) != 0)
            goto out;
        json_object *fresh = NULL;
        if (svc_sidecar_read(st, run->sid, &fresh, NULL) == 0) {
            json_object_put(sc);
            sc = fresh;
        }
        if (!sc) {
            if (nids > 0 && svc_sidecar_derive(st, run->sid, &sc, NULL) == 0) {
                svc_json_set_int(sc, "schema_version", 1);
            } else {
                sc = svc_sidecar_new(run->sid, st->agent_id, model_name(run->cfg));
            }
        }
        if (!*svc_json_str(sc, "title", "")) {
            char *title = svc_title_from_input(req->input);
            svc_json_set_str(sc, "title", title ? title : "");
            free(title);
        }
        if (req->user_id)
            svc_json_set_str(sc, "user_id", req->user_id);
        if (req->channel)
            svc_json_set_str(sc, "channel", req->channel);
        if (req->locale)
            svc_json_set_str(sc, "locale", req->locale);
        svc_json_set_str(sc, "model", model_name(run->cfg));
        svc_json_set_str(sc, "updated_at", run->started_at);
        svc_json_set_int(sc, "message_count", run->stored);
        svc_json_set_int(sc, "run_count", svc_json_int(sc, "run_count", 0) + 1);
        svc_json_set_str(sc, "last_run_id", run->run_id);
        svc_json_set_str(sc, "status", "running");
        json_object *cur = json_object_new_object();
        svc_json_set_str(cur, "run_id", run->run_id);
        svc_json_set_int(cur, "pid", (int64_t)getpid());
        svc_json_set_str(cur, "started_at", run->started_at);
        svc_json_set(sc, "current_run", cur);
        if (svc_sidecar_write(st, run->sid, sc, err) != 0)
            goto out;
        index_note(st, run->sid, sc);
    }
    rc = 0;
out:
    svc_lock_release(&l);
    if (rc != 0)
        svc_lock_release(&run->run_lock);
    json_object_put(sc);
    free(ids);
    free(dir);
    return rc;
}

int svc_run_begin(const struct svc_config *cfg, const struct svc_run_request *req,
                  struct svc_run **out, struct svc_err *err)
{
    *out = NULL;
    if (!req->input || !*req->input)
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "messages",
                            "no user input: the last user message is empty");
    if (req->session_id && svc_id_check(req->session_id, err) != 0)
        return -1;
    struct svc_run *run = run_alloc(cfg, req);
    if (!run)
        return svc_err_set(err, SVC_E_NOMEM, "out of memory");
    if (run->stateful) {
        if (begin_stateful(run, req, err) != 0) {
            run->ended = true;
            svc_run_free(run);
            return -1;
        }
    } else {
        size_t n = req->history ? json_object_array_length(req->history) : 0;
        for (size_t i = 0; i < n; i++) {
            json_object *nm = svc_openai_to_native(json_object_array_get_idx(req->history, i));
            if (nm)
                json_object_array_add(run->msgs, nm);
        }
        json_object_array_add(run->msgs, user_text_message(req->input));
    }
    run->begun = true;
    *out = run;
    return 0;
}

/* ---- end ---- */

static int run_end(struct svc_run *run, const struct svc_err *failure)
{
    struct svc_err err;
    run->ended = true;
    run->content_str = svc_buf_steal(&run->content);
    const char *status = "done";
    if (failure)
        status = (failure->code == SVC_E_CANCELLED || failure->code == SVC_E_RUN_TIMEOUT)
                     ? "cancelled"
                     : "error";
    /* the one final event */
    json_object *ev;
    if (!failure) {
        ev = event_new(run, "done");
        svc_json_set_str(ev, "model_id", model_name(run->cfg));
        svc_json_set_int(ev, "tool_steps", run->tool_steps);
    } else {
        ev = event_new(run, "error");
        svc_json_set_str(ev, "message", failure->message);
        svc_json_set_str(ev, "code", svc_err_name(failure->code));
    }
    json_object_array_add(run->events, ev);
    if (run->sink && run->sink->on_event)
        run->sink->on_event(run->sink->ctx, ev);
    if (!run->stateful)
        return 0;
    int rc = -1;
    struct svc_lock l = SVC_LOCK_INIT;
    json_object *sc = NULL;
    char *dir = svc_store_session_dir(&run->st, run->sid);
    if (!dir || svc_lock_session(dir, true, &l, &err) != 0)
        goto out;
    if (run->agent) {
        svc_agent_set_counts(run->agent, run->removed,
                             svc_agent_model_calls(run->agent) + run->loop_count);
        if (svc_store_write_agent(&run->st, run->sid, run->agent, &err) != 0)
            goto out;
    }
    if (!run->sidecars) {
        /* native_file writes no sidecar; the listing index still learns of the turn */
        json_object *derived = NULL;
        if (svc_sidecar_derive(&run->st, run->sid, &derived, NULL) == 0)
            index_note(&run->st, run->sid, derived);
        json_object_put(derived);
        rc = 0;
        goto out;
    }
    if (svc_sidecar_read(&run->st, run->sid, &sc, &err) != 0)
        sc = svc_sidecar_new(run->sid, run->st.agent_id, model_name(run->cfg));
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    svc_json_set_str(sc, "status", strcmp(status, "done") == 0 ? "idle" : status);
    svc_json_set(sc, "current_run", NULL);
    svc_json_set_int(sc, "message_count", run->stored);
    svc_json_set_str(sc, "updated_at", now);
    if (!failure) {
        svc_json_set_int(sc, "turn_count", svc_json_int(sc, "turn_count", 0) + 1);
        svc_json_set(sc, "last_error", NULL);
    } else {
        svc_json_set(sc, "last_error", error_object(failure, run->run_id));
    }
    svc_json_set(sc, "token_state", token_state(run, svc_json_obj(sc, "token_state")));
    json_object *turn =
        turn_line(run->run_id, status, run->input_id, json_object_get(run->output_ids),
                  json_object_get(run->events), json_object_get(run->tool_trace),
                  run->prompt_tokens, run->completion_tokens,
                  failure ? error_object(failure, run->run_id) : NULL, run->started_at);
    rc = write_run_end(&run->st, run->sid, sc, turn, &err);
    json_object_put(turn);
out:
    if (rc != 0)
        svc_logf("session %s run %s: could not record the run's end: %s", run->sid,
                run->run_id, err.message);
    json_object_put(sc);
    svc_lock_release(&l);
    svc_lock_release(&run->run_lock);
    free(dir);
    return rc;
}

/* ---- the agent loop ---- */

static int run_tools(struct svc_run *run, json_object *tool_uses, struct svc_err *err)
{
    json_object *content = json_object_new_array();
    size_t n = json_object_array_length(tool_uses);
    for (size_t i = 0; i < n; i++) {
        json_object *tu = json_object_array_get_idx(tool_uses, i);
        const char *id = svc_json_str(tu, "toolUseId", "");
        const char *name = svc_json_str(tu, "name", "");
        json_object *input = NULL;
        json_object_object_get_ex(tu, "input", &input);
        json_object *ev = event_new(run, "tool_start");
        svc_json_set_str(ev, "call_id", id);
        svc_json_set_str(ev, "tool", name);
        svc_json_set(ev, "arguments", input ? svc_json_copy(input) : json_object_new_object());
        event_emit(run, ev);
        struct svc_tool_result res;
        svc_tools_call_cancel(run->cfg, name, input, run_should_cancel, run, &res);
        run->tool_steps++;
        ev = event_new(run, "tool_result");
        svc_json_set_str(ev, "call_id", id);
        svc_json_set_str(ev, "tool", name);
        svc_json_set_bool(ev, "ok", res.ok);
        svc_json_set_str(ev, "content", res.ok ? res.content : NULL);
        svc_json_set_str(ev, "error", res.ok ? NULL : res.content);
        svc_json_set_int(ev, "latency_ms", res.latency_ms);
        svc_json_set_bool(ev, "truncated", res.truncated);
        event_emit(run, ev);
        json_object *tr = json_object_new_object();
        svc_json_set_str(tr, "call_id", id);
        svc_json_set_str(tr, "tool", name);
        svc_json_set(tr, "arguments", input ? svc_json_copy(input) : json_object_new_object());
        svc_json_set_bool(tr, "ok", res.ok);
        svc_json_set_int(tr, "latency_ms", res.latency_ms);
        svc_json_set_bool(tr, "truncated", res.truncated);
        svc_json_set_str(tr, "error", res.ok ? NULL : res.content);
        json_object_array_add(run->tool_trace, tr);
        json_object *trb = json_object_new_object();
        svc_json_set_str(trb, "toolUseId", id);
        svc_json_set_str(trb, "status", res.ok ? "success" : "error");
        json_object *items = json_object_new_array();
        json_object *t = json_object_new_object();
        svc_json_set_str(t, "text", res.content ? res.content : "");
        json_object_array_add(items, t);
        svc_json_set(trb, "content", items);
        json_object *blk = json_object_new_object();
        svc_json_set(blk, "toolResult", trb);
        json_object_array_add(content, blk);
        svc_tool_result_free(&res);
    }
    json_object *msg = json_object_new_object();
    svc_json_set_str(msg, "role", "user");
    svc_json_set(msg, "content", content);
    int rc = run_store_message(run, msg, true, err);
    json_object_put(msg);
    return rc;
}

static int run_loop(struct svc_run *run, struct svc_err *err)
{
    json_object *tools = svc_tools_spec(run->cfg);
    char *recall_prompt = svc_memory_system_prompt(run->cfg, run->sid); /* memory.recall */
    int rc = -1;
    for (int iter = 0;; iter++) {
        if (iter > run->cfg->agent.max_tool_iterations) {
            svc_err_set(err, SVC_E_TOOL_LOOP, "the model kept calling tools past %d iterations",
                        run->cfg->agent.max_tool_iterations);
            break;
        }
        if (run_should_cancel(run)) {
            svc_err_set(err, run->cancel == 2 ? SVC_E_RUN_TIMEOUT : SVC_E_CANCELLED,
                        run->cancel == 2 ? "the run took longer than run_timeout_s"
                                         : "run cancelled");
            break;
        }
        run_apply_window(run);
        json_object *ev = event_new(run, "phase");
        svc_json_set_str(ev, "phase", "model");
        event_emit(run, ev);
        json_object *req = run_model_request(run);
        struct svc_model_call call = {
            .cfg = run->cfg,
            .system_prompt = recall_prompt ? recall_prompt : run->cfg->model.system_prompt,
            .messages = req,
            .tools = tools,
            .on_delta = run_on_delta,
            .should_cancel = run_should_cancel,
            .on_idle = run_on_idle,
            .on_retry = run_on_retry,
            .ctx = run,
        };
        struct svc_model_reply reply;
        int mrc = svc_model_invoke(&call, &reply, err);
        json_object_put(req);
        if (mrc != 0) {
            run->prompt_tokens += reply.prompt_tokens; /* a cancelled call's estimate, else 0 */
            run->completion_tokens += reply.completion_tokens;
            if (err && err->code == SVC_E_CANCELLED && run->cancel == 2)
                svc_err_set(err, SVC_E_RUN_TIMEOUT, "the run took longer than run_timeout_s");
            break;
        }
        run->loop_count++;
        run->prompt_tokens += reply.prompt_tokens;
        run->completion_tokens += reply.completion_tokens;
        snprintf(run->finish_reason, sizeof run->finish_reason, "%s", reply.finish_reason);
        /* the assistant message, as produced */
        json_object *msg = json_object_new_object();
        svc_json_set_str(msg, "role", "assistant");
        json_object *content = json_object_new_array();
        if (reply.text && *reply.text) {
            json_object *b = json_object_new_object();
            svc_json_set_str(b, "text", reply.text);
            json_object_array_add(content, b);
        }
        size_t ntu = json_object_array_length(reply.tool_uses);
        for (size_t i = 0; i < ntu; i++) {
            json_object *b = json_object_new_object();
            svc_json_set(b, "toolUse", svc_json_copy(json_object_array_get_idx(reply.tool_uses, i)));
            json_object_array_add(content, b);
        }
        svc_json_set(msg, "content", content);
        json_object *meta = json_object_new_object();
        json_object *usage = json_object_new_object();
        svc_json_set_int(usage, "inputTokens", reply.prompt_tokens);
        svc_json_set_int(usage, "outputTokens", reply.completion_tokens);
        svc_json_set_int(usage, "totalTokens", reply.prompt_tokens + reply.completion_tokens);
        svc_json_set(meta, "usage", usage);
        json_object *metrics = json_object_new_object();
        svc_json_set_int(metrics, "latencyMs", reply.latency_ms);
        svc_json_set(meta, "metrics", metrics);
        svc_json_set(msg, "metadata", meta);
        int src = run_store_message(run, msg, true, err);
        if (src == 0 && ntu > 0) {
            json_object *proj = svc_openai_project(msg);
            json_object *tcs = svc_json_arr(json_object_array_get_idx(proj, 0), "tool_calls");
            for (size_t i = 0; tcs && i < json_object_array_length(tcs); i++)
                json_object_array_add(run->tool_calls,
                                      json_object_get(json_object_array_get_idx(tcs, i)));
            json_object_put(proj);
        }
        json_object_put(msg);
        if (src != 0) {
            svc_model_reply_free(&reply);
            break;
        }
        ev = event_new(run, "token_usage");
        json_object *ts = token_state(run, run->prev_tokens); /* the session's, like the sidecar */
        svc_json_merge(ev, ts);
        json_object_put(ts);
        event_emit(run, ev);
        if (ntu == 0) {
            svc_model_reply_free(&reply);
            rc = 0;
            break;
        }
        int trc = run_tools(run, reply.tool_uses, err);
        svc_model_reply_free(&reply);
        if (trc != 0)
            break;
    }
    json_object_put(tools);
    free(recall_prompt);
    return rc;
}

int svc_run_execute(struct svc_run *run, const struct svc_run_sink *sink, struct svc_err *err)
{
    if (!run->begun || run->ended)
        return svc_err_set(err, SVC_E_INTERNAL, "run is not active");
    run->sink = sink;
    json_object *ev = event_new(run, "phase");
    svc_json_set_str(ev, "phase", "start");
    event_emit(run, ev);
    struct svc_err lerr;
    svc_err_clear(&lerr);
    int rc = run_loop(run, &lerr);
    if (rc != 0 && lerr.code == SVC_OK)
        svc_err_set(&lerr, SVC_E_INTERNAL, "run failed");
    int erc = run_end(run, rc == 0 ? NULL : &lerr);
    run->sink = NULL;
    /* SPEC 3.4 / 8: memory sync after finish_run; logged and recorded, never fails the run */
    run->memory_due = rc == 0 && erc == 0 && run->stateful && run->sidecars &&
                      run->cfg->sessions.sync_memory;
    if (!run->memory_defer)
        svc_run_sync_memory(run);
    if (rc != 0) {
        if (err)
            *err = lerr;
        return -1;
    }
    if (erc != 0)
        return svc_err_set(err, SVC_E_IO, "the answer was produced but could not be recorded");
    return 0;
}

void svc_run_defer_memory(struct svc_run *run)
{
    run->memory_defer = true;
}

void svc_run_sync_memory(struct svc_run *run)
{
    if (run->memory_due)
        svc_memory_sync(run->cfg, run->sid, NULL); /* core/memory.h */
    run->memory_due = false;
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
    svc_lock_release(&run->run_lock);
    json_object_put(run->agent);
    json_object_put(run->prev_tokens);
    json_object_put(run->msgs);
    json_object_put(run->output_ids);
    json_object_put(run->events);
    json_object_put(run->tool_trace);
    json_object_put(run->tool_calls);
    svc_buf_free(&run->content);
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
    char *dir = svc_store_session_dir(&run->st, run->sid);
    struct svc_lock l = SVC_LOCK_INIT;
    json_object *sc = NULL;
    int rc = -1;
    if (!dir || svc_lock_session(dir, true, &l, err) != 0 ||
        svc_sidecar_read(&run->st, run->sid, &sc, err) != 0)
        goto out;
    json_object *cur = svc_json_obj(sc, "current_run");
    if (!cur || strcmp(svc_json_str(cur, "run_id", ""), run->run_id) != 0) {
        rc = 0; /* not ours any more: leave it */
        goto out;
    }
    svc_json_set_int(cur, "pid", (int64_t)getpid());
    rc = svc_sidecar_write(&run->st, run->sid, sc, err);
out:
    json_object_put(sc);
    svc_lock_release(&l);
    free(dir);
    return rc;
}

int svc_run_lock_fd(const struct svc_run *run)
{
    return run->run_lock.fd;
}

void svc_run_set_lock_fd(struct svc_run *run, int fd)
{
    run->run_lock.fd = fd;
}

const char *svc_run_get_id(const struct svc_run *run)
{
    return run->run_id;
}
const char *svc_run_get_session_id(const struct svc_run *run)
{
    return run->sid;
}
const char *svc_run_get_model(const struct svc_run *run)
{
    return model_name(run->cfg);
}
const char *svc_run_get_content(const struct svc_run *run)
{
    if (run->content_str)
        return run->content_str;
    return run->content.data ? run->content.data : "";
}
const char *svc_run_get_finish_reason(const struct svc_run *run)
{
    return run->finish_reason[0] ? run->finish_reason : "stop";
}
void svc_run_get_usage(const struct svc_run *run, int64_t *prompt, int64_t *completion,
                       int64_t *total)
{
    if (prompt)
        *prompt = run->prompt_tokens;
    if (completion)
        *completion = run->completion_tokens;
    if (total)
        *total = run->prompt_tokens + run->completion_tokens;
}
json_object *svc_run_get_events(const struct svc_run *run)
{
    return run->events;
}
json_object *svc_run_get_tool_calls(const struct svc_run *run)
{
    return run->tool_calls;
}
