/* dirwatch content watches: a change to an entry ends "unchanged", except an entry the
 * watch ignores opened for writing and closed, no more; a move of the directory itself always does;
 * a key armed again on another directory (a content life's too) drops the kernel's watch of the
 * former one unless another key still uses it (counted in the inotify descriptor's /proc fdinfo);
 * fixed keys have room of their own when session keys filled the table. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwatch.h"
#include "tap.h"

static char base[256];

/* Arm key on the directory path (optionally ignoring names); its generation or 0. */
static int64_t arm(const char *key, const char *path, const char *const *ignore)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    int64_t gen = 0;
    if (fd >= 0 && fstat(fd, &st) == 0)
        gen = svc_dirwatch_arm_content_ignoring(key, fd, &st, ignore);
    if (fd >= 0)
        close(fd);
    return gen;
}

static int64_t unchanged(const char *key, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    svc_dirwatch_poll();
    return svc_dirwatch_unchanged(key, &st);
}

static void touch(const char *dir, const char *name, bool write_it)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 && write_it && write(fd, "x", 1) != 1)
        perror("write");
    if (fd >= 0)
        close(fd);
}

/* Armed afresh, name in dir opened (created when missing): the watch must say changed. */
static void touch_changes(const char *key, const char *dir, const char *const *ignore,
                          const char *name, const char *what)
{
    arm(key, dir, ignore);
    touch(dir, name, false);
    is_int(unchanged(key, dir), 0, "%s", what);
}

/* The kernel watches held by this process's inotify instance. */
static int kernel_watches(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[300], t[64];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(p, t, sizeof t - 1);
        if (k <= 0)
            continue;
        t[k] = 0;
        if (strcmp(t, "anon_inode:inotify") != 0)
            continue;
        snprintf(p, sizeof p, "/proc/self/fdinfo/%s", e->d_name);
        FILE *f = fopen(p, "r");
        char line[512];
        n = 0;
        while (f && fgets(line, sizeof line, f))
            n += strncmp(line, "inotify wd:", 11) == 0;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/dirwatch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    char d1[300], d2[300], d3[300];
    snprintf(d1, sizeof d1, "%s/one", base);
    snprintf(d2, sizeof d2, "%s/two", base);
    snprintf(d3, sizeof d3, "%s/moved", base);
    mkdir(d1, 0755);
    mkdir(d2, 0755);
    static const char *const locks[] = {".lock", NULL};

    touch(d1, ".lock", false); /* there before the watch, as a session's lock file is */
    int64_t g = arm("k1", d1, locks);
    ok(g > 0, "armed");
    is_int(unchanged("k1", d1), g, "unchanged right after");
    touch(d1, ".lock", false);
    touch(d1, ".lock", false);
    is_int(unchanged("k1", d1), g, "an ignored entry opened for writing and closed");
    touch(d1, ".lock", true);
    is_int(unchanged("k1", d1), 0, "written: changed");
    g = arm("k1", d1, locks);
    char lk[400], lk2[400];
    snprintf(lk, sizeof lk, "%s/.lock", d1);
    snprintf(lk2, sizeof lk2, "%s/.lock.old", d1);
    ok(rename(lk, lk2) == 0 && symlink(lk2, lk) == 0, "the ignored entry replaced by a link");
    is_int(unchanged("k1", d1), 0, "replaced: changed");
    unlink(lk);
    rename(lk2, lk);
    touch_changes("k1", d1, locks, "data", "another entry created: changed");
    touch_changes("k1", d1, locks, "data", "another entry opened for writing: changed");
    /* without an ignore list, the lock file counts like any entry */
    touch_changes("k2", d2, NULL, ".lock", "no ignore list: the lock file's creation counts");
    touch_changes("k2", d2, NULL, ".lock", "and its opening for writing");

    /* the directory itself moved: changed, even with an ignore list */
    g = arm("k1", d1, locks);
    is_int(unchanged("k1", d1), g, "armed again");
    ok(rename(d1, d3) == 0, "the directory renamed");
    is_int(unchanged("k1", d3), 0, "moved: changed");
    ok(rename(d3, d1) == 0, "renamed back");

    /* one key armed from directory to directory holds one kernel watch */
    svc_dirwatch_reset();
    g = arm("k1", d1, locks);
    is_int(kernel_watches(), 1, "one kernel watch");
    g = arm("k1", d2, locks);
    ok(g > 0, "the key armed on another directory");
    svc_dirwatch_poll();
    is_int(kernel_watches(), 1, "still one: the former directory's watch dropped");
    is_int(unchanged("k1", d2), g, "unchanged on its new directory");
    /* ... unless another key watches the former directory */
    int64_t g2 = arm("k2", d2, NULL);
    g = arm("k1", d1, locks);
    is_int(kernel_watches(), 2, "two directories, two kernel watches");
    svc_dirwatch_poll();
    is_int(unchanged("k2", d2), g2, "the other key's watch kept");
    touch(d2, "more", false);
    is_int(unchanged("k2", d2), 0, "and it still sees changes");
    is_int(unchanged("k1", d1), g, "k1 unchanged on its directory");

    /* the same for a content life (the window cache's) */
    svc_dirwatch_reset();
    int fd1 = open(d1, O_RDONLY | O_DIRECTORY), fd2 = open(d2, O_RDONLY | O_DIRECTORY);
    struct stat s1, s2;
    ok(fd1 >= 0 && fd2 >= 0 && fstat(fd1, &s1) == 0 && fstat(fd2, &s2) == 0, "two directories");
    ok(svc_dirwatch_content_life("life", fd1, &s1) > 0, "a content life");
    ok(svc_dirwatch_content_life("life", fd2, &s2) > 0, "the key's life on another directory");
    is_int(kernel_watches(), 1, "a content life moved on: one kernel watch");
    close(fd1);
    close(fd2);

    /* a full table of session keys leaves room for the fixed keys */
    svc_dirwatch_reset();
    int armed = 0;
    for (int i = 0; i < SVC_DIRWATCH_MAX; i++) {
        char key[32];
        snprintf(key, sizeof key, "s%d", i);
        armed += arm(key, d2, NULL) > 0;
    }
    is_int(armed, SVC_DIRWATCH_MAX, "SVC_DIRWATCH_MAX session keys armed");
    is_int(arm("one-more", d2, NULL), 0, "one more: no room");
    g = arm(SVC_DIRWATCH_FIXED_PREFIX "x", d1, locks);
    ok(g > 0, "a fixed key still armed");
    is_int(unchanged(SVC_DIRWATCH_FIXED_PREFIX "x", d1), g, "and unchanged");
    armed = 0;
    for (int i = 0; i < SVC_DIRWATCH_FIXED + 1; i++) {
        char key[32];
        snprintf(key, sizeof key, SVC_DIRWATCH_FIXED_PREFIX "%d", i);
        armed += arm(key, d1, NULL) > 0;
    }
    is_int(armed, SVC_DIRWATCH_FIXED - 1, "fixed keys: SVC_DIRWATCH_FIXED at most");

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        perror("rm");
    return done_testing();
}
