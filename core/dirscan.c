#include "dirscan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostdb.h"
#include "log.h"
#include "metrics.h"
#include "sidecar.h"
#include "util.h"

/* A rebuild's progress is written to its gate every PROGRESS_EVERY sessions. */
#define PROGRESS_EVERY 1000

/* SVC_TEST_INDEX_SCAN_GATE=<path> (test builds, TESTING.md): a read of the directories
 * makes <path>.waiting when done and waits for <path>. */
static void test_scan_gate(void)
{
#ifdef SVC_TEST_HOOKS
    const char *g = getenv("SVC_TEST_INDEX_SCAN_GATE");
    char *w = NULL;
    if (!g)
        return;
    svc_xasprintf(&w, "%s.waiting", g);
    int fd = open(w, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    free(w);
    while (access(g, F_OK) != 0)
        usleep(10000);
#endif
}

/* A session read without the root lock, with its mark from before the read. */
struct scanned {
    char *sid; /* first: svc_cmp_strp orders them */
    ino_t ino; /* its directory's, from readdir */
    struct svc_sess_mark m;
    bool seen; /* named again by the catch-up's readdir */
};

/* The root's session names into *v (sid and inode). */
static int read_names(const struct svc_store *st, struct scanned **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    DIR *d = opendir(st->root);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *sid = svc_layout_session_of(de->d_name);
        if (!sid)
            continue;
        *v = svc_grow(*v, *n, &cap, sizeof **v);
        (*v)[(*n)++] = (struct scanned){.sid = svc_xstrdup(sid), .ino = de->d_ino};
    }
    closedir(d);
    return 0;
}

static int cmp_ino(const void *a, const void *b)
{
    const struct scanned *x = a, *y = b;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int svc_dirscan_names(const struct svc_store *st, char ***v, size_t *n)
{
    struct scanned *sc = NULL;
    if (read_names(st, &sc, n) != 0)
        return -1;
    if (*n > 1)
        qsort(sc, *n, sizeof *sc, svc_cmp_strp);
    *v = svc_xcalloc(*n ? *n : 1, sizeof **v);
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = sc[i].sid;
    free(sc);
    return 0;
}

void svc_dirscan_names_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Every session of sc (in inode order: on a cold disk the inode tables are then read
 * nearly in sequence) into the sink; sc keeps those read, with their marks. */
static int walk(const struct svc_store *st, int gate, const struct svc_dirscan_sink *sink,
                struct scanned *sc, size_t *nsc)
{
    if (*nsc > 1)
        qsort(sc, *nsc, sizeof *sc, cmp_ino);
    size_t kept = 0;
    int rc = 0;
    for (size_t i = 0; i < *nsc; i++) {
        if (i % PROGRESS_EVERY == 0)
            svc_journal_progress(gate, i, *nsc);
        struct scanned *s = &sc[i];
        json_object *sum = rc == 0 && svc_store_session_mark(st, s->sid, &s->m) == 0
                               ? svc_sidecar_summary_of(st, s->sid)
                               : NULL;
        if (sum && (rc = sink->put(sink->ctx, s->sid, sum)) == 0)
            sc[kept++] = *s;
        else
            free(s->sid);
        json_object_put(sum);
        if (i % 100000 == 99999)
            svc_logf("index: reading the directories: %zu of %zu sessions", i + 1, *nsc);
    }
    svc_journal_progress(gate, *nsc, *nsc);
    *nsc = kept;
    test_scan_gate();
    return rc;
}

/* Under the root lock again after the walk: the sessions added since are read, those whose
 * mark moved read again, those gone dropped. *count: the sessions the sink then holds. */
static int catch_up(const struct svc_store *st, const struct svc_dirscan_sink *sink,
                    struct scanned *sc, size_t nsc, size_t *count)
{
    if (nsc > 1)
        qsort(sc, nsc, sizeof *sc, svc_cmp_strp);
    DIR *d = opendir(st->root);
    if (!d)
        return -1;
    int rc = 0;
    *count = nsc;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        const char *sid = svc_layout_session_of(de->d_name);
        struct scanned key = {.sid = (char *)(uintptr_t)sid}, *s;
        if (!sid)
            continue;
        if ((s = bsearch(&key, sc, nsc, sizeof *sc, svc_cmp_strp))) {
            s->seen = true;
        } else if (svc_store_session_exists(st, sid)) {
            json_object *sum = svc_sidecar_summary_of(st, sid);
            if (sum && (rc = sink->put(sink->ctx, sid, sum)) == 0)
                (*count)++;
            json_object_put(sum);
        }
    }
    closedir(d);
    for (size_t i = 0; rc == 0 && i < nsc; i++) {
        struct svc_sess_mark m;
        if (sc[i].seen && svc_store_session_mark(st, sc[i].sid, &m) == 0 &&
            svc_store_mark_same(&m, &sc[i].m))
            continue;
        json_object *sum = sc[i].seen ? svc_sidecar_summary_of(st, sc[i].sid) : NULL;
        rc = sink->put(sink->ctx, sc[i].sid, sum);
        *count -= sum == NULL;
        json_object_put(sum);
    }
    return rc;
}

