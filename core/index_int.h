/* index_int: what index.c (the listing index in memory and its journal) and index_db.c (its
 * orchestration with the listing database, listdb.h) share; private to the two, never
 * included elsewhere. index.c owns the entries (svc_ix), the journal's stamp and file, and the
 * summaries; index_db.c owns the database's state (svc_ix_db) and answers index.h's calls from it
 * when svc_ix_db_ready says it is caught up (0: answer from it, then svc_ix_db_release; 1 while it
 * is built, -1 when it cannot be had: from the entries). */
#ifndef SVC_INDEX_INT_H
#define SVC_INDEX_INT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"
#include "index.h"
#include "store.h"

/* An entry keeps what sorting and filtering need; its summary stays in the index file
 * (off, len within the file open as svc_ix.fd), or on the heap until a line of it is read back. */
struct entry {
    char *sid;
    char *heap;     /* compact JSON summary, when not (yet) at off in the file */
    off_t off;      /* where the summary's JSON starts in the index file, or -1 */
    uint32_t len;   /* its length in bytes */
    char *title_lc; /* title folded for q (svc_fold) */
    double updated; /* epoch */
    char status[12];
    int64_t msgs;      /* message_count of the summary */
    const char *owner; /* interned (owner_intern), NULL when it has none */
    bool archived;
    bool pinned;
    char *tags;       /* the summary's tags as "\x1f<tag>\x1f<tag>\x1f", or NULL for none */
    bool seen;        /* present in the latest directory scan */
    uint64_t changed; /* the value of `changes` when it last changed (svc_index_each) */
};

/* This process's copy of the index (core/cache.h), dropped whole by svc_index_reset. */
struct index_mem {
    char *root;
    struct entry *v;
    size_t n, cap;
    bool sorted;
    ino_t ino;
    off_t offset;
    struct timespec root_mtime;
    bool loaded;
    char gen[17]; /* generation of the index file read, "" before its first compaction */
    int fd;       /* that file, kept open: entries point into it (valid when fd_open) */
    bool fd_open;
    int root_fd; /* the root directory, for the per-row stat relative to it (root_fd_open) */
    bool root_fd_open;
    dev_t root_dev;
    ino_t root_ino;
    dev_t dev;    /* device of the index file held as fd */
    int stamp_fd; /* the root lock file, kept open for stamp_peek (stamp_fd_open) */
    bool stamp_fd_open;
    size_t live_bytes; /* what a compacted index would hold, kept as entries change */
    struct slot *hs;   /* the hash, hcap slots pointing into v */
    size_t hcap;
};
extern struct index_mem svc_ix;

/* What this process did, across resets (svc_index_warm compares them): summaries applied,
 * rebuilds from the directories, summaries a rescan made from them, applied at the last
 * trim of the heap; rebuilds that could not be kept (a root that cannot be written: said
 * once in the log, not at each listing), and whether the last one was such. */
struct index_done {
    unsigned long applied, rebuilds, scanned, trimmed_at, unkept;
    bool unkept_last;
};
extern struct index_done svc_ix_done;

/* The stamp: what the index file looked like when a writer last left it whole, kept in the
 * first STAMP_LEN bytes of the lock file and written only under the root lock. A file that
 * does not match it (deleted, truncated, torn, edited, an older copy put back) is rebuilt
 * from the directories before anyone answers from it. */
#define STAMP_LEN 128
struct stamp {
    char gen[17];
    unsigned long long ino;
    long long size, mtime;
    bool ok;
};

/* The index file as found: descriptor, stat and generation ("" when it has no header). */
struct idxfile {
    int fd;
    struct stat sb;
    char gen[17];
    bool shared; /* st->shared: read_lines drops the page cache first */
};

/* index.c, for the database's side. */
void svc_ix_stamp_peek(const struct svc_store *st, struct stamp *s);
bool svc_ix_stamp_matches(const struct stamp *s, const struct idxfile *f, bool exact, bool shared);
int svc_ix_index_open(const struct svc_store *st, struct idxfile *f);
void svc_ix_index_close(struct idxfile *f);
int svc_ix_append_line(const struct svc_store *st, const char *sid, json_object *summary);
json_object *svc_ix_summary_of(const struct svc_store *st, const char *sid);
int svc_ix_refresh_locked(const struct svc_store *st, bool force);
int svc_ix_refresh(const struct svc_store *st);
char *svc_ix_entry_summary(const struct entry *e);
char *svc_ix_cursor_encode(const struct entry *e);
int svc_ix_cursor_decode(const char *c, double *updated, char *sid, size_t sidsz);
bool svc_ix_run_alive(const struct svc_store *st, const char *sid);
typedef int svc_ix_line_fn(void *ctx, const char *line, size_t n, off_t at);
int svc_ix_lines(int fd, off_t size, off_t *at, svc_ix_line_fn *fn, void *ctx);
/* A source of rows for svc_ix_compact_from: emit called with each session's id and
 * summary (compact JSON) in listing order; listdb.h's svc_listdb_rows is one. */
typedef int svc_ix_rows_fn(int (*emit)(void *ectx, const char *sid, const char *summary),
                           void *ectx);
int svc_ix_compact_from(const struct svc_store *st, const char *gen, off_t *at,
                        svc_ix_line_fn *line, void *ctx, svc_ix_rows_fn *rows, struct idxfile *nf);
json_object *svc_ix_recounted(const struct svc_store *st, const char *sid, int64_t msgs,
                              const char *status);

/* The listing database's side (index_db.c). */
struct index_db {
    char *path;      /* the database of the root below */
    char *root;      /* the root it is for */
    bool live;       /* the last look found it caught up: index.h's answers come from it */
    bool building;   /* the last listing was answered from memory while it was built */
    int lockfd;      /* <path>.lock, open (db_hold), or -1 */
    time_t retry_at; /* no build tried before then (one failed: disk full, read-only) */
};
extern struct index_db svc_ix_db;
int svc_ix_db_ready(const struct svc_store *st, int *lk);
int svc_ix_db_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err);
int svc_ix_db_build(const struct svc_store *st, const char *path);
const char *svc_ix_db_path(const struct svc_store *st);
int svc_ix_db_lock(const char *path, const char *suffix, int op);
int svc_ix_db_mkdir(const char *path);
void svc_ix_db_release(int lk);

#endif
