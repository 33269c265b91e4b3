#include "indexdb.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirscan.h"
#include "hostdb.h"
#include "journal.h"
#include "listdb.h"
#include "lock.h"
#include "log.h"
#include "sidecar.h"
#include "util.h"

/* Journals up to this size (without one: roots of this many directories) are built in the
 * call (a second or so); larger ones in the background (svc_index_building). */
#define DB_SYNC_MAX ((off_t)16 << 20)
#define DB_SYNC_DIRS 10000
#define DB_RETRY_S 10

/* The database of one root, its shared lock, and what to run background work with. */
static struct {
    char *path;      /* the database of the root below */
    char *root;      /* the root it is for */
    pid_t pid;       /* the process that opened the connection and lock */
    int lockfd;      /* <path>.lock, open (hold), or -1 */
    time_t retry_at; /* no build tried before then (one failed: disk full, read-only) */
    svc_spawn_fn *spawn;
    char *own; /* the root of this process's own copy, when it is open */
    struct {   /* the background work's arguments (copied into its process) */
        struct svc_store st;
        const char *path;
        int rc; /* done here: its result (0, 1 when another did it, -1) */
    } job;
} D = {.lockfd = -1};

void svc_indexdb_set_spawn(svc_spawn_fn *fn)
{
    D.spawn = fn;
}

void svc_indexdb_close(void)
{
    D.retry_at = 0; /* the next look tries again */
    svc_listdb_select(false);
    svc_listdb_close();
    if (D.lockfd >= 0)
        close(D.lockfd);
    D.lockfd = -1;
}

void svc_indexdb_own_close(void)
{
    svc_listdb_select(true);
    svc_listdb_close();
    free(D.own);
    D.own = NULL;
}

/* Connections and locks opened before a fork are the parent's: forgotten in the child. */
static void db_forked(void)
{
    if (D.pid == getpid())
        return;
    for (int own = 0; own < 2; own++) {
        svc_listdb_select(own);
        svc_listdb_forget();
    }
    free(D.own);
    D.own = NULL;
    D.lockfd = -1;
    D.pid = getpid();
}

static const char *db_path(const struct svc_store *st)
{
    db_forked();
    svc_listdb_select(false);
    if (!D.path || strcmp(D.root, st->root) != 0) {
        free(D.path);
        free(D.root);
        svc_indexdb_close();
        D.path = svc_listdb_path(st->index_dir, st->root);
        D.root = svc_xstrdup(st->root);
    }
    return D.path;
}

/* The database's lock <path><suffix> (svc_lock_file's op and answer). */
static int db_lock(const char *path, const char *suffix, int op)
{
    char *p = NULL;
    svc_xasprintf(&p, "%s%s", path, suffix);
    int fd = svc_lock_file(p, op, true);
    if (fd < 0 && errno == ENOENT) { /* its directory is made on first use */
        char *dir = svc_xstrdup(path), *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (slash && svc_mkdirs(dir, 0700, NULL) == 0)
            fd = svc_lock_file(p, op, true);
        free(dir);
    }
    free(p);
    return fd;
}

/* What a build has read of the journal (ctx of db_apply_line; NULL in a catch-up). */
struct db_feed {
    size_t lines;
    off_t size;
};

/* Apply one journal line to the database: 0, 1 when it is not one of ours, -1 on error. */
static int db_apply_line(void *ctx, const char *line, size_t n, off_t at)
{
    json_object *o, *sum;
    const char *sid;
    off_t so;
    size_t sl;
    int kind = svc_journal_line(line, n, at, &o, &sid, &sum, &so, &sl);
    const char *text = so >= 0 ? line + (so - at) : NULL; /* the summary's bytes in the line */
    int rc = kind == 1 ? svc_listdb_put(sid, sum, text, sl) : kind == 0 ? 0 : 1;
    json_object_put(o);
    struct db_feed *feed = ctx;
    if (feed && rc == 0 && ++feed->lines % 100000 == 0)
        svc_logf("index: building the listing database: %zu lines, %lld of %lld MB of the journal",
                 feed->lines, (long long)(at >> 20), (long long)(feed->size >> 20));
    return rc;
}

