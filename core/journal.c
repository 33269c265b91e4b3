#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "layout.h"
#include "lock.h"
#include "log.h"
#include "util.h"

/* The stamp's room at the start of the lock file; written only under the root lock. */
#define STAMP_LEN 128
/* How long a list waits for another process's rebuild (svc_journal_gate's brief wait):
 * below nginx's 120 s, so that two lists cannot hold both workers for a whole rebuild. */
#define BUILD_WAIT_S 10

/* The lock file kept open between unlocked looks (svc_journal_peek) by the process that
 * opened it (a forked child's descriptor may be closed and reused). */
static struct {
    int fd;
    bool open;
    pid_t pid;
} J;

/* On a shared root another client changes these files behind this host's page cache (a
 * FUSE client may keep it across opens): what is cached of fd is dropped before a read. */
static void drop_cached(bool shared, int fd)
{
    if (shared && fd >= 0)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void stamp_parse(struct svc_journal *j, int fd)
{
    memset(&j->stamp, 0, sizeof j->stamp);
    char buf[STAMP_LEN + 1];
    drop_cached(j->shared, fd);
    ssize_t n = fd >= 0 ? pread(fd, buf, STAMP_LEN, 0) : -1;
    if (n <= 0)
        return;
    buf[n] = '\0';
    j->stamp.ok = sscanf(buf, "svc-index-stamp 1 %16[0-9a-f] %llu %lld %lld", j->stamp.gen,
                         &j->stamp.ino, &j->stamp.size, &j->stamp.mtime) == 4 &&
                  strlen(j->stamp.gen) == 16;
}

int svc_journal_lock(const struct svc_store *st, struct svc_journal *j)
{
    *j = (struct svc_journal)SVC_JOURNAL_INIT;
    j->shared = st->shared;
    char *p = svc_layout_root_path(st->root, SVC_F_INDEX_LOCK, NULL);
    j->writable = true;
    int fd = svc_lock_file(p, LOCK_EX, true);
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == ENOSPC)) {
        j->writable = false; /* a read-only root still gets a lock when the file exists */
        fd = svc_lock_file(p, LOCK_EX, false);
    }
    free(p);
    if (fd < 0)
        return -1;
    j->lock = fd;
    stamp_parse(j, fd);
    return 0;
}

void svc_journal_unlock(struct svc_journal *j)
{
    if (j->lock >= 0)
        flock(j->lock, LOCK_UN);
}

void svc_journal_relock(struct svc_journal *j)
{
    if (j->lock < 0)
        return;
    while (flock(j->lock, LOCK_EX) != 0 && errno == EINTR)
        ;
    stamp_parse(j, j->lock);
}

void svc_journal_peek(const struct svc_store *st, struct svc_journal *j)
{
    *j = (struct svc_journal)SVC_JOURNAL_INIT;
    j->shared = st->shared;
    /* the lock file is kept open between looks; one that lost its name (removed, or
     * replaced by a rename) is opened anew by name */
    struct stat sb;
    if (J.open && J.pid != getpid())
        J.open = false;
    if (J.open && (fstat(J.fd, &sb) != 0 || sb.st_nlink == 0)) {
        close(J.fd);
        J.open = false;
    }
    if (!J.open) {
        char *p = svc_layout_root_path(st->root, SVC_F_INDEX_LOCK, NULL);
        J.fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        free(p);
        J.open = J.fd >= 0;
        J.pid = getpid();
    }
    stamp_parse(j, J.open ? J.fd : -1);
}

