/* pcfs: a FUSE filesystem that loses power (a test tool of `make powercut`, docs/TESTING.md).
 *
 *   pcfs [-f] BACKING MOUNTPOINT --images=DIR [--ctl=SOCKET] [--cut-sync=N] [--cut-op=N]
 *        [--seed=S --cut-within=M] [--flush-every=K] [fuse options]
 *
 * Every operation passes through to BACKING (the live tree, what the page cache holds).
 * Beside it pcfs keeps in memory what the disk holds: for each inode its durable bytes
 * (taken at fsync/fdatasync of that file) and for each directory its durable entries
 * (taken at fsync of that directory; a rename across directories is made durable in both
 * when either is synced, as a journal does). What was in BACKING at mount is durable.
 *
 * A cut ("cut" on the control socket, the N-th sync, the N-th mutating operation, or an
 * operation drawn from the seed in 1..M) happens before the operation that reaches it,
 * which fails like every later one with EIO, and writes two trees a disk could hold:
 *   DIR/strict   only what the syncs made durable (POSIX's promise, LazyFS's model);
 *   DIR/journal  every name as it stood at the cut, each file holding only its synced
 *                bytes (cut shorter by any truncation since): ext4 data=ordered without
 *                auto_da_alloc after a journal commit at the cut, where a renamed or
 *                truncated file whose data was never synced comes back empty.
 * --flush-every=K makes everything durable after a mutating operation with chance 1/K
 * (the kernel's writeback, for roots that never sync). The control socket answers one
 * line to "status", "cut" and "flush": "ops O syncs S cut C at_op A at_sync Y mono T"
 * (C 0 or 1; T the CLOCK_MONOTONIC seconds of the cut, 0 before it).
 * Counts and the cut are also written to DIR/status at the cut and at unmount. */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct obj; /* an inode as the disk holds it */
struct ent {
    char *name;
    struct obj *o;
};
struct obj {
    mode_t mode;
    char *data; /* regular file: durable bytes */
    size_t len;
    size_t keep;      /* journal view: bytes of data still there (truncation since the sync) */
    char *target;     /* symbolic link */
    struct ent *ents; /* directory: durable entries */
    size_t nents;
    int open;      /* open handles */
    bool gone;     /* its last live name removed: forgotten when no handle is left */
    unsigned mark; /* writing an image: the cut that wrote it */
    char *at;      /* its first path in the image being written (hard links) */
};
struct move { /* a rename across directories not yet durable in both */
    struct obj *o, *from, *to;
    char *fname, *tname;
};
#define NBUCKET 4096
struct slot {
    ino_t ino;
    struct obj *o;
    struct slot *next;
};

static struct {
    pthread_mutex_t mu;
    int bfd; /* BACKING */
    char *backing, *images, *ctl;
    struct slot *map[NBUCKET]; /* live inode -> obj */
    struct obj *root;
    struct move *moves;
    size_t nmoves;
    long ops, syncs, cut_op, cut_sync, at_op, at_sync, flush_every, cut_within;
    unsigned long long seed, rng;
    bool dead;
    double mono;
    unsigned pass; /* image writes, for obj.mark */
} fs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        perror("pcfs");
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    return strcpy(xmalloc(strlen(s) + 1), s);
}

