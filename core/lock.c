#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "metrics.h"
#include "util.h"

int svc_lock_file(const char *path, int how, bool create)
{
    int fd = open(path, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    double t0 = how & LOCK_NB ? 0 : svc_time_monotonic();
    while (flock(fd, how) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!(how & LOCK_NB))
        svc_metrics_lock_wait(svc_time_monotonic() - t0);
    return fd;
}

#define NO_LOCK (-2)

/* Whether the lock file locked on fd is still the one at path: a session deleted (moved
 * aside, then removed) while we waited for its lock is gone, not empty. */
static bool still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* A session's lock file, taken with how. No stat of the directory first: O_CREAT never creates
 * it, and a missing one (or a file or dangling link in its place) is ENOENT or ENOTDIR. */
static int open_lock_file(const char *session_dir, const char *name, int how, struct svc_err *err)
{
    char *path = svc_path_join(session_dir, name);
    int fd = svc_lock_file(path, how, true);
    /* shared on a read-only filesystem: flock needs no write access, so an existing lock file
     * is opened read-only; without one nobody can write there, and the read goes unlocked */
    if (fd < 0 && errno == EROFS && (how & LOCK_SH) && (fd = svc_lock_file(path, how, false)) < 0 &&
        errno == ENOENT && svc_is_dir(session_dir))
        fd = NO_LOCK;
    if (fd >= 0 && !still_there(fd, path)) {
        close(fd);
        fd = -1;
        errno = ENOENT;
    }
    free(path);
    if (fd >= 0 || fd == NO_LOCK)
        return fd;
    if (errno == ENOENT || errno == ENOTDIR)
        svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session not found");
    else if (errno == EWOULDBLOCK)
        svc_err_set(err, SVC_E_SESSION_BUSY, "a run is already in progress on this session");
    else /* EIO, ENOLCK: on NFS a lock the server dropped or refused */
        svc_err_errno(err, name == svc_layout_name(SVC_F_RUN_LOCK) ? "run lock" : "session lock");
    return -1;
}

int svc_lock_session(const char *session_dir, bool exclusive, struct svc_lock *lock,
                     struct svc_err *err)
{
    int fd = open_lock_file(session_dir, svc_layout_name(SVC_F_LOCK), exclusive ? LOCK_EX : LOCK_SH,
                            err);
    lock->fd = fd < 0 ? -1 : fd; /* NO_LOCK holds nothing */
    return fd == -1 ? -1 : 0;
}

int svc_lock_run_try(const char *session_dir, struct svc_lock *lock, struct svc_err *err)
{
    lock->fd = -1;
    struct svc_err e;
    for (int tries = 1;; tries++) {
        int fd =
            open_lock_file(session_dir, svc_layout_name(SVC_F_RUN_LOCK), LOCK_EX | LOCK_NB, &e);
        if (fd >= 0) {
            lock->fd = fd;
            return 0;
        }
        if (e.code != SVC_E_SESSION_BUSY || tries == 3) {
            if (err)
                *err = e;
            return -1;
        }
        /* a reader's probe (svc_lock_run_held) holds it for microseconds: look again */
        svc_sleep_s(0.002);
    }
}

bool svc_lock_run_held(const char *session_dir)
{
    char *path = svc_path_join(session_dir, svc_layout_name(SVC_F_RUN_LOCK));
    int fd = svc_lock_file(path, LOCK_SH | LOCK_NB, false);
    bool held = fd < 0 && errno == EWOULDBLOCK; /* ENOENT: nobody ever ran here */
    free(path);
    if (fd >= 0)
        close(fd); /* closing drops our probe lock */
    return held;
}

void svc_lock_release(struct svc_lock *lock)
{
    if (lock && lock->fd >= 0) {
        close(lock->fd); /* closing the only descriptor releases the flock */
        lock->fd = -1;
    }
}