/* The names a rescan found different from the rows: added (gone false) or gone. */
struct rescan {
    struct {
        char *sid;
        bool gone;
    } * v;
    size_t n, cap;
};

static void rescan_note(void *ctx, const char *sid, bool gone)
{
    struct rescan *r = ctx;
    r->v = svc_grow(r->v, r->n, &r->cap, sizeof *r->v);
    r->v[r->n].sid = svc_xstrdup(sid);
    r->v[r->n++].gone = gone;
}

static void rescan_free(struct rescan *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].sid);
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* Compare the root's names with the rows (O(names), no summary read, no write lock). */
static int db_rescan_collect(const struct svc_store *st, struct rescan *r)
{
    char **v = NULL;
    size_t n = 0;
    if (svc_dirscan_names(st, &v, &n) != 0)
        return -1;
    int rc = svc_listdb_diff_names(v, n, rescan_note, r);
    svc_dirscan_names_free(v, n);
    return rc;
}

/* Record what the rescan found, each checked again, in the caller's transaction: another
 * program's session summarised, told to the journal and added; a vanished one removed. */
static void db_rescan_apply(const struct svc_store *st, struct rescan *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const char *sid = r->v[i].sid;
        bool exists = svc_store_session_exists(st, sid);
        json_object *sum = exists && !r->v[i].gone && svc_listdb_has(sid) == 0
                               ? svc_sidecar_summary_of(st, sid)
                               : NULL;
        if (sum || (r->v[i].gone && !exists)) {
            svc_journal_note(st, sid, sum);
            svc_listdb_put(sid, sum, NULL, 0);
        }
        json_object_put(sum);
    }
}

/* Both, inside the caller's transaction. */
static int db_rescan(const struct svc_store *st)
{
    struct rescan r = {0};
    int rc = db_rescan_collect(st, &r);
    if (rc == 0)
        db_rescan_apply(st, &r);
    rescan_free(&r);
    return rc;
}

/* The background rescan of a large root: in the spawned process, holding the rescan lock
 * until it has recorded the root's mtime. */
static void db_rescanner(void *ctx)
{
    db_forked();
    svc_listdb_select(false);
    int b = db_lock(D.job.path, ".rescan", LOCK_EX | LOCK_NB);
    int lk = b >= 0 ? db_lock(D.job.path, ".lock", LOCK_SH) : -1;
    struct stat rs;
    struct svc_listdb_pos p;
    struct rescan r = {0};
    const struct svc_store *st = &D.job.st;
    if (lk >= 0 && stat(st->root, &rs) == 0 && svc_listdb_open(D.job.path, false) == 0 &&
        db_rescan_collect(st, &r) == 0 && svc_listdb_begin() == 0 && svc_listdb_pos_get(&p) == 0) {
        db_rescan_apply(st, &r);
        p.root_mtime = svc_time_ns(rs.st_mtim);
        if (svc_listdb_pos_set(&p) == 0)
            svc_listdb_commit();
    }
    rescan_free(&r);
    svc_listdb_rollback();
    svc_listdb_close();
    if (lk >= 0)
        close(lk);
    if (b >= 0)
        close(b);
}

/* SVC_TEST_INDEX_BUILD_DELAY (test builds, TESTING.md): every build in the background, late. */
static unsigned test_build_delay(void)
{
#ifdef SVC_TEST_HOOKS
    const char *v = getenv("SVC_TEST_INDEX_BUILD_DELAY");
    return v ? (unsigned)atoi(v) : 0;
#else
    return 0;
#endif
}

/* Whether work is quick enough for the call: a small journal, or none and a link count of
 * few directories (an overflowed count, 1, says nothing). */
