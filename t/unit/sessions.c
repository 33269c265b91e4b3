/* session: the run lifecycle through the C API (SPEC 3): id validation before any file is
 * touched (including ids argv cannot carry), begin/execute/free, the run lock, archived
 * sessions, OpenAI history import on the first run, abandoned runs and stale repair. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "jsonx.h"
#include "query.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static char base[] = "/tmp/svc-session-XXXXXX";
static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        printf("# cleanup failed\n");
}

static struct svc_config cfg;

/* The run's answer, by value (session.h). */
static struct svc_run_answer answer_of(const struct svc_run *run)
{
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    return a;
}

/* A handle on sid (closed at the next call). */
static struct svc_sess *sess(const char *sid)
{
    static struct svc_sess h = SVC_SESS_INIT;
    svc_sess_close(&h);
    svc_sess_open(&cfg, sid, &h, NULL);
    return &h;
}

static json_object *sidecar(const char *sid)
{
    char *p = svc_sess_path(sess(sid), SVC_F_SIDECAR, SVC_FROM_ABS);
    json_object *o = NULL;
    svc_json_read_file(p, &o, NULL);
    free(p);
    return o;
}

static json_object *turns(const char *sid)
{
    char *p = svc_sess_path(sess(sid), SVC_F_TURNS, SVC_FROM_ABS);
    char *b = NULL;
    size_t n = 0;
    json_object *arr = json_object_new_array();
    if (svc_file_read(p, &b, &n, NULL) == 0) {
        for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
            json_object *o = NULL;
            if (svc_json_parse(line, strlen(line), &o, NULL) == 0)
                json_object_array_add(arr, o);
        }
    }
    free(b);
    free(p);
    return arr;
}

static size_t nmessages(const char *sid)
{
    int64_t *ids = NULL;
    size_t n = 0;
    svc_sess_message_ids(sess(sid), &ids, &n, NULL);
    free(ids);
    return n;
}

static int chat(const char *sid, const char *input, json_object *history, char **answer,
                struct svc_err *err)
{
    struct svc_run_request req = {.session_id = sid, .input = input, .history = history};
    struct svc_run *run = NULL;
    if (svc_run_begin(&cfg, &req, &run, err) != 0)
        return -1;
    int rc = svc_run_execute(run, NULL, err);
    if (answer)
        *answer = strdup(answer_of(run).content);
    svc_run_free(run);
    return rc;
}

