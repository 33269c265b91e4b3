/* wincache: this process's parsed messages of the sessions whose windows it restored, so
 * that a turn reads from disk only the message files that changed since it last read them
 * (a worker serving turn after turn of a session reads the two or four files the turns in
 * between added, not the whole window).
 * An entry (session, message id) holds the message as the model sees it (the effective
 * message, a json_object shared with the runs that use it and modified by nobody) and is
 * valid under the content life of the session's messages directory (dirwatch.h):
 *   life = svc_wincache_begin(sid, dirfd)   poll the watch; the life of the directory open as
 *                                           dirfd (0: no cache here, read every file)
 *   svc_wincache_get(sid, life, id)         the entry (borrowed), NULL when none
 *   svc_wincache_put(sid, life, id, m, n)   keep m (a new reference is taken); n: file bytes
 *   svc_wincache_claim(sid, life, id, m, n)  the same for a file this process has just
 *                                           renamed into place (m is what it wrote), with no
 *                                           poll in between: the entry waits for the one
 *                                           IN_MOVED_TO of that rename, and any other event
 *                                           naming the file (another program's write, rename
 *                                           or removal, before or after) drops it
 * An entry is found only under the life it was stored in, and an event naming
 * message_<id>.json (written, renamed over, removed, attributes changed) drops it. The life
 * was armed before the entry's file was read, so any change after that read comes in as an
 * event: no stat of the file is needed, and no "racy" rule (msgcache.h) either.
 * Changes inotify does not report are not seen: a write through a hard link of the file in
 * another directory; a filesystem that is not local (begin returns 0 there).
 * At most SVC_WINCACHE_MAX_BYTES of heap (estimated from the files' bytes) is held;
 * storing past that empties the cache. svc_wincache_trim drops the entries of the
 * SVC_WINCACHE_TRIM ids below a window's start (the messages the window slid past).
 * One thread (a worker runs one request at a time); the child of a fork starts empty. */
#ifndef SVC_WINCACHE_H
#define SVC_WINCACHE_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define SVC_WINCACHE_MAX_BYTES (8u << 20)
#define SVC_WINCACHE_HEAP_PER_BYTE 10
#define SVC_WINCACHE_TRIM 64

int64_t svc_wincache_begin(const char *sid, int dirfd);
json_object *svc_wincache_get(const char *sid, int64_t life, int64_t id);
void svc_wincache_put(const char *sid, int64_t life, int64_t id, json_object *msg, size_t bytes);
void svc_wincache_claim(const char *sid, int64_t life, int64_t id, json_object *msg, size_t bytes);
void svc_wincache_trim(const char *sid, int64_t below);
void svc_wincache_clear(void);
/* Entries held (tests). */
size_t svc_wincache_entries(void);

#endif