static bool db_small(const struct svc_store *st)
{
    if (test_build_delay())
        return false;
    struct stat sb;
    char *jp = svc_layout_root_path(st->root, SVC_F_INDEX, NULL);
    bool has = stat(jp, &sb) == 0;
    free(jp);
    if (has)
        return sb.st_size <= DB_SYNC_MAX;
    if (stat(st->root, &sb) != 0)
        return true; /* no root: nothing to build */
    return sb.st_nlink >= 2 && sb.st_nlink <= DB_SYNC_DIRS + 2;
}

/* Run work in a background process holding <path><suffix> (taken there), unless another
 * holds it already: 1 when one runs, -1 when it could not be started. Without a spawner,
 * or for small work, here: 0, or -1. */
static int db_spawn(const struct svc_store *st, const char *path, const char *suffix,
                    void (*work)(void *))
{
    int b = db_lock(path, suffix, LOCK_EX | LOCK_NB);
    if (b < 0)
        return errno == EWOULDBLOCK ? 1 : -1;
    close(b); /* the work takes it again: two that race, one does it */
    /* no lock of this connection across the fork: SQLite counts it per process, and the
     * child's own connection would wait for it (the child forgets this one) */
    svc_listdb_read_end();
    D.job.st = *st;
    D.job.path = path;
    if (D.spawn && !db_small(st))
        return D.spawn(work, NULL, 0) == 0 ? 1 : -1;
    work(NULL);
    return D.job.rc;
}

/* Whether the database at p can follow the journal j (the same generation, and file). */
static bool db_follows(const struct svc_store *st, const struct svc_listdb_pos *p,
                       const struct svc_journal *j)
{
    return strcmp(p->gen, j->gen) == 0 && j->sb.st_size >= (off_t)p->offset &&
           (st->shared || p->ino == (uint64_t)j->sb.st_ino);
}

/* Whether nothing was appended to the journal the database follows, and the root's names
 * did not change, since it last read: the stamp names its generation, and the file at the
 * journal's name is the one it read (inode, unless shared) with the size it read up to. */
static bool db_unchanged(const struct svc_store *st, const struct svc_journal *j,
                         struct svc_listdb_pos *p, const struct stat *rs)
{
    struct stat jb;
    char *jp = svc_layout_root_path(st->root, SVC_F_INDEX, NULL);
    bool same = lstat(jp, &jb) == 0 && S_ISREG(jb.st_mode) && svc_listdb_pos_get(p) == 0 &&
                j->stamp.ok && strcmp(j->stamp.gen, p->gen) == 0 && j->stamp.size <= jb.st_size &&
                jb.st_size == (off_t)p->offset && (st->shared || jb.st_ino == p->ino) &&
                svc_time_ns(rs->st_mtim) == p->root_mtime;
    free(jp);
    return same;
}

/* Bring the open database up to the journal: 0, 1 when it cannot follow it (built anew), -1. */
static int db_catch_up(const struct svc_store *st, const char *path)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return errno == ENOENT ? 1 : -1;
    struct svc_journal j;
    struct svc_listdb_pos p;
    svc_journal_peek(st, &j);
    if (db_unchanged(st, &j, &p, &rs))
        return 0;
    if (svc_journal_open(st, &j) != 1) {
        svc_journal_done(&j);
        return 1;
    }
    /* the root's names moved: compared here when the root is small, else in the background */
    bool moved = svc_time_ns(rs.st_mtim) != p.root_mtime;
    if (moved && path && !db_small(st) && D.spawn) {
        db_spawn(st, path, ".rescan", db_rescanner);
        moved = false;
    }
    if (!moved && db_follows(st, &p, &j) && j.sb.st_size == (off_t)p.offset) {
        svc_journal_done(&j);
        return 0;
    }
    int rc = svc_listdb_begin() == 0 && svc_listdb_pos_get(&p) == 0 ? 0 : -1;
    if (rc == 0 && !db_follows(st, &p, &j))
        rc = 1;
    off_t at = (off_t)p.offset;
    if (rc == 0 && j.sb.st_size > at)
        rc = svc_journal_lines(j.fd, j.sb.st_size, &at, db_apply_line, NULL);
    svc_journal_done(&j);
    if (rc == 0 && moved && svc_time_ns(rs.st_mtim) != p.root_mtime) {
        rc = db_rescan(st);
        p.root_mtime = svc_time_ns(rs.st_mtim);
    }
    p.offset = at;
    if (rc == 0 && (svc_listdb_pos_set(&p) != 0 || svc_listdb_commit() != 0))
        rc = -1;
    if (rc != 0)
        svc_listdb_rollback();
    return rc;
}