int main(void)
{
    ok(mkdtemp(base) != NULL, "temp dir");
    atexit(cleanup);
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "sessions:\n  root: %s/root\n  fsync: false\n  sync_memory: false\nmemory:\n  root: "
             "%s/memory\n",
             base, base);
    struct svc_err e;
    ok(svc_config_load_buffer(&cfg, yaml, strlen(yaml), "test.yaml", &e) == 0, "config loads");

    /* ---- invalid ids, including ones argv cannot carry: nothing is created ---- */
    char id129[130];
    memset(id129, 'x', 129);
    id129[129] = '\0';
    const char *bad[] = {"",
                         ".",
                         "..",
                         "a/b",
                         "a\x01"
                         "b",
                         "\xc3\xa9",
                         ".x",
                         "\x01",
                         "a\x7f",
                         id129,
                         "../etc",
                         "a b",
                         "\xff\xfe",
                         "tab\there"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct svc_run_request req = {.session_id = bad[i], .input = "hello"};
        struct svc_run *run = (struct svc_run *)1;
        svc_err_clear(&e);
        int rc = svc_run_begin(&cfg, &req, &run, &e);
        ok(rc == -1 && e.code == SVC_E_INVALID_SESSION_ID, "svc_run_begin refuses bad id #%zu", i);
        ok(run == NULL, "bad id #%zu: no run", i);
        ok(svc_layout_id_check(bad[i], NULL) == -1, "svc_layout_id_check refuses bad id #%zu", i);
        json_object *o = (json_object *)1;
        ok(svc_session_get(&cfg, bad[i], &o, &e) == -1 && e.code == SVC_E_INVALID_SESSION_ID,
           "svc_session_get refuses bad id #%zu", i);
        ok(svc_session_set_archived(&cfg, bad[i], true, &o, &e) == -1 &&
               e.code == SVC_E_INVALID_SESSION_ID,
           "svc_session_set_archived refuses bad id #%zu", i);
    }
    struct stat sb;
    ok(stat(cfg.sessions.root, &sb) != 0, "nothing created: the root does not even exist");

    /* ---- empty input ---- */
    {
        struct svc_run_request req = {.session_id = "s0", .input = ""};
        struct svc_run *run = NULL;
        ok(svc_run_begin(&cfg, &req, &run, &e) == -1 && e.code == SVC_E_MISSING_FIELD,
           "empty input refused");
        ok(stat(cfg.sessions.root, &sb) != 0, "and nothing created");
    }

    /* ---- a generated session id ---- */
    {
        struct svc_run_request req = {.input = "no id"};
        struct svc_run *run = NULL;
        ok(svc_run_begin(&cfg, &req, &run, &e) == 0, "begin without a session id");
        const char *sid = run ? answer_of(run).session_id : "";
        ok(strncmp(sid, "sess-", 5) == 0 && strlen(sid) == 21 && svc_layout_id_valid(sid),
           "generated id sess-<16 hex> (%s)", sid);
        ok(strncmp(answer_of(run).run_id, "run-", 4) == 0 && strlen(answer_of(run).run_id) == 20,
           "generated run id run-<16 hex>");
        ok(svc_run_execute(run, NULL, &e) == 0, "execute");
        svc_run_free(run);
    }

    /* ---- begin: state on disk while the run is open; the run lock ---- */
    {
        struct svc_run_request req = {
            .session_id = "s1", .input = "first", .run_id = "run-0123456789abcdef"};
        struct svc_run *run = NULL;
        ok(svc_run_begin(&cfg, &req, &run, &e) == 0, "begin s1");
        json_object *sc = sidecar("s1");
        is_str(svc_json_str(sc, "status", ""), "running", "sidecar status running after begin");
        json_object *cur = svc_json_obj(sc, "current_run");
        is_str(svc_json_str(cur, "run_id", ""), "run-0123456789abcdef", "current_run.run_id");
        is_int(svc_json_int(cur, "pid", 0), getpid(), "current_run.pid");
        is_int(svc_json_int(sc, "run_count", 0), 1, "run_count 1");
        is_str(svc_json_str(sc, "last_run_id", ""), "run-0123456789abcdef", "last_run_id");
        is_str(svc_json_str(sc, "title", ""), "first", "title from the input");
        json_object_put(sc);
        is_int(nmessages("s1"), 1, "the user message is stored at begin");

        struct svc_run *run2 = (struct svc_run *)1;
        struct svc_run_request req2 = {.session_id = "s1", .input = "second"};
        ok(svc_run_begin(&cfg, &req2, &run2, &e) == -1 && e.code == SVC_E_SESSION_BUSY,
           "a second begin on the session is SVC_E_SESSION_BUSY");
        ok(run2 == NULL, "no second run");
        is_int(nmessages("s1"), 1, "the refused run stored nothing");
        sc = sidecar("s1");
        is_int(svc_json_int(sc, "run_count", 0), 1, "the refused run did not count");
        json_object_put(sc);
        ok(svc_session_repair_stale(&cfg, "s1", &e) == 0, "a live run is not repaired");

        ok(svc_run_execute(run, NULL, &e) == 0, "execute s1");
        is_str(answer_of(run).content, "Echo: first (I was given 0 earlier messages.)", "answer");
        json_object *evs = answer_of(run).events;
        size_t ne = json_object_array_length(evs);
        ok(ne >= 3, "events recorded");
        is_str(svc_json_str(json_object_array_get_idx(evs, 0), "type", ""), "phase",
               "first event phase");
        is_str(svc_json_str(json_object_array_get_idx(evs, ne - 1), "type", ""), "done",
               "last event done");
        int seq_ok = 1;
        for (size_t i = 0; i < ne; i++)
            seq_ok &= svc_json_int(json_object_array_get_idx(evs, i), "seq", 0) == (int64_t)i + 1;
        ok(seq_ok, "event seq 1..n");
        ok(svc_run_execute(run, NULL, &e) == -1, "a run executes only once");
        svc_run_free(run);
        sc = sidecar("s1");
        is_str(svc_json_str(sc, "status", ""), "idle", "idle after the run");
        ok(svc_json_obj(sc, "current_run") == NULL, "current_run null");
        is_int(svc_json_int(sc, "message_count", 0), 2, "message_count 2");
        is_int(svc_json_int(sc, "turn_count", 0), 1, "turn_count 1");
        json_object_put(sc);
        char *ans = NULL;
        ok(chat("s1", "again", NULL, &ans, &e) == 0, "the lock is released: a new run works");
        is_str(ans, "Echo: again (I was given 2 earlier messages.)", "second answer");
        free(ans);
    }

    /* ---- OpenAI history is imported on the first run only ---- */
    {
        json_object *hist = NULL;
        const char *h = "[{\"role\":\"user\",\"content\":\"earlier q\"},"
                        "{\"role\":\"assistant\",\"content\":\"earlier a\"}]";
        svc_json_parse(h, strlen(h), &hist, NULL);
        char *ans = NULL;
        ok(chat("h1", "now", hist, &ans, &e) == 0, "first run with history");
        is_str(ans, "Echo: now (I was given 2 earlier messages.)", "the history is context");
        free(ans);
        is_int(nmessages("h1"), 4, "history stored as messages 0, 1; input 2; answer 3");
        json_object *rec = NULL;
        svc_sess_read_message(sess("h1"), 0, &rec, NULL, NULL, NULL);
        json_object *m = svc_store_effective_message(rec);
        is_str(svc_json_str(m, "role", ""), "user", "message 0 is the earlier user message");
        json_object_put(rec);
        ok(chat("h1", "later", hist, &ans, &e) == 0, "second run with history");
        is_str(ans, "Echo: later (I was given 4 earlier messages.)", "history not imported again");
        free(ans);
        is_int(nmessages("h1"), 6, "six messages");
        json_object *t = turns("h1");
        is_int(svc_json_int(json_object_array_get_idx(t, 0), "input_message_id", -1), 2,
               "first turn's input_message_id is 2 (after the history)");
        json_object_put(t);
        json_object_put(hist);
    }

    /* ---- an abandoned run (begun, never executed) ends as failed ---- */
    {
        struct svc_run_request req = {.session_id = "ab", .input = "abandoned"};
        struct svc_run *run = NULL;
        ok(svc_run_begin(&cfg, &req, &run, &e) == 0, "begin ab");
        svc_run_free(run);
        json_object *sc = sidecar("ab");
        is_str(svc_json_str(sc, "status", ""), "error", "abandoned run: status error");
        is_str(svc_json_str(svc_json_obj(sc, "last_error"), "code", ""), "internal_error",
               "last_error.code internal_error");
        ok(svc_json_obj(sc, "current_run") == NULL, "current_run null");
        json_object_put(sc);
        json_object *t = turns("ab");
        is_int(json_object_array_length(t), 1, "a turn line");
        is_str(svc_json_str(json_object_array_get_idx(t, 0), "status", ""), "error",
               "turn status error");
        json_object_put(t);
        char *ans = NULL;
        ok(chat("ab", "next", NULL, &ans, &e) == 0, "the session stays usable");
        sc = sidecar("ab");
        is_str(svc_json_str(sc, "status", ""), "idle", "idle again");
        ok(svc_json_obj(sc, "last_error") == NULL, "last_error cleared");
        json_object_put(sc);
        free(ans);
    }

    /* ---- archived sessions refuse runs, without changing anything ---- */
    {
        char *ans = NULL;
        ok(chat("ar", "one", NULL, &ans, &e) == 0, "session ar");
        free(ans);
        json_object *o = NULL;
        ok(svc_session_set_archived(&cfg, "ar", true, &o, &e) == 0, "archive");
        json_object_put(o);
        char *p = svc_sess_path(sess("ar"), SVC_F_SIDECAR, SVC_FROM_ABS);
        char *before = NULL, *after = NULL;
        size_t n;
        svc_file_read(p, &before, &n, NULL);
        struct svc_run_request req = {.session_id = "ar", .input = "refused"};
        struct svc_run *run = (struct svc_run *)1;
        ok(svc_run_begin(&cfg, &req, &run, &e) == -1 && e.code == SVC_E_SESSION_ARCHIVED,
           "begin on an archived session: SVC_E_SESSION_ARCHIVED");
        ok(run == NULL, "no run");
        svc_file_read(p, &after, &n, NULL);
        is_str(after, before, "sidecar unchanged");
        is_int(nmessages("ar"), 2, "no message stored");
        free(before);
        free(after);
        free(p);
        ok(svc_session_set_archived(&cfg, "ar", false, &o, &e) == 0, "unarchive");
        json_object_put(o);
        ok(chat("ar", "two", NULL, &ans, &e) == 0, "runs again after unarchive");
        free(ans);
    }

    /* ---- stale repair ---- */
    {
        char *ans = NULL;
        ok(chat("st", "one", NULL, &ans, &e) == 0, "session st");
        free(ans);
        is_int(svc_session_repair_stale(&cfg, "st", &e), 0, "idle: nothing to repair");
        json_object *sc = sidecar("st");
        svc_json_set_str(sc, "status", "running");
        json_object *cur = json_object_new_object();
        svc_json_set_str(cur, "run_id", "run-feedfacefeedface");
        svc_json_set_int(cur, "pid", 999999);
        svc_json_set(sc, "current_run", cur);
        svc_json_set_int(sc, "message_count", 42);
        ok(svc_sidecar_write(sess("st"), sc, SVC_SYNC_STORE, &e) == 0,
           "sidecar set to a stale running");
        json_object_put(sc);
        is_int(svc_session_repair_stale(&cfg, "st", &e), 1, "repair_stale repairs (returns 1)");
        sc = sidecar("st");
        is_str(svc_json_str(sc, "status", ""), "error", "status error");
        json_object *le = svc_json_obj(sc, "last_error");
        is_str(svc_json_str(le, "code", ""), "interrupted", "last_error.code interrupted");
        is_str(svc_json_str(le, "run_id", ""), "run-feedfacefeedface", "last_error.run_id");
        is_int(svc_json_int(sc, "message_count", 0), 2, "message_count recounted");
        ok(svc_json_obj(sc, "current_run") == NULL, "current_run null");
        json_object_put(sc);
        json_object *t = turns("st");
        json_object *last = json_object_array_get_idx(t, json_object_array_length(t) - 1);
        is_int(json_object_array_length(t), 2, "an interrupted turn line appended");
        is_str(svc_json_str(last, "status", ""), "error", "turn status error");
        is_str(svc_json_str(svc_json_obj(last, "error"), "code", ""), "interrupted",
               "turn error.code");
        json_object_put(t);
        is_int(svc_session_repair_stale(&cfg, "st", &e), 0, "a second repair does nothing");
    }

    /* ---- a tool turn ---- */
    {
        struct svc_run_request req = {.session_id = "tl", .input = "/tool clock {}"};
        struct svc_run *run = NULL;
        ok(svc_run_begin(&cfg, &req, &run, &e) == 0, "begin tool run");
        ok(svc_run_execute(run, NULL, &e) == 0, "execute tool run");
        ok(strncmp(answer_of(run).content, "Tool clock returned: ", 21) == 0,
           "answer quotes the tool");
        is_int(json_object_array_length(answer_of(run).tool_calls), 1, "one OpenAI tool call");
        svc_run_free(run);
        is_int(nmessages("tl"), 4, "user, assistant toolUse, user toolResult, assistant");
        json_object *rec = NULL;
        svc_sess_read_message(sess("tl"), 2, &rec, NULL, NULL, NULL);
        json_object *blk =
            json_object_array_get_idx(svc_json_arr(svc_json_obj(rec, "message"), "content"), 0);
        json_object *tr = svc_json_obj(blk, "toolResult");
        ok(tr != NULL, "message 2 carries a toolResult");
        is_str(svc_json_str(tr, "status", ""), "success", "toolResult status success");
        is_int(json_object_object_length(blk), 1, "content block has exactly one key");
        json_object_put(rec);
        json_object *t = turns("tl");
        json_object *t0 = json_object_array_get_idx(t, 0);
        is_int(json_object_array_length(svc_json_arr(t0, "tool_trace")), 1,
               "tool_trace has the call");
        is_int(json_object_array_length(svc_json_arr(t0, "output_message_ids")), 3,
               "output ids 1, 2, 3");
        json_object_put(t);
    }

    svc_config_free(&cfg);
    return done_testing();
}
