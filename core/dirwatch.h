/* dirwatch: "has anything been created in this directory since I last looked?" answered
 * without a system call per directory, for a process that asks often (a pool worker
 * listing sessions). One inotify instance per process, created on first use (never shared
 * across fork: a child starts with none); a watch per directory armed, at most
 * SVC_DIRWATCH_MAX of them.
 *   svc_dirwatch_poll()            read the pending events (one read(2) when there are none)
 *   svc_dirwatch_clean(key, tag)   true when key's directory is watched, was armed with this
 *                                  tag, and nothing was created or moved in since (nor the
 *                                  directory itself removed or moved)
 *   svc_dirwatch_arm(key, path, tag)  watch the directory path under the caller's short key
 *                                  (one key, one path) and record tag as checked: call it
 *                                  BEFORE the check it stands for, so that a change during
 *                                  the check comes in as an event
 *   svc_dirwatch_dirty(key)        the check found a change: key is not clean
 *   svc_dirwatch_dirty_all()       something else changed (e.g. a parent was renamed)
 * Content watches, for a cache of what the directory's files hold (msgcache.h):
 *   svc_dirwatch_arm_content(key, fd, st)  watch the directory open as fd (st: its fstat)
 *                                  for any change to an entry: created, written, attributes
 *                                  changed, renamed, removed; returns a generation (> 0), or
 *                                  0 when it cannot watch. Call it BEFORE the checks.
 *   svc_dirwatch_unchanged(key, st)  that generation while nothing changed since and st
 *                                  (an fstat of the directory as opened now) is the same
 *                                  inode; 0 otherwise.
 *   svc_dirwatch_arm_content_ignoring(key, fd, st, names)  the same, except that an entry
 *                                  named in names (NULL-terminated, static: kept by
 *                                  reference) opened for writing and closed, nothing more,
 *                                  does not count: lock files that readers open for writing
 *                                  (their creation, removal, replacement or a write count).
 *                                  A key armed again on another directory drops the kernel's
 *                                  watch of the former one (unless another key uses it).
 * Content lives, for a cache of single files of a directory that changes often (wincache.h):
 *   svc_dirwatch_content_life(key, fd, st)  a number (> 0) that stays the same while the
 *                                  directory open as fd (st: its fstat) stays watched under
 *                                  key as that inode: re-armed (a new number) only when the
 *                                  watch or the inode changed or events were lost; 0 when it
 *                                  cannot watch. Call it, after svc_dirwatch_poll(), BEFORE
 *                                  reading the files it stands for.
 *   svc_dirwatch_on_change(fn)     fn(key, name, mask) is called from svc_dirwatch_poll for
 *                                  each event (inotify mask) naming an entry of a directory
 *                                  with a content life; fn(key, NULL, 0) when that life ends,
 *                                  fn(NULL, NULL, 0) when every life ends (reset, fork, a
 *                                  broken instance). One listener.
 * Only what inotify sees counts: callers use it only on local filesystems. Changes made
 * by any process of the machine count, the caller's own included. Without inotify
 * (limits, errors) nothing is ever clean and callers check as before. */
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
bool svc_dirwatch_clean(const char *key, int64_t tag);
void svc_dirwatch_arm(const char *key, const char *path, int64_t tag);
void svc_dirwatch_dirty(const char *key);
void svc_dirwatch_dirty_all(void);
int64_t svc_dirwatch_arm_content(const char *key, int dirfd, const struct stat *dir);
int64_t svc_dirwatch_arm_content_ignoring(const char *key, int dirfd, const struct stat *dir,
                                          const char *const *ignore);
int64_t svc_dirwatch_unchanged(const char *key, const struct stat *dir);
typedef void (*svc_dirwatch_change_fn)(const char *key, const char *name, uint32_t mask);
void svc_dirwatch_on_change(svc_dirwatch_change_fn fn);
int64_t svc_dirwatch_content_life(const char *key, int dirfd, const struct stat *dir);
/* Whether inotify sees every change under the directory open as fd: a local filesystem
 * (a network filesystem does not report other machines' changes) not declared shared
 * (sessions.shared: on). */
bool svc_dirwatch_local(int fd);
/* Close the instance and forget every watch (tests, SIGHUP). */
void svc_dirwatch_reset(void);

#endif