static int rows(void *ctx, svc_journal_emit_fn *emit, void *ectx)
{
    return svc_listdb_rows(emit, ectx);
}

/* Compact the journal from the new rows when due, under the root lock, when it is still p's
 * generation and whole (the lines past p applied first); p then at the new one's end: 0
 * (also on a root that cannot be written), 2 when the journal moved on meanwhile, -1. */
static int db_compact(const struct svc_store *st, struct svc_listdb_pos *p, struct db_feed *feed)
{
    int64_t n = svc_listdb_count();
    if (n < 0)
        return -1;
    /* due past twice what its live sessions take plus 64 KB (the average line taken) */
    double live = feed->lines ? (double)p->offset / (double)feed->lines * (double)n : 0;
    if ((double)p->offset <= 2 * live + 65536)
        return 0;
    struct svc_journal j;
    off_t at = (off_t)p->offset;
    int rc = svc_journal_lock(st, &j) == 0 && !j.writable ? 0 : 2;
    if (rc == 2 && j.lock >= 0 && svc_journal_open(st, &j) == 1 && strcmp(j.gen, p->gen) == 0 &&
        at <= j.sb.st_size) {
        rc = svc_journal_lines(j.fd, j.sb.st_size, &at, db_apply_line, feed);
        if (rc == 0 && at != j.sb.st_size)
            rc = 2;
        p->offset = at;
        if (rc == 0 && svc_journal_write(st, &j, rows, NULL) == 0) {
            snprintf(p->gen, sizeof p->gen, "%s", j.gen);
            p->ino = st->shared ? 0 : (uint64_t)j.sb.st_ino;
            p->offset = j.sb.st_size;
            svc_logf("index: compacted the journal from the listing database (%lld to %lld "
                     "bytes)",
                     (long long)at, (long long)j.sb.st_size);
        }
    }
    svc_journal_done(&j);
    return rc;
}

/* Fill the new database (in its transaction) from a whole journal a line at a time, without
 * the root lock; compact the journal when due, then rescan the names. 0 with *p, 1 when the
 * journal is not whole, 2 when it moved on to another generation meanwhile, -1. */
static int db_stream(const struct svc_store *st, struct svc_listdb_pos *p)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return 1;
    p->root_mtime = svc_time_ns(rs.st_mtim);
    struct db_feed feed = {0};
    struct svc_journal j;
    svc_journal_peek(st, &j);
    off_t at = 0;
    int rc = svc_journal_open(st, &j) == 1 ? 0 : 1;
    if (rc == 0) {
        feed.size = j.sb.st_size;
        rc = svc_journal_lines(j.fd, j.sb.st_size, &at, db_apply_line, &feed);
    }
    if (rc == 0 && at < (off_t)j.stamp.size)
        rc = 1; /* the stamped part ends inside a line */
    snprintf(p->gen, sizeof p->gen, "%s", j.gen);
    p->ino = st->shared ? 0 : (uint64_t)j.sb.st_ino;
    p->offset = at;
    svc_journal_done(&j);
    if (rc == 0)
        rc = db_compact(st, p, &feed);
    return rc == 0 ? db_rescan(st) : rc;
}

static int sink_put(void *ctx, const char *sid, json_object *summary)
{
    return svc_listdb_put(sid, summary, NULL, 0);
}

