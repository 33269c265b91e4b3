#include "runs.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "layout.h"
#include "lock.h"
#include "log.h"
#include "mcp.h"
#include "query.h"
#include "util.h"

static struct {
    svc_spawn_fn *spawn; /* the program's (spawn.h) */
} R;

void svc_runs_set_spawn(svc_spawn_fn *fn)
{
    R.spawn = fn;
}

bool svc_run_id_valid(const char *id)
{
    return id && strlen(id) <= 64 && svc_layout_id_valid(id);
}

static char *runs_dir(const struct svc_config *cfg)
{
    return svc_layout_root_path(cfg->sessions.root, SVC_F_RUNS, NULL);
}

static char *run_file(const struct svc_config *cfg, const char *run_id, enum svc_run_file f)
{
    return svc_layout_run_path(cfg->sessions.root, run_id, f);
}

static void remove_run_files(const struct svc_config *cfg, const char *id)
{
    for (int i = 0; i < SVC_RUN__MAX; i++) {
        char *p = run_file(cfg, id, (enum svc_run_file)i);
        unlink(p);
        free(p);
    }
}

static int write_record(const struct svc_config *cfg, json_object *rec, struct svc_err *err)
{
    char *path = run_file(cfg, svc_json_str(rec, "run_id", ""), SVC_RUN_RECORD);
    int rc = svc_json_write_pretty(path, rec, cfg->sessions.fsync, err);
    free(path);
    return rc;
}

static int read_record(const struct svc_config *cfg, const char *run_id, json_object **out,
                       struct svc_err *err)
{
    *out = NULL;
    if (!svc_run_id_valid(run_id))
        return svc_err_set(err, SVC_E_RUN_NOT_FOUND, "run not found");
    char *path = run_file(cfg, run_id, SVC_RUN_RECORD);
    struct svc_err rerr;
    int rc = svc_json_read_file(path, out, &rerr);
    /* empty: a synchronous run's record, written without a sync, after a power cut */
    bool gone = rc != 0 && (rerr.code == SVC_E_NOT_FOUND || svc_file_is_empty(path));
    free(path);
    if (gone)
        return svc_err_set(err, SVC_E_RUN_NOT_FOUND, "run %s not found", run_id);
    if (rc != 0 && err)
        *err = rerr;
    return rc;
}

static json_object *record_new(const struct svc_run_answer *a)
{
    char now[SVC_TIME_LEN];
    json_object *rec = svc_json_new_obj("run_id", a->run_id, "session_id", a->session_id, "status",
                                        "running", NULL);
    svc_json_set_int(rec, "event_count", 0);
    svc_json_set_str(rec, "model", a->model);
    svc_json_set_str(rec, "content", "");
    svc_json_set(rec, "usage", NULL);
    svc_json_set(rec, "error", NULL);
    svc_json_set_str(rec, "created_at", svc_time_now_iso(now));
    svc_json_set(rec, "finished_at", NULL);
    return rec;
}

/* The record's "error": {"code", "message"}, or null when code is NULL. */
static void record_error(json_object *rec, const char *code, const char *message)
{
    svc_json_set(rec, "error",
                 code ? svc_json_new_obj("code", code, "message", message ? message : "", NULL)
                      : NULL);
}

/* The record's final fields from an ended run, and its failure's API code (NULL: none). */
static void record_finish(json_object *rec, const struct svc_run_answer *a, const char *status,
                          const char *code, const char *message)
{
    char now[SVC_TIME_LEN];
    svc_json_set_str(rec, "status", status);
    svc_json_set_int(rec, "event_count", (int64_t)json_object_array_length(a->events));
    svc_json_set_str(rec, "content", a->content);
    svc_json_set_str(rec, "finish_reason", a->finish_reason);
    svc_json_set(rec, "usage", svc_usage_of(a));
    record_error(rec, code, message);
    svc_json_set(rec, "tool_calls", svc_json_copy(a->tool_calls));
    if (json_object_array_length(a->client_calls) > 0) /* SPEC 12.1 */
        svc_json_set(rec, "client_tool_calls", svc_json_copy(a->client_calls));
    svc_json_set_str(rec, "finished_at", svc_time_now_iso(now));
}