/* Rebuilds that could not be kept (said once per process), and whether the last was one. */
static struct {
    unsigned long unkept;
    bool unkept_last;
} D;

static void said_rebuilt(const struct svc_store *st, const struct svc_journal *j, size_t n)
{
    D.unkept_last = j->lock < 0 || !j->writable;
    if (!D.unkept_last)
        svc_logf("index: rebuilt from the directories (%zu sessions)", n);
    else if (D.unkept++ == 0)
        svc_logf("index: the session root %s cannot be written: each listing reads its "
                 "directories (%zu sessions now); no index is kept until it can be",
                 st->root, n);
}

bool svc_dirscan_unkept(void)
{
    return D.unkept_last;
}

int svc_dirscan_rebuild(const struct svc_store *st, struct svc_journal *j,
                        const struct svc_dirscan_sink *sink, bool may_wait, bool brief,
                        struct timespec *mtime, bool *written)
{
    *written = false;
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return -1;
    int gate = j->lock >= 0 ? svc_journal_gate(st, j, may_wait, brief) : -1;
    if (gate == -2 || gate == -3)
        return gate == -2 ? 1 : 2;
    struct scanned *sc = NULL;
    size_t nsc = 0, count = 0;
    svc_journal_unlock(j);
    int rc = read_names(st, &sc, &nsc) == 0 ? walk(st, gate, sink, sc, &nsc) : -1;
    svc_journal_relock(j);
    if (rc == 0)
        rc = catch_up(st, sink, sc, nsc, &count);
    for (size_t i = 0; i < nsc; i++)
        free(sc[i].sid);
    free(sc);
    if (gate >= 0)
        close(gate);
    if (rc != 0)
        return -1;
    *mtime = rs.st_mtim;
    if (j->lock >= 0 && j->writable) {
        *written = svc_journal_write(st, j, sink->rows, sink->ctx) == 0;
        if (!*written)
            svc_journal_stamp(j, NULL, NULL); /* nobody trusts an older file */
    }
    said_rebuilt(st, j, count);
    svc_metrics_index_rebuild();
    return 0;
}

/* ---- svc fsck's check ---- */

/* The journal's last summary of each session, in a map on disk; the suspects to look at again
 * under the root lock (a mismatch seen without it, or a line appended since). */
struct verify {
    struct svc_hostdb map; /* m(sid, summary): a rowid table, summaries land in insertion
                            * order on full pages (keyed by sid, 2.5 times the journal) */
    char *why;
    size_t whysz;
    char **sus;
    size_t nsus, capsus;
    bool note;                /* lines read go to the suspects too (the catch-up under the lock) */
    size_t found, found_rows; /* sessions that matched; suspects that have a row */
};

static void suspect(struct verify *v, const char *sid)
{
    v->sus = svc_grow(v->sus, v->nsus, &v->capsus, sizeof *v->sus);
    v->sus[v->nsus++] = svc_xstrdup(sid);
}

