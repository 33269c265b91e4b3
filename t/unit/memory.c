/* memory: digests (whitespace folded, each side at most 280 code points cut on a UTF-8
 * boundary, never the whole text), the newest user/assistant pair with tool traffic
 * skipped, a sync that runs twice appending once, a failing memory root recorded in
 * memory_state without touching the session, and recall leaving out the session's own
 * digests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "jsonx.h"
#include "memory.h"
#include "sidecar.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static json_object *msg(const char *role, const char *text)
{
    json_object *m = json_object_new_object();
    svc_json_set_str(m, "role", role);
    json_object *c = json_object_new_array();
    if (text) {
        json_object *b = json_object_new_object();
        svc_json_set_str(b, "text", text);
        json_object_array_add(c, b);
    }
    svc_json_set(m, "content", c);
    return m;
}

static json_object *tool_msg(const char *role, const char *block)
{
    json_object *m = msg(role, NULL), *b = NULL;
    svc_json_parse(block, strlen(block), &b, NULL);
    json_object_array_add(svc_json_arr(m, "content"), b);
    return m;
}

static size_t cps(const char *s)
{
    return svc_utf8_len(s);
}

static int count_lines(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    if (svc_file_read_follow(path, &data, &len, NULL) != 0)
        return 0;
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    free(data);
    return n;
}

/* A handle on sid of the test's configuration (closed at the next call). */
static struct svc_sess *sess(const struct svc_config *cfg, const char *sid)
{
    static struct svc_sess h = SVC_SESS_INIT;
    svc_sess_close(&h);
    svc_sess_open(cfg, sid, &h, NULL);
    return &h;
}