/* Open the file with flags (O_RDONLY, or O_RDWR | O_APPEND for the appender). */
static int open_as(const struct svc_store *st, struct svc_journal *j, int flags)
{
    if (j->fd >= 0)
        close(j->fd);
    j->gen[0] = '\0';
    char *path = svc_layout_root_path(st->root, SVC_F_INDEX, NULL);
    j->fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (j->fd < 0)
        return -1;
    drop_cached(j->shared, j->fd);
    if (fstat(j->fd, &j->sb) != 0 || !S_ISREG(j->sb.st_mode)) {
        close(j->fd);
        j->fd = -1;
        return -1;
    }
    /* Which file is this? Inode numbers are reused across compactions, so every rewritten
     * file starts with a line naming its random generation; appends never touch line 1. */
    char head[80];
    ssize_t hn = pread(j->fd, head, sizeof head - 1, 0);
    static const char key[] = "{\"svc_index_generation\":\"";
    if (hn > 0) {
        head[hn] = '\0';
        if (strncmp(head, key, sizeof key - 1) == 0)
            snprintf(j->gen, sizeof j->gen, "%.16s", head + sizeof key - 1);
    }
    return 0;
}

static bool whole(const struct svc_journal *j)
{
    /* on a shared root another client may see another inode number or mtime for the same
     * file: only the generation in the file and its size are compared there */
    if (!j->stamp.ok || strlen(j->gen) != 16 || strcmp(j->stamp.gen, j->gen) != 0 ||
        (!j->shared && j->stamp.ino != (unsigned long long)j->sb.st_ino))
        return false;
    if (j->sb.st_size == j->stamp.size &&
        (j->shared || svc_time_ns(j->sb.st_mtim) == j->stamp.mtime))
        return true;
    /* without the lock a file that grew since is accepted (an appender writes its line
     * before the stamp), and one of the stamped size with a later time: an append sets
     * the time before the size */
    return j->lock < 0 &&
           (j->sb.st_size > j->stamp.size ||
            (j->sb.st_size == j->stamp.size && svc_time_ns(j->sb.st_mtim) > j->stamp.mtime));
}

int svc_journal_open(const struct svc_store *st, struct svc_journal *j)
{
    return open_as(st, j, O_RDONLY) != 0 ? -1 : whole(j);
}