/* One journal line into the map, as a listing applies it: 0, 1 (why says what is wrong), -1. */
static int verify_line(void *ctx, const char *line, size_t n, off_t at)
{
    struct verify *v = ctx;
    json_object *o = NULL, *sum = NULL;
    const char *sid = NULL;
    off_t so;
    size_t sl;
    int kind = svc_journal_line(line, n, at, &o, &sid, &sum, &so, &sl);
    int rc = 0;
    if (kind == -2) {
        snprintf(v->why, v->whysz, "line at byte %lld of the index is not JSON", (long long)at);
        rc = 1;
    } else if (kind == 1) {
        size_t len = 0;
        const char *text =
            sum ? json_object_to_json_string_length(sum, JSON_C_TO_STRING_PLAIN, &len) : NULL;
        rc = svc_hostdb_run(&v->map,
                            text ? "INSERT OR REPLACE INTO m VALUES (?1, ?2)"
                                 : "DELETE FROM m WHERE sid = ?1",
                            "st", sid, text, (int)len);
        if (v->note)
            suspect(v, sid);
    }
    json_object_put(o);
    return rc;
}

/* Every session directory against the map, without the root lock (writers go on): the
 * sessions that differ become suspects; progress every 1,000. */
static int verify_dirs(const struct svc_store *st, struct verify *v, svc_dirscan_progress_fn *pf,
                       void *pctx)
{
    DIR *d = opendir(st->root);
    if (!d)
        return -1;
    struct dirent *de;
    size_t seen = 0;
    while ((de = readdir(d))) {
        const char *sid = svc_layout_session_of(de->d_name);
        if (!sid || !svc_store_session_exists(st, sid))
            continue;
        json_object *want = svc_sidecar_summary_of(st, sid);
        json_object *have =
            want ? svc_hostdb_object(&v->map, "SELECT summary FROM m WHERE sid = ?1", sid) : NULL;
        if (want && have && json_object_equal(have, want))
            v->found++;
        else if (want) {
            suspect(v, sid);
            v->found_rows += have != NULL;
        }
        json_object_put(want);
        json_object_put(have);
        if (pf && ++seen % 1000 == 0)
            pf(pctx, seen);
    }
    closedir(d);
    test_scan_gate();
    return 0;
}

/* Rows of the map whose session is gone, as suspects, looked for when the counts differ. */
static int suspect_extras(const struct svc_store *st, struct verify *v)
{
    int64_t listed = svc_hostdb_int(&v->map, "SELECT count(*) FROM m", -1);
    if (listed < 0)
        return -1;
    if ((size_t)listed == v->found + v->found_rows)
        return 0;
    sqlite3_stmt *sel;
    int rc = svc_hostdb_step(&v->map, &sel, "SELECT sid FROM m", "");
    for (; rc == SQLITE_ROW; rc = sqlite3_step(sel))
        if (!svc_store_session_exists(st, (const char *)sqlite3_column_text(sel, 0)))
            suspect(v, (const char *)sqlite3_column_text(sel, 0));
    sqlite3_reset(sel);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Each suspect again, under the root lock: 0 when all agree now, 3 (why says which), -1. */
static int verify_suspects(const struct svc_store *st, struct verify *v)
{
    size_t extras = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < v->nsus; i++) {
        const char *sid = v->sus[i];
        json_object *want =
            svc_store_session_exists(st, sid) ? svc_sidecar_summary_of(st, sid) : NULL;
        json_object *have = svc_hostdb_object(&v->map, "SELECT summary FROM m WHERE sid = ?1", sid);
        if (want && !have)
            snprintf(v->why, v->whysz, "session %s is missing from the index", sid);
        else if (want && !json_object_equal(have, want))
            snprintf(v->why, v->whysz, "the index holds an outdated summary of session %s", sid);
        else if (!want && have)
            extras++;
        rc = want && (!have || !json_object_equal(have, want)) ? 3 : 0;
        json_object_put(want);
        json_object_put(have);
    }
    int64_t listed = svc_hostdb_int(&v->map, "SELECT count(*) FROM m", -1);
    if (rc == 0 && extras)
        snprintf(v->why, v->whysz, "the index lists %lld sessions, the root holds %lld",
                 (long long)listed, (long long)listed - (long long)extras);
    return rc == 0 && extras ? 3 : listed < 0 ? -1 : rc;
}