/* splitmix64: the draws of --seed */
static unsigned long long draw(void)
{
    unsigned long long z = (fs.rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- live inodes to objects ---- */

static struct obj *map_get(ino_t ino)
{
    for (struct slot *s = fs.map[ino % NBUCKET]; s; s = s->next)
        if (s->ino == ino)
            return s->o;
    return NULL;
}

static void map_drop(ino_t ino)
{
    for (struct slot **p = &fs.map[ino % NBUCKET]; *p; p = &(*p)->next)
        if ((*p)->ino == ino) {
            struct slot *s = *p;
            *p = s->next;
            free(s);
            return;
        }
}

/* The object of a live inode, made (holding nothing durable yet) when it has none. */
static struct obj *obj_of(const struct stat *st)
{
    struct obj *o = map_get(st->st_ino);
    if (!o) {
        o = xmalloc(sizeof *o);
        o->mode = st->st_mode;
        o->keep = SIZE_MAX;
        struct slot *s = xmalloc(sizeof *s);
        *s = (struct slot){st->st_ino, o, fs.map[st->st_ino % NBUCKET]};
        fs.map[st->st_ino % NBUCKET] = s;
    }
    return o;
}

/* The inode st lost its name: forgotten once no name and no handle is left, so that a new
 * inode of the same number is a new object. */
static void name_gone(const struct stat *st)
{
    if (S_ISDIR(st->st_mode) || st->st_nlink <= 1) {
        struct obj *o = obj_of(st);
        o->gone = true;
        if (o->open == 0)
            map_drop(st->st_ino);
    }
}

/* Removes rel (unlinkat with flags), forgetting its inode when that was its last name. */
static int remove_name(const char *r, int flags)
{
    struct stat st;
    bool had = fstatat(fs.bfd, r, &st, AT_SYMLINK_NOFOLLOW) == 0;
    int rc = unlinkat(fs.bfd, r, flags);
    if (rc == 0 && had)
        name_gone(&st);
    return rc;
}

/* ---- making things durable ---- */

/* Whether a directory entry is a name a disk would hold: not "." or "..", nor the name
 * libfuse gives a file unlinked while open (.fuse_hidden*: it has none on a disk). */
static bool named(const char *name)
{
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
           strncmp(name, ".fuse_hidden", 12) != 0;
}

static char *read_fd(int fd, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

static void sync_file(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    struct obj *o = obj_of(&st);
    free(o->data);
    o->data = read_fd(fd, &o->len);
    o->keep = SIZE_MAX;
    o->mode = st.st_mode;
}

static void ents_free(struct obj *d)
{
    for (size_t i = 0; i < d->nents; i++)
        free(d->ents[i].name);
    free(d->ents);
    d->ents = NULL;
    d->nents = 0;
}

static void ent_set(struct obj *d, const char *name, struct obj *o)
{
    for (size_t i = 0; i < d->nents; i++)
        if (strcmp(d->ents[i].name, name) == 0) {
            if (o)
                d->ents[i].o = o;
            else {
                free(d->ents[i].name);
                d->ents[i] = d->ents[--d->nents];
            }
            return;
        }
    if (!o)
        return;
    d->ents = realloc(d->ents, (d->nents + 1) * sizeof *d->ents);
    d->ents[d->nents++] = (struct ent){xstrdup(name), o};
}

/* The directory rel (of base)'s live entries become its durable ones; its new inodes are
 * durable as they are on disk: files with what they synced (empty when never), directories
 * empty. */
static void sync_dir(int base, const char *rel)
{
    int dfd = openat(base, rel, O_RDONLY | O_DIRECTORY);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    struct stat st;
    if (!dir || fstat(dfd, &st) != 0) {
        if (dir)
            closedir(dir);
        else if (dfd >= 0)
            close(dfd);
        return;
    }
    struct obj *d = obj_of(&st);
    d->mode = st.st_mode;
    ents_free(d);
    for (struct dirent *e; (e = readdir(dir));) {
        if (!named(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        struct obj *o = obj_of(&st);
        if (S_ISLNK(st.st_mode) && !o->target) {
            char t[PATH_MAX];
            ssize_t n = readlinkat(dfd, e->d_name, t, sizeof t - 1);
            t[n > 0 ? n : 0] = '\0';
            o->target = xstrdup(t);
        }
        ent_set(d, e->d_name, o);
    }
    closedir(dir);
    /* a rename across directories is one journal transaction: durable in both or neither */
    for (size_t i = 0; i < fs.nmoves;) {
        struct move *m = &fs.moves[i];
        if (m->from != d && m->to != d) {
            i++;
            continue;
        }
        if (m->to == d) {
            for (size_t j = 0; j < m->from->nents; j++)
                if (m->from->ents[j].o == m->o && strcmp(m->from->ents[j].name, m->fname) == 0)
                    ent_set(m->from, m->fname, NULL);
        } else {
            ent_set(m->to, m->tname, m->o);
        }
        free(m->fname);
        free(m->tname);
        fs.moves[i] = fs.moves[--fs.nmoves];
    }
}

/* Everything live becomes durable (--flush-every, "flush"; also the state at mount). */
static void flush_tree(const char *rel)
{
    sync_dir(fs.bfd, rel);
    int dfd = openat(fs.bfd, rel, O_RDONLY | O_DIRECTORY);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    for (struct dirent *e; (e = readdir(dir));) {
        struct stat st;
        if (!named(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        if (S_ISDIR(st.st_mode))
            flush_tree(sub);
        else if (S_ISREG(st.st_mode)) {
            int fd = openat(fs.bfd, sub, O_RDONLY | O_NOFOLLOW);
            if (fd >= 0) {
                sync_file(fd);
                close(fd);
            }
        }
    }
    closedir(dir);
}

/* ---- the images ---- */

static void put_file(const char *path, const char *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode & 07777);
    if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len))
        fprintf(stderr, "pcfs: image %s: %s\n", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* DIR/strict: the durable objects from the root down. */
static void image_strict(struct obj *d, const char *path)
{
    mkdir(path, d->mode & 07777);
    for (size_t i = 0; i < d->nents; i++) {
        struct obj *o = d->ents[i].o;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, d->ents[i].name);
        if (o->mark == fs.pass) {
            if (S_ISDIR(o->mode)) /* one directory under two names: the first one wins */
                fprintf(stderr, "pcfs: %s is also %s; left out\n", sub, o->at);
            else if (link(o->at, sub) != 0)
                fprintf(stderr, "pcfs: link %s: %s\n", sub, strerror(errno));
            continue;
        }
        o->mark = fs.pass;
        free(o->at);
        o->at = xstrdup(sub);
        if (S_ISDIR(o->mode))
            image_strict(o, sub);
        else if (S_ISLNK(o->mode))
            symlink(o->target ? o->target : "", sub);
        else
            put_file(sub, o->data, o->len, o->mode);
    }
}

/* DIR/journal: the live names, each file with its synced bytes only. */
static void image_journal(const char *rel, const char *path)
{
    int dfd = openat(fs.bfd, rel, O_RDONLY | O_DIRECTORY);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    struct stat st;
    if (!dir || fstat(dfd, &st) != 0) {
        if (dfd >= 0 && !dir)
            close(dfd);
        if (dir)
            closedir(dir);
        return;
    }
    mkdir(path, st.st_mode & 07777);
    for (struct dirent *e; (e = readdir(dir));) {
        if (!named(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char sub[PATH_MAX], subrel[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        snprintf(subrel, sizeof subrel, "%s/%s", rel, e->d_name);
        struct obj *o = map_get(st.st_ino);
        if (S_ISDIR(st.st_mode)) {
            image_journal(subrel, sub);
        } else if (S_ISLNK(st.st_mode)) {
            char t[PATH_MAX];
            ssize_t n = readlinkat(dfd, e->d_name, t, sizeof t - 1);
            t[n > 0 ? n : 0] = '\0';
            symlink(t, sub);
        } else if (o && o->mark == fs.pass) {
            link(o->at, sub);
        } else if (o) {
            o->mark = fs.pass;
            free(o->at);
            o->at = xstrdup(sub);
            put_file(sub, o->data, o->len < o->keep ? o->len : o->keep, st.st_mode);
        } else {
            put_file(sub, "", 0, st.st_mode);
        }
    }
    closedir(dir);
}

static void status_line(char *out, size_t n)
{
    snprintf(out, n, "ops %ld syncs %ld cut %d at_op %ld at_sync %ld mono %.6f\n", fs.ops, fs.syncs,
             fs.dead, fs.at_op, fs.at_sync, fs.mono);
}

static void write_status(void)
{
    char line[256], path[PATH_MAX];
    status_line(line, sizeof line);
    snprintf(path, sizeof path, "%s/status", fs.images);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

static void cut(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fs.dead = true;
    fs.mono = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    fs.at_op = fs.ops;
    fs.at_sync = fs.syncs;
    char path[PATH_MAX];
    fs.pass++;
    snprintf(path, sizeof path, "%s/strict", fs.images);
    image_strict(fs.root, path);
    fs.pass++;
    snprintf(path, sizeof path, "%s/journal", fs.images);
    image_journal(".", path);
    write_status();
    fprintf(stderr, "pcfs: power cut at operation %ld, sync %ld (seed %llu)\n", fs.ops, fs.syncs,
            fs.seed);
}

/* ---- operations ---- */

/* Every operation starts here: -EIO once the power is cut. A mutating one (sync: a sync)
 * is counted, and the cut happens before the one that reaches the cut point. */
static int enter(bool mutating, bool sync)
{
    pthread_mutex_lock(&fs.mu);
    if (!fs.dead && mutating) {
        fs.ops++;
        fs.syncs += sync;
        if (fs.ops == fs.cut_op || (sync && fs.syncs == fs.cut_sync))
            cut();
    }
    if (fs.dead) {
        pthread_mutex_unlock(&fs.mu);
        return -EIO;
    }
    return 0;
}

static int leave(int rc, bool mutating)
{
    if (rc == 0 && mutating && fs.flush_every > 0 &&
        draw() % (unsigned long long)fs.flush_every == 0)
        flush_tree(".");
    pthread_mutex_unlock(&fs.mu);
    return rc;
}

#define ENTER(m, s)                                                                                \
    do {                                                                                           \
        int e_ = enter(m, s);                                                                      \
        if (e_)                                                                                    \
            return e_;                                                                             \
    } while (0)
#define RET(expr, m) return leave((expr) == -1 ? -errno : 0, m)

static const char *rel(const char *path)
{
    return path[1] ? path + 1 : ".";
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    ENTER(false, false);
    RET(fi ? fstat((int)fi->fh, st) : fstatat(fs.bfd, rel(path), st, AT_SYMLINK_NOFOLLOW), false);
}

static int op_readlink(const char *path, char *buf, size_t size)
{
    ENTER(false, false);
    ssize_t n = readlinkat(fs.bfd, rel(path), buf, size - 1);
    if (n >= 0)
        buf[n] = '\0';
    RET(n < 0 ? -1 : 0, false);
}

static int op_mkdir(const char *path, mode_t mode)
{
    ENTER(true, false);
    RET(mkdirat(fs.bfd, rel(path), mode), true);
}

static int op_unlink(const char *path)
{
    ENTER(true, false);
    RET(remove_name(rel(path), 0), true);
}

static int op_rmdir(const char *path)
{
    ENTER(true, false);
    RET(remove_name(rel(path), AT_REMOVEDIR), true);
}

static int op_symlink(const char *target, const char *path)
{
    ENTER(true, false);
    RET(symlinkat(target, fs.bfd, rel(path)), true);
}

static int op_link(const char *from, const char *to)
{
    ENTER(true, false);
    RET(linkat(fs.bfd, rel(from), fs.bfd, rel(to), 0), true);
}

/* The object of the directory holding rel. */
static struct obj *parent_of(const char *r)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", r);
    char *slash = strrchr(dir, '/');
    struct stat st;
    if (fstatat(fs.bfd, slash ? (*slash = '\0', dir) : ".", &st, 0) != 0)
        return NULL;
    return obj_of(&st);
}

/* o went from directory pf (as the path f) to pt (as t): a move until one of them is synced. */
static void moved(struct obj *o, struct obj *pf, const char *f, struct obj *pt, const char *t)
{
    fs.moves = realloc(fs.moves, (fs.nmoves + 1) * sizeof *fs.moves);
    const char *fb = strrchr(f, '/'), *tb = strrchr(t, '/');
    fs.moves[fs.nmoves++] =
        (struct move){o, pf, pt, xstrdup(fb ? fb + 1 : f), xstrdup(tb ? tb + 1 : t)};
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
    ENTER(true, false);
    struct stat st, over;
    const char *f = rel(from), *t = rel(to);
    struct obj *pf = parent_of(f), *pt = parent_of(t);
    struct obj *o = fstatat(fs.bfd, f, &st, AT_SYMLINK_NOFOLLOW) == 0 ? obj_of(&st) : NULL;
    bool there = fstatat(fs.bfd, t, &over, AT_SYMLINK_NOFOLLOW) == 0;
    int rc = renameat2(fs.bfd, f, fs.bfd, t, flags);
    if (rc == 0 && there && !(flags & RENAME_EXCHANGE) && over.st_ino != st.st_ino)
        name_gone(&over);
    if (rc == 0 && o && pf && pt && pf != pt) {
        moved(o, pf, f, pt, t);
        if (there && (flags & RENAME_EXCHANGE)) /* the other one went the other way */
            moved(obj_of(&over), pt, t, pf, f);
    }
    RET(rc, true);
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    ENTER(true, false);
    RET(fi ? fchmod((int)fi->fh, mode) : fchmodat(fs.bfd, rel(path), mode, 0), true);
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    ENTER(true, false);
    RET(fi ? fchown((int)fi->fh, uid, gid)
           : fchownat(fs.bfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW),
        true);
}

/* A truncation: the journal view keeps at most size bytes of what was synced. */
static void truncated(int fd, off_t size)
{
    struct stat st;
    if (fstat(fd, &st) == 0) {
        struct obj *o = obj_of(&st);
        if ((size_t)size < o->keep)
            o->keep = (size_t)size;
    }
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    ENTER(true, false);
    int fd = fi ? (int)fi->fh : openat(fs.bfd, rel(path), O_WRONLY | O_NOFOLLOW);
    int rc = fd < 0 ? -1 : ftruncate(fd, size);
    if (rc == 0)
        truncated(fd, size);
    int e = errno;
    if (!fi && fd >= 0)
        close(fd);
    errno = e;
    RET(rc, true);
}

/* Opens rel for fi (read-write when it writes: a sync reads the file back). */
static int open_file(const char *r, struct fuse_file_info *fi, mode_t mode, bool create)
{
    int flags = fi->flags & ~(O_APPEND | O_NOFOLLOW);
    if ((flags & O_ACCMODE) == O_WRONLY)
        flags = (flags & ~O_ACCMODE) | O_RDWR;
    int fd = openat(fs.bfd, r, flags | (create ? O_CREAT : 0) | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    struct stat st;
    fstat(fd, &st);
    obj_of(&st)->open++;
    if (fi->flags & O_TRUNC)
        truncated(fd, 0);
    fi->fh = (uint64_t)fd;
    return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    bool trunc = (fi->flags & O_TRUNC) != 0;
    ENTER(trunc, false);
    RET(open_file(rel(path), fi, 0, false), trunc);
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    ENTER(true, false);
    RET(open_file(rel(path), fi, mode, true), true);
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    ENTER(false, false);
    ssize_t n = pread((int)fi->fh, buf, size, off);
    leave(0, false);
    return n < 0 ? -errno : (int)n;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    ENTER(true, false);
    ssize_t n = pwrite((int)fi->fh, buf, size, off);
    int e = errno;
    leave(0, true);
    return n < 0 ? -e : (int)n;
}

static int op_statfs(const char *path, struct statvfs *st)
{
    ENTER(false, false);
    RET(fstatvfs(fs.bfd, st), false);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    pthread_mutex_lock(&fs.mu);
    struct stat st;
    if (fstat((int)fi->fh, &st) == 0) {
        struct obj *o = map_get(st.st_ino);
        if (o && --o->open == 0 && o->gone)
            map_drop(st.st_ino);
    }
    close((int)fi->fh);
    pthread_mutex_unlock(&fs.mu);
    return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    ENTER(true, true);
    sync_file((int)fi->fh);
    return leave(0, true);
}

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
    ENTER(false, false);
    int fd = openat(fs.bfd, rel(path), O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    fi->fh = (uint64_t)(uintptr_t)d;
    RET(d ? 0 : -1, false);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    ENTER(false, false);
    DIR *d = (DIR *)(uintptr_t)fi->fh;
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0))
            break;
    }
    return leave(0, false);
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
    closedir((DIR *)(uintptr_t)fi->fh);
    return 0;
}

static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    ENTER(true, true);
    sync_dir(dirfd((DIR *)(uintptr_t)fi->fh), ".");
    return leave(0, true);
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    ENTER(true, false);
    RET(fi ? futimens((int)fi->fh, tv) : utimensat(fs.bfd, rel(path), tv, AT_SYMLINK_NOFOLLOW),
        true);
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    ENTER(true, false);
    RET(fallocate((int)fi->fh, mode, off, len), true);
}

static int op_access(const char *path, int mask)
{
    ENTER(false, false);
    RET(faccessat(fs.bfd, rel(path), mask, AT_SYMLINK_NOFOLLOW), false);
}

/* ---- the control socket ---- */

static void *control(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        char cmd[64] = "", line[256];
        ssize_t n = read(c, cmd, sizeof cmd - 1);
        cmd[n > 0 ? n : 0] = '\0';
        pthread_mutex_lock(&fs.mu);
        if (strncmp(cmd, "cut", 3) == 0 && !fs.dead)
            cut();
        else if (strncmp(cmd, "flush", 5) == 0 && !fs.dead)
            flush_tree(".");
        status_line(line, sizeof line);
        pthread_mutex_unlock(&fs.mu);
        if (write(c, line, strlen(line)) < 0)
            perror("pcfs: control");
        close(c);
    }
    return NULL;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->use_ino = 1;
    cfg->nullpath_ok = 1;
    if (fs.ctl) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", fs.ctl);
        int ls = socket(AF_UNIX, SOCK_STREAM, 0);
        unlink(fs.ctl);
        pthread_t t;
        if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 8) != 0 ||
            pthread_create(&t, NULL, control, (void *)(intptr_t)ls) != 0)
            perror("pcfs: control socket");
    }
    return NULL;
}

static void op_destroy(void *data)
{
    write_status();
}

static const struct fuse_operations ops = {
    .init = op_init,
    .destroy = op_destroy,
    .getattr = op_getattr,
    .readlink = op_readlink,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .chmod = op_chmod,
    .chown = op_chown,
    .truncate = op_truncate,
    .open = op_open,
    .create = op_create,
    .read = op_read,
    .write = op_write,
    .statfs = op_statfs,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .utimens = op_utimens,
    .fallocate = op_fallocate,
    .access = op_access,
};

/* ---- command line ---- */

#define OPT(t, f)                                                                                  \
    {                                                                                              \
        t, offsetof(struct opts, f), 0                                                             \
    }
struct opts {
    char *images, *ctl, *cut_op, *cut_sync, *seed, *within, *flush;
};
static const struct fuse_opt specs[] = {
    OPT("--images=%s", images),     OPT("--ctl=%s", ctl),   OPT("--cut-op=%s", cut_op),
    OPT("--cut-sync=%s", cut_sync), OPT("--seed=%s", seed), OPT("--cut-within=%s", within),
    OPT("--flush-every=%s", flush), FUSE_OPT_END,
};

static int keep_backing(void *data, const char *arg, int key, struct fuse_args *out)
{
    if (key == FUSE_OPT_KEY_NONOPT && !fs.backing) {
        fs.backing = realpath(arg, NULL);
        if (!fs.backing) {
            fprintf(stderr, "pcfs: %s: %s\n", arg, strerror(errno));
            exit(2);
        }
        return 0;
    }
    return 1;
}

static long num(const char *s)
{
    return s ? strtol(s, NULL, 10) : 0;
}

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct opts o = {0};
    if (fuse_opt_parse(&args, &o, specs, keep_backing) != 0 || !fs.backing || !o.images) {
        fprintf(stderr, "usage: pcfs BACKING MOUNTPOINT --images=DIR [--ctl=SOCKET] "
                        "[--cut-sync=N] [--cut-op=N] [--seed=S --cut-within=M] "
                        "[--flush-every=K] [fuse options]\n");
        return 2;
    }
    fs.images = realpath(o.images, NULL);
    fs.ctl = o.ctl;
    fs.cut_op = num(o.cut_op);
    fs.cut_sync = num(o.cut_sync);
    fs.flush_every = num(o.flush);
    fs.seed = fs.rng = (unsigned long long)num(o.seed);
    fs.cut_within = num(o.within);
    if (!fs.images) {
        fprintf(stderr, "pcfs: --images=%s: %s\n", o.images, strerror(errno));
        return 2;
    }
    if (fs.cut_within > 0) {
        fs.cut_op = 1 + (long)(draw() % (unsigned long long)fs.cut_within);
        fprintf(stderr, "pcfs: seed %llu cuts at operation %ld\n", fs.seed, fs.cut_op);
    }
    fs.bfd = open(fs.backing, O_RDONLY | O_DIRECTORY);
    struct stat st;
    if (fs.bfd < 0 || fstat(fs.bfd, &st) != 0) {
        fprintf(stderr, "pcfs: %s: %s\n", fs.backing, strerror(errno));
        return 2;
    }
    fs.root = obj_of(&st);
    flush_tree("."); /* what is there at mount is on disk */
    fuse_opt_add_arg(&args, "-s");
    return fuse_main(args.argc, args.argv, &ops, NULL);
}