/* Fill the new database with the journal rebuilt from the directories: 0 with *p, 2 when
 * another's rebuild was waited for, or (recheck) when the journal is whole under the lock
 * after all (stream it: a look without the lock can read a stamp being written, or one a
 * compaction replaced meanwhile), 3 when a brief wait ran out, -1. */
static int db_rebuild(const struct svc_store *st, struct svc_listdb_pos *p, bool brief,
                      bool recheck)
{
    struct svc_journal j;
    struct svc_dirscan_sink sink = {sink_put, rows, NULL};
    struct timespec mtime;
    bool written = false;
    int rc = svc_journal_lock(st, &j) == 0 ? 0 : -1;
    if (rc == 0 && recheck && svc_journal_open(st, &j) == 1)
        rc = 1;
    else if (rc == 0)
        rc = svc_dirscan_rebuild(st, &j, &sink, true, brief, &mtime, &written);
    if (rc == 0) {
        *p = (struct svc_listdb_pos){.root_mtime = svc_time_ns(mtime)};
        if (written) {
            snprintf(p->gen, sizeof p->gen, "%s", j.gen);
            p->ino = st->shared ? 0 : (uint64_t)j.sb.st_ino;
            p->offset = j.sb.st_size;
        }
    }
    svc_journal_done(&j);
    return rc == 1 ? 2 : rc == 2 ? 3 : rc;
}

/* A database made anew at path (NULL: this process's own) and left open: streamed from a
 * whole journal, else (or rebuild) with the journal rebuilt from the directories. 0 (*n its
 * sessions), -1 (errno EAGAIN: a brief wait for another's rebuild ran out). */
static int db_make(const struct svc_store *st, const char *path, bool rebuild, bool brief,
                   size_t *n)
{
    int rc = rebuild ? 1 : 2; /* 1: rebuild next, 2: stream next */
    for (int i = 0; (rc == 1 || rc == 2) && i < 5; i++) {
        if (path)
            svc_hostdb_remove(path);
        struct svc_listdb_pos p = {0};
        bool again = rc == 1;
        rc = svc_listdb_open(path, true) == 0 && svc_listdb_begin() == 0 ? 0 : -1;
        if (rc == 0)
            rc = again ? db_rebuild(st, &p, brief, !rebuild && i < 3) : db_stream(st, &p);
        if (rc == 0 && (svc_listdb_pos_set(&p) != 0 || svc_listdb_commit() != 0))
            rc = -1;
        if (rc != 0) {
            svc_listdb_rollback();
            svc_listdb_close();
        }
    }
    *n = rc == 0 ? (size_t)svc_listdb_count() : 0;
    if (rc == 3)
        errno = EAGAIN;
    return rc == 0 ? 0 : -1;
}

/* Build this host's database through a temporary file renamed into place, its title index
 * merged (a failed merge fails the build: without a rollback journal it may be torn). */
static int db_build(const struct svc_store *st, const char *path, bool rebuild)
{
    double t0 = svc_time_monotonic();
    char *tmp = NULL;
    svc_xasprintf(&tmp, "%s.tmp%d", path, (int)getpid());
    size_t n = 0;
    svc_listdb_select(false);
    int rc = db_make(st, tmp, rebuild, false, &n);
    if (rc == 0 && svc_listdb_optimize() != 0)
        rc = -1;
    svc_listdb_close();
    int lk = rc == 0 ? db_lock(path, ".lock", LOCK_EX) : -1;
    if (rc == 0 && (lk < 0 || rename(tmp, path) != 0))
        rc = -1;
    if (lk >= 0)
        close(lk);
    svc_hostdb_remove(tmp);
    free(tmp);
    if (rc == 0 && !svc_dirscan_unkept()) /* else rebuilt at each listing: said once */
        svc_logf("index: built the listing database %s (%zu sessions, %.1f s)", path, n,
                 svc_time_monotonic() - t0);
    else
        svc_logf("index: could not build the listing database %s: %s", path, strerror(errno));
    return rc == 0 ? 0 : -1;
}