/* The file of (session, key): idem-<sha256 of "<sid>\n<key>">. */
static char *idem_file(const struct svc_config *cfg, const char *sid, const char *key)
{
    unsigned char md[32];
    char *text = NULL, name[80] = "idem-";
    svc_xasprintf(&text, "%s\n%s", sid, key);
    EVP_Digest(text, strlen(text), md, NULL, EVP_sha256(), NULL);
    free(text);
    svc_hex(md, 32, name + 5);
    return run_file(cfg, name, SVC_RUN_RECORD);
}

static int idem_store(const struct svc_config *cfg, const char *sid, const char *key,
                      const char *run_id, struct svc_err *err)
{
    char *path = idem_file(cfg, sid, key);
    json_object *o = svc_json_new_obj("session_id", sid, "run_id", run_id, NULL);
    int rc = svc_json_write_pretty(path, o, cfg->sessions.fsync, err);
    json_object_put(o);
    free(path);
    return rc;
}

/* ---- the detached runner ---- */

/* The runner's state, made in the worker and copied into the runner's process. */
struct runner {
    const struct svc_config *cfg;
    struct svc_run *run;
    json_object *rec; /* the run record, borrowed */
    int rlock;        /* the run's lock file, held */
    bool recorded;    /* its final fields are written */
    char *events_path;
    char *cancel_path;
    double last_cancel_check;
    bool cancelled;
};

static int runner_on_event(void *ctx, json_object *ev)
{
    struct runner *rn = ctx;
    const char *type = svc_json_str(ev, "type", "");
    bool done = strcmp(type, "done") == 0;
    if (!rn->recorded && (done || strcmp(type, "error") == 0)) {
        /* the final record goes out before the final event: whoever has read the run's
         * last event finds the run ended (content and usage are final by now) */
        const char *code = done ? NULL : svc_json_str(ev, "code", "internal_error");
        const char *status = svc_run_status_of(done ? SVC_OK : svc_err_code(code));
        struct svc_run_answer a;
        svc_run_answer(rn->run, &a);
        record_finish(rn->rec, &a, status, code, svc_json_str(ev, "message", NULL));
        rn->recorded = write_record(rn->cfg, rn->rec, NULL) == 0;
    }
    svc_json_append_line(rn->events_path, ev, false, NULL);
    return 0;
}

static int runner_should_cancel(void *ctx)
{
    struct runner *rn = ctx;
    double now = svc_time_monotonic();
    if (!rn->cancelled && now - rn->last_cancel_check >= 0.05) {
        rn->last_cancel_check = now;
        rn->cancelled = access(rn->cancel_path, F_OK) == 0;
    }
    return rn->cancelled;
}

static void runner_main(void *ctx)
{
    struct runner *rn = ctx;
    const struct svc_config *cfg = rn->cfg;
    struct svc_run *run = rn->run;
    /* keep only stdin/stdout/stderr and the two locks (moved to 3 and 4), or everything
     * rather than lose a lock */
    int l1 = fcntl(svc_run_lock_fd(run), F_DUPFD_CLOEXEC, 10),
        l2 = fcntl(rn->rlock, F_DUPFD_CLOEXEC, 10);
    if (l1 >= 0 && l2 >= 0) {
        dup2(l1, 3); /* dup2 clears FD_CLOEXEC: the locks are ours alone anyway */
        dup2(l2, 4);
        close_range(5, ~0U, 0);
        svc_run_set_lock_fd(run, 3);
    }
    /* the worker's handlers first, then the mask the worker held during the request */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGUSR1, SIG_DFL); /* libfcgi's handler belongs to the worker */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    svc_run_note_runner(run, NULL);
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    rn->events_path = run_file(cfg, a.run_id, SVC_RUN_EVENTS);
    rn->cancel_path = run_file(cfg, a.run_id, SVC_RUN_CANCEL);
    struct svc_run_sink sink = {
        .on_event = runner_on_event, .should_cancel = runner_should_cancel, .ctx = rn};
    struct svc_err err;
    svc_err_clear(&err);
    svc_run_defer_memory(run); /* the record says done first; memory sync follows */
    int rc = svc_run_execute(run, &sink, &err);
    if (!rn->recorded) {
        svc_run_answer(run, &a); /* final now */
        record_finish(rn->rec, &a, svc_run_status_of(rc == 0 ? SVC_OK : err.code),
                      rc == 0 ? NULL : svc_err_name(err.code), err.message);
        write_record(cfg, rn->rec, NULL);
    }
    svc_run_sync_memory(run);
    svc_run_free(run);
    svc_runs_prune(cfg, SVC_RUNS_KEEP_S); /* the finished records of long ago */
    free(rn->events_path);
    free(rn->cancel_path);
    svc_mcp_stop_all(); /* the MCP servers this runner started end with it */
}

