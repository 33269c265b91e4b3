/* index_db: the listing database (listdb.h): this host's copy of the journal, read a page at
 * a time; index.c's entries serve only while it is being built (or when it is off). */
#include "index_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fold.h"
#include "fsio.h"
#include "jsonx.h"
#include "listdb.h"
#include "log.h"
#include "util.h"

/* Journals up to this size (or roots without one of up to this many directories) are built
 * into a database in the request that finds none (a second or so); larger ones in a background
 * process while lists are answered from memory and say so (svc_index_building). */
#define DB_SYNC_MAX ((off_t)16 << 20)
#define DB_SYNC_DIRS 10000

static bool db_small(const struct svc_store *st);
static void db_child_fds(int b);
/* What a background process runs (it never returns: it exits). */
typedef void db_child_fn(const struct svc_store *st, const char *path, int b);
static int db_spawn(const struct svc_store *st, const char *path, const char *lock,
                    db_child_fn *fn);
struct index_db svc_ix_db = {.lockfd = -1};
#define DB_RETRY_S 10

const char *svc_ix_db_path(const struct svc_store *st)
{
    static pid_t pid;
    if (pid != getpid()) { /* a connection, or lock, opened before a fork is the parent's */
        svc_listdb_forget();
        if (svc_ix_db.lockfd >= 0)
            close(svc_ix_db.lockfd);
        svc_ix_db.lockfd = -1;
        svc_ix_db.live = false;
        pid = getpid();
    }
    if (!svc_ix_db.path || strcmp(svc_ix_db.root, st->root) != 0) {
        free(svc_ix_db.path);
        free(svc_ix_db.root);
        svc_listdb_close();
        if (svc_ix_db.lockfd >= 0)
            close(svc_ix_db.lockfd);
        svc_ix_db.lockfd = -1;
        svc_ix_db.path = svc_listdb_path(st->index_dir, st->root);
        svc_ix_db.root = svc_xstrdup(st->root);
    }
    return svc_ix_db.path;
}

static long long ts_ns(struct timespec t)
{
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* What a build has read of the journal (ctx of db_apply_line; NULL in a catch-up). */
struct db_feed {
    size_t lines;
    off_t size;
};

/* Apply one journal line to the database: 0, 1 when it is not one of ours, -1 on error. */
static int db_apply_line(void *ctx, const char *line, size_t n, off_t at)
{
    json_object *o = NULL;
    if (svc_json_parse(line, n, &o, NULL) != 0)
        return 1;
    const char *sid = svc_json_str(o, "session_id", NULL);
    json_object *sum = svc_json_obj(o, "summary"), *sumv = NULL;
    bool has_sum = json_object_object_get_ex(o, "summary", &sumv);
    int rc = 0;
    if (sid && svc_id_valid(sid) && has_sum && (sum || !sumv))
        rc = svc_listdb_put(sid, sum);
    else if (!svc_json_str(o, "svc_index_generation", NULL) || at != 0)
        rc = 1;
    json_object_put(o);
    struct db_feed *feed = ctx;
    if (feed && rc == 0 && ++feed->lines % 100000 == 0)
        svc_logf("index: building the listing database: %zu lines, %lld of %lld MB of the journal",
                 feed->lines, (long long)(at >> 20), (long long)(feed->size >> 20));
    return rc;
}

/* The names a rescan found different from the rows: added (gone false) or gone. */
struct rescan {
    char **sid;
    bool *gone;
    size_t n, cap;
};

static void rescan_note(void *ctx, const char *sid, bool gone)
{
    struct rescan *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->sid = svc_xrealloc(r->sid, r->cap * sizeof *r->sid);
        r->gone = svc_xrealloc(r->gone, r->cap * sizeof *r->gone);
    }
    r->sid[r->n] = svc_xstrdup(sid);
    r->gone[r->n++] = gone;
}

/* Compare the root's names with the rows (O(names), no summary read, no write lock): the
 * names sorted, merged with the rows read in id order. */
