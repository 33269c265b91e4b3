#include "fsio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "util.h"

int svc_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Test hook (TEST_HOOKS=1 builds): with SVC_TEST_CRASH_BEFORE_RENAME "<substring>[#<n>]",
 * the n-th write (default 1st) to a path containing substring _exit(77)s before the rename
 * (an append: before its write), so t/ can show a crash at any write leaves a session whole. */
static void crash_point(const char *path)
#ifdef SVC_TEST_HOOKS
{
    static int seen;
    const char *spec = getenv("SVC_TEST_CRASH_BEFORE_RENAME");
    if (!spec || !*spec)
        return;
    const char *hash = strrchr(spec, '#');
    size_t sl = hash ? (size_t)(hash - spec) : strlen(spec);
    if (sl > 0 && sl < 256 && memmem(path, strlen(path), spec, sl) &&
        ++seen == (hash ? atoi(hash + 1) : 1))
        _exit(77);
}
#else
{
    (void)path;
}
#endif

/* A flag the filesystem does not take (renameat2 on NFS, CephFS, GlusterFS). */
static bool flag_refused(int e)
{
    return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP;
}

/* rename(tmp, path), atomic for readers either way. An unsynced file replaces an existing
 * one by RENAME_EXCHANGE, then the old one (now tmp) is removed: ext4's auto_da_alloc starts
 * writeback at every rename over a file and frees the old blocks (a discard with -o
 * discard); an exchange does neither, so a file replaced again before writeback never
 * reaches the disk. Only a store without sessions.fsync writes unsynced (it loses that
 * guarantee: the file can come back empty after a power cut). */
static int replace_with(const char *tmp, const char *path, bool unsynced)
{
    if (unsynced) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
            /* the old file; a crash before this leaves an orphan temp file */
            if (unlink(tmp) == 0 || errno != EISDIR)
                return 0;
            /* a directory stood there: put it back; rename refuses it as before */
            if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
                return -1;
        } else if (errno != ENOENT && !flag_refused(errno)) {
            return -1;
        }
    }
    return rename(tmp, path);
}

int svc_fsync_dir(const char *dir, struct svc_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return svc_err_errno(err, "open directory");
    int rc = fsync(fd);
    close(fd);
    return rc == 0 ? 0 : svc_err_errno(err, "fsync directory");
}

/* fdatasync each file and fsync each directory under dfd, children first, then dfd. */
static int sync_walk(int dfd)
{
    int dd = dup(dfd);
    DIR *d = dd >= 0 ? fdopendir(dd) : NULL;
    if (!d) {
        if (dd >= 0)
            close(dd);
        return -1;
    }
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat sb;
        if (fd < 0) {
            rc = errno == ELOOP ? 0 : -1; /* a symbolic link: nothing to sync */
            continue;
        }
        if (fstat(fd, &sb) != 0)
            rc = -1;
        else if (S_ISDIR(sb.st_mode))
            rc = sync_walk(fd);
        else if (S_ISREG(sb.st_mode))
            rc = fdatasync(fd);
        close(fd);
    }
    closedir(d);
    return rc == 0 ? fsync(dfd) : rc;
}