/* The background build: in the spawned process, holding the build lock until it is done. */
static void db_builder(void *ctx)
{
    db_forked();
    int b = db_lock(D.job.path, ".build", LOCK_EX | LOCK_NB);
    D.job.rc = 1;
    if (b < 0)
        return; /* another got there first */
    unsigned delay = test_build_delay();
    if (delay)
        sleep(delay);
    if (D.spawn && !db_small(&D.job.st))
        svc_logf("index: building the listing database %s in the background (pid %d)", D.job.path,
                 (int)getpid());
    D.job.rc = db_build(&D.job.st, D.job.path, false);
    close(b);
}

int svc_indexdb_build(const struct svc_store *st, bool rebuild)
{
    const char *path = db_path(st);
    svc_indexdb_close();
    int b = db_lock(path, ".build", LOCK_EX);
    int rc = b >= 0 ? db_build(st, path, rebuild) : -1;
    if (b >= 0)
        close(b);
    return rc;
}

/* The shared lock on the database, on a descriptor kept open (D.lockfd): -1 on error. */
static int db_hold(const char *path)
{
    if (D.lockfd < 0)
        return D.lockfd = db_lock(path, ".lock", LOCK_SH);
    while (flock(D.lockfd, LOCK_SH) != 0)
        if (errno != EINTR)
            return -1;
    return D.lockfd;
}

void svc_indexdb_release(void)
{
    svc_listdb_read_end();
    if (D.lockfd >= 0)
        flock(D.lockfd, LOCK_UN);
}

int svc_indexdb_own(const struct svc_store *st, bool brief, bool rebuild)
{
    db_forked();
    if (D.own && (rebuild || strcmp(D.own, st->root) != 0))
        svc_indexdb_own_close();
    svc_listdb_select(true);
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t n;
        bool made = !D.own;
        if (made && db_make(st, NULL, rebuild, brief, &n) != 0)
            return -1;
        if (made)
            D.own = svc_xstrdup(st->root);
        /* one just made answers as it is (on a root that cannot be written it follows none) */
        int rc = svc_listdb_read_begin() == 0 ? made ? 0 : db_catch_up(st, NULL) : -1;
        if (rc == 0)
            return 0;
        svc_indexdb_own_close(); /* it cannot follow the journal: made anew */
        svc_listdb_select(true);
        if (rc < 0)
            return -1;
    }
    return -1;
}

int svc_indexdb_ready(const struct svc_store *st)
{
    const char *path = db_path(st);
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return -1; /* no root, no sessions: nothing is made for it */
    if (time(NULL) < D.retry_at)
        return -1; /* a build here failed lately: from memory meanwhile */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (db_hold(path) < 0)
            return -1;
        int rc = 1;
        if ((svc_listdb_current(path) || svc_listdb_open(path, false) == 0) &&
            svc_listdb_read_begin() == 0)
            rc = db_catch_up(st, path); /* and the page after it, in one read */
        if (rc == 0)
            return 0;
        svc_indexdb_release();
        svc_listdb_close();
        if (rc < 0)
            svc_logf("index: the listing database %s cannot be read: built anew", path);
        rc = db_spawn(st, path, ".build", db_builder);
        if (rc < 0 && stat(st->root, &rs) == 0) /* a root gone meanwhile is no failure */
            D.retry_at = time(NULL) + DB_RETRY_S;
        if (rc != 0)
            return rc;
    }
    return -1;
}

void svc_indexdb_seal(const struct svc_store *st)
{
    const char *path = db_path(st);
    int lk = db_lock(path, ".lock", LOCK_SH);
    if (lk >= 0 && svc_listdb_seal(path) == 0)
        svc_logf("index: the listing database %s is on the disk (sealed)", path);
    if (lk >= 0)
        close(lk);
}