static int db_rescan_collect(const struct svc_store *st, struct rescan *r)
{
    DIR *d = opendir(st->root);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    char **v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *sid = svc_store_session_of(de->d_name);
        if (!sid)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            v = svc_xrealloc(v, cap * sizeof *v);
        }
        v[n++] = svc_xstrdup(sid);
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof *v, svc_cmp_strp);
    int rc = svc_listdb_diff_names(v, n, rescan_note, r);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return rc;
}

/* Record what the rescan found, inside the caller's transaction, each checked again (the
 * journal may have told since): another program's session is summarised, appended to the
 * journal (for every other host and process) and added; a vanished one removed. */
static void db_rescan_apply(const struct svc_store *st, struct rescan *r)
{
    for (size_t i = 0; i < r->n; i++) {
        bool exists = svc_store_session_exists(st, r->sid[i]);
        json_object *sum = exists && !r->gone[i] && svc_listdb_has(r->sid[i]) == 0
                               ? svc_ix_summary_of(st, r->sid[i])
                               : NULL;
        if (sum || (r->gone[i] && !exists)) {
            svc_ix_append_line(st, r->sid[i], sum);
            svc_listdb_put(r->sid[i], sum);
            svc_ix_done.scanned++;
        }
        json_object_put(sum);
        free(r->sid[i]);
    }
    free(r->sid);
    free(r->gone);
    memset(r, 0, sizeof *r);
}

/* The background rescanner of a large root: the grandchild of the process that saw the
 * root's mtime move, holding the rescan lock (fd b) until it has recorded that mtime. */
static _Noreturn void db_rescanner(const struct svc_store *st, const char *path, int b)
{
    db_child_fds(b);
    int lk = svc_ix_db_lock(path, ".lock", LOCK_SH);
    struct stat rs;
    struct rescan r = {0};
    struct svc_listdb_pos p;
    int rc = lk >= 0 && stat(st->root, &rs) == 0 && svc_listdb_open(path, false) == 0 ? 0 : -1;
    if (rc == 0)
        rc = db_rescan_collect(st, &r);
    if (rc == 0 && svc_listdb_begin() == 0 && svc_listdb_pos_get(&p) == 0) {
        db_rescan_apply(st, &r);
        p.root_mtime = ts_ns(rs.st_mtim);
        rc = svc_listdb_pos_set(&p) == 0 && svc_listdb_commit() == 0 ? 0 : -1;
    }
    svc_listdb_rollback();
    svc_listdb_close();
    _exit(rc == 0 ? 0 : 1);
}

/* Whether the database at p can follow the journal f (the same generation, and file). */
static bool db_follows(const struct svc_store *st, const struct svc_listdb_pos *p,
                       const struct idxfile *f)
{
    return strcmp(p->gen, f->gen) == 0 && f->sb.st_size >= (off_t)p->offset &&
           (st->shared || p->ino == (uint64_t)f->sb.st_ino);
}

/* Whether nothing was appended to the journal the database follows, and the root's names
 * did not change, since it last read: the stamp names its generation, and the file at the
 * journal's name is the one it read (inode, unless shared) with the size it read up to. */
static bool db_unchanged(const struct svc_store *st, const struct stamp *s,
                         struct svc_listdb_pos *p, const struct stat *rs)
{
    struct stat jb;
    char *jp = svc_store_root_path(st, SVC_F_INDEX);
    bool same = jp && lstat(jp, &jb) == 0 && S_ISREG(jb.st_mode) && svc_listdb_pos_get(p) == 0 &&
                s->ok && strcmp(s->gen, p->gen) == 0 && s->size <= jb.st_size &&
                jb.st_size == (off_t)p->offset && (st->shared || jb.st_ino == p->ino) &&
                ts_ns(rs->st_mtim) == p->root_mtime;
    free(jp);
    return same;
}

/* Bring the open database up to the journal: 0, 1 when it cannot follow it (another
 * generation, a file that does not match its stamp, a line not ours: built anew), -1. */