static void verify_free(struct verify *v)
{
    for (size_t i = 0; i < v->nsus; i++)
        free(v->sus[i]);
    free(v->sus);
    svc_hostdb_close(&v->map);
}

/* The journal under the root lock: whole by its stamp, read into the map up to *at (0, 1 or
 * 2 with why, -1); its file stays open for the catch-up. */
static int verify_journal(const struct svc_store *st, struct svc_journal *j, struct verify *v,
                          off_t *at)
{
    int whole = svc_journal_open(st, j);
    if (whole < 0) {
        snprintf(v->why, v->whysz, "there is no index file (the next listing builds it)");
        return 2;
    }
    if (!whole) {
        snprintf(v->why, v->whysz, "the index file is not the one its last writer left (stamp)");
        return 1;
    }
    struct svc_err e;
    if (svc_hostdb_temp(&v->map, "CREATE TABLE m(sid TEXT PRIMARY KEY, summary TEXT NOT NULL)",
                        4096, &e) != 0) {
        svc_logf("index: cannot check the index (%s)", e.message);
        return -1;
    }
    int rc = svc_journal_lines(j->fd, j->sb.st_size, at, verify_line, v);
    if (rc == 0 && *at < j->sb.st_size) {
        snprintf(v->why, v->whysz, "the index file ends inside a line (byte %lld)", (long long)*at);
        rc = 1;
    }
    return rc;
}

/* Under the root lock again: the lines appended since the map was read (the same file, by
 * its stamp), then the suspects; a writer between its sidecar and its line is waited for
 * three times. 0, 3 with why, 4 when the file was rewritten meanwhile, -1. */
static int verify_catch_up(const struct svc_store *st, struct svc_journal *j, struct verify *v,
                           off_t *at)
{
    int rc = 3;
    for (int attempt = 0; rc == 3 && attempt < 4; attempt++) {
        if (attempt) {
            svc_journal_unlock(j);
            usleep(20000);
        }
        svc_journal_relock(j);
        struct stat sb;
        if (!j->stamp.ok || strcmp(j->stamp.gen, j->gen) != 0 || fstat(j->fd, &sb) != 0 ||
            j->stamp.size < *at) {
            snprintf(v->why, v->whysz, "the index file was rewritten during the check");
            return 4;
        }
        v->note = true;
        if (svc_journal_lines(j->fd, (off_t)j->stamp.size, at, verify_line, v) != 0)
            return -1;
        rc = verify_suspects(st, v);
    }
    return rc;
}

/* The journal read under the root lock, the directories without it, the suspects under it. */
static int verify_once(const struct svc_store *st, char *why, size_t whysz,
                       svc_dirscan_progress_fn *pf, void *pctx)
{
    struct svc_journal j;
    struct verify v = {.why = why, .whysz = whysz};
    off_t at = 0;
    int rc = svc_journal_lock(st, &j) != 0 ? -1 : verify_journal(st, &j, &v, &at);
    if (rc == 0) {
        svc_journal_unlock(&j);
        rc = verify_dirs(st, &v, pf, pctx);
        if (rc == 0)
            rc = suspect_extras(st, &v);
        if (rc == 0)
            rc = verify_catch_up(st, &j, &v, &at);
    }
    verify_free(&v);
    svc_journal_done(&j);
    return rc;
}

int svc_dirscan_verify(const struct svc_store *st, char *why, size_t whysz,
                       svc_dirscan_progress_fn *progress, void *ctx)
{
    int rc = verify_once(st, why, whysz, progress, ctx);
    for (int i = 0; i < 2 && rc == 4; i++) /* compacted or rebuilt meanwhile: again */
        rc = verify_once(st, why, whysz, progress, ctx);
    return rc == 3 || rc == 4 ? 1 : rc;
}