int main(void)
{
    /* ---- fold ---- */
    char *d = svc_memory_fold("  hello \t\n  world \r\n", 280);
    is_str(d, "hello world", "whitespace runs folded, ends trimmed");
    free(d);
    char big[2048] = "";
    for (int i = 0; i < 300; i++)
        strcat(big, "\xC3\xA9"); /* é, two bytes */
    d = svc_memory_fold(big, 280);
    is_int(cps(d), 280, "300 code points cut to 280");
    ok(svc_utf8_valid(d, strlen(d)), "cut on a UTF-8 boundary");
    ok(strcmp(d + strlen(d) - 3, "\xE2\x80\xA6") == 0, "a cut side ends with an ellipsis");
    ok(strlen(d) < strlen(big), "never the verbatim text when longer");
    free(d);
    char exact[400] = "";
    for (int i = 0; i < 280; i++)
        strcat(exact, "a");
    d = svc_memory_fold(exact, 280);
    is_str(d, exact, "exactly 280 code points: kept whole");
    free(d);
    strcat(exact, " \n ");
    d = svc_memory_fold(exact, 280);
    is_int(strlen(d), 280, "trailing whitespace does not cause a cut");
    free(d);
    strcat(exact, "b");
    d = svc_memory_fold(exact, 280);
    is_int(cps(d), 280, "281 code points: cut");
    free(d);
    char emoji[2048] = "x";
    for (int i = 0; i < 300; i++)
        strcat(emoji, "\xF0\x9F\x98\x80");
    d = svc_memory_fold(emoji, 280);
    ok(cps(d) == 280 && svc_utf8_valid(d, strlen(d)), "4-byte code points cut whole");
    free(d);

    /* ---- pair ---- */
    json_object *msgs = json_object_new_array();
    int64_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    char *u = NULL, *a = NULL;
    int64_t mid = -1;
    is_int(svc_memory_pair(msgs, ids, &u, &a, &mid), 0, "no messages: no pair");
    json_object_array_add(msgs, msg("user", "first question"));
    is_int(svc_memory_pair(msgs, ids, &u, &a, &mid), 0, "a user message alone: no pair");
    json_object_array_add(msgs, msg("assistant", "first answer"));
    json_object_array_add(msgs, msg("user", "what time is it"));
    json_object_array_add(msgs, tool_msg("assistant",
                                         "{\"toolUse\":{\"toolUseId\":\"c1\",\"name\":\"clock\","
                                         "\"input\":{}}}"));
    json_object_array_add(
        msgs, tool_msg("user", "{\"toolResult\":{\"toolUseId\":\"c1\",\"status\":\"success\","
                               "\"content\":[{\"text\":\"12:00\"}]}}"));
    json_object_array_add(msgs, msg("assistant", "It is   noon."));
    is_int(svc_memory_pair(msgs, ids, &u, &a, &mid), 1, "pair found past tool traffic");
    is_str(u, "what time is it", "user side: the question, not the tool result");
    is_str(a, "It is noon.", "assistant side folded");
    is_int(mid, 5, "message_id is the assistant message's id");
    free(u);
    free(a);
    json_object_array_add(msgs, msg("user", "an unanswered question"));
    is_int(svc_memory_pair(msgs, ids, &u, &a, &mid), 1, "a trailing user message is skipped");
    is_int(mid, 5, "the newest complete pair");
    free(u);
    free(a);
    json_object_put(msgs);

    /* ---- sync on real files ---- */
    char home[] = "/tmp/svc-mem-XXXXXX";
    if (!mkdtemp(home))
        return 1;
    setenv("SVC_HOME", home, 1);
    struct svc_config cfg;
    struct svc_err err;
    char yaml[512];
    snprintf(yaml, sizeof yaml, "sessions:\n  fsync: false\nmemory:\n  recall: 5\n");
    if (svc_config_load_buffer(&cfg, yaml, strlen(yaml), "t.yaml", &err) != 0) {
        printf("# %s\n", err.message);
        return 1;
    }
    const char *sids[] = {"m1", "m2"};
    for (int s = 0; s < 2; s++) {
        svc_mkdirs(cfg.sessions.root, 0755, NULL);
        svc_mkdirs(sess(&cfg, sids[s])->dir, 0755, NULL);
        ok(svc_sess_ensure(sess(&cfg, sids[s]), false, SVC_SYNC_STORE, NULL, &err) == 0,
           "session %s made", sids[s]);
        json_object *sc = svc_sidecar_new(sids[s], cfg.sessions.agent_id, "echo-1");
        svc_sidecar_write(sess(&cfg, sids[s]), sc, SVC_SYNC_STORE, NULL);
        json_object_put(sc);
        json_object *q = msg("user", s ? "question two" : "question one");
        json_object *r = msg("assistant", s ? "answer two" : "answer one");
        svc_sess_write_message(sess(&cfg, sids[s]), 0, q, SVC_SYNC_STORE, NULL, NULL);
        svc_sess_write_message(sess(&cfg, sids[s]), 1, r, SVC_SYNC_STORE, NULL, NULL);
        json_object_put(q);
        json_object_put(r);
    }
    char *mfile = NULL;
    if (asprintf(&mfile, "%s/memory/svc-agent/memory.jsonl", home) < 0)
        return 1;
    ok(svc_memory_sync(&cfg, sess(&cfg, "m1"), NULL, &err) == 0, "sync m1");
    ok(svc_memory_sync(&cfg, sess(&cfg, "m1"), NULL, &err) == 0, "sync m1 again");
    is_int(count_lines(mfile), 1, "the same pair is appended once");
    /* svc_memory.json lost (a sync that died before recording itself): still no duplicate */
    char *mj = svc_sess_path(sess(&cfg, "m1"), SVC_F_MEMORY, SVC_FROM_ABS);
    unlink(mj);
    ok(svc_memory_sync(&cfg, sess(&cfg, "m1"), NULL, &err) == 0, "sync m1 without svc_memory.json");
    is_int(count_lines(mfile), 1, "the line already in the memory file is not written again");
    json_object *mem = NULL;
    ok(svc_json_read_file(mj, &mem, NULL) == 0, "svc_memory.json written again");
    is_int(svc_json_int(mem, "last_synced_message_id", -1), 1, "last_synced_message_id 1");
    is_str(svc_json_str(mem, "memory_file", ""), mfile, "memory_file");
    json_object_put(mem);
    free(mj);
    ok(svc_memory_sync(&cfg, sess(&cfg, "m2"), NULL, &err) == 0, "sync m2");
    is_int(count_lines(mfile), 2, "m2's pair appended");

    /* recall: the other session's digests only */
    char *p = svc_memory_system_prompt(&cfg, "m1", NULL);
    ok(p && strstr(p, "question two") && !strstr(p, "question one"),
       "recall for m1 holds m2's digest, not its own");
    ok(p && strncmp(p, "You are a helpful assistant.", 28) == 0, "after the system prompt");
    free(p);
    p = svc_memory_system_prompt(&cfg, "m3", NULL);
    ok(p && strstr(p, "question two") && strstr(p, "question one"), "a third session sees both");
    ok(p && strstr(p, "question two") < strstr(p, "question one"), "newest first");
    free(p);

    /* the duplicate check looks past 64 KiB of other sessions' lines (its second pass):
     * m1's line, then 100 KiB of lines of other sessions, svc_memory.json lost again */
    FILE *mf = fopen(mfile, "a");
    for (int i = 0; mf && i < 1000; i++)
        fprintf(mf,
                "{\"session_id\":\"other%d\",\"message_id\":1,\"at\":\"x\",\"user\":\"%090d\","
                "\"assistant\":\"a\"}\n",
                i, i);
    if (mf)
        fclose(mf);
    mj = svc_sess_path(sess(&cfg, "m1"), SVC_F_MEMORY, SVC_FROM_ABS);
    unlink(mj);
    free(mj);
    ok(svc_memory_sync(&cfg, sess(&cfg, "m1"), NULL, &err) == 0,
       "sync m1 with its line 100 KiB back");
    is_int(count_lines(mfile), 1002, "found past the first 64 KiB: not written again");
    /* the caller's own messages: the pair is taken from them (ids as given), no file read */
    json_object *recent = json_object_new_array();
    json_object_array_add(recent, msg("user", "held question"));
    json_object_array_add(recent, msg("assistant", "held answer"));
    int64_t rids[] = {2, 3};
    ok(svc_memory_sync_recent(&cfg, sess(&cfg, "m1"), recent, rids, &err) == 0,
       "sync m1 from held messages");
    is_int(count_lines(mfile), 1003, "one line appended");
    json_object_put(recent);
    char *m2j = svc_sess_path(sess(&cfg, "m1"), SVC_F_MEMORY, SVC_FROM_ABS);
    ok(svc_json_read_file(m2j, &mem, NULL) == 0, "m1's svc_memory.json");
    is_int(svc_json_int(mem, "last_synced_message_id", -1), 3, "the held assistant message's id");
    json_object_put(mem);
    free(m2j);
    /* held messages without a pair: the files are read (m1's newest pair on disk is id 1, older) */
    recent = json_object_new_array();
    json_object_array_add(recent, msg("user", "no answer yet"));
    int64_t rid1[] = {4};
    ok(svc_memory_sync_recent(&cfg, sess(&cfg, "m1"), recent, rid1, &err) == 0,
       "no held pair: files read");
    is_int(count_lines(mfile), 1003, "the older pair is not synced again");
    json_object_put(recent);

    /* a memory root that cannot be made: recorded, returned, the session untouched */
    char *blocker = NULL;
    if (asprintf(&blocker, "%s/blocker", home) < 0)
        return 1;
    FILE *f = fopen(blocker, "w");
    fclose(f);
    free(cfg.memory.root);
    if (asprintf(&cfg.memory.root, "%s/sub", blocker) < 0)
        return 1;
    json_object *nq = msg("user", "q3"), *na = msg("assistant", "a3");
    svc_sess_write_message(sess(&cfg, "m2"), 2, nq, SVC_SYNC_STORE, NULL, NULL);
    svc_sess_write_message(sess(&cfg, "m2"), 3, na, SVC_SYNC_STORE, NULL, NULL);
    json_object_put(nq);
    json_object_put(na);
    svc_err_clear(&err);
    ok(svc_memory_sync(&cfg, sess(&cfg, "m2"), NULL, &err) == -1, "sync into a blocked root fails");
    is_int(err.code, SVC_E_IO, "io_error");
    json_object *sc = NULL;
    svc_sidecar_read(sess(&cfg, "m2"), &sc, NULL);
    json_object *ms = svc_json_obj(sc, "memory_state");
    is_str(svc_json_str(svc_json_obj(ms, "error"), "code", ""), "io_error",
           "memory_state.error recorded");
    is_int(svc_json_int(ms, "last_synced_message_id", -1), 1, "last synced pair unchanged");
    json_object_put(sc);
    ok(svc_memory_system_prompt(&cfg, "m1", NULL) == NULL, "recall from a missing root: nothing");
    free(blocker);
    free(mfile);
    svc_config_free(&cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd) != 0)
        return 1;
    return done_testing();
}