void svc_journal_stamp(struct svc_journal *j, const char *gen, const struct stat *sb)
{
    char buf[STAMP_LEN];
    memset(buf, ' ', sizeof buf);
    int n = gen ? snprintf(buf, sizeof buf, "svc-index-stamp 1 %s %llu %lld %lld", gen,
                           (unsigned long long)sb->st_ino, (long long)sb->st_size,
                           svc_time_ns(sb->st_mtim))
                : snprintf(buf, sizeof buf, "svc-index-stamp 1 none");
    if (n > 0 && n < STAMP_LEN)
        buf[n] = ' ';
    buf[STAMP_LEN - 1] = '\n';
    if (j->lock < 0 || !j->writable)
        return;
    if (pwrite(j->lock, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
        svc_logf("index: could not write the index stamp: %s", strerror(errno));
}

void svc_journal_done(struct svc_journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->lock >= 0)
        close(j->lock);
    j->fd = j->lock = -1;
}

/* Append one line to a journal that is whole. A missing or damaged one is never appended
 * to (nor created): the stamp is withdrawn and the next reader rebuilds the journal from
 * the directories, which hold this change already. */
static int append(const struct svc_store *st, const char *text)
{
    struct svc_journal j;
    int rc = svc_journal_lock(st, &j) == 0 && j.writable ? 0 : -1;
    if (rc == 0 && (open_as(st, &j, O_RDWR | O_APPEND) != 0 || !whole(&j))) {
        if (j.stamp.ok)
            svc_journal_stamp(&j, NULL, NULL);
        rc = j.fd < 0 ? 0 : -1; /* no journal yet (or deleted): the first listing builds it */
    } else if (rc == 0) {
        size_t n = strlen(text);
        ssize_t w = write(j.fd, text, n); /* one write: a line is whole or absent */
        struct stat sb;
        rc = w == (ssize_t)n && fstat(j.fd, &sb) == 0 ? 0 : -1;
        if (rc == 0 || (w > 0 && ftruncate(j.fd, (off_t)j.stamp.size) == 0 &&
                        fstat(j.fd, &sb) == 0)) /* a short write (disk full) taken back */
            svc_journal_stamp(&j, j.stamp.gen, &sb);
        else
            svc_journal_stamp(&j, NULL, NULL);
    }
    svc_journal_done(&j);
    return rc;
}

void svc_journal_note(const struct svc_store *st, const char *sid, json_object *summary)
{
    json_object *line = svc_json_new_obj("session_id", sid, NULL);
    svc_json_set(line, "summary", summary ? json_object_get(summary) : NULL);
    char *text = svc_json_dump_compact(line);
    size_t n = strlen(text);
    text = svc_xrealloc(text, n + 2);
    memcpy(text + n, "\n", 2);
    if (append(st, text) != 0)
        svc_logf("index: could not record session %s (the next listing rebuilds the index)", sid);
    free(text);
    json_object_put(line);
}

int svc_journal_lines(int fd, off_t size, off_t *at, svc_journal_line_fn *fn, void *ctx)
{
    size_t cap = 1 << 20, have = 0;
    char *buf = svc_xmalloc(cap);
    off_t pos = *at;
    int rc = 0;
    while (rc == 0 && pos + (off_t)have < size) {
        buf = svc_grow(buf, have, &cap, 1); /* doubled for one line longer than the buffer */
        size_t want = cap - have;
        if ((off_t)want > size - pos - (off_t)have)
            want = (size_t)(size - pos - (off_t)have);
        ssize_t got = pread(fd, buf + have, want, pos + (off_t)have);
        if (got <= 0) {
            rc = got < 0 ? -1 : 0;
            break;
        }
        have += (size_t)got;
        size_t used = 0;
        char *nl;
        while (rc == 0 && (nl = memchr(buf + used, '\n', have - used))) {
            size_t n = (size_t)(nl - (buf + used));
            rc = n > 0 ? fn(ctx, buf + used, n, pos + (off_t)used) : 0;
            used += n + 1;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
        pos += (off_t)used;
    }
    free(buf);
    *at = pos;
    return rc;
}

int svc_journal_line(const char *line, size_t n, off_t at, json_object **o, const char **sid,
                     json_object **summary, off_t *sum_off, size_t *sum_len)
{
    *o = NULL;
    *sum_off = -1;
    *sum_len = 0;
    if (svc_json_parse(line, n, o, NULL) != 0)
        return -2;
    *sid = svc_json_str(*o, "session_id", NULL);
    *summary = svc_json_obj(*o, "summary");
    json_object *v = NULL;
    bool has = json_object_object_get_ex(*o, "summary", &v);
    if (*sid && svc_layout_id_valid(*sid) && has && (*summary || !v)) {
        /* our lines are {"session_id":"<sid>","summary":<S>}: where S lies in the line */
        static const char key[] = ",\"summary\":";
        const char *k = memmem(line, n, key, sizeof key - 1);
        const char *sj = k ? k + sizeof key - 1 : NULL;
        if (*summary && sj && sj < line + n - 1 && *sj == '{' && line[n - 1] == '}') {
            *sum_off = at + (sj - line);
            *sum_len = (size_t)(line + n - 1 - sj);
        }
        return 1;
    }
    return svc_json_str(*o, "svc_index_generation", NULL) && at == 0 ? 0 : -1;
}

/* A new generation written from rows, a megabyte at a time. */
struct rows_out {
    int fd;
    struct svc_buf b;
};

static int rows_flush(struct rows_out *o)
{
    size_t done = 0;
    while (done < o->b.len) {
        ssize_t w = write(o->fd, o->b.data + done, o->b.len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    o->b.len = 0;
    return 0;
}

static int rows_line(void *ctx, const char *sid, const char *summary)
{
    struct rows_out *o = ctx;
    svc_buf_adds(&o->b, "{\"session_id\":\"");
    svc_buf_adds(&o->b, sid); /* ids need no escaping */
    svc_buf_adds(&o->b, "\",\"summary\":");
    svc_buf_adds(&o->b, summary);
    svc_buf_adds(&o->b, "}\n");
    return o->b.len >= ((size_t)1 << 20) ? rows_flush(o) : 0;
}

int svc_journal_write(const struct svc_store *st, struct svc_journal *j, svc_journal_rows_fn *rows,
                      void *ctx)
{
    if (j->lock < 0 || !j->writable)
        return -1;
    char *path = svc_layout_root_path(st->root, SVC_F_INDEX, NULL);
    size_t tl = strlen(path) + 64;
    char *tmp = svc_xmalloc(tl), tail[48], gen[17];
    snprintf(tail, sizeof tail, ".tmp-%ld-compact", (long)getpid());
    svc_temp_path(tmp, tl, path, tail);
    unlink(tmp); /* left by a process of this pid that died */
    struct rows_out o = {.fd =
                             open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644)};
    svc_buf_init(&o.b);
    svc_random_hex(gen, 16);
    svc_buf_printf(&o.b, "{\"svc_index_generation\":\"%s\"}\n", gen);
    int rc = o.fd >= 0 && rows(ctx, rows_line, &o) == 0 && rows_flush(&o) == 0 ? 0 : -1;
    if (o.fd >= 0 && close(o.fd) != 0)
        rc = -1;
    struct stat sb;
    if (rc == 0 && (rename(tmp, path) != 0 || lstat(path, &sb) != 0))
        rc = -1;
    if (rc != 0) {
        svc_logf("index: could not write the index (%s); listing from the directories",
                 strerror(errno));
        unlink(tmp);
    } else {
        svc_journal_stamp(j, gen, &sb);
        if (j->fd >= 0)
            close(j->fd);
        j->fd = -1;
        j->sb = sb;
        snprintf(j->gen, sizeof j->gen, "%s", gen);
        snprintf(j->stamp.gen, sizeof j->stamp.gen, "%s", gen);
        j->stamp.ino = (unsigned long long)sb.st_ino;
        j->stamp.size = (long long)sb.st_size;
        j->stamp.mtime = svc_time_ns(sb.st_mtim);
        j->stamp.ok = true;
    }
    svc_buf_free(&o.b);
    free(tmp);
    free(path);
    return rc;
}

/* A rebuild's progress, "<read> <total>" at offset 0 of its build lock file (for a list). */
void svc_journal_progress(int gate, size_t done, size_t total)
{
    char line[48];
    int n = snprintf(line, sizeof line, "%20zu %20zu\n", done, total);
    if (gate >= 0 && pwrite(gate, line, (size_t)n, 0) != n)
        return; /* a count not shown: the list's answer says less, nothing else */
}

int svc_journal_progress_of(const struct svc_store *st, size_t *done, size_t *total)
{
    char *p = svc_layout_root_path(st->root, SVC_F_INDEX_BUILD, NULL), *line = NULL;
    size_t n;
    bool ok = svc_file_read(p, &line, &n, NULL) == 0 && sscanf(line, "%zu %zu", done, total) == 2;
    free(p);
    free(line);
    return ok && *total > 0 ? 0 : -1;
}

/* Wait for the build lock fd to be let go (shared): 0, or -1 after BUILD_WAIT_S when brief. */
static int gate_wait(int fd, bool brief)
{
    for (int i = 0; brief; i++) {
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
            return 0;
        if (i == BUILD_WAIT_S * 20)
            return -1;
        usleep(50000);
    }
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR)
        ;
    return 0;
}

int svc_journal_gate(const struct svc_store *st, struct svc_journal *j, bool may_wait, bool brief)
{
    char *p = svc_layout_root_path(st->root, SVC_F_INDEX_BUILD, NULL);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    free(p);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
        svc_journal_progress(fd, 0, 0); /* the last rebuild's count is not this one's */
        return fd;
    }
    if (fd < 0)
        return -1;
    if (errno != EWOULDBLOCK || !may_wait) {
        close(fd);
        return -1;
    }
    svc_journal_unlock(j);
    int rc = gate_wait(fd, brief) == 0 ? -2 : -3;
    close(fd);
    svc_journal_relock(j);
    return rc;
}
