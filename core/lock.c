#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static int open_lock_file(const char *session_dir, const char *name, struct svc_err *err)
{
    char *path = svc_path_join(session_dir, name);
    if (!path)
        return svc_err_set(err, SVC_E_NOMEM, "out of memory"), -1;
    /* No stat of the directory first: O_CREAT never creates it, and a missing directory
     * (or a file or dangling link in its place) is ENOENT or ENOTDIR here. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    free(path);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session not found"), -1;
        svc_err_errno(err, "open lock file");
        return -1;
    }
    return fd;
}

int svc_lock_session(const char *session_dir, bool exclusive, struct svc_lock *lock,
                     struct svc_err *err)
{
    lock->fd = -1;
    int fd = open_lock_file(session_dir, ".svc.lock", err);
    if (fd < 0)
        return -1;
    while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
        if (errno == EINTR)
            continue;
        svc_err_errno(err, "flock");
        close(fd);
        return -1;
    }
    lock->fd = fd;
    return 0;
}

int svc_lock_run_try(const char *session_dir, struct svc_lock *lock, struct svc_err *err)
{
    lock->fd = -1;
    int fd = open_lock_file(session_dir, ".svc.run.lock", err);
    if (fd < 0)
        return -1;
    int tries = 0;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK && ++tries < 3) {
            /* a reader's probe (svc_lock_run_held) holds it for microseconds: look again */
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return svc_err_set(err, SVC_E_SESSION_BUSY, "a run is already in progress on this session");
        errno = e;
        return svc_err_errno(err, "flock");
    }
    lock->fd = fd;
    return 0;
}

bool svc_lock_run_held(const char *session_dir)
{
    char *path = svc_path_join(session_dir, ".svc.run.lock");
    if (!path)
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (fd < 0)
        return false; /* no lock file: nobody ever ran here */
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* closing drops our probe lock if we got it */
    return held;
}

void svc_lock_release(struct svc_lock *lock)
{
    if (lock && lock->fd >= 0) {
        close(lock->fd); /* closing the only descriptor releases the flock */
        lock->fd = -1;
    }
}