static json_object *spawn_answer(json_object *rec)
{
    return svc_json_new_obj("run_id", svc_json_str(rec, "run_id", ""), "session_id",
                            svc_json_str(rec, "session_id", ""), "status",
                            svc_json_str(rec, "status", "running"), "model",
                            svc_json_str(rec, "model", ""), NULL);
}

/* The run an Idempotency-Key already names, answered as its spawn was: true with *out set.
 * Never for a session the asker may not see (idem.h): the begin answers it as missing. */
static bool idem_replay(const struct svc_config *cfg, const struct svc_run_request *req,
                        const char *key, json_object **out)
{
    json_object *rec = NULL;
    if (svc_session_visible(cfg, svc_user_scope(req->user), req->session_id, true, NULL) != 0 ||
        svc_runs_find_idem(cfg, req->session_id, key, &rec, NULL) != 0)
        return false;
    *out = spawn_answer(rec);
    json_object_put(rec);
    return true;
}

int svc_runs_spawn(const struct svc_config *cfg, const struct svc_run_request *req,
                   const char *idem_key, json_object **out, bool *replayed, struct svc_err *err)
{
    *out = NULL;
    *replayed = false;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED,
                           "asynchronous runs need sessions.enabled: true");
    if (idem_key && req->session_id && idem_replay(cfg, req, idem_key, out)) {
        *replayed = true;
        return 0;
    }
    if (!R.spawn)
        return svc_err_set(err, SVC_E_INTERNAL, "this program cannot start background runs");
    /* the runs directory first: if it cannot be made, nothing else happens */
    char *dir = runs_dir(cfg);
    int mrc = svc_mkdirs_durable(dir, 0755, cfg->sessions.fsync, err);
    free(dir);
    if (mrc != 0)
        return svc_err_unwritable(cfg->sessions.root, err);
    struct svc_run *run = NULL;
    if (svc_run_begin(cfg, req, &run, err) != 0)
        return -1;
    int rc = -1;
    bool idem_stored = false;
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    char *lock_path = run_file(cfg, a.run_id, SVC_RUN_LOCK);
    json_object *rec = record_new(&a);
    int rlock = svc_lock_file(lock_path, LOCK_EX, true); /* files of this run may exist now */
    if (rlock < 0) {
        svc_err_errno(err, "run lock");
        goto fail;
    }
    if (write_record(cfg, rec, err) != 0)
        goto fail;
    /* The key names the run before the runner starts: a worker killed after that, before
     * it answers (the client sees a 502), leaves a run that the client's retry with the
     * same key finds, whatever became of it, instead of starting a second one. */
    struct svc_err ierr;
    if (idem_key && idem_store(cfg, a.session_id, idem_key, a.run_id, &ierr) != 0)
        svc_logf("run %s: its Idempotency-Key could not be recorded: %s", a.run_id,
                 ierr.message); /* the run goes on; the key is simply not remembered */
    else if (idem_key)
        idem_stored = true;
    /* in a session of its own, with the locks it inherits; returns once the runner runs */
    struct runner rn = {.cfg = cfg, .run = run, .rec = rec, .rlock = rlock};
    if (R.spawn(runner_main, &rn, SVC_SPAWN_KEEP_FDS | SVC_SPAWN_SETSID) != 0) {
        if (errno == ECHILD)
            svc_err_set(err, SVC_E_INTERNAL, "could not start the runner process");
        else
            svc_err_errno(err, "fork"); /* io_error naming errno: EAGAIN says the limit */
        goto fail;
    }
#ifdef SVC_TEST_HOOKS /* only in test builds (make TEST_HOOKS=1) */
    /* the worker dies here, after the run started and before it answers */
    const char *die = getenv("SVC_TEST_KILL_AFTER_SPAWN");
    if (die && *die && strstr(a.session_id, die))
        raise(SIGKILL);