static int db_catch_up(const struct svc_store *st)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return errno == ENOENT ? 1 : -1;
    struct stamp s;
    svc_ix_stamp_peek(st, &s);
    struct svc_listdb_pos p;
    if (db_unchanged(st, &s, &p, &rs))
        return 0;
    struct idxfile f = {.fd = -1};
    if (svc_ix_index_open(st, &f) != 0 || !svc_ix_stamp_matches(&s, &f, false, st->shared)) {
        svc_ix_index_close(&f);
        return 1;
    }
    /* the root's names moved: compared here when the root is small, else in the
     * background (the page below comes from the rows as they are) */
    bool moved = ts_ns(rs.st_mtim) != p.root_mtime;
    if (moved && !db_small(st)) {
        db_spawn(st, svc_ix_db_path(st), ".rescan", db_rescanner);
        moved = false;
    }
    if (!moved && db_follows(st, &p, &f) && f.sb.st_size == (off_t)p.offset) {
        svc_ix_index_close(&f);
        return 0;
    }
    int rc = svc_listdb_begin() == 0 && svc_listdb_pos_get(&p) == 0 ? 0 : -1;
    if (rc == 0 && !db_follows(st, &p, &f))
        rc = 1;
    off_t at = (off_t)p.offset;
    if (rc == 0 && f.sb.st_size > at)
        rc = svc_ix_lines(f.fd, f.sb.st_size, &at, db_apply_line, NULL);
    svc_ix_index_close(&f);
    struct rescan r = {0};
    if (rc == 0 && moved && ts_ns(rs.st_mtim) != p.root_mtime) {
        rc = db_rescan_collect(st, &r);
        db_rescan_apply(st, &r);
        p.root_mtime = ts_ns(rs.st_mtim);
    }
    p.offset = at;
    if (rc == 0 && (svc_listdb_pos_set(&p) != 0 || svc_listdb_commit() != 0))
        rc = -1;
    if (rc != 0)
        svc_listdb_rollback();
    return rc;
}

/* Record where the new database stands, commit it and merge its title index; the
 * connection is closed. A failed merge fails the build: a new database is written without
 * a rollback journal, so a statement that fails may leave it torn. */
static int db_finish(const struct svc_listdb_pos *p)
{
    int rc = svc_listdb_pos_set(p) == 0 && svc_listdb_commit() == 0 ? 0 : -1;
    if (rc != 0)
        svc_listdb_rollback();
    if (rc == 0 && svc_listdb_optimize() != 0)
        rc = -1;
    svc_listdb_close();
    return rc;
}

/* Write this process's entries (just brought up to date by refresh) as a new database at
 * tmp, positioned where they stand in the journal. */
static int db_write(const struct svc_store *st, const char *tmp)
{
    if (svc_listdb_open(tmp, true) != 0 || svc_listdb_begin() != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < svc_ix.n; i++) {
        char *text = svc_ix_entry_summary(&svc_ix.v[i]);
        json_object *sum = text ? json_tokener_parse(text) : NULL;
        rc = sum ? svc_listdb_put(svc_ix.v[i].sid, sum) : -1;
        json_object_put(sum);
        free(text);
        if (i % 100000 == 99999)
            svc_logf("index: building the listing database: %zu of %zu sessions", i + 1, svc_ix.n);
    }
    struct svc_listdb_pos p = {.offset = svc_ix.offset, .root_mtime = ts_ns(svc_ix.root_mtime)};
    snprintf(p.gen, sizeof p.gen, "%s", svc_ix.gen);
    p.ino = st->shared ? 0 : (uint64_t)svc_ix.ino;
    if (rc != 0) {
        svc_listdb_rollback();
        svc_listdb_close();
        return rc;
    }
    return db_finish(&p);
}

/* Whether a reader of the journal into memory would compact it (index.c: over twice what
 * its live sessions take, plus 64 KB), a live session's line taken as the average line. */
static bool db_compact_due(off_t size, size_t lines, int64_t rows)
{
    double live = lines ? (double)size / (double)lines * (double)rows : 0;
    return (double)size > 2 * live + 65536;
}