int svc_sync_tree(const char *dir, struct svc_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return svc_err_errno(err, "open directory");
    bool local = false;
    svc_fs_kind(dir, &local);
    int rc = local ? syncfs(fd) : sync_walk(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc == 0 ? 0 : svc_err_errno(err, "sync");
}

/* Temp names ".<name>.tmp-<pid>-<salt><counter>": fsck tells a dead writer's temp files by
 * the pid; the salt is drawn once per process (svc_pid is cached), anew after fork. */
static struct {
    int pid; /* whose salt it is */
    unsigned long seq;
    char salt[9];
} temp;

static void temp_name(char *out, size_t outsz, const char *path)
{
    if (temp.pid != svc_pid()) {
        temp.pid = svc_pid();
        svc_random_hex(temp.salt, 8);
    }
    char tail[64];
    snprintf(tail, sizeof tail, ".tmp-%ld-%s%lx", (long)temp.pid, temp.salt, ++temp.seq);
    svc_temp_path(out, outsz, path, tail);
}

/* GlusterFS places "<dir>/.<name><tail>" on <name>'s brick: the rename stays atomic. */
void svc_temp_path(char *out, size_t outsz, const char *path, const char *tail)
{
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(out, outsz, "%.*s.%s%s", (int)dl, path, path + dl, tail);
}

/* rename(spare, path) keeping the old file as the spare; a directory at path is refused. */
static int replace_keeping(const char *spare, const char *path)
{
    if (renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
        return errno != ENOENT && !flag_refused(errno) ? -1 : rename(spare, path);
    struct stat sb;
    if (lstat(spare, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_EXCHANGE);
        errno = EISDIR;
        return -1;
    }
    return 0;
}

/* Write data at fd's offset 0, cut a longer old_size to it, fdatasync when sync, and close
 * fd. 0, or -1 with err naming the step that failed. */
static int fill_close(int fd, off_t old_size, const void *data, size_t len, bool sync,
                      struct svc_err *err)
{
    const char *what = NULL;
    if (svc_write_all(fd, data, len) != 0)
        what = "write";
    else if (old_size > (off_t)len && ftruncate(fd, (off_t)len) != 0)
        what = "truncate";
    else if (sync && fdatasync(fd) != 0)
        what = "fdatasync";
    if (what)
        svc_err_errno(err, what);
    if (close(fd) != 0 && !what)
        svc_err_errno(err, what = "close");
    return what ? -1 : 0;
}

/* The rest of a write once fd is open at offset 0 on tmp: a new temp file, or the spare of
 * old_size bytes written over in place. Then the sync asked for, the rename, the directory
 * sync. Closes fd; on failure removes tmp (a half-written spare too). */
static int fill_and_replace(int fd, off_t old_size, const char *tmp, const char *path,
                            const void *data, size_t len, int sync, bool spare, struct svc_err *err)
{
    if (fill_close(fd, old_size, data, len, sync & SVC_SYNC_FILE, err) != 0) {
        unlink(tmp);
        return -1;
    }
    crash_point(path);
    if ((spare ? replace_keeping(tmp, path)
               : replace_with(tmp, path, !(sync & (SVC_SYNC_FILE | SVC_WRITE_NEW)))) != 0) {
        svc_err_errno(err, "rename");
        unlink(tmp);
        return -1;
    }
    if ((sync & SVC_SYNC_DIR) && svc_fsync_parent(path) != 0)
        return svc_err_errno(err, "fsync directory");
    return 0;
}

/* SVC_WRITE_SPARE: 0, -1 with err, or 1 when the spare cannot be used (use a temp file). */
static int write_via_spare(const char *path, const void *data, size_t len, int sync,
                           struct svc_err *err)
{
    size_t sl = strlen(path) + sizeof SVC_SPARE_SUFFIX + 1;
    char *spare = svc_xmalloc(sl);
    svc_temp_path(spare, sl, path, SVC_SPARE_SUFFIX);
    int rc;
    struct stat sb;
    int fd = open(spare, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink == 1) {
        rc = fill_and_replace(fd, sb.st_size, spare, path, data, len, sync, true, err);
    } else {
        /* a link (ELOOP), a directory (EISDIR), a fifo, a hard link: never written into */
        if (fd >= 0)
            close(fd);
        unlink(spare); /* a directory stays; it is never used either */
        rc = 1;
    }
    free(spare);
    return rc;
}

int svc_file_write_synced(const char *path, const void *data, size_t len, int sync,
                          struct svc_err *err)
{
    if ((sync & SVC_WRITE_SPARE) && !(sync & SVC_WRITE_NEW)) {
        int sr = write_via_spare(path, data, len, sync, err);
        if (sr <= 0)
            return sr;
    }
    size_t tl = strlen(path) + 64;
    char *tmp = svc_xmalloc(tl);
    int rc = -1, fd = -1;
    for (int tries = 0; fd < 0 && tries < 4; tries++) {
        temp_name(tmp, tl, path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break; /* EEXIST: a name left by an earlier process with this pid; the next one */
    }
    if (fd < 0)
        svc_err_errno(err, "create temp file");
    else
        rc = fill_and_replace(fd, 0, tmp, path, data, len, sync, false, err);
    free(tmp);
    return rc;
}

int svc_fd_append(int fd, const char *path, const void *data, size_t len, bool durable,
                  struct svc_err *err)
{
    crash_point(path);
    ssize_t n = write(fd, data, len); /* one write: a line is whole or absent */
    if (n < 0 || (size_t)n != len)
        return svc_err_errno(err, "append");
    if (durable && fdatasync(fd) != 0) /* data and size: all a reader needs */
        return svc_err_errno(err, "fdatasync");
    return 0;
}

/* The append itself on fd (opened O_APPEND for path), which it closes. */
static int append_and_close(int fd, const char *path, const void *data, size_t len, bool durable,
                            struct svc_err *err)
{
    int rc = svc_fd_append(fd, path, data, len, durable, err);
    close(fd);
    return rc;
}

int svc_file_append(const char *path, const void *data, size_t len, bool durable,
                    struct svc_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return svc_err_errno(err, "open for append");
    return append_and_close(fd, path, data, len, durable, err);
}

int svc_file_write_new(const char *path, const void *data, size_t len, bool sync_file,
                       struct svc_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        if (errno == EEXIST) /* not new after all: replace it whole */
            return svc_file_write_synced(path, data, len, sync_file ? SVC_SYNC_FILE : 0, err);
        return svc_err_errno(err, "create");
    }
    crash_point(path);
    if (fill_close(fd, 0, data, len, sync_file, err) == 0)
        return 0;
    unlink(path);
    return -1;
}

int svc_file_append_line(const char *path, const char *line, size_t len, bool durable,
                         struct svc_err *err)
{
    /* one descriptor for the look at the last byte and the append */
    const int flags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
    bool created = false;
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, flags | O_CREAT | O_EXCL, 0644);
        created = fd >= 0;
        if (fd < 0 && errno == EEXIST)
            fd = open(path, flags);
    }
    if (fd < 0)
        return svc_err_errno(err, "open for append");
    struct stat sb;
    char c = '\n';
    if (fstat(fd, &sb) == 0 && sb.st_size > 0 && pread(fd, &c, 1, sb.st_size - 1) != 1)
        c = '\n';
    bool torn = c != '\n'; /* then line[-1], the caller's '\n', starts a fresh line */
    if (append_and_close(fd, path, line - torn, len + torn, durable, err) != 0)
        return -1;
    if (created && durable && svc_fsync_parent(path) != 0)
        return svc_err_errno(err, "fsync directory");
    return 0;
}

