/* index: the root-level summary index stays true across processes: a reader idle across
 * compactions (inode numbers reused), a lister compacting while a writer appends and a look
 * meeting an append half done never lose an update; the cursor refuses non-finite values. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "index.h"
#include "journal.h"
#include "jsonx.h"
#include "query.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static struct svc_store st;

static void update(const char *sid, const char *title)
{
    json_object *s = json_object_new_object();
    svc_json_set_str(s, "session_id", sid);
    svc_json_set_str(s, "title", title);
    svc_json_set_str(s, "updated_at", "2026-01-01T00:00:00+00:00");
    svc_journal_note(&st, sid, s);
    json_object_put(s);
}

/* Title of sid in a fresh list page (heap, "" when absent). */
static char *title_of(const char *sid)
{
    struct svc_list_query q = {.limit = 100};
    json_object *o = NULL;
    char *out = strdup("");
    if (svc_index_list(&st, &q, &o, NULL, NULL) != 0)
        return out;
    json_object *arr = svc_json_arr(o, "sessions");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        const char *raw = json_object_get_string(json_object_array_get_idx(arr, i));
        json_object *p = NULL;
        if (svc_json_parse(raw, strlen(raw), &p, NULL) == 0 &&
            strcmp(svc_json_str(p, "session_id", ""), sid) == 0) {
            free(out);
            out = strdup(svc_json_str(p, "title", ""));
        }
        json_object_put(p);
    }
    json_object_put(o);
    return out;
}

static void make_root(char *root, size_t n, int sessions)
{
    snprintf(root, n, "/tmp/svc-index-XXXXXX");
    if (!mkdtemp(root))
        abort();
    for (int i = 0; i < sessions; i++) {
        char d[512];
        snprintf(d, sizeof d, "%s/session_s%d", root, i);
        svc_mkdirs(d, 0755, NULL);
    }
    st.root = root;
    st.agent_id = "svc-agent";
    st.durable = false;
    svc_index_reset();
}

/* A reader that was idle across two compactions (the inode number may come back) must not
 * read the new file from its old offset. */
static void idle_reader_across_compactions(void)
{
    char root[64];
    make_root(root, sizeof root, 3);
    update("s0", "old0");
    update("s1", "old1");
    update("s2", "old2");
    int go[2], ready[2], res[2];
    if (pipe(go) || pipe(ready) || pipe(res))
        abort();
    pid_t idle = fork();
    if (idle == 0) {
        char c;
        close(go[1]);
        close(ready[0]);
        close(res[0]);
        free(title_of("s0")); /* load the index at its first generation */
        if (write(ready[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        char *t0 = title_of("s0"), *t1 = title_of("s1");
        char msg[64];
        snprintf(msg, sizeof msg, "%s %s", t0, t1);
        free(t0);
        free(t1);
        if (write(res[1], msg, strlen(msg) + 1) < 0)
            _exit(2);
        _exit(0);
    }
    /* each side keeps only its own ends: a child that dies early is an end of file here,
     * not a read that waits forever */
    close(go[0]);
    close(ready[1]);
    close(res[1]);
    char c;
    if (read(ready[0], &c, 1) != 1)
        abort();
    char big[300];
    memset(big, 'p', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int round = 0; round < 2; round++) { /* enough lines to compact, twice */
        for (int k = 0; k < 400; k++)
            update("s2", big);
        update("s0", round ? "NEW0" : "mid0");
        free(title_of("s0"));
    }
    update("s1", "NEW1");
    if (write(go[1], "x", 1) != 1)
        abort();
    char got[64] = "";
    if (read(res[0], got, sizeof got) <= 0)
        got[0] = '\0';
    waitpid(idle, NULL, 0);
    close(go[1]);
    close(ready[0]);
    close(res[0]);
    is_str(got, "NEW0 NEW1", "a reader idle across compactions sees every later update");
    svc_index_reset();
    char *t0 = title_of("s0");
    is_str(t0, "NEW0", "a fresh reader sees the last update");
    free(t0);
    tap_rm_rf(root);
}

/* A lister that compacts while a writer appends drops nothing the writer wrote. */
static void compaction_races_appends(void)
{
    char root[64];
    make_root(root, sizeof root, 5);
    /* the journal first: notes to a root without one are dropped (the directories hold the
     * change, and these have no summaries), so a lister that starts late would see none */
    free(title_of("s0"));
    pid_t lister = fork();
    if (lister == 0) {
        for (int k = 0; k < 4000; k++)
            free(title_of("s0"));
        _exit(0);
    }
    char sid[16];
    for (int k = 0; k < 8000; k++) {
        snprintf(sid, sizeof sid, "s%d", k % 5);
        update(sid, k >= 8000 - 5 ? "final" : "pad-pad-pad-pad-pad-pad-pad-pad-pad-pad-pad");
    }
    waitpid(lister, NULL, 0);
    svc_index_reset();
    int stale = 0;
    for (int i = 0; i < 5; i++) {
        snprintf(sid, sizeof sid, "s%d", i);
        char *t = title_of(sid);
        stale += strcmp(t, "final") != 0;
        free(t);
    }
    is_int(stale, 0, "no update lost while another process compacts");
    tap_rm_rf(root);
}

/* An append sets the file's time before its size: a look without the lock that comes in
 * between sees the stamped size with a later time, and takes the journal (it reads up to the
 * stamped size); under the lock the same file is not the stamped one. */
static void append_in_progress_is_whole(void)
{
    char root[64], path[128];
    make_root(root, sizeof root, 1);
    free(title_of("s0"));
    update("s0", "a");
    snprintf(path, sizeof path, "%s/.svc_index.jsonl", root);
    struct stat sb;
    if (stat(path, &sb) != 0)
        abort();
    struct timespec ts[2] = {sb.st_atim, sb.st_mtim};
    ts[1].tv_sec += 1;
    if (utimensat(AT_FDCWD, path, ts, 0) != 0)
        abort();
    struct svc_journal j;
    svc_journal_peek(&st, &j);
    is_int(svc_journal_open(&st, &j), 1, "without the lock: the stamped size, later, is whole");
    svc_journal_done(&j);
    if (svc_journal_lock(&st, &j) != 0)
        abort();
    is_int(svc_journal_open(&st, &j), 0, "under the lock: it is not the stamped file");
    svc_journal_done(&j);
    tap_rm_rf(root);
}

static void cursor_refuses_non_finite(void)
{
    char root[64];
    make_root(root, sizeof root, 2);
    update("s0", "a");
    update("s1", "b");
    /* base64url of "nan|s0" and "inf|s0" */
    static const char *bad[] = {"bmFufHMw", "aW5mfHMw", "not-a-cursor", NULL};
    for (int i = 0; bad[i]; i++) {
        struct svc_list_query q = {.limit = 10, .cursor = bad[i]};
        json_object *o = NULL;
        struct svc_err e;
        svc_err_clear(&e);
        int rc = svc_index_list(&st, &q, &o, NULL, &e);
        ok(rc == -1 && e.code == SVC_E_INVALID_QUERY, "cursor %s refused", bad[i]);
        json_object_put(o);
    }
    tap_rm_rf(root);
}

int main(void)
{
    idle_reader_across_compactions();
    compaction_races_appends();
    append_in_progress_is_whole();
    cursor_refuses_non_finite();
    svc_index_reset();
    return done_testing();
}
