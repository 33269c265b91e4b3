/* dirwatch: "has anything changed in this directory since I looked?" in one read(2) of a
 * per-process inotify instance (never shared across fork): a fast path of cache.h's caches.
 *   svc_dirwatch_poll()   read the pending events
 *   svc_dirwatch_arm_content_ignoring(key, fd, st, names)  watch the directory open as fd
 *       (st: its fstat) under key; a generation (> 0), or 0. Call it BEFORE the checks it
 *       stands for. An entry of names (static) opened for writing and closed is no change.
 *   svc_dirwatch_unchanged(key, st)  that generation while nothing changed and st is the
 *       same inode; 0 otherwise.
 *   svc_dirwatch_content_life(key, fd, st)  a number (> 0) that stays while the directory
 *       stays watched as that inode; svc_dirwatch_on_change's one listener hears each event
 *       naming an entry (key, name, mask), a life's end (name NULL), all lives' (key NULL).
 * Changes by every process of the machine count; without inotify nothing is unchanged. */
#ifndef SVC_DIRWATCH_H
#define SVC_DIRWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define SVC_DIRWATCH_MAX 2048
/* Keys that begin with SVC_DIRWATCH_FIXED_PREFIX (a caller's few fixed keys, e.g. the
 * detail's, never a session id: ids have no ':') have room of their own beyond
 * SVC_DIRWATCH_MAX: at most SVC_DIRWATCH_FIXED of them. */
#define SVC_DIRWATCH_FIXED 16
#define SVC_DIRWATCH_FIXED_PREFIX "fixed:"

void svc_dirwatch_poll(void);
int64_t svc_dirwatch_arm_content_ignoring(const char *key, int dirfd, const struct stat *dir,
                                          const char *const *ignore);
int64_t svc_dirwatch_unchanged(const char *key, const struct stat *dir);
typedef void (*svc_dirwatch_change_fn)(const char *key, const char *name, uint32_t mask);
void svc_dirwatch_on_change(svc_dirwatch_change_fn fn);
int64_t svc_dirwatch_content_life(const char *key, int dirfd, const struct stat *dir);
/* Close the instance and forget every watch (tests, SIGHUP). */
void svc_dirwatch_reset(void);

#endif