static int file_read(int dirfd, const char *path, int flags, char **out, size_t *len,
                     struct stat *st_out, struct svc_err *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    /* O_NONBLOCK: a FIFO where a data file belongs blocks neither the open nor the read */
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return svc_err_set(err, SVC_E_NOT_FOUND, "no such file: %s", path);
        if (errno == ELOOP)
            return svc_err_set(err, SVC_E_IO, "refused: %s is a symbolic link", path);
        return svc_err_errno(err, "open");
    }
    /* No fstat first: a short read is the end of a regular file, so a small file costs open,
     * read, close; one that fills the buffer is sized by fstat, and refused unless regular (a
     * device never ends; a directory fails the read). A caller's *st_out is the fstat taken
     * before the read: a change after it shows as a different stat (core/msgcache.h).
     * The first 16 KiB go to the stack: no malloc of that size per small file (a large-bin
     * request that makes malloc consolidate its fast bins). */
    char first[16384], *buf = first;
    size_t cap = sizeof first, used = 0;
    struct stat st, *sp = st_out ? st_out : &st;
    bool sized = false; /* *sp holds the file's fstat */
    int rc = 0;
    for (;;) {
        size_t want = cap;
        if (!sized && (st_out || used + 1 >= cap)) {
            if (fstat(fd, sp) != 0 || !S_ISREG(sp->st_mode)) {
                rc = svc_err_set(err, SVC_E_IO, "not a regular file: %s", path);
                break;
            }
            sized = true;
            if ((size_t)sp->st_size + 2 > cap)
                want = (size_t)sp->st_size + 2;
        }
        if (want == cap && used + 1 >= cap)
            want = cap * 2;
        if (want != cap) {
            buf = buf == first ? memcpy(svc_xmalloc(want), first, used) : svc_xrealloc(buf, want);
            cap = want;
        }
        ssize_t n = read(fd, buf + used, cap - used - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = errno == EISDIR ? svc_err_set(err, SVC_E_IO, "not a regular file: %s", path)
                                 : svc_err_errno(err, "read");
            break;
        }
        used += (size_t)n;
        if (n == 0 || used + 1 < cap)
            break; /* short of the buffer: end of file */
    }
    close(fd);
    if (rc != 0) {
        if (buf != first)
            free(buf);
        return -1;
    }
    if (buf == first)
        buf = memcpy(svc_xmalloc(used + 1), first, used);
    buf[used] = '\0';
    *out = buf;
    if (len)
        *len = used;
    return 0;
}