#endif
    *out = spawn_answer(rec);
    svc_run_abandon(run); /* the runner owns the run and its lock now */
    rc = 0;
fail:
    if (rc != 0 && idem_stored) {
        char *ip = idem_file(cfg, a.session_id, idem_key);
        unlink(ip);
        free(ip);
    }
    if (rc != 0) {
        remove_run_files(cfg, a.run_id); /* no run was started: no record of one */
        svc_run_free(run); /* ends the begun run as failed: the session stays usable */
    }
    if (rlock >= 0)
        close(rlock);
    json_object_put(rec);
    free(lock_path);
    return rc;
}

static int64_t count_lines(const struct svc_config *cfg, const char *run_id)
{
    char *path = run_file(cfg, run_id, SVC_RUN_EVENTS), *buf = NULL;
    size_t len = 0;
    int64_t n = 0;
    if (svc_file_read(path, &buf, &len, NULL) == 0) {
        for (size_t i = 0; i < len; i++)
            n += buf[i] == '\n';
        if (len > 0 && buf[len - 1] != '\n')
            n++; /* a torn tail: the next append puts it on a line of its own */
    }
    free(buf);
    free(path);
    return n;
}

/* A record still `running` whose runner holds no lock: the runner died. Finish it as
 * error/interrupted with a final event, under the run's own lock. */
static void reap_dead_runner(const struct svc_config *cfg, json_object *rec)
{
    const char *run_id = svc_json_str(rec, "run_id", "");
    char *lock_path = run_file(cfg, run_id, SVC_RUN_LOCK);
    /* held: the runner is alive; missing: nothing to reap */
    int fd = svc_lock_file(lock_path, LOCK_EX | LOCK_NB, false);
    free(lock_path);
    if (fd < 0)
        return;
    json_object *fresh = NULL;
    if (read_record(cfg, run_id, &fresh, NULL) == 0 &&
        strcmp(svc_json_str(fresh, "status", ""), "running") == 0) {
        char *ev_path = run_file(cfg, run_id, SVC_RUN_EVENTS);
        int64_t count = count_lines(cfg, run_id);
        json_object *ev =
            svc_event_new(run_id, svc_json_str(fresh, "session_id", ""), count + 1, "error");
        svc_json_set_str(ev, "message", "the run's process ended before the run finished");
        svc_json_set_str(ev, "code", "interrupted");
        svc_json_append_line(ev_path, ev, false, NULL);
        json_object_put(ev);
        free(ev_path);
        svc_json_set_str(fresh, "status", "error");
        svc_json_set_int(fresh, "event_count", count + 1);
        record_error(fresh, "interrupted", "the run's process ended before the run finished");
        char now[SVC_TIME_LEN];
        svc_json_set_str(fresh, "finished_at", svc_time_now_iso(now));
        write_record(cfg, fresh, NULL);
        svc_json_merge(rec, fresh); /* the caller's record */
    }
    json_object_put(fresh);
    close(fd);
}

int svc_runs_get(const struct svc_config *cfg, const char *run_id, json_object **out,
                 struct svc_err *err)
{
    if (read_record(cfg, run_id, out, err) != 0)
        return -1;
    if (strcmp(svc_json_str(*out, "status", ""), "running") == 0) {
        reap_dead_runner(cfg, *out);
        if (strcmp(svc_json_str(*out, "status", ""), "running") == 0)
            svc_json_set_int(*out, "event_count", count_lines(cfg, run_id));
    }
    return 0;
}

struct events_ctx {
    json_object *arr; /* events from cursor on */
    long cursor, idx;
    const char *last; /* the last whole line */
    size_t last_n;
};

static void event_line_add(void *ctx, const char *line, size_t n, size_t off)
{
    struct events_ctx *c = ctx;
    (void)off;
    c->last = line;
    c->last_n = n;
    if (c->idx++ < c->cursor)
        return;
    json_object *ev = svc_jsonl_object(line, n);
    if (ev)
        json_object_array_add(c->arr, ev);
}

