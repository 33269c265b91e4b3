/* lock: flock(2) locks on a session directory (SPEC 2.3).
 * ".svc.lock" is the short lock: exclusive for every mutation, shared for multi-file reads,
 * held for milliseconds. ".svc.run.lock" is held exclusively by a run from begin to end;
 * taking it never waits (a held run lock is SVC_E_SESSION_BUSY). Lock files are created
 * inside an existing session directory only: a lock call never creates the directory.
 * A struct svc_lock with fd -1 holds nothing; svc_lock_release is safe on it. */
#ifndef SVC_LOCK_H
#define SVC_LOCK_H

#include <stdbool.h>

#include "err.h"

struct svc_lock {
    int fd;
};
#define SVC_LOCK_INIT                                                                              \
    {                                                                                              \
        -1                                                                                         \
    }

/* The one opener of lock files: path (created when create, never through a symbolic link)
 * flocked with how (LOCK_SH or LOCK_EX, | LOCK_NB). The descriptor (close it to unlock), or
 * -1 with errno (EWOULDBLOCK: held; ENOENT: missing and !create). */
int svc_lock_file(const char *path, int how, bool create);
/* Blocking short lock; SVC_E_SESSION_NOT_FOUND without the directory. A shared lock on a
 * read-only filesystem without a lock file holds nothing (fd -1): nobody can write there. */
int svc_lock_session(const char *session_dir, bool exclusive, struct svc_lock *lock,
                     struct svc_err *err);
/* Non-blocking exclusive run lock: SVC_E_SESSION_BUSY when another run holds it. */
int svc_lock_run_try(const char *session_dir, struct svc_lock *lock, struct svc_err *err);
/* Whether some process (this one included, through another descriptor) holds the run lock. */
bool svc_lock_run_held(const char *session_dir);
void svc_lock_release(struct svc_lock *lock);

#endif