int svc_file_read_at(int dirfd, const char *name, char **out, size_t *len, struct stat *st,
                     struct svc_err *err)
{
    return file_read(dirfd, name, O_NOFOLLOW, out, len, st, err);
}

int svc_file_read(const char *path, char **out, size_t *len, struct svc_err *err)
{
    return file_read(AT_FDCWD, path, O_NOFOLLOW, out, len, NULL, err);
}

int svc_file_read_follow(const char *path, char **out, size_t *len, struct svc_err *err)
{
    return file_read(AT_FDCWD, path, 0, out, len, NULL, err);
}

bool svc_file_is_empty(const char *path)
{
    struct stat sb;
    return path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0;
}

bool svc_file_is_spare(const char *name)
{
    size_t n = strlen(name), sl = strlen(SVC_SPARE_SUFFIX);
    return n > sl && strcmp(name + n - sl, SVC_SPARE_SUFFIX) == 0;
}

int svc_file_remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    int rc = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char *child = svc_path_join(path, de->d_name);
            if (svc_file_remove_tree(child) != 0)
                rc = -1;
            free(child);
        }
        closedir(d);
    }
    return rmdir(path) == 0 ? rc : -1;
}

int svc_file_prune_old_json(const char *dir, const char *stamp, double max_age_s,
                            int (*remove_one)(const void *ctx, const char *id,
                                              const struct stat *sb),
                            const void *ctx)
{
    double now = svc_time_now();
    struct stat sb;
    if (stat(stamp, &sb) == 0 && now - (double)sb.st_mtime < 3600)
        return 0;
    svc_file_write_atomic(stamp, "", 0, false, NULL);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char id[128];
        size_t n = strlen(de->d_name);
        if (n < 6 || n - 5 >= sizeof id || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        memcpy(id, de->d_name, n - 5);
        id[n - 5] = '\0';
        /* by mtime first: recent files are not even opened */
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) ||
            now - (double)sb.st_mtime <= max_age_s)
            continue;
        removed += remove_one(ctx, id, &sb);
    }
    closedir(d);
    return removed;
}

void svc_file_each_json(const char *dir, void (*fn)(void *ctx, const char *id, const char *path),
                        void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        struct stat sb;
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 ||
            fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        char *id = svc_xstrndup(de->d_name, n - 5), *path = svc_path_join(dir, de->d_name);
        fn(ctx, id, path);
        free(id);
        free(path);
    }
    closedir(d);
}

bool svc_dir_writable(const char *what, const char *root, char *why, size_t whysz)
{
    struct stat st;
    if (!root || !*root) {
        snprintf(why, whysz, "%s: not configured", what);
        return false;
    }
    /* the common case in one call: "<root>/." resolves only for a directory (or its link) */
    char dot[4096];
    if (snprintf(dot, sizeof dot, "%s/.", root) < (int)sizeof dot && access(dot, W_OK | X_OK) == 0)
        return true;
    if (stat(root, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            snprintf(why, whysz, "%s %s: not a directory", what, root);
        else if (access(root, W_OK | X_OK) != 0)
            snprintf(why, whysz, "%s %s: not writable: %s", what, root, strerror(errno));
        else
            return true;
        return false;
    }
    if (errno != ENOENT) {
        snprintf(why, whysz, "%s %s: %s", what, root, strerror(errno));
        return false;
    }
    /* missing: it can be made when its nearest existing ancestor is a writable directory */
    char *p = svc_xstrdup(root);
    bool ok = false;
    snprintf(why, whysz, "%s %s: missing, and cannot be created", what, root);
    for (;;) {
        char *slash = strrchr(p, '/');
        if (!slash) { /* a relative root: its first component is made in the current directory */
            ok = strcmp(p, ".") != 0 && access(".", W_OK | X_OK) == 0;
            break;
        }
        if (slash == p)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                snprintf(why, whysz, "%s %s: missing, and %s is not a directory", what, root, p);
            else if (!(ok = access(p, W_OK | X_OK) == 0))
                snprintf(why, whysz, "%s %s: missing, and %s cannot be written: %s", what, root, p,
                         strerror(errno));
            break;
        }
        if (errno != ENOENT || strcmp(p, "/") == 0)
            break; /* ENOTDIR: a file is in the way */
    }
    free(p);
    return ok;
}