/* Compact the journal from the new database's rows when it is due (the in-memory readers'
 * rule), p then positioned at the end of the new generation: 0 (also when the root cannot
 * be written), 2 when the journal moved on meanwhile (another generation, a line not
 * ours), -1. */
static int db_compact(const struct svc_store *st, struct svc_listdb_pos *p, struct db_feed *feed)
{
    int64_t rows = svc_listdb_count();
    if (rows < 0)
        return -1;
    if (!db_compact_due((off_t)p->offset, feed->lines, rows))
        return 0;
    off_t at = (off_t)p->offset;
    struct idxfile nf = {.fd = -1};
    int rc = svc_ix_compact_from(st, p->gen, &at, db_apply_line, feed, svc_listdb_rows, &nf);
    if (rc == 2)
        p->offset = at; /* left uncompacted, as a reader in memory leaves it */
    if (rc != 0)
        return rc == 2 ? 0 : rc == 1 ? 2 : rc;
    snprintf(p->gen, sizeof p->gen, "%s", nf.gen);
    p->ino = st->shared ? 0 : (uint64_t)nf.sb.st_ino;
    p->offset = nf.sb.st_size;
    svc_logf("index: compacted the journal from the listing database (%lld to %lld bytes)",
             (long long)at, (long long)nf.sb.st_size);
    return 0;
}

/* Apply the whole journal to the open database, a line at a time (memory: a line and
 * SQLite's page cache, whatever the root's size), read without the root lock as
 * db_catch_up reads it; *p gets where the read stopped (a line being written is left to
 * the next catch-up). 0, 1 when the journal is not whole by its stamp, -1. */
static int db_feed_journal(const struct svc_store *st, struct svc_listdb_pos *p,
                           struct db_feed *feed)
{
    struct stamp s;
    struct idxfile f = {.fd = -1};
    svc_ix_stamp_peek(st, &s);
    int rc = 1;
    off_t at = 0;
    if (svc_ix_index_open(st, &f) == 0 && svc_ix_stamp_matches(&s, &f, false, st->shared)) {
        feed->size = f.sb.st_size;
        rc = svc_ix_lines(f.fd, f.sb.st_size, &at, db_apply_line, feed);
    }
    if (rc == 0 && at < (off_t)s.size)
        rc = 1; /* the stamped part ends inside a line */
    snprintf(p->gen, sizeof p->gen, "%s", f.gen);
    p->ino = st->shared ? 0 : (uint64_t)f.sb.st_ino;
    p->offset = at;
    svc_ix_index_close(&f);
    return rc;
}

/* Fill a new database at tmp from a whole journal (db_feed_journal), compact the journal
 * from it when due, then compare the root's names with the rows as a load rescans them.
 * 0 (*n: its sessions), 1 when the journal is not whole (svc_ix_refresh's work, in
 * memory), 2 when it moved on to another generation meanwhile (streamed again), -1. */
static int db_stream(const struct svc_store *st, const char *tmp, size_t *n)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return 1;
    struct svc_listdb_pos p = {.root_mtime = ts_ns(rs.st_mtim)};
    struct db_feed feed = {0};
    int rc = svc_listdb_open(tmp, true) == 0 && svc_listdb_begin() == 0 ? 0 : -1;
    if (rc == 0)
        rc = db_feed_journal(st, &p, &feed);
    if (rc == 0)
        rc = db_compact(st, &p, &feed);
    struct rescan r = {0};
    if (rc == 0 && (rc = db_rescan_collect(st, &r)) == 0)
        db_rescan_apply(st, &r);
    if (rc != 0) {
        svc_listdb_rollback();
        svc_listdb_close();
        return rc;
    }
    *n = (size_t)svc_listdb_count();
    return db_finish(&p);
}

/* The database's locks: <path>.lock, shared while a process uses the database and
 * exclusive to rename a new one over it; <path>.build, held by the process building one.
 * op is flock's; the descriptor, or -1 (EWOULDBLOCK with LOCK_NB when held). */
