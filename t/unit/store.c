/* store: ids, paths, and the exact Strands files (session.json, agent.json, message_<n>.json). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static char *slurp(const char *path)
{
    char *b = NULL;
    size_t n;
    if (svc_file_read(path, &b, &n, NULL) != 0)
        return NULL;
    return b;
}

static void spit(const char *path, const char *s)
{
    svc_file_write_atomic(path, s, strlen(s), false, NULL);
}

static int is_ts(const char *s)
{
    /* ^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$ */
    const char *pat = "dddd-dd-ddTdd:dd:dd.dddddd+00:00";
    if (!s || strlen(s) != strlen(pat))
        return 0;
    for (size_t i = 0; pat[i]; i++) {
        if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
            return 0;
    }
    return 1;
}

static char *rm_cmd_dir;
static void cleanup(void)
{
    if (rm_cmd_dir) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", rm_cmd_dir);
        if (system(cmd) != 0)
            printf("# cleanup failed\n");
        free(rm_cmd_dir);
    }
}

int main(void)
{
    /* ---- ids ---- */
    struct {
        const char *id;
        int valid;
    } ids[] = {
        {"a", 1},        {"sess-1", 1}, {"A.b_c-9", 1}, {"x.", 1},  {"a..b", 1}, {"", 0},
        {".", 0},        {"..", 0},     {".x", 0},      {"a/b", 0}, {"a\\b", 0}, {"a b", 0},
        {"\xc3\xa9", 0}, {"a\x01", 0},  {"a\n", 0},     {"a:b", 0}, {"*", 0},    {"a%2f", 0},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        struct svc_err e;
        svc_err_clear(&e);
        char shown[64];
        size_t k = 0;
        for (const unsigned char *q = (const unsigned char *)ids[i].id; *q && k < 50; q++)
            k += (size_t)snprintf(shown + k, sizeof shown - k,
                                  (*q < 0x21 || *q > 0x7e) ? "\\x%02x" : "%c", *q);
        shown[k] = '\0';
        is_int(svc_layout_id_valid(ids[i].id), ids[i].valid, "svc_layout_id_valid('%s')", shown);
        int rc = svc_layout_id_check(ids[i].id, &e);
        is_int(rc, ids[i].valid ? 0 : -1, "svc_layout_id_check('%s')", shown);
        if (!ids[i].valid) {
            is_int(e.code, SVC_E_INVALID_SESSION_ID, "'%s': SVC_E_INVALID_SESSION_ID", shown);
            is_str(e.param, "session_id", "'%s': param session_id", shown);
            ok(e.message[0] != '\0', "'%s': a message", shown);
        }
    }
    char id128[130], id129[131];
    memset(id128, 'a', 128);
    id128[128] = '\0';
    memset(id129, 'b', 129);
    id129[129] = '\0';
    ok(svc_layout_id_valid(id128), "128 characters valid");
    ok(svc_layout_id_check(id128, NULL) == 0, "128 characters pass the check");
    ok(!svc_layout_id_valid(id129), "129 characters invalid");
    ok(svc_layout_id_check(id129, NULL) == -1, "129 characters fail the check");
    ok(!svc_layout_id_valid(NULL), "NULL invalid");
    ok(svc_layout_id_check(NULL, NULL) == -1, "NULL fails the check (err may be NULL)");

    /* ---- paths ---- */
    char tmpl[] = "/tmp/svc-store-XXXXXX";
    char *base = mkdtemp(tmpl);
    ok(base != NULL, "temp dir");
    rm_cmd_dir = base ? strdup(base) : NULL; /* base is on main's stack, gone at exit */
    atexit(cleanup);
    char *root = svc_path_join(base, "root");
    struct svc_store st = {.root = root, .agent_id = "svc-agent", .durable = false};
    struct svc_sess s1, h;
    struct svc_err e;
    ok(svc_sess_open_store(&st, "s1", &s1, &e) == 0, "open s1");
    ok(s1.lock.fd == -1 && s1.msg_fd == -1, "an open handle holds no descriptor");
    char *p = svc_sess_path(&s1, SVC_F_DIR, SVC_FROM_ABS);
    char want[1024];
    snprintf(want, sizeof want, "%s/session_s1", root);
    is_str(p, want, "session dir");
    free(p);
    p = svc_sess_message_path(&s1, 12, SVC_FROM_ABS);
    snprintf(want, sizeof want, "%s/session_s1/agents/agent_svc-agent/messages/message_12.json",
             root);
    is_str(p, want, "message path: decimal, no padding");
    free(p);
    p = svc_sess_path(&s1, SVC_F_AGENT_DIR, SVC_FROM_ABS);
    snprintf(want, sizeof want, "%s/session_s1/agents/agent_svc-agent", root);
    is_str(p, want, "agent dir");
    free(p);
    struct {
        enum svc_file f;
        enum svc_from from;
        const char *want;
    } rels[] = {
        {SVC_F_DIR, SVC_FROM_ROOT, "session_s1"},
        {SVC_F_DIR, SVC_FROM_NAME, "session_s1"},
        {SVC_F_SIDECAR, SVC_FROM_ROOT, "session_s1/svc_session.json"},
        {SVC_F_SIDECAR, SVC_FROM_SESSION, "svc_session.json"},
        {SVC_F_AGENT, SVC_FROM_SESSION, "agents/agent_svc-agent/agent.json"},
        {SVC_F_AGENT_DIR, SVC_FROM_NAME, "agent_svc-agent"},
        {SVC_F_MESSAGES, SVC_FROM_ROOT, "session_s1/agents/agent_svc-agent/messages"},
        {SVC_F_MESSAGES, SVC_FROM_NAME, "messages"},
        {SVC_F_TURNS, SVC_FROM_NAME, "svc_turns.jsonl"},
    };
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
        p = svc_sess_path(&s1, rels[i].f, rels[i].from);
        is_str(p, rels[i].want, "path %zu: %s", i, rels[i].want);
        free(p);
    }
    p = svc_sess_message_path(&s1, 3, SVC_FROM_NAME);
    is_str(p, "message_3.json", "message file name");
    free(p);
    p = svc_sess_message_path(&s1, 3, SVC_FROM_SESSION);
    is_str(p, "agents/agent_svc-agent/messages/message_3.json", "message path in the session");
    free(p);
    p = svc_layout_root_path(st.root, SVC_F_INDEX, NULL);
    snprintf(want, sizeof want, "%s/.svc_index.jsonl", root);
    is_str(p, want, "the root's index");
    free(p);
    p = svc_layout_run_path(root, "run-1", SVC_RUN_EVENTS);
    snprintf(want, sizeof want, "%s/.svc_runs/run-1.events.jsonl", root);
    is_str(p, want, "a run's events");
    free(p);
    p = svc_layout_run_id_of("run-1.events.jsonl", SVC_RUN_EVENTS);
    is_str(p, "run-1", "the run id of an events file");
    free(p);
    ok(!svc_layout_run_id_of("run-1.events.jsonl", SVC_RUN_RECORD), "not a record");
    is_str(svc_layout_session_of("session_a.b"), "a.b", "session_of a session directory");
    ok(!svc_layout_session_of("session_") && !svc_layout_session_of("session_.x") &&
           !svc_layout_session_of("sessions_a") && !svc_layout_session_of(".svc_index.jsonl"),
       "session_of: nothing else");
    is_int(svc_layout_message_id_of("message_0.json"), 0, "message_id_of 0");
    is_int(svc_layout_message_id_of("message_12.json"), 12, "message_id_of 12");
    ok(svc_layout_message_id_of("message_012.json") == -1 &&
           svc_layout_message_id_of("message_.json") == -1 &&
           svc_layout_message_id_of("message_1.json.tmp-1-ab") == -1 &&
           svc_layout_message_id_of("message_-1.json") == -1,
       "message_id_of: padded, empty, temp, negative are not message files");
    ok(svc_layout_is_lock(".svc.lock") && svc_layout_is_lock(".svc.run.lock") &&
           !svc_layout_is_lock("svc.lock"),
       "is_lock");

    /* ---- ensure ---- */
    ok(!svc_store_session_exists(&st, "s1"), "s1 does not exist yet");
    ok(svc_sess_open_store(&st, "bad/id", &h, &e) == -1 && e.code == SVC_E_INVALID_SESSION_ID,
       "a handle refuses a bad id");
    svc_sess_close(&h);
    struct stat sb;
    ok(stat(root, &sb) != 0, "and creates nothing (not even the root)");
    ok(svc_sess_ensure(&s1, false, SVC_SYNC_STORE, NULL, &e) == 0, "ensure s1");
    ok(svc_store_session_exists(&st, "s1") && svc_sess_exists(&s1), "s1 exists");
    ok(svc_is_dir(s1.msg_dir), "messages dir created");
    char *sfile = svc_sess_path(&s1, SVC_F_SESSION, SVC_FROM_ABS);
    char *bytes = slurp(sfile);
    json_object *so = NULL;
    ok(bytes && svc_json_parse(bytes, strlen(bytes), &so, NULL) == 0, "session.json parses");
    const char *c = svc_json_str(so, "created_at", NULL), *u = svc_json_str(so, "updated_at", NULL);
    ok(is_ts(c) && is_ts(u), "session.json timestamps in the Strands format");
    char exp[2048];
    snprintf(
        exp, sizeof exp,
        "{\n  \"session_id\": \"s1\",\n  \"session_type\": \"AGENT\",\n  \"created_at\": \"%s\",\n"
        "  \"updated_at\": \"%s\"\n}",
        c ? c : "", u ? u : "");
    is_str(bytes, exp, "session.json exact bytes (key order, indent, no trailing newline)");
    /* not overwritten when present */
    spit(sfile, "{\n  \"session_id\": \"s1\",\n  \"session_type\": \"AGENT\",\n  \"created_at\": "
                "\"2020-01-01T00:00:00.000000+00:00\",\n  \"updated_at\": "
                "\"2020-01-01T00:00:00.000000+00:00\",\n  \"extra\": 1\n}");
    ok(svc_sess_ensure(&s1, false, SVC_SYNC_STORE, NULL, &e) == 0, "ensure again");
    char *b2 = slurp(sfile);
    ok(b2 && strstr(b2, "2020-01-01T00:00:00.000000+00:00") && strstr(b2, "\"extra\": 1"),
       "an existing session.json is left alone");
    free(b2);
    unlink(sfile);
    bool made = false;
    ok(svc_sess_ensure(&s1, true, SVC_SYNC_STORE, &made, &e) == 0 && access(sfile, F_OK) == 0 &&
           made,
       "session.json created when missing although the directory exists");
    free(sfile);
    free(bytes);
    json_object_put(so);

    /* a session "directory" that is a symlink or a file */
    svc_sess_open_store(&st, "lnk", &h, NULL);
    ok(symlink(base, h.dir) == 0, "symlink session_lnk -> outside");
    ok(!svc_store_session_exists(&st, "lnk") && !svc_sess_exists(&h),
       "a symlinked session dir does not exist for the store");
    ok(svc_sess_ensure(&h, false, SVC_SYNC_STORE, NULL, &e) == -1,
       "ensure refuses a symlinked dir");
    char *outside = svc_path_join(base, "agents");
    ok(access(outside, F_OK) != 0, "nothing created through the symlink");
    free(outside);
    svc_sess_close(&h);
    svc_sess_open_store(&st, "file", &h, NULL);
    spit(h.dir, "x");
    ok(!svc_store_session_exists(&st, "file"), "a plain file is not a session");
    ok(svc_sess_ensure(&h, false, SVC_SYNC_STORE, NULL, &e) == -1, "ensure refuses a plain file");
    svc_sess_close(&h);

    /* ---- agent.json ---- */
    json_object *a = svc_store_new_agent(&st);
    svc_json_set_str(a, "created_at", "2025-01-01T00:00:00.000000+00:00");
    svc_json_set_str(a, "updated_at", "2025-01-01T00:00:00.000000+00:00");
    char *ad = svc_json_dump_native(a);
    /* Python: json.dumps(<Strands agent record>, indent=2, ensure_ascii=False) */
    is_str(
        ad,
        "{\n  \"agent_id\": \"svc-agent\",\n  \"state\": {},\n  \"conversation_manager_state\": {\n"
        "    \"__name__\": \"SlidingWindowConversationManager\",\n    \"removed_message_count\": "
        "0,\n"
        "    \"model_call_count\": 0\n  },\n  \"_internal_state\": {\n    \"interrupt_state\": {\n"
        "      \"interrupts\": {},\n      \"context\": {},\n      \"activated\": false\n    },\n"
        "    \"model_state\": {}\n  },\n  \"created_at\": \"2025-01-01T00:00:00.000000+00:00\",\n"
        "  \"updated_at\": \"2025-01-01T00:00:00.000000+00:00\"\n}",
        "new agent record: exact Strands shape");
    free(ad);
    json_object *rd = NULL;
    ok(svc_sess_read_agent(&s1, &rd, &e) == -1 && e.code == SVC_E_NOT_FOUND,
       "read_agent: missing is SVC_E_NOT_FOUND");
    svc_json_set_str(a, "unknown_key", "kept");
    json_object_object_add(svc_json_obj(a, "state"), "k", json_object_new_int(1));
    svc_agent_set_counts(a, 6, 9);
    is_int(svc_agent_removed_count(a), 6, "removed count set");
    is_int(svc_agent_model_calls(a), 9, "model calls set");
    ok(svc_sess_write_agent(&s1, a, SVC_SYNC_STORE, &e) == 0, "write_agent");
    ok(svc_sess_read_agent(&s1, &rd, &e) == 0, "read_agent");
    is_str(svc_json_str(rd, "created_at", ""), "2025-01-01T00:00:00.000000+00:00",
           "write_agent keeps created_at");
    ok(is_ts(svc_json_str(rd, "updated_at", NULL)) &&
           strcmp(svc_json_str(rd, "updated_at", ""), "2025-01-01T00:00:00.000000+00:00") != 0,
       "write_agent sets updated_at");
    is_str(svc_json_str(rd, "unknown_key", ""), "kept", "write_agent keeps unknown keys");
    is_int(svc_agent_removed_count(rd), 6, "removed_message_count round-trips");
    is_int(svc_agent_model_calls(rd), 9, "model_call_count round-trips");
    json_object_put(rd);
    json_object_put(a);
    {
        json_object *bare = json_object_new_object();
        is_int(svc_agent_removed_count(bare), 0, "removed count 0 when absent");
        svc_json_set_int(bare, "x", 1);
        json_object *cm = json_object_new_object();
        svc_json_set_int(cm, "removed_message_count", -5);
        svc_json_set(bare, "conversation_manager_state", cm);
        is_int(svc_agent_removed_count(bare), 0, "a negative removed count reads as 0");
        json_object_put(bare);
    }

    /* ---- message files ---- */
    json_object *m = NULL;
    const char *mtext =
        "{\"role\":\"user\",\"content\":[{\"text\":\"h\xc3\xa9llo \xe6\x97\xa5\"}]}";
    svc_json_parse(mtext, strlen(mtext), &m, NULL);
    ok(m != NULL, "message object");
    size_t len = 0;
    ok(svc_sess_write_message(&s1, 0, m, SVC_SYNC_STORE, &len, &e) == 0, "write message 0");
    char *mp = svc_sess_message_path(&s1, 0, SVC_FROM_ABS);
    char *mb = slurp(mp);
    json_object *rec = NULL;
    ok(mb && svc_json_parse(mb, strlen(mb), &rec, NULL) == 0, "message_0.json parses");
    c = svc_json_str(rec, "created_at", NULL);
    u = svc_json_str(rec, "updated_at", NULL);
    ok(is_ts(c) && is_ts(u), "message timestamps in the Strands format");
    snprintf(exp, sizeof exp,
             "{\n  \"message\": {\n    \"role\": \"user\",\n    \"content\": [\n      {\n        "
             "\"text\": "
             "\"h\xc3\xa9llo \xe6\x97\xa5\"\n      }\n    ]\n  },\n  \"message_id\": 0,\n  "
             "\"redact_message\": "
             "null,\n  \"created_at\": \"%s\",\n  \"updated_at\": \"%s\"\n}",
             c ? c : "", u ? u : "");
    is_str(mb, exp, "message_0.json exact bytes (Python shape, raw UTF-8, no trailing newline)");
    is_int(len, mb ? strlen(mb) : 0, "write_message gives the file's length");
    free(mb);
    free(mp);
    json_object_put(rec);
    /* the message is copied, not taken */
    svc_json_set_str(m, "role", "assistant");
    ok(svc_sess_read_message(&s1, 0, &rec, NULL, NULL, &e) == 0, "read message 0");
    is_str(svc_json_str(svc_json_obj(rec, "message"), "role", ""), "user",
           "write_message stored a copy");
    ok(svc_store_effective_message(rec) == svc_json_obj(rec, "message"),
       "effective message: message when redact_message is null");
    json_object *red = json_object_new_object();
    svc_json_set_str(red, "role", "user");
    svc_json_set(rec, "redact_message", red);
    ok(svc_store_effective_message(rec) == red, "effective message: redact_message when not null");
    json_object_put(rec);
    json_object_put(m);
    ok(svc_sess_read_message(&s1, 77, &rec, NULL, NULL, &e) == -1 && e.code == SVC_E_NOT_FOUND,
       "reading a missing message is SVC_E_NOT_FOUND");
    char *dmg = svc_sess_message_path(&s1, 5, SVC_FROM_ABS);
    spit(dmg, "{\"message_id\": 5}");
    ok(svc_sess_read_message(&s1, 5, &rec, NULL, NULL, &e) == -1 && e.code == SVC_E_IO,
       "a message file without a message object is SVC_E_IO");
    unlink(dmg);
    free(dmg);
    /* the stat of a message names message_<id>.json for ids of one and of many digits */
    const int64_t sids[] = {0, 10, 1234567890123};
    for (int i = 0; i < 3; i++) {
        struct stat mst;
        char *sp = svc_sess_message_path(&s1, sids[i], SVC_FROM_ABS);
        if (sids[i])
            spit(sp, "{}");
        ok(svc_sess_stat_message(&s1, sids[i], &mst) && mst.st_size == (sids[i] ? 2 : (off_t)len),
           "stat_message finds message %lld", (long long)sids[i]);
        if (sids[i])
            unlink(sp);
        free(sp);
    }
    char *nm = svc_sess_message_path(&s1, -3, SVC_FROM_NAME);
    is_str(nm, "message_-3.json", "a negative id is named as printf named it");
    free(nm);
    struct stat nst;
    ok(!svc_sess_stat_message(&s1, 12, &nst) && !svc_sess_stat_message(&s1, 1, &nst),
       "stat_message: no message_12.json, no message_1.json");

    /* ---- message ids: numeric order, only message_<decimal>.json ---- */
    json_object *um = json_object_new_object();
    svc_json_set_str(um, "role", "user");
    svc_json_set(um, "content", json_object_new_array());
    svc_sess_write_message(&s1, 10, um, SVC_SYNC_STORE, NULL, NULL);
    svc_sess_write_message(&s1, 2, um, SVC_SYNC_STORE, NULL, NULL);
    svc_sess_write_message(&s1, 9, um, SVC_SYNC_STORE, NULL, NULL);
    json_object_put(um);
    char *md = svc_xstrdup(s1.msg_dir);
    const char *junk[] = {"message_3.json.tmp-123-abcdef01",
                          "message_x.json",
                          "message_4.txt",
                          "message_.json",
                          "message_-1.json",
                          "message_5.json.bak",
                          "other.json",
                          ".svc.lock",
                          "message_+6.json",
                          "message_7.jsonx"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        char *jp = svc_path_join(md, junk[i]);
        spit(jp, "{}");
        free(jp);
    }
    int64_t *idv = NULL;
    size_t n = 0;
    ok(svc_sess_message_ids(&s1, &idv, &n, &e) == 0, "message_ids");
    is_int(n, 4, "four message files (temp, junk and other names ignored)");
    if (n == 4) {
        is_int(idv[0], 0, "ids[0] 0");
        is_int(idv[1], 2, "ids[1] 2");
        is_int(idv[2], 9, "ids[2] 9");
        is_int(idv[3], 10, "ids[3] 10: numeric, not lexical, order");
    }
    free(idv);
    free(md);
    svc_sess_open_store(&st, "nosuch", &h, NULL);
    ok(svc_sess_message_ids(&h, &idv, &n, &e) == 0 && n == 0,
       "a missing messages directory is 0 ids, not an error");
    free(idv);
    svc_sess_close(&h);
    svc_sess_close(&s1);

    free(root);
    return done_testing();
}
