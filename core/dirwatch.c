#include "dirwatch.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "util.h"

/* an entry created, written, its attributes changed, removed, moved; the directory gone */
#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_MODIFY | IN_CLOSE_WRITE |        \
     IN_ATTRIB | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR)
#define ALL (SVC_DIRWATCH_MAX + SVC_DIRWATCH_FIXED)
#define SLOTS (SVC_DIRWATCH_MAX * 4) /* open addressing on the key, never more than half full */

struct watch {
    char *key; /* owned */
    int wd;    /* -1: not watched (yet, or any more) */
    /* content watch: nothing at all changed since generation gen armed it on dev/ino */
    bool unchanged;
    int64_t gen;
    dev_t dev;
    ino_t ino;
    /* content life (svc_dirwatch_content_life): > 0 from the arm on dev/ino until an event
     * that names no entry (the directory itself gone, moved, lost events) */
    int64_t life;
    const char *const *ignore; /* content watch: entry names whose events do not count */
};

static struct {
    int fd; /* the inotify instance, -1 before first use or when unavailable */
    bool tried;
    bool registered; /* the fork handler */
    struct watch v[ALL];
    int n;
    int fixed;    /* of them, keys with SVC_DIRWATCH_FIXED_PREFIX */
    int64_t gens; /* content arms and lives so far */
    svc_dirwatch_change_fn on_change;
    int slot[SLOTS]; /* index into v + 1; 0 empty */
} dw = {.fd = -1};

void svc_dirwatch_reset(void)
{
    if (dw.on_change)
        dw.on_change(NULL, NULL, 0); /* every content life ends */
    if (dw.fd >= 0)
        close(dw.fd);
    for (int i = 0; i < dw.n; i++)
        free(dw.v[i].key);
    dw.fd = -1;
    dw.tried = false;
    dw.n = 0;
    dw.fixed = 0;
    memset(dw.slot, 0, sizeof dw.slot);
}

static bool ready(void)
{
    if (dw.fd >= 0)
        return true;
    if (dw.tried)
        return false;
    dw.tried = true;
    if (!dw.registered) /* the parent's instance and watches are the parent's */
        pthread_atfork(NULL, NULL, svc_dirwatch_reset);
    dw.registered = true;
    dw.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    return dw.fd >= 0;
}

static size_t hash_key(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The watch of key, or (add) a new one when there is room; NULL otherwise. */
static struct watch *find(const char *key, bool add)
{
    size_t h = hash_key(key) & (SLOTS - 1);
    while (dw.slot[h]) {
        struct watch *w = &dw.v[dw.slot[h] - 1];
        if (strcmp(w->key, key) == 0)
            return w;
        h = (h + 1) & (SLOTS - 1);
    }
    bool fixed = strncmp(key, SVC_DIRWATCH_FIXED_PREFIX, sizeof SVC_DIRWATCH_FIXED_PREFIX - 1) == 0;
    if (!add || (fixed ? dw.fixed == SVC_DIRWATCH_FIXED : dw.n - dw.fixed == SVC_DIRWATCH_MAX))
        return NULL;
    dw.fixed += fixed;
    struct watch *w = &dw.v[dw.n++];
    *w = (struct watch){.key = svc_xstrdup(key), .wd = -1};
    dw.slot[h] = dw.n;
    return w;
}

/* The content life of w ends: whatever was checked under it is forgotten. */
static void end_life(struct watch *w)
{
    if (w->life <= 0)
        return;
    w->life = 0;
    if (dw.on_change)
        dw.on_change(w->key, NULL, 0);
}

/* An event on a content life: the entry it names changed, or (no name) everything did. */
static void note_life_event(struct watch *w, const struct inotify_event *ie)
{
    if (w->life <= 0)
        return;
    if (ie->len == 0 || (ie->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)))
        end_life(w);
    else if (dw.on_change)
        dw.on_change(w->key, ie->name, ie->mask);
}

void svc_dirwatch_on_change(svc_dirwatch_change_fn fn)
{
    dw.on_change = fn;
}

/* Events were lost (or the instance broke: no watch left): every check and life ends. */
static void changed_all(bool broken)
{
    for (int i = 0; i < dw.n; i++) {
        dw.v[i].unchanged = false;
        end_life(&dw.v[i]);
        if (broken)
            dw.v[i].wd = -1;
    }
}

/* Whether ie is only an entry w ignores opened for writing and closed (anything else counts). */
static bool ignored(const struct watch *w, const struct inotify_event *ie)
{
    if (!w->ignore || ie->len == 0 || (ie->mask & ~(uint32_t)(IN_CLOSE_WRITE | IN_ISDIR)))
        return false;
    for (const char *const *n = w->ignore; *n; n++)
        if (strcmp(*n, ie->name) == 0)
            return true;
    return false;
}