int svc_ix_db_lock(const char *path, const char *suffix, int op)
{
    char *p = NULL;
    svc_xasprintf(&p, "%s%s", path, suffix);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    free(p);
    if (fd < 0)
        return -1;
    while (flock(fd, op) != 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
}

/* The directory of the database at path. */
int svc_ix_db_mkdir(const char *path)
{
    char *dir = svc_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int rc = slash ? svc_mkdirs(dir, 0700, NULL) : 0;
    free(dir);
    return rc;
}

/* The build from this process's entries: those of a journal rebuilt from the directories
 * (when it is not whole) or compacted by refresh. *n: the sessions written. */
static int db_build_loaded(const struct svc_store *st, const char *tmp, size_t *n)
{
    int rc = svc_ix_refresh(st);
    if (rc == 0 && !svc_ix.loaded)
        rc = 1; /* no root yet: nothing to build */
    /* a summary that cannot be read back from the journal (changed under this process
     * since it was read): rebuilt from the directories, and written again */
    for (int i = 0; rc == 0 && db_write(st, tmp) != 0; i++)
        if (i == 2 || svc_ix_refresh_locked(st, true) != 0)
            rc = -1;
    *n = svc_ix.n;
    return rc;
}

/* Build the database at path through a temporary file renamed into place: streamed from a
 * whole journal, else from the entries of svc_ix_refresh (which rebuilds the journal from
 * the directories); those are dropped afterwards (a process that lists from the database
 * keeps none). */
int svc_ix_db_build(const struct svc_store *st, const char *path)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    svc_index_reset();
    char *tmp = NULL;
    svc_xasprintf(&tmp, "%s.tmp%d", path, (int)getpid());
    svc_file_unlink_db(tmp);
    size_t n = 0;
    int rc = 2;
    for (int i = 0; rc == 2 && i < 3; i++) {
        svc_file_unlink_db(tmp);
        rc = db_stream(st, tmp, &n);
    }
    if (rc > 0) {
        svc_file_unlink_db(tmp);
        rc = db_build_loaded(st, tmp, &n);
    }
    int lk = rc == 0 ? svc_ix_db_lock(path, ".lock", LOCK_EX) : -1;
    if (rc == 0 && (lk < 0 || rename(tmp, path) != 0))
        rc = -1;
    if (lk >= 0)
        close(lk);
    svc_file_unlink_db(tmp);
    free(tmp);
    svc_index_reset();
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc == 0 && !svc_ix_done.unkept_last) /* else rebuilt at each listing: said once */
        svc_logf("index: built the listing database %s (%zu sessions, %.1f s)", path, n,
                 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    else if (rc < 0)
        svc_logf("index: could not build the listing database %s: %s", path, strerror(errno));
    return rc;
}

/* How long a background build waits before it starts, and whether every build is one:
 * SVC_TEST_INDEX_BUILD_DELAY (seconds), in test builds only (docs/TESTING.md). */
static unsigned test_build_delay(void)
{
#ifdef SVC_TEST_HOOKS
    const char *v = getenv("SVC_TEST_INDEX_BUILD_DELAY");
    return v ? (unsigned)atoi(v) : 0;
#else
    return 0;
#endif
}

/* Whether a build is quick enough for the request that needs it: the journal is small, or
 * there is none and the root's link count says it has few directories (a count that has
 * overflowed, 1, or another filesystem's 1 say nothing: built in the background). */
static bool db_small(const struct svc_store *st)
{
    if (test_build_delay())
        return false;
    struct stat sb;
    char *jp = svc_store_root_path(st, SVC_F_INDEX);
    bool has = jp && stat(jp, &sb) == 0;
    free(jp);
    if (has)
        return sb.st_size <= DB_SYNC_MAX;
    if (stat(st->root, &sb) != 0)
        return true; /* no root: nothing to build */
    return sb.st_nlink >= 2 && sb.st_nlink <= DB_SYNC_DIRS + 2;
}

