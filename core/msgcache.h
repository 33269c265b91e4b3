/* msgcache: this process's cache of rendered message rows (svc_message_row, compact JSON),
 * so a messages page that was read before costs one fstatat per row instead of an open,
 * a read, a parse and a render.
 * An entry is keyed by the message file's identity (st_dev, st_ino) and the row's id and
 * holds while the file's size, mtime and ctime (ns) are those the row was rendered from:
 * one stat of the file, under the shared session lock, tells (another host's write shows
 * in it too). A file whose ctime is less than SVC_MSGCACHE_SETTLE_NS old is never stored:
 * a rewrite within one tick of the file system's clock could leave every stat field as it
 * was (git's "racy" rule), and a ctime cannot be set back by a program.
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

/* The row for (st, id) if cached and still valid; *text is borrowed until the next
 * svc_msgcache_put or svc_msgcache_clear. */
bool svc_msgcache_get(const struct stat *st, int64_t id, const char **text, size_t *len);
/* Remember text (copied) as the row of (st, id), unless the file is too recent or the
 * row alone is larger than the bound. Returns whether it was stored. */
bool svc_msgcache_put(const struct stat *st, int64_t id, const char *text, size_t len);
void svc_msgcache_clear(void);
/* Bytes of row text held and entries (for tests and the bench). */
size_t svc_msgcache_bytes(void);
size_t svc_msgcache_entries(void);

#endif