int svc_runs_events(const struct svc_config *cfg, const char *run_id, long cursor,
                    json_object **out, long *next, bool *finished, struct svc_err *err)
{
    *out = NULL;
    *finished = false;
    if (next)
        *next = cursor;
    json_object *rec = NULL;
    if (svc_runs_get(cfg, run_id, &rec, err) != 0)
        return -1;
    bool ended = strcmp(svc_json_str(rec, "status", ""), "running") != 0;
    double fin = 0;
    /* a runner writes its final record just before its final event: until that event is
     * readable (or, if its write failed, for a few seconds) the run is not finished here */
    bool settled = ended && (svc_time_parse_iso(svc_json_str(rec, "finished_at", ""), &fin) != 0 ||
                             svc_time_now() - fin > 5.0);
    json_object_put(rec);
    char *path = run_file(cfg, run_id, SVC_RUN_EVENTS), *buf = NULL;
    size_t len = 0;
    *out = json_object_new_array();
    if (svc_file_read(path, &buf, &len, NULL) == 0) {
        struct events_ctx c = {*out, cursor, 0, NULL, 0};
        svc_jsonl_lines(buf, len, event_line_add, &c);
        json_object *lev = ended && c.last ? svc_jsonl_object(c.last, c.last_n) : NULL;
        if (lev) {
            const char *t = svc_json_str(lev, "type", "");
            settled = settled || strcmp(t, "done") == 0 || strcmp(t, "error") == 0;
        }
        json_object_put(lev);
        if (next && c.idx > cursor)
            *next = c.idx; /* past undecodable lines too, so a reader never re-reads */
    }
    free(buf);
    free(path);
    *finished = settled;
    return 0;
}

int svc_runs_wait(const struct svc_config *cfg, const char *run_id, int timeout_ms)
{
    /* inotify never hears another host's appends: a shared root is polled every 250 ms */
    if (timeout_ms > 250 && svc_fs_shared(cfg->sessions.shared, cfg->sessions.root))
        timeout_ms = 250;
    char *dir = runs_dir(cfg);
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), left;
    int rc = fd >= 0 && inotify_add_watch(fd, dir, IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE) >= 0
                 ? 0
                 : -1;
    free(dir);
    size_t idlen = strlen(run_id);
    double deadline = svc_time_monotonic() + timeout_ms / 1000.0;
    while (rc == 0 && (left = (int)((deadline - svc_time_monotonic()) * 1000)) > 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, left);
        if (n < 0 && errno != EINTR)
            rc = -1;
        if (n <= 0)
            continue;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t got = read(fd, buf, sizeof buf);
        const struct inotify_event *ie;
        for (char *p = buf; got > 0 && p < buf + got; p += sizeof *ie + ie->len) {
            ie = (const struct inotify_event *)p;
            if (ie->len && strncmp(ie->name, run_id, idlen) == 0 &&
                (ie->name[idlen] == '.' || ie->name[idlen] == '\0'))
                rc = 1;
        }
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

int svc_runs_cancel(const struct svc_config *cfg, const char *run_id, json_object **out,
                    struct svc_err *err)
{
    *out = NULL;
    json_object *rec = NULL;
    if (svc_runs_get(cfg, run_id, &rec, err) != 0)
        return -1;
    bool running = strcmp(svc_json_str(rec, "status", ""), "running") == 0;
    json_object_put(rec);
    if (!running)
        return svc_err_set(err, SVC_E_RUN_NOT_ACTIVE, "run %s has already ended", run_id);
    char *path = run_file(cfg, run_id, SVC_RUN_CANCEL);
    int rc = svc_file_write_atomic(path, "cancel\n", 7, false, err);
    free(path);
    if (rc != 0)
        return -1;
    *out = json_object_new_object();
    svc_json_set_bool(*out, "cancelled", true);
    svc_json_set_str(*out, "run_id", run_id);
    return 0;
}

int svc_runs_find_idem(const struct svc_config *cfg, const char *sid, const char *key,
                       json_object **record, struct svc_err *err)
{
    *record = NULL;
    char *path = idem_file(cfg, sid, key);
    json_object *o = NULL;
    const char *id =
        svc_json_read_file(path, &o, NULL) == 0 ? svc_json_str(o, "run_id", NULL) : NULL;
    int rc = svc_run_id_valid(id)
                 ? svc_runs_get(cfg, id, record, err)
                 : svc_err_set(err, SVC_E_NOT_FOUND, "no run for this idempotency key");
    json_object_put(o);
    free(path);
    return rc;
}