/* The background builder: the grandchild of a process that found no database to follow,
 * holding the build lock (fd b) until it is svc_ix_done. */
/* In a background process: this process's index, connection and descriptors are its
 * parent's (b aside, the lock it holds). */
static void db_child_fds(int b)
{
    svc_index_reset(); /* closes its descriptors before the rest are */
    svc_listdb_forget();
    svc_ix_db.lockfd = -1;
    struct rlimit rl;
    int maxfd =
        getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
    for (int fd = 3; fd < maxfd; fd++)
        if (fd != b)
            close(fd); /* the pool's sockets stay with the pool */
}

static _Noreturn void db_builder(const struct svc_store *st, const char *path, int b)
{
    db_child_fds(b);
    unsigned delay = test_build_delay();
    if (delay)
        sleep(delay);
    svc_logf("index: building the listing database %s in the background (pid %d)", path,
             (int)getpid());
    _exit(svc_ix_db_build(st, path) < 0 ? 1 : 0);
}

/* Build the database: here when the journal is small, else in a background process (two
 * forks: nothing to reap). 0 when it is built, 1 when it is being built, -1 when not. */
static int db_start_build(const struct svc_store *st, const char *path)
{
    bool here = db_small(st);
    if (here) {
        int b = svc_ix_db_lock(path, ".build", LOCK_EX | LOCK_NB);
        if (b < 0)
            return errno == EWOULDBLOCK ? 1 : -1;
        int rc = svc_ix_db_build(st, path);
        close(b);
        return rc == 0 ? 0 : -1;
    }
    return db_spawn(st, path, ".build", db_builder);
}

/* Run fn in a background process (two forks: nothing to reap) holding <path><lock>, unless
 * another holds it already. 1 when one runs, -1 when it could not be started. */
static int db_spawn(const struct svc_store *st, const char *path, const char *lock, db_child_fn *fn)
{
    int b = svc_ix_db_lock(path, lock, LOCK_EX | LOCK_NB);
    if (b < 0)
        return errno == EWOULDBLOCK ? 1 : -1;
    /* no lock of this connection across the fork: SQLite counts it per process, and the
     * child's own connection would wait for it (the child forgets this one) */
    svc_listdb_read_end();
    pid_t pid = fork();
    if (pid == 0) {
        if (fork() == 0)
            fn(st, path, b);
        _exit(0);
    }
    close(b); /* the grandchild holds it */
    if (pid < 0)
        return -1;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return 1;
}

/* The shared lock on the database, on a descriptor kept open (svc_ix_db.lockfd): -1 on error. */
static int db_hold(const char *path)
{
    if (svc_ix_db.lockfd < 0) {
        svc_ix_db.lockfd = svc_ix_db_lock(path, ".lock", LOCK_SH);
        if (svc_ix_db.lockfd < 0 && errno == ENOENT && svc_ix_db_mkdir(path) == 0)
            svc_ix_db.lockfd = svc_ix_db_lock(path, ".lock", LOCK_SH);
        return svc_ix_db.lockfd;
    }
    while (flock(svc_ix_db.lockfd, LOCK_SH) != 0)
        if (errno != EINTR)
            return -1;
    return svc_ix_db.lockfd;
}

void svc_ix_db_release(int lk)
{
    svc_listdb_read_end();
    if (lk >= 0)
        flock(lk, LOCK_UN);
}

/* Whether index.h's answers can come from the database: 0 when it is open and caught up
 * (*lk: the shared lock to close once done with it), 1 while it is being built, -1 when it
 * cannot be had; on 1 and -1 they come from this process's entries. */