void svc_dirwatch_poll(void)
{
    if (dw.fd < 0)
        return;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    enum { MEMO_MAX = 8 };
    int memo[MEMO_MAX], memo_n = -1, memo_wd = -2; /* memo_n -1: scan every time */
    for (;;) {
        ssize_t got = read(dw.fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got < 0 && errno != EAGAIN) { /* the instance is broken: stop trusting it */
                close(dw.fd);
                dw.fd = -1;
                changed_all(true);
            }
            return;
        }
        for (char *p = buf; p < buf + got;) {
            const struct inotify_event *ie = (const struct inotify_event *)p;
            if (ie->mask & IN_Q_OVERFLOW)
                changed_all(false); /* events were lost */
            /* the watches of this event's wd: the last event's when it is the same wd (a
             * file written is several events in a row), else found by a scan */
            if (ie->wd != memo_wd || memo_n < 0) {
                memo_wd = ie->wd;
                memo_n = 0;
                for (int i = 0; i < dw.n && memo_n >= 0; i++)
                    if (dw.v[i].wd == ie->wd)
                        memo_n = memo_n < MEMO_MAX ? (memo[memo_n] = i, memo_n + 1) : -1;
            }
            for (int k = 0, i; memo_n >= 0 ? k < memo_n : k < dw.n; k++) {
                i = memo_n >= 0 ? memo[k] : k;
                if (dw.v[i].wd != ie->wd || ignored(&dw.v[i], ie))
                    continue;
                note_life_event(&dw.v[i], ie);
                dw.v[i].unchanged = false;
                if (ie->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                    dw.v[i].wd = -1; /* gone, or elsewhere now: armed anew next time */
                    memo_wd = -2;
                }
            }
            p += sizeof *ie + ie->len;
        }
    }
}

int64_t svc_dirwatch_unchanged(const char *key, const struct stat *dir)
{
    const struct watch *w = dw.fd >= 0 ? find(key, false) : NULL;
    bool same = w && w->wd >= 0 && w->unchanged && w->dev == dir->st_dev && w->ino == dir->st_ino;
    return same ? w->gen : 0;
}

/* The kernel's watch of the inode open as dirfd, whatever its path names now (a directory
 * swapped in under the same name is another inode: the callers compare dev and ino). */
static int add_watch(int dirfd)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirfd);
    return inotify_add_watch(dw.fd, proc, WATCH_MASK);
}

/* Whether a watch other than w uses the kernel's watch wd. */
static bool wd_shared(int wd, const struct watch *w)
{
    for (int i = 0; i < dw.n; i++)
        if (&dw.v[i] != w && dw.v[i].wd == wd)
            return true;
    return false;
}

/* w watches through wd from now on: the kernel's watch of the directory it named until now
 * goes unless another key still uses it (a key re-armed on directory after directory holds
 * one kernel watch, not one per directory it ever named) */
static void rewatch(struct watch *w, int wd)
{
    if (wd != w->wd && w->wd >= 0 && !wd_shared(w->wd, w))
        inotify_rm_watch(dw.fd, w->wd);
    w->wd = wd;
}

int64_t svc_dirwatch_arm_content_ignoring(const char *key, int dirfd, const struct stat *dir,
                                          const char *const *ignore)
{
    struct watch *w = ready() ? find(key, true) : NULL;
    if (!w)
        return 0;
    w->unchanged = false;
    w->ignore = ignore;
    int wd = add_watch(dirfd);
    if (wd < 0)
        return 0;
    if (wd != w->wd || w->dev != dir->st_dev || w->ino != dir->st_ino)
        end_life(w);
    rewatch(w, wd);
    w->dev = dir->st_dev;
    w->ino = dir->st_ino;
    w->gen = ++dw.gens;
    w->unchanged = true;
    return w->gen;
}

int64_t svc_dirwatch_content_life(const char *key, int dirfd, const struct stat *dir)
{
    struct watch *w = ready() ? find(key, true) : NULL;
    if (!w)
        return 0;
    if (w->wd >= 0 && w->life > 0 && w->dev == dir->st_dev && w->ino == dir->st_ino)
        return w->life;
    end_life(w);
    int wd = add_watch(dirfd);
    if (wd < 0)
        return 0;
    if (wd != w->wd || w->dev != dir->st_dev || w->ino != dir->st_ino)
        w->unchanged = false;
    rewatch(w, wd);
    w->dev = dir->st_dev;
    w->ino = dir->st_ino;
    w->life = ++dw.gens;
    return w->life;
}
