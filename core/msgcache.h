/* msgcache: this process's cache of rendered message rows (svc_message_row, compact JSON),
 * so a messages page read before costs no open, read, parse or render: one fstatat per row,
 * or none while the messages directory's content watch (dirwatch.h) saw no change.
 * An entry is keyed by the messages directory's identity (st_dev, st_ino) and the row's id
 * and holds while the file's (inode, size, mtime, ctime) are those it was rendered from:
 * one stat, under the shared session lock, tells (another host's write shows in it too).
 * It serves without that stat only under the watch's generation it was last checked under
 * (begin arms one before any row is checked) and for a file with one link. A file whose
 * ctime is less than SVC_MSGCACHE_SETTLE_NS old is never stored (a rewrite within one tick
 * of the clock can leave every stat field as it was: git's "racy" rule).
 * At most SVC_MSGCACHE_MAX_BYTES of row text; storing past that empties the cache first.
 * One thread: a worker serves one request at a time. */
#ifndef SVC_MSGCACHE_H
#define SVC_MSGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define SVC_MSGCACHE_MAX_BYTES (4u << 20)
#define SVC_MSGCACHE_SETTLE_NS 1000000000LL

/* A page's messages directory: its identity and the watch generation (0: none). */
struct svc_msgcache_dir {
    dev_t dev;
    ino_t ino;
    int64_t gen;
};

/* Fill *d for sid's messages directory dirfd BEFORE any row is checked; watch: inotify may
 * serve (a local filesystem). False: no cache. */
bool svc_msgcache_begin(const char *sid, int dirfd, bool watch, struct svc_msgcache_dir *d);
/* The row of id if cached and valid: st (the file's lstat now) matches, or st is NULL and it
 * was checked under d's generation. *text is borrowed until the next put or clear. */
bool svc_msgcache_get(const struct svc_msgcache_dir *d, int64_t id, const struct stat *st,
                      const char **text, size_t *len);
/* Keep a copy of text as id's row read from the file as st, unless the file is too recent
 * or the row larger than the bound. Whether it was stored. */
bool svc_msgcache_put(const struct svc_msgcache_dir *d, int64_t id, const struct stat *st,
                      const char *text, size_t len);
void svc_msgcache_clear(void);
/* Bytes of row text held and entries (for tests and the bench). */
size_t svc_msgcache_bytes(void);
size_t svc_msgcache_entries(void);
bool svc_msgcache_ts_eq(struct timespec a, struct timespec b); /* the store's marks use it too */

#endif
