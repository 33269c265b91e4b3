/* wincache: this process's parsed messages of the windows it restored, so that a turn
 * parses only the message files that changed since. An entry (session, id) holds the
 * effective message (shared, modified by nobody) and serves, with no stat, while the content
 * life of the session's messages directory holds (dirwatch.h: an event naming
 * message_<id>.json drops it); a file of more than one link (st) is never kept.
 *   life = svc_wincache_begin(sid, dirfd)    poll the watch; the life (0: no cache)
 *   svc_wincache_get(sid, life, id)          the entry (borrowed), or NULL
 *   svc_wincache_put(sid, life, id, m, st, claim)  keep m (a new reference); st: the file
 *       read; claim: this process has just renamed it into place, wait for that IN_MOVED_TO
 * At most SVC_WINCACHE_MAX_BYTES (heap estimated from file sizes); trim drops the
 * SVC_WINCACHE_TRIM ids below a window's start. One thread; a forked child starts empty. */
#ifndef SVC_WINCACHE_H
#define SVC_WINCACHE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define SVC_WINCACHE_MAX_BYTES (8u << 20)
#define SVC_WINCACHE_HEAP_PER_BYTE 10
#define SVC_WINCACHE_TRIM 64

int64_t svc_wincache_begin(const char *sid, int dirfd);
json_object *svc_wincache_get(const char *sid, int64_t life, int64_t id);
void svc_wincache_put(const char *sid, int64_t life, int64_t id, json_object *msg,
                      const struct stat *st, bool claim);
void svc_wincache_trim(const char *sid, int64_t below);
void svc_wincache_clear(void);
/* Entries held (tests). */
size_t svc_wincache_entries(void);

#endif