int svc_err_unwritable(const char *root, struct svc_err *err)
{
    char why[512];
    if (err && err->code == SVC_E_IO && !svc_dir_writable("session root", root, why, sizeof why)) {
        char cause[sizeof err->message];
        snprintf(cause, sizeof cause, "%s", err->message);
        svc_err_set(err, SVC_E_UNAVAILABLE, "%s (%s); sessions can still be read", why, cause);
    }
    return -1;
}

/* statfs f_type values (linux/magic.h) of the filesystems svc tells apart. */
static const struct {
    unsigned long magic;
    const char *name;
    bool local;
} fs_kinds[] = {
    {0xEF53, "ext4", true},      {0x58465342, "xfs", true},     {0x9123683E, "btrfs", true},
    {0x01021994, "tmpfs", true}, {0x794C7630, "overlay", true}, {0x2FC12FC1, "zfs", true},
    {0xF2F52010, "f2fs", true},  {0x65735546, "fuse", false},   {0x6969, "nfs", false},
    {0x00C36400, "ceph", false}, {0xFF534D42, "cifs", false},   {0xFE534D42, "smb2", false},
    {0x01021997, "9p", false},   {0x858458F6, "ramfs", true},
};

static int fs_index(unsigned long magic)
{
    for (size_t i = 0; i < sizeof fs_kinds / sizeof fs_kinds[0]; i++)
        if (magic == fs_kinds[i].magic)
            return (int)i;
    return -1;
}

bool svc_fs_local_magic(unsigned long magic)
{
    int i = fs_index(magic);
    return i >= 0 && fs_kinds[i].local;
}

const char *svc_fs_kind(const char *path, bool *local)
{
    char *p = svc_xstrdup(path);
    struct statfs sf;
    int rc;
    while ((rc = statfs(p, &sf)) != 0 && errno == ENOENT) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            break;
        *slash = '\0';
    }
    free(p);
    int i = rc == 0 ? fs_index((unsigned long)sf.f_type) : -1;
    *local = i < 0 || fs_kinds[i].local;
    return rc != 0 ? "unknown" : i < 0 ? "other" : fs_kinds[i].name;
}

bool svc_fs_shared(int mode, const char *root)
{
    static char *seen_root;
    static bool seen_shared;
    if (mode != SVC_SHARED_AUTO)
        return mode == SVC_SHARED_ON;
    if (!seen_root || strcmp(seen_root, root) != 0) {
        bool local;
        svc_fs_kind(root, &local);
        free(seen_root);
        seen_root = svc_xstrdup(root);
        seen_shared = !local;
    }
    return seen_shared;
}

void svc_fs_fallback_note(const char *what, int err)
{
    static const char *said[8]; /* the literals already noted */
    size_t i = 0;
    while (i < sizeof said / sizeof said[0] && said[i] && said[i] != what)
        i++;
    if (i == sizeof said / sizeof said[0] || said[i])
        return;
    said[i] = what;
    svc_logf("the filesystem refuses %s (%s): using the fallback with the same guarantees", what,
             strerror(err));
}

int svc_rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (!flag_refused(errno))
        return -1;
    svc_fs_fallback_note("renameat2 RENAME_NOREPLACE", errno);
    struct stat sb;
    if (lstat(from, &sb) != 0)
        return -1;
    if (!S_ISDIR(sb.st_mode)) /* link has one winner across clients, and never replaces */
        return link(from, to) == 0 ? unlink(from) : -1;
    if (lstat(to, &sb) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (rename(from, to) == 0)
        return 0;
    if (errno == ENOTEMPTY)
        errno = EEXIST;
    return -1;
}