int svc_runs_record_sync(const struct svc_config *cfg, struct svc_run *run, const char *key,
                         const char *status, const struct svc_err *failure, struct svc_err *err)
{
    char *dir = runs_dir(cfg);
    int rc = svc_mkdirs(dir, 0755, err);
    free(dir);
    if (rc != 0)
        return -1;
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    json_object *rec = record_new(&a);
    record_finish(rec, &a, status, failure ? svc_err_name(failure->code) : NULL,
                  failure ? failure->message : NULL);
    /* the events file, so /api/chat/runs/{id}/events can replay a synchronous run too */
    char *ev_path = run_file(cfg, a.run_id, SVC_RUN_EVENTS);
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t i = 0; i < json_object_array_length(a.events); i++) {
        char *s = svc_json_dump_compact(json_object_array_get_idx(a.events, i));
        svc_buf_printf(&b, "%s\n", s);
        free(s);
    }
    /* durable only when an Idempotency-Key relies on it: otherwise the record is a way to
     * look the run up, and the session's turn line is what survives a crash. The events
     * file is new and read as JSON lines (a torn tail is no event yet), and it is written
     * before the record that tells readers the run ended: no temp file and rename; the
     * record's directory sync (same directory, after it) makes its name durable too. */
    bool durable = cfg->sessions.fsync && key;
    rc = svc_file_write_new(ev_path, b.data ? b.data : "", b.len, durable, err);
    svc_buf_free(&b);
    free(ev_path);
    if (rc == 0) { /* a new record: its run id is new */
        char *path = run_file(cfg, a.run_id, SVC_RUN_RECORD);
        rc = svc_json_write_pretty_sync(path, rec, svc_sync_full(durable) | SVC_WRITE_NEW, err);
        free(path);
    }
    if (rc == 0 && key)
        rc = idem_store(cfg, a.session_id, key, a.run_id, err);
    json_object_put(rec);
    return rc;
}

static int remove_old_run(const void *ctx, const char *id, const struct stat *sb)
{
    const struct svc_config *cfg = ctx;
    if (strncmp(id, "idem-", 5) == 0) {
        /* the name is fixed by (session, key): remove it only if it is still the old file,
         * not one stored again since the caller's lstat */
        char *p = run_file(cfg, id, SVC_RUN_RECORD);
        struct stat again;
        int removed = lstat(p, &again) == 0 && again.st_ino == sb->st_ino &&
                      again.st_mtime == sb->st_mtime && unlink(p) == 0;
        free(p);
        return removed;
    }
    json_object *rec = NULL;
    bool running = read_record(cfg, id, &rec, NULL) == 0 &&
                   strcmp(svc_json_str(rec, "status", ""), "running") == 0;
    json_object_put(rec);
    if (running)
        return 0;
    remove_run_files(cfg, id);
    return 1;
}

int svc_runs_prune(const struct svc_config *cfg, double max_age_s)
{
    char *dir = runs_dir(cfg), *stamp = svc_path_join(dir, ".pruned");
    int removed = svc_file_prune_old_json(dir, stamp, max_age_s, remove_old_run, cfg);
    free(dir);
    free(stamp);
    return removed;
}

struct forget {
    const struct svc_config *cfg;
    const char *sid;
    int removed;
};

static void forget_run(void *ctx, const char *id, const char *path)
{
    struct forget *f = ctx;
    json_object *o = NULL;
    if (svc_json_read_file(path, &o, NULL) == 0 &&
        strcmp(svc_json_str(o, "session_id", ""), f->sid) == 0) {
        remove_run_files(f->cfg, id); /* an idem- file is its record alone */
        f->removed += strncmp(id, "idem-", 5) != 0;
    }
    json_object_put(o);
}

int svc_runs_forget(const struct svc_config *cfg, const char *sid)
{
    struct forget f = {.cfg = cfg, .sid = sid};
    char *dir = runs_dir(cfg);
    svc_file_each_json(dir, forget_run, &f);
    free(dir);
    return f.removed;
}