int svc_ix_db_ready(const struct svc_store *st, int *lk)
{
    const char *path = svc_ix_db_path(st);
    svc_ix_db.live = false;
    *lk = -1;
    struct stat rs;
    if (stat(st->root, &rs) != 0)
        return -1; /* no root, no sessions: nothing is made for it */
    if (time(NULL) < svc_ix_db.retry_at)
        return -1; /* a build here failed lately: from memory meanwhile */
    for (int attempt = 0; attempt < 2; attempt++) {
        *lk = db_hold(path);
        if (*lk < 0)
            return -1;
        int rc = 1;
        if ((svc_listdb_current(path) || svc_listdb_open(path, false) == 0) &&
            svc_listdb_read_begin() == 0)
            rc = db_catch_up(st); /* and the page after it, in one read (db_release ends it) */
        if (rc == 0) {
            svc_ix_db.live = true;
            if (svc_ix.loaded || svc_ix.n) { /* a copy kept while it was built: given back */
                svc_index_reset();
#ifdef __GLIBC__
                malloc_trim(0);
#endif
            }
            return 0;
        }
        svc_ix_db_release(*lk);
        *lk = -1;
        svc_listdb_close();
        if (rc < 0)
            svc_logf("index: the listing database %s cannot be read: built anew", path);
        rc = db_start_build(st, path);
        if (rc < 0 && stat(st->root, &rs) == 0) /* a root gone meanwhile is no failure */
            svc_ix_db.retry_at = time(NULL) + DB_RETRY_S;
        if (rc != 0)
            return rc;
    }
    return -1;
}

/* A page row's summary: the stored text spliced in as it is, or recounted (recounted)
 * unless q says not. */
static json_object *db_row_summary(const struct svc_store *st, const struct svc_list_query *q,
                                   const struct svc_listdb_row *r)
{
    json_object *raw = q->stored_counts ? NULL : svc_ix_recounted(st, r->sid, r->msgs, r->status);
    return raw ? raw : svc_json_new_raw(r->summary);
}

/* One page from the database: 0, -1 with err (a bad cursor), 1 when it could not be read. */
int svc_ix_db_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err)
{
    double cu = 0;
    char csid[SVC_ID_MAX + 2] = "";
    bool after = q->cursor && *q->cursor;
    if (after && svc_ix_cursor_decode(q->cursor, &cu, csid, sizeof csid) != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "cursor", "cursor is not valid");
    int limit =
        q->limit > 0 && q->limit <= SVC_LIST_LIMIT_MAX ? (int)q->limit : SVC_LIST_LIMIT_DEFAULT;
    char *qlc = q->q && *q->q ? svc_fold(q->q) : NULL;
    struct svc_listdb_row *rows = NULL;
    int n = 0;
    int rc = svc_listdb_page(q, qlc, cu, after ? csid : NULL, limit + 1, &rows, &n);
    free(qlc);
    if (rc != 0)
        return 1;
    json_object *list = json_object_new_array();
    for (int k = 0; k < n && k < limit; k++) {
        json_object_array_add(list, db_row_summary(st, q, &rows[k]));
        if (stale && strcmp(rows[k].status, "running") == 0 && !svc_ix_run_alive(st, rows[k].sid)) {
            if (!*stale)
                *stale = json_object_new_array();
            json_object_array_add(*stale, json_object_new_string(rows[k].sid));
        }
    }
    char *cur = NULL;
    if (n > limit) {
        struct entry last = {.sid = rows[limit - 1].sid, .updated = rows[limit - 1].updated};
        cur = svc_ix_cursor_encode(&last);
    }
    svc_listdb_page_free(rows, n);
    json_object *res = json_object_new_object();
    svc_json_set(res, "sessions", list);
    svc_json_set_str(res, "next_cursor", cur);
    free(cur);
    *out = res;
    return 0;
}

void svc_index_seal(const struct svc_store *st)
{
    if (!st->index_dir)
        return;
    const char *path = svc_ix_db_path(st);
    int lk = svc_ix_db_lock(path, ".lock", LOCK_SH);
    if (lk >= 0 && svc_listdb_seal(path) == 0)
        svc_logf("index: the listing database %s is on the disk (sealed)", path);
    if (lk >= 0)
        close(lk);
}

bool svc_index_building(void)
{
    return svc_ix_db.building;
}
