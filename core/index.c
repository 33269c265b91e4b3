#include "index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fold.h"
#include "fsio.h"
#include "index_int.h"
#include "jsonx.h"
#include "labels.h"
#include "listdb.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "sidecar.h"
#include "summap.h"
#include "title.h"
#include "user.h"
#include "util.h"

/* A hash from sid to position keeps applying lines O(1). */
struct slot {
    const char *sid;
    size_t pos;
};

struct index_mem svc_ix;       /* index_int.h: this process's copy of the index */
struct index_done svc_ix_done; /* index_int.h: what this process did, across resets */

/* Changes to the entries in this process, and the last one that removed entries (a walk
 * since then must be whole): svc_index_each's marks. */
static uint64_t changes = 1, removed_at;

static size_t summary_bytes(const struct entry *e)
{
    return e->heap ? strlen(e->heap) : e->len;
}

static size_t entry_bytes(const struct entry *e)
{
    return summary_bytes(e) + (e->sid ? strlen(e->sid) : 0) + 32;
}

static void entry_free(struct entry *e)
{
    svc_ix.live_bytes -= entry_bytes(e);
    free(e->sid);
    free(e->heap);
    free(e->title_lc);
    free(e->tags);
}

/* The summary's JSON text (heap, caller frees), or NULL when it cannot be read. */
char *svc_ix_entry_summary(const struct entry *e)
{
    if (e->heap)
        return svc_xstrdup(e->heap);
    if (!svc_ix.fd_open || e->off < 0)
        return NULL;
    char *buf = svc_xmalloc((size_t)e->len + 1);
    ssize_t got = pread(svc_ix.fd, buf, e->len, e->off);
    if (got != (ssize_t)e->len) {
        free(buf);
        return NULL;
    }
    buf[e->len] = '\0';
    return buf;
}

static void close_index_fd(void)
{
    if (svc_ix.fd_open)
        close(svc_ix.fd);
    svc_ix.fd_open = false;
    svc_ix.fd = -1;
}

void svc_index_reset(void)
{
    for (size_t i = 0; i < svc_ix.n; i++)
        entry_free(&svc_ix.v[i]);
    free(svc_ix.v);
    free(svc_ix.root);
    close_index_fd();
    if (svc_ix.root_fd_open)
        close(svc_ix.root_fd);
    if (svc_ix.stamp_fd_open)
        close(svc_ix.stamp_fd);
    free(svc_ix.hs); /* it points into the entries just freed */
    memset(&svc_ix, 0, sizeof svc_ix);
    removed_at = ++changes;
}

static struct entry *find(const char *sid)
{
    for (size_t i = 0; i < svc_ix.n; i++) /* linear: callers batch; n is small per call site */
        if (strcmp(svc_ix.v[i].sid, sid) == 0)
            return &svc_ix.v[i];
    return NULL;
}

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void hash_rebuild(void)
{
    free(svc_ix.hs);
    svc_ix.hcap = 1024;
    while (svc_ix.hcap < svc_ix.n * 2 + 16)
        svc_ix.hcap *= 2;
    svc_ix.hs = svc_xcalloc(svc_ix.hcap, sizeof *svc_ix.hs);
    for (size_t i = 0; i < svc_ix.n; i++) {
        size_t h = hash_str(svc_ix.v[i].sid) & (svc_ix.hcap - 1);
        while (svc_ix.hs[h].sid)
            h = (h + 1) & (svc_ix.hcap - 1);
        svc_ix.hs[h].sid = svc_ix.v[i].sid;
        svc_ix.hs[h].pos = i;
    }
}

static struct entry *lookup(const char *sid)
{
    if (!svc_ix.hs)
        return find(sid);
    size_t h = hash_str(sid) & (svc_ix.hcap - 1);
    while (svc_ix.hs[h].sid) {
        if (strcmp(svc_ix.hs[h].sid, sid) == 0)
            return &svc_ix.v[svc_ix.hs[h].pos];
        h = (h + 1) & (svc_ix.hcap - 1);
    }
    return NULL;
}

/* Owners are few and sessions many: each entry points at one shared copy of its owner's
 * id, kept for the life of the process. */
static const char *owner_intern(const char *id)
{
    static char **v;
    static size_t n;
    if (!id)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], id) == 0)
            return v[i];
    char **nv = svc_xrealloc(v, (n + 1) * sizeof *nv);
    v = nv;
    v[n] = svc_xstrdup(id);
    return v[n++];
}

/* Whether e has every tag q asks for. */
static bool tags_match(const struct entry *e, const struct svc_list_query *q)
{
    for (size_t i = 0; i < q->ntags; i++) {
        char needle[SVC_TAG_LEN_MAX * 4 + 3]; /* checked by query.c */
        snprintf(needle, sizeof needle, "\x1f%s\x1f", q->tags[i]);
        if (!e->tags || !strstr(e->tags, needle))
            return false;
    }
    return true;
}

/* Fill e from a summary; its JSON is at (off, len) of the index file when off >= 0, else
 * it is kept on the heap. */
static void entry_fill(struct entry *e, json_object *summary, off_t off, size_t len)
{
    svc_ix.live_bytes -= summary_bytes(e);
    free(e->heap);
    e->heap = NULL;
    free(e->title_lc);
    if (off >= 0 && len <= UINT32_MAX) {
        e->off = off;
        e->len = (uint32_t)len;
    } else {
        e->off = -1;
        e->len = 0;
        e->heap = svc_json_dump_compact(summary);
    }
    svc_ix.live_bytes += summary_bytes(e);
    e->title_lc = svc_fold(svc_title_search_text(summary));
    double t = 0;
    svc_time_parse_iso(svc_json_str(summary, "updated_at", ""), &t);
    e->updated = t;
    snprintf(e->status, sizeof e->status, "%s", svc_json_str(summary, "status", "idle"));
    e->archived = svc_json_bool(summary, "archived", false);
    e->pinned = svc_json_bool(summary, "pinned", false);
    e->msgs = svc_json_int(summary, "message_count", -1);
    e->owner = owner_intern(svc_user_owner(summary));
    free(e->tags);
    e->tags = svc_labels_tags_joined(svc_json_arr(summary, "tags"));
}

static void apply(const char *sid, json_object *summary, off_t off, size_t len)
{
    svc_ix_done.applied++;
    changes++;
    if (!summary)
        removed_at = changes;
    struct entry *e = lookup(sid);
    if (!summary) {
        if (e) {
            size_t pos = (size_t)(e - svc_ix.v);
            entry_free(e);
            svc_ix.v[pos] = svc_ix.v[--svc_ix.n];
            hash_rebuild();
            svc_ix.sorted = false;
        }
        return;
    }
    if (!e) {
        if (svc_ix.n == svc_ix.cap) {
            size_t cap = svc_ix.cap ? svc_ix.cap * 2 : 256;
            struct entry *nv = svc_xrealloc(svc_ix.v, cap * sizeof *nv);
            svc_ix.v = nv;
            svc_ix.cap = cap;
        }
        e = &svc_ix.v[svc_ix.n++];
        memset(e, 0, sizeof *e);
        e->sid = svc_xstrdup(sid);
        svc_ix.live_bytes += strlen(e->sid) + 32;
        if (!svc_ix.hs || svc_ix.n * 2 > svc_ix.hcap)
            hash_rebuild();
        else {
            size_t h = hash_str(e->sid) & (svc_ix.hcap - 1);
            while (svc_ix.hs[h].sid)
                h = (h + 1) & (svc_ix.hcap - 1);
            svc_ix.hs[h].sid = e->sid;
            svc_ix.hs[h].pos = svc_ix.n - 1;
        }
    }
    entry_fill(e, summary, off, len);
    e->changed = changes;
    e->seen = true;
    svc_ix.sorted = false;
}

/* The root lock, exclusive. *writable tells whether the stamp can be written through it (a
 * read-only root still gets a lock when the lock file exists). -1 when there is none. */
static int lock_root(const struct svc_store *st, bool *writable)
{
    char *p = svc_store_root_path(st, SVC_F_INDEX_LOCK);
    if (!p)
        return -1;
    *writable = true;
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == ENOSPC)) {
        *writable = false;
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    free(p);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

static long long mtime_ns(const struct stat *sb)
{
    return (long long)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
}

/* On a shared root another client changes these files behind this host's page cache (a
 * FUSE client may keep it across opens): what is cached of fd is dropped before a read. */
static void drop_cached(const struct svc_store *st, int fd)
{
    if (st->shared && fd >= 0)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void stamp_parse(int fd, struct stamp *s)
{
    memset(s, 0, sizeof *s);
    char buf[STAMP_LEN + 1];
    ssize_t n = fd >= 0 ? pread(fd, buf, STAMP_LEN, 0) : -1;
    if (n <= 0)
        return;
    buf[n] = '\0';
    s->ok = sscanf(buf, "svc-index-stamp 1 %16[0-9a-f] %llu %lld %lld", s->gen, &s->ino, &s->size,
                   &s->mtime) == 4 &&
            strlen(s->gen) == 16;
}

/* The stamp as it is now, read without the lock (a torn read only sends the reader to the
 * locked path). */
void svc_ix_stamp_peek(const struct svc_store *st, struct stamp *s)
{
    /* the lock file is kept open between looks; one that lost its name (removed, or
     * replaced by a rename) is opened anew by name */
    struct stat sb;
    if (svc_ix.stamp_fd_open && (fstat(svc_ix.stamp_fd, &sb) != 0 || sb.st_nlink == 0)) {
        close(svc_ix.stamp_fd);
        svc_ix.stamp_fd_open = false;
    }
    if (!svc_ix.stamp_fd_open) {
        char *p = svc_store_root_path(st, SVC_F_INDEX_LOCK);
        int fd = p ? open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        free(p);
        if (fd < 0) {
            stamp_parse(-1, s);
            return;
        }
        svc_ix.stamp_fd = fd;
        svc_ix.stamp_fd_open = true;
    }
    drop_cached(st, svc_ix.stamp_fd);
    stamp_parse(svc_ix.stamp_fd, s);
}

/* Record (gen, sb) as the whole index, or (gen NULL) that there is none to trust. */
static void stamp_write(int lockfd, const char *gen, const struct stat *sb)
{
    char buf[STAMP_LEN];
    memset(buf, ' ', sizeof buf);
    int n = gen ? snprintf(buf, sizeof buf, "svc-index-stamp 1 %s %llu %lld %lld", gen,
                           (unsigned long long)sb->st_ino, (long long)sb->st_size, mtime_ns(sb))
                : snprintf(buf, sizeof buf, "svc-index-stamp 1 none");
    if (n > 0 && n < STAMP_LEN)
        buf[n] = ' ';
    buf[STAMP_LEN - 1] = '\n';
    if (pwrite(lockfd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
        svc_logf("index: could not write the index stamp: %s", strerror(errno));
}

/* index_open with open flags (O_RDONLY, or O_RDWR | O_APPEND for the appender). */
static int index_open_as(const struct svc_store *st, struct idxfile *f, int flags)
{
    f->fd = -1;
    f->gen[0] = '\0';
    char *path = svc_store_root_path(st, SVC_F_INDEX);
    if (!path)
        return -1;
    f->fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (f->fd < 0)
        return -1;
    f->shared = st->shared;
    drop_cached(st, f->fd);
    if (fstat(f->fd, &f->sb) != 0 || !S_ISREG(f->sb.st_mode)) {
        close(f->fd);
        f->fd = -1;
        return -1;
    }
    /* Which file is this? Inode numbers are reused across compactions, so every compacted
     * file starts with a line naming its random generation; appends never touch line 1. */
    char head[80];
    ssize_t hn = pread(f->fd, head, sizeof head - 1, 0);
    static const char key[] = "{\"svc_index_generation\":\"";
    if (hn > 0) {
        head[hn] = '\0';
        if (strncmp(head, key, sizeof key - 1) == 0)
            snprintf(f->gen, sizeof f->gen, "%.16s", head + sizeof key - 1);
    }
    return 0;
}

int svc_ix_index_open(const struct svc_store *st, struct idxfile *f)
{
    return index_open_as(st, f, O_RDONLY);
}

/* index_open for the unlocked look of refresh: when the name still gives the file this
 * process holds open (svc_ix.fd), one lstat says so (an inode number cannot be reused while
 * its file is held open) and f->fd stays -1; any other file is opened. */
static int index_look(const struct svc_store *st, struct idxfile *f)
{
    if (svc_ix.fd_open) {
        char *path = svc_store_root_path(st, SVC_F_INDEX);
        struct stat sb;
        bool held = path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
                    sb.st_ino == svc_ix.ino && sb.st_dev == svc_ix.dev &&
                    sb.st_size >= svc_ix.offset;
        free(path);
        if (held) {
            f->fd = -1;
            f->shared = st->shared;
            f->sb = sb;
            snprintf(f->gen, sizeof f->gen, "%s", svc_ix.gen);
            return 0;
        }
    }
    return svc_ix_index_open(st, f);
}

void svc_ix_index_close(struct idxfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* Whether the file is the one the stamp describes. Without the lock (exact false) a file
 * that grew since is accepted too: an appender writes its line before the stamp. */
bool svc_ix_stamp_matches(const struct stamp *s, const struct idxfile *f, bool exact, bool shared)
{
    /* on a shared root another client may see another inode number or mtime for the same
     * file: only the generation in the file and its size are compared there */
    if (!s->ok || strlen(f->gen) != 16 || strcmp(s->gen, f->gen) != 0 ||
        (!shared && s->ino != (unsigned long long)f->sb.st_ino))
        return false;
    if (f->sb.st_size == s->size && (shared || mtime_ns(&f->sb) == s->mtime))
        return true;
    return !exact && f->sb.st_size > s->size;
}

/* Append one line, under the root lock, to an index file that is whole. A missing or
 * damaged file is never appended to (nor created): the stamp is withdrawn and the next
 * reader rebuilds the index from the directories, which hold this change already. */
int svc_ix_append_line(const struct svc_store *st, const char *sid, json_object *summary)
{
    json_object *line = json_object_new_object();
    svc_json_set_str(line, "session_id", sid);
    svc_json_set(line, "summary", summary ? json_object_get(summary) : NULL);
    char *text = svc_json_dump_compact(line);
    bool writable = false;
    int lock = lock_root(st, &writable);
    int rc = -1;
    struct idxfile f = {.fd = -1};
    if (lock < 0 || !writable)
        goto out;
    struct stamp s;
    drop_cached(st, lock);
    stamp_parse(lock, &s);
    /* opened once, for the check and the append */
    if (index_open_as(st, &f, O_RDWR | O_APPEND) != 0) {
        if (s.ok)
            stamp_write(lock, NULL, NULL);
        rc = 0; /* no index yet (or deleted): the first listing builds it from the sidecars */
        goto out;
    }
    if (!svc_ix_stamp_matches(&s, &f, true, st->shared)) {
        if (s.ok)
            stamp_write(lock, NULL, NULL);
        goto out;
    }
    int fd = f.fd;
    size_t n = strlen(text);
    char *buf = svc_xmalloc(n + 1);
    if (buf) {
        memcpy(buf, text, n);
        buf[n] = '\n';
        ssize_t w = write(fd, buf, n + 1); /* one write: a line is whole or absent */
        struct stat sb;
        if (w == (ssize_t)(n + 1) && fstat(fd, &sb) == 0) {
            stamp_write(lock, s.gen, &sb);
            rc = 0;
        } else if (w > 0 && ftruncate(fd, (off_t)s.size) == 0 && fstat(fd, &sb) == 0) {
            stamp_write(lock, s.gen, &sb); /* a short write (disk full) taken back */
        } else {
            stamp_write(lock, NULL, NULL);
        }
        free(buf);
    } else {
        stamp_write(lock, NULL, NULL);
    }
out:
    svc_ix_index_close(&f);
    if (lock >= 0)
        close(lock);
    free(text);
    json_object_put(line);
    return rc;
}

void svc_index_update(const struct svc_store *st, const char *sid, json_object *summary)
{
    if (svc_ix_append_line(st, sid, summary) != 0)
        svc_logf("index: could not record session %s (the next listing rebuilds the index)", sid);
}

/* Apply one index line found at file offset at; *garbage when it is not one of ours. */
static void apply_line(const char *line, size_t n, off_t at, bool *garbage)
{
    json_object *o = NULL;
    if (svc_json_parse(line, n, &o, NULL) != 0) {
        *garbage = true;
        return;
    }
    const char *sid = svc_json_str(o, "session_id", NULL);
    json_object *sum = svc_json_obj(o, "summary");
    json_object *sumv = NULL;
    bool has_sum = json_object_object_get_ex(o, "summary", &sumv);
    if (sid && svc_id_valid(sid) && has_sum && (sum || !sumv)) {
        /* our lines are {"session_id":"<sid>","summary":<S>}: point at S in the file */
        static const char key[] = ",\"summary\":";
        const char *k = memmem(line, n, key, sizeof key - 1);
        const char *sj = k ? k + sizeof key - 1 : NULL;
        if (sum && sj && sj < line + n - 1 && *sj == '{' && line[n - 1] == '}')
            apply(sid, sum, at + (sj - line), (size_t)(line + n - 1 - sj));
        else
            apply(sid, sum, -1, 0);
    } else if (!svc_json_str(o, "svc_index_generation", NULL) || at != 0) {
        *garbage = true;
    }
    json_object_put(o);
}

static void entries_clear(void)
{
    removed_at = ++changes;
    for (size_t i = 0; i < svc_ix.n; i++)
        entry_free(&svc_ix.v[i]);
    svc_ix.n = 0;
    hash_rebuild();
    svc_ix.sorted = false;
}

/* Read the lines of f that this process has not read yet (all of them when f is another
 * file than the one read before); f's descriptor is taken or closed. *garbage for a line
 * that is not one of ours, *torn when the file ends inside a line. */
static void read_lines(struct idxfile *f, bool *garbage, bool *torn)
{
    if (!svc_ix.fd_open || f->sb.st_ino != svc_ix.ino || f->sb.st_size < svc_ix.offset ||
        strcmp(f->gen, svc_ix.gen) != 0) {
        snprintf(svc_ix.gen, sizeof svc_ix.gen, "%s", f->gen);
        entries_clear();
        svc_ix.offset = 0;
        svc_ix.ino = f->sb.st_ino;
        svc_ix.dev = f->sb.st_dev;
        close_index_fd();
        svc_ix.fd = f->fd;
        svc_ix.fd_open = true;
    } else if (f->fd >= 0) {
        close(f->fd); /* the same file as svc_ix.fd */
    }
    f->fd = -1;
    if (f->sb.st_size == svc_ix.offset)
        return; /* nothing appended since the last look */
    if (f->shared)
        posix_fadvise(svc_ix.fd, 0, 0, POSIX_FADV_DONTNEED);
    size_t cap = 1 << 20, have = 0;
    char *buf = svc_xmalloc(cap);
    off_t pos = svc_ix.offset; /* file offset of buf[0] */
    for (;;) {
        if (have == cap) { /* one line longer than the buffer */
            char *nb = svc_xrealloc(buf, cap * 2);
            buf = nb;
            cap *= 2;
        }
        ssize_t got = pread(svc_ix.fd, buf + have, cap - have, pos + (off_t)have);
        if (got <= 0)
            break;
        have += (size_t)got;
        size_t done = 0;
        for (;;) {
            char *nl = memchr(buf + done, '\n', have - done);
            if (!nl)
                break; /* a line still being written, or the rest of it in the next chunk */
            size_t n = (size_t)(nl - (buf + done));
            if (n > 0)
                apply_line(buf + done, n, pos + (off_t)done, garbage);
            done += n + 1;
        }
        memmove(buf, buf + done, have - done);
        have -= done;
        pos += (off_t)done;
    }
    if (have > 0)
        *torn = true;
    svc_ix.offset = pos;
    free(buf);
}

/* Summary of one session from its sidecar or, failing that, its native files. */
json_object *svc_ix_summary_of(const struct svc_store *st, const char *sid)
{
    json_object *sc = NULL;
    struct svc_sess h;
    bool got = svc_sess_open_store(st, sid, &h, NULL) == 0 &&
               (svc_sidecar_read(&h, &sc, NULL) == 0 || svc_sidecar_derive(&h, &sc, NULL) == 0);
    /* the count past the sidecar's when another program (Strands) appended messages: what
     * the listing's recount (svc_ix_recounted) and the detail show */
    int64_t trusted = got ? svc_json_int(sc, "message_count", -1) : -1, cnt = 0, next = 0;
    int64_t *ids = NULL;
    if (trusted >= 0 && strcmp(svc_json_str(sc, "status", ""), "running") != 0 &&
        svc_sess_message_count(&h, trusted, &cnt, &next, &ids, NULL) == 0 && cnt > trusted)
        svc_json_set_int(sc, "message_count", cnt);
    free(ids);
    svc_sess_close(&h);
    if (!got)
        return NULL;
    json_object *sum = svc_sidecar_summary(sc);
    json_object_put(sc);
    return sum;
}

/* Write the entries as a fresh index file and stamp it; the entries then point into it.
 * Under the root lock. When the file cannot be written (disk full, read-only root), the
 * entries stay on the heap, complete, and the stamp is withdrawn so that nobody trusts an
 * older file. */
static void sort_entries(void);

static void write_out(const struct svc_store *st, int lockfd, bool writable)
{
    /* newest first, the order of a listing: the first pages' summaries lie together at
     * the start of the file and a page is read with one pread (list_page) */
    sort_entries();
    char gen[17];
    svc_random_hex(gen, 16);
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_printf(&b, "{\"svc_index_generation\":\"%s\"}\n", gen);
    off_t *at = svc_xcalloc(svc_ix.n ? svc_ix.n : 1, sizeof *at);
    uint32_t *len = svc_xcalloc(svc_ix.n ? svc_ix.n : 1, sizeof *len);
    bool ok = writable;
    for (size_t i = 0; ok && i < svc_ix.n; i++) {
        char *sum = svc_ix_entry_summary(&svc_ix.v[i]);
        if (!sum) {
            ok = false; /* never write an index that lost a session */
            break;
        }
        svc_buf_adds(&b, "{\"session_id\":\"");
        svc_buf_adds(&b, svc_ix.v[i].sid); /* ids need no escaping */
        svc_buf_adds(&b, "\",\"summary\":");
        at[i] = (off_t)b.len;
        len[i] = (uint32_t)strlen(sum);
        svc_buf_adds(&b, sum);
        svc_buf_adds(&b, "}\n");
        free(sum);
    }
    char *path = svc_store_root_path(st, SVC_F_INDEX);
    struct svc_err err = {0};
    bool written = false;
    if (ok && path && svc_file_write_atomic(path, b.data, b.len, false, &err) == 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat sb;
        if (fd >= 0 && fstat(fd, &sb) == 0 && (size_t)sb.st_size == b.len) {
            stamp_write(lockfd, gen, &sb);
            close_index_fd();
            svc_ix.fd = fd;
            svc_ix.fd_open = true;
            svc_ix.ino = sb.st_ino;
            svc_ix.dev = sb.st_dev;
            svc_ix.offset = sb.st_size;
            snprintf(svc_ix.gen, sizeof svc_ix.gen, "%s", gen);
            for (size_t i = 0; i < svc_ix.n; i++) {
                svc_ix.live_bytes -= summary_bytes(&svc_ix.v[i]);
                free(svc_ix.v[i].heap);
                svc_ix.v[i].heap = NULL;
                svc_ix.v[i].off = at[i];
                svc_ix.v[i].len = len[i];
                svc_ix.live_bytes += summary_bytes(&svc_ix.v[i]);
            }
            written = true;
        } else if (fd >= 0) {
            close(fd);
        }
    } else if (ok && err.message[0]) {
        svc_logf("index: could not write the index (%s); listing from the directories",
                 err.message);
    }
    if (!written && writable)
        stamp_write(lockfd, NULL, NULL);
    free(path);
    free(at);
    free(len);
    svc_buf_free(&b);
}

/* A session a rebuild read without the root lock, with its mark from before the read. */
struct scanned {
    char *sid;
    ino_t ino; /* its directory's, from readdir */
    struct svc_sess_mark m;
};

static int cmp_ino(const void *a, const void *b)
{
    const struct scanned *x = a, *y = b;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The root's session names, in inode order: on a cold disk, reading the directories in
 * that order rather than readdir's hash order reads the inode tables nearly in sequence. */
static int scan_names(const struct svc_store *st, struct scanned **sc, size_t *nsc)
{
    DIR *d = opendir(st->root);
    if (!d)
        return -1;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *sid = svc_store_session_of(de->d_name);
        if (!sid)
            continue;
        if (*nsc == cap) {
            cap = cap ? cap * 2 : 256;
            *sc = svc_xrealloc(*sc, cap * sizeof **sc);
        }
        (*sc)[*nsc].sid = svc_xstrdup(sid);
        (*sc)[(*nsc)++].ino = de->d_ino;
    }
    closedir(d);
    if (*nsc > 1)
        qsort(*sc, *nsc, sizeof **sc, cmp_ino);
    return 0;
}

/* SVC_TEST_INDEX_SCAN_GATE=<path>, in test builds only (docs/TESTING.md): a read of the
 * directories creates <path>.waiting and waits for <path> once it has read every session. */
static void test_scan_gate(void)
{
#ifdef SVC_TEST_HOOKS
    const char *g = getenv("SVC_TEST_INDEX_SCAN_GATE");
    char *w = NULL;
    if (!g)
        return;
    svc_xasprintf(&w, "%s.waiting", g);
    int fd = open(w, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    free(w);
    while (access(g, F_OK) != 0)
        usleep(10000);
#endif
}

/* A rebuild's progress, kept in its build lock file (fd) so that a list it holds up can say
 * how far it is: "<read> <total>" at offset 0, written every PROGRESS_EVERY sessions. */
#define PROGRESS_EVERY 1000

static void progress_put(int fd, size_t done, size_t total)
{
    char line[48];
    int n = snprintf(line, sizeof line, "%20zu %20zu\n", done, total);
    if (fd >= 0 && pwrite(fd, line, (size_t)n, 0) != n)
        return; /* a count not shown: the list's answer says less, nothing else */
}

/* The progress of the rebuild another process holds the build lock for: 0, or -1 when it
 * has not counted the root's sessions yet (a total of 0). */
static int progress_get(const struct svc_store *st, size_t *done, size_t *total)
{
    char *p = svc_store_root_path(st, SVC_F_INDEX_BUILD);
    int fd = p ? open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    free(p);
    char line[48] = "";
    ssize_t n = fd >= 0 ? pread(fd, line, sizeof line - 1, 0) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    line[n] = '\0';
    return sscanf(line, "%zu %zu", done, total) == 2 && *total > 0 ? 0 : -1;
}

/* Read every session directory into the entries; *sc keeps those read, each with its mark.
 * bfd: the build lock file, for the progress (-1: none). */
static int scan_dirs(const struct svc_store *st, int bfd, struct scanned **sc, size_t *nsc)
{
    if (scan_names(st, sc, nsc) != 0)
        return -1;
    size_t kept = 0;
    for (size_t i = 0; i < *nsc; i++) {
        if (i % PROGRESS_EVERY == 0)
            progress_put(bfd, i, *nsc);
        struct scanned *s = &(*sc)[i];
        json_object *sum =
            svc_store_session_mark(st, s->sid, &s->m) == 0 ? svc_ix_summary_of(st, s->sid) : NULL;
        if (sum) {
            apply(s->sid, sum, -1, 0);
            (*sc)[kept++] = *s;
        } else {
            free(s->sid);
        }
        json_object_put(sum);
        if (i % 100000 == 99999)
            svc_logf("index: reading the directories: %zu of %zu sessions", i + 1, *nsc);
    }
    progress_put(bfd, *nsc, *nsc);
    *nsc = kept;
    test_scan_gate();
    return 0;
}

/* Under the root lock again after scan_dirs: the sessions added since are read, those
 * whose mark moved are read again, those gone are dropped. */
static int scan_catch_up(const struct svc_store *st, const struct scanned *sc, size_t nsc)
{
    for (size_t i = 0; i < svc_ix.n; i++)
        svc_ix.v[i].seen = false;
    DIR *d = opendir(st->root);
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *sid = svc_store_session_of(de->d_name);
        struct entry *e = sid ? lookup(sid) : NULL;
        if (e)
            e->seen = true;
        else if (sid && svc_store_session_exists(st, sid)) {
            json_object *sum = svc_ix_summary_of(st, sid);
            if (sum)
                apply(sid, sum, -1, 0);
            json_object_put(sum);
        }
    }
    closedir(d);
    for (size_t i = 0; i < nsc; i++) {
        struct entry *e = lookup(sc[i].sid);
        struct svc_sess_mark m;
        if (!e || !e->seen ||
            (svc_store_session_mark(st, sc[i].sid, &m) == 0 && svc_store_mark_same(&m, &sc[i].m)))
            continue;
        json_object *sum = svc_ix_summary_of(st, sc[i].sid);
        if (sum)
            apply(sc[i].sid, sum, -1, 0);
        else
            e->seen = false;
        json_object_put(sum);
    }
    for (size_t i = 0; i < svc_ix.n;)
        if (!svc_ix.v[i].seen)
            apply(svc_ix.v[i].sid, NULL, -1, 0); /* moves the last entry here */
        else
            i++;
    return 0;
}

static void relock(int fd)
{
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

/* How long a list waits for another process's rebuild before it answers index_building:
 * below nginx's 120 s, so that two lists cannot hold both workers for a whole rebuild. */
#define BUILD_WAIT_S 10

/* Set while a list refreshes the index: it waits BUILD_WAIT_S at most (build_wait). */
static bool wait_briefly;

/* Wait for the build lock fd to be let go (shared): 0, or -1 after BUILD_WAIT_S when
 * wait_briefly (a list), never otherwise. */
static int build_wait(int fd)
{
    for (int i = 0; wait_briefly; i++) {
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

/* The build lock, taken before the directories are read with the root lock (lockfd) let go:
 * its descriptor, -1 when it cannot be had (a read-only root: read without it), -2 when
 * another process held it and it was waited for (its index is then there to read), -3 when
 * that wait ran out (build_wait). */
static int build_lock(const struct svc_store *st, int lockfd, bool may_wait)
{
    char *p = svc_store_root_path(st, SVC_F_INDEX_BUILD);
    int fd = p ? open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644) : -1;
    free(p);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
        progress_put(fd, 0, 0); /* the last rebuild's count is not this one's */
        return fd;
    }
    if (fd < 0)
        return -1;
    if (errno != EWOULDBLOCK || !may_wait) {
        close(fd);
        return -1;
    }
    flock(lockfd, LOCK_UN);
    int rc = build_wait(fd) == 0 ? -2 : -3;
    close(fd);
    relock(lockfd);
    return rc;
}

/* Read the directories into the entries. With the root lock (lockfd) they are read without
 * it, so that writers never wait for a read of every session (they append nothing while no
 * index is stamped: their changes are in the directories); what changed meanwhile is read
 * again under it (scan_catch_up). 1 when another process's rebuild was waited for instead,
 * 2 when that wait ran out. */
static int read_dirs(const struct svc_store *st, int lockfd, bool may_wait)
{
    int b = lockfd >= 0 ? build_lock(st, lockfd, may_wait) : -1;
    if (b == -2 || b == -3)
        return b == -2 ? 1 : 2;
    struct scanned *sc = NULL;
    size_t nsc = 0;
    if (lockfd >= 0)
        flock(lockfd, LOCK_UN);
    int rc = scan_dirs(st, b, &sc, &nsc);
    if (lockfd >= 0) {
        relock(lockfd);
        if (rc == 0)
            rc = scan_catch_up(st, sc, nsc);
    }
    for (size_t i = 0; i < nsc; i++)
        free(sc[i].sid);
    free(sc);
    if (b >= 0)
        close(b);
    return rc;
}

/* Rebuild the index from the directories under the root lock (lockfd, or -1 when there is
 * no lock to take: then nothing is written): 0, -1 when the root cannot be read, 1 when
 * another process's rebuild was waited for (may_wait) and its index is there to read, 2
 * when it is still going after the wait of a list (build_wait). */
static int rebuild(const struct svc_store *st, int lockfd, bool writable, bool may_wait)
{
    struct stat rs;
    entries_clear();
    close_index_fd();
    svc_ix.offset = 0;
    svc_ix.ino = 0;
    svc_ix.gen[0] = '\0';
    if (stat(st->root, &rs) != 0) {
        svc_ix.loaded = false;
        return errno == ENOENT ? 0 : -1;
    }
    int rc = read_dirs(st, lockfd, may_wait);
    if (rc != 0)
        return rc;
    svc_ix.root_mtime = rs.st_mtim;
    svc_ix.loaded = true;
    if (lockfd >= 0)
        write_out(st, lockfd, writable);
    svc_ix_done.unkept_last = lockfd < 0 || !writable;
    if (!svc_ix_done.unkept_last)
        svc_logf("index: rebuilt from the directories (%zu sessions)", svc_ix.n);
    else if (svc_ix_done.unkept++ == 0)
        svc_logf("index: the session root %s cannot be written: each listing reads its "
                 "directories (%zu sessions now); no index is kept until it can be",
                 st->root, svc_ix.n);
    svc_ix_done.rebuilds++;
    svc_metrics_index_rebuild();
    return 0;
}

/* Whether the index file is whole by its stamp, read on (under the root lock, lock). */
static bool read_whole(const struct svc_store *st, int lock)
{
    struct stamp s;
    drop_cached(st, lock);
    stamp_parse(lock, &s);
    struct idxfile f = {.fd = -1};
    bool whole = false;
    if (lock >= 0 && svc_ix_index_open(st, &f) == 0 &&
        svc_ix_stamp_matches(&s, &f, true, st->shared)) {
        bool garbage = false, torn = false;
        read_lines(&f, &garbage, &torn);
        whole = !garbage && !torn && svc_ix.offset == s.size;
    }
    svc_ix_index_close(&f);
    return whole;
}

/* The locked path: the index file is checked against its stamp once more, with writers
 * excluded, and read on when whole, else rebuilt (or read once another process's rebuild
 * is done). Returns 0, or -1 when the root cannot be read or (errno EAGAIN) another
 * process's rebuild outlasted a list's wait. force rebuilds in any case. */
int svc_ix_refresh_locked(const struct svc_store *st, bool force)
{
    bool writable = false;
    int lock = lock_root(st, &writable);
    int rc = 0;
    if (force || !read_whole(st, lock)) {
        rc = rebuild(st, lock, writable, !force);
        if (rc == 1 && !read_whole(st, lock))
            rc = rebuild(st, lock, writable, false);
        if (rc == 1)
            rc = 0;
        if (rc == 2) {
            errno = EAGAIN;
            rc = -1;
        }
    }
    if (lock >= 0)
        close(lock);
    return rc;
}

struct added {
    char *sid;
    double updated;
};

static int cmp_added(const void *a, const void *b)
{
    const struct added *x = a, *y = b;
    if (x->updated != y->updated)
        return x->updated < y->updated ? 1 : -1;
    return strcmp(x->sid, y->sid);
}

/* Rescan directory names; derive summaries for sessions the index does not know. */
static int rescan(const struct svc_store *st)
{
    struct added *add = NULL;
    size_t nadd = 0, capadd = 0;
    DIR *d = opendir(st->root);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    for (size_t i = 0; i < svc_ix.n; i++)
        svc_ix.v[i].seen = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *sid = svc_store_session_of(de->d_name);
        if (!sid)
            continue;
        struct entry *e = lookup(sid);
        if (e) {
            e->seen = true;
            continue;
        }
        if (!svc_store_session_exists(st, sid))
            continue;
        json_object *sum = svc_ix_summary_of(st, sid);
        if (sum) {
            apply(sid, sum, -1, 0); /* kept on the heap as compact text until written */
            if (nadd == capadd) {
                capadd = capadd ? capadd * 2 : 16;
                add = svc_xrealloc(add, capadd * sizeof *add);
            }
            add[nadd].sid = svc_xstrdup(sid);
            add[nadd].updated = lookup(sid)->updated;
            nadd++;
            svc_ix_done.scanned++;
        }
        json_object_put(sum);
    }
    closedir(d);
    /* recorded newest first, the order of a listing: the lines of a page of new sessions
     * lie together in the file (list_page reads them with one pread) */
    if (nadd > 1)
        qsort(add, nadd, sizeof *add, cmp_added);
    for (size_t i = 0; i < nadd; i++) {
        const struct entry *e = lookup(add[i].sid);
        json_object *raw = e && e->heap ? svc_json_new_raw(e->heap) : NULL;
        if (raw)
            svc_ix_append_line(st, add[i].sid, raw);
        json_object_put(raw);
        free(add[i].sid);
    }
    free(add);
    for (size_t i = 0; i < svc_ix.n;) {
        if (!svc_ix.v[i].seen) {
            svc_ix_append_line(st, svc_ix.v[i].sid, NULL);
            apply(svc_ix.v[i].sid, NULL, -1, 0); /* moves the last entry here */
        } else {
            i++;
        }
    }
    return 0;
}

/* Compaction: under the root lock, after catching up with every appended line. */
static void write_compacted(const struct svc_store *st)
{
    bool writable = false;
    int lock = lock_root(st, &writable);
    if (lock < 0 || !writable) {
        if (lock >= 0)
            close(lock);
        return;
    }
    struct stamp s;
    drop_cached(st, lock);
    stamp_parse(lock, &s);
    struct idxfile f = {.fd = -1};
    bool whole = false;
    if (svc_ix_index_open(st, &f) == 0 && svc_ix_stamp_matches(&s, &f, true, st->shared)) {
        bool garbage = false, torn = false;
        read_lines(&f, &garbage, &torn);
        whole = !garbage && !torn && svc_ix.offset == s.size;
    }
    svc_ix_index_close(&f);
    if (whole)
        write_out(st, lock, writable);
    else
        rebuild(st, lock, writable, false);
    close(lock);
}

/* A compacted journal being written from rows (svc_ix_compact_from): lines gathered in b,
 * written to fd a megabyte at a time. */
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

/* Write a new generation of the journal at path from rows, through a temporary file renamed
 * over it: its generation in gen, its stat in *sb. 0, or -1 with nothing replaced. */
static int write_rows(const char *path, svc_ix_rows_fn *rows, char gen[17], struct stat *sb)
{
    size_t tl = strlen(path) + 64;
    char *tmp = svc_xmalloc(tl), tail[48];
    snprintf(tail, sizeof tail, ".tmp-%ld-compact", (long)getpid());
    svc_temp_path(tmp, tl, path, tail);
    unlink(tmp); /* left by a process of this pid that died */
    struct rows_out o = {.fd =
                             open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644)};
    svc_buf_init(&o.b);
    svc_random_hex(gen, 16);
    svc_buf_printf(&o.b, "{\"svc_index_generation\":\"%s\"}\n", gen);
    int rc = o.fd >= 0 && rows(rows_line, &o) == 0 && rows_flush(&o) == 0 ? 0 : -1;
    if (o.fd >= 0 && close(o.fd) != 0)
        rc = -1;
    if (rc == 0 && (rename(tmp, path) != 0 || lstat(path, sb) != 0))
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    svc_buf_free(&o.b);
    free(tmp);
    return rc;
}

/* Compaction from rows kept elsewhere (a listing database being built, index_db.c), under
 * the root lock, when the journal is still generation gen and whole by its stamp: the
 * lines past *at go to line first (then the rows hold every line), then rows writes one
 * line a session as a new generation, stamped. 0 with nf's gen and sb the new file's; 1
 * when the journal moved on (another generation, a line not ours); 2 when it cannot be
 * written (a read-only root, a failed write: left as it was, read up to *at); -1 when
 * line failed. */
int svc_ix_compact_from(const struct svc_store *st, const char *gen, off_t *at,
                        svc_ix_line_fn *line, void *ctx, svc_ix_rows_fn *rows, struct idxfile *nf)
{
    bool writable = false;
    int lock = lock_root(st, &writable);
    struct stamp s;
    drop_cached(st, lock);
    stamp_parse(lock, &s);
    struct idxfile f = {.fd = -1};
    int rc = lock >= 0 && !writable ? 2 : 1;
    if (rc == 1 && lock >= 0 && svc_ix_index_open(st, &f) == 0 &&
        svc_ix_stamp_matches(&s, &f, true, st->shared) && strcmp(f.gen, gen) == 0 &&
        *at <= f.sb.st_size) {
        rc = svc_ix_lines(f.fd, f.sb.st_size, at, line, ctx);
        if (rc == 0 && *at != f.sb.st_size)
            rc = 1;
    }
    svc_ix_index_close(&f);
    char *path = rc == 0 ? svc_store_root_path(st, SVC_F_INDEX) : NULL;
    if (rc == 0 && (!path || write_rows(path, rows, nf->gen, &nf->sb) != 0)) {
        svc_logf("index: could not compact the journal: %s", strerror(errno));
        rc = 2;
    }
    if (rc == 0)
        stamp_write(lock, nf->gen, &nf->sb);
    free(path);
    if (lock >= 0)
        close(lock);
    return rc;
}

int svc_ix_refresh(const struct svc_store *st)
{
    if (!svc_ix.root || strcmp(svc_ix.root, st->root) != 0) {
        svc_index_reset();
        svc_ix.root = svc_xstrdup(st->root);
    }
    struct stat rs;
    if (stat(st->root, &rs) != 0) {
        if (errno != ENOENT)
            return -1;
        entries_clear(); /* no root yet: no sessions */
        svc_ix.loaded = false;
        return 0;
    }
    /* the fast path: the file is the stamped one (or grew since): read what is new */
    struct stamp s;
    svc_ix_stamp_peek(st, &s);
    struct idxfile f = {.fd = -1};
    bool whole = false;
    if (index_look(st, &f) == 0 && svc_ix_stamp_matches(&s, &f, false, st->shared)) {
        bool garbage = false, torn = false;
        read_lines(&f, &garbage, &torn);
        whole = !garbage && !torn && svc_ix.offset >= s.size;
    }
    svc_ix_index_close(&f);
    if (!whole && svc_ix_refresh_locked(st, false) != 0)
        return -1;
    /* the root as it was before the index was read serves below (an older mtime only
     * means one more rescan); after a rebuild, as it is now */
    if (!whole && stat(st->root, &rs) != 0)
        return 0;
    if (!svc_ix.root_fd_open || rs.st_dev != svc_ix.root_dev || rs.st_ino != svc_ix.root_ino) {
        /* (re)open the root: the per-row stat of a page walks from it, not from / */
        if (svc_ix.root_fd_open)
            close(svc_ix.root_fd);
        svc_ix.root_fd = open(st->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat fs;
        svc_ix.root_fd_open = svc_ix.root_fd >= 0 && fstat(svc_ix.root_fd, &fs) == 0 &&
                              fs.st_dev == rs.st_dev && fs.st_ino == rs.st_ino;
        if (!svc_ix.root_fd_open && svc_ix.root_fd >= 0)
            close(svc_ix.root_fd);
        svc_ix.root_dev = rs.st_dev;
        svc_ix.root_ino = rs.st_ino;
    }
    if (!svc_ix.loaded || rs.st_mtim.tv_sec != svc_ix.root_mtime.tv_sec ||
        rs.st_mtim.tv_nsec != svc_ix.root_mtime.tv_nsec) {
        /* a session directory was added, removed or swapped (svc import) */
        if (rescan(st) != 0)
            return -1;
        svc_ix.root_mtime = rs.st_mtim;
        svc_ix.loaded = true;
    }
    /* compact when most of the log is superseded lines; not while this list stands in for
     * a database being built: the build compacts it (from another generation it starts
     * again) */
    if (svc_ix.fd_open && !svc_ix_db.building &&
        (size_t)svc_ix.offset > 2 * svc_ix.live_bytes + 65536)
        write_compacted(st);
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->updated != y->updated)
        return x->updated < y->updated ? 1 : -1;
    return strcmp(x->sid, y->sid);
}

char *svc_ix_cursor_encode(const struct entry *e)
{
    char *raw = NULL;
    svc_xasprintf(&raw, "%.6f|%s", e->updated, e->sid);
    size_t n = strlen(raw);
    unsigned char *out = svc_xmalloc(4 * ((n + 2) / 3) + 1);
    if (out) {
        int len = EVP_EncodeBlock(out, (unsigned char *)raw, (int)n);
        for (int i = 0; i < len; i++) /* url-safe, no padding */
            out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
        while (len > 0 && out[len - 1] == '=')
            out[--len] = '\0';
    }
    free(raw);
    return (char *)out;
}

int svc_ix_cursor_decode(const char *c, double *updated, char *sid, size_t sidsz)
{
    size_t n = strlen(c);
    if (n == 0 || n > 400)
        return -1;
    char *tmp = svc_xmalloc(n + 4);
    for (size_t i = 0; i < n; i++)
        tmp[i] = c[i] == '-' ? '+' : c[i] == '_' ? '/' : c[i];
    while (n % 4)
        tmp[n++] = '=';
    tmp[n] = '\0';
    unsigned char raw[400];
    int len = EVP_DecodeBlock(raw, (unsigned char *)tmp, (int)n);
    free(tmp);
    if (len <= 0)
        return -1;
    raw[len < (int)sizeof raw ? len : (int)sizeof raw - 1] = '\0';
    char *bar = strchr((char *)raw, '|');
    if (!bar)
        return -1;
    *bar = '\0';
    char *end;
    *updated = strtod((char *)raw, &end);
    if (*end || !isfinite(*updated))
        return -1;
    /* strip decode padding zeros */
    snprintf(sid, sidsz, "%s", bar + 1);
    if (!svc_id_valid(sid))
        return -1;
    return 0;
}

/* Whether a session listed as running has a live run (its run lock is held). */
bool svc_ix_run_alive(const struct svc_store *st, const char *sid)
{
    struct svc_sess h;
    bool alive = svc_sess_open_store(st, sid, &h, NULL) == 0 && svc_lock_run_held(h.dir);
    svc_sess_close(&h);
    return alive;
}

/* The summary of sid (listed with msgs messages and status) with message_count recounted,
 * when a message file beyond its count exists (written by another program, e.g. a Strands
 * agent); NULL when the count holds. One stat per listed session; the index learns the new
 * summary. */
json_object *svc_ix_recounted(const struct svc_store *st, const char *sid, int64_t msgs,
                              const char *status)
{
    if (msgs < 0 || strcmp(status, "running") == 0)
        return NULL;
    /* named on the stack: the handle and its heap paths only for a row that changed */
    char path[PATH_MAX];
    struct stat sb;
    bool rel = svc_ix.root_fd_open;
    if (!svc_store_message_path_in(st, sid, msgs, rel ? SVC_FROM_ROOT : SVC_FROM_ABS, path,
                                   sizeof path))
        return NULL;
    if ((rel ? fstatat(svc_ix.root_fd, path, &sb, AT_SYMLINK_NOFOLLOW) : lstat(path, &sb)) != 0)
        return NULL; /* the count holds */
    json_object *sum = svc_ix_summary_of(st, sid);
    int64_t *ids = NULL, cnt = 0, next = 0;
    struct svc_sess h;
    if (!sum || svc_sess_open_store(st, sid, &h, NULL) != 0) {
        json_object_put(sum);
        return NULL;
    }
    int rc = svc_sess_message_count(&h, -1, &cnt, &next, &ids, NULL);
    svc_sess_close(&h);
    free(ids);
    if (rc != 0) {
        json_object_put(sum);
        return NULL;
    }
    svc_json_set_int(sum, "message_count", cnt);
    svc_index_update(st, sid, sum);
    return sum;
}

static void sort_entries(void)
{
    if (svc_ix.sorted)
        return;
    if (svc_ix.n > 1)
        qsort(svc_ix.v, svc_ix.n, sizeof *svc_ix.v, cmp_entry);
    hash_rebuild();
    svc_ix.sorted = true;
}

void svc_index_warm(const struct svc_store *st)
{
    if (st->index_dir) {
        /* nothing loaded: the database is built (here when small, else in the background)
         * and closed before the pool forks, a connection being no process's but one's */
        int lk = -1;
        if (svc_ix_db_ready(st, &lk) == 0)
            svc_ix_db_release(lk);
        svc_ix_db.live = false;
        svc_ix_db.retry_at = 0; /* the workers try for themselves */
        svc_listdb_close();
        return;
    }
    unsigned long rebuilt = svc_ix_done.rebuilds, made = svc_ix_done.scanned;
    if (svc_ix_refresh(st) == 0 &&
        (svc_ix_done.rebuilds != rebuilt || svc_ix_done.scanned != made) && svc_ix.fd_open) {
        /* A rebuild parsed every sidecar, a rescan those of the sessions the index lacked
         * (written by another program since): their leftovers lie between the entries,
         * pages that can neither be shared usefully nor given back (127 MB RSS a process at
         * 100k sessions, against 26 MB loaded from the file; a worker's first listing after
         * 9,000 added sessions copied 13 MB of them). Load the file it wrote instead. */
        svc_index_reset();
        svc_ix_refresh(st);
    }
    sort_entries();
#ifdef __GLIBC__
    /* Loading leaves the heap strewn with freed chunks between live ones (parsed lines,
     * the summaries moved into the file) in glibc's unsorted list. Each process sorts that
     * list at its next allocations, up to 10,000 chunks a malloc, writing into every chunk:
     * after the fork every worker would copy the master's heap page by page (measured: 82
     * MB private a worker at 100k sessions, after one health request). Sorted here, once
     * per load, by allocations that no free chunk fits, the heap stays shared; the free
     * pages go back to the system. */
    if (svc_ix_done.applied != svc_ix_done.trimmed_at) {
        for (int i = 0; i < 64; i++) {
            void *volatile p = malloc((size_t)4 << 20);
            free(p);
        }
        malloc_trim(0);
        svc_ix_done.trimmed_at = svc_ix_done.applied;
    }
#endif
}

#define RUN_GAP 4096

struct page_ref {
    off_t off;
    uint32_t len;
    int k; /* position on the page */
};

static int cmp_page_off(const void *a, const void *b)
{
    const struct page_ref *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Read the summaries of the page's entries that are in the index file: text[k] points at
 * page[k]'s JSON inside the returned buffer (caller frees), or stays NULL when it is on the
 * heap or its run could not be read (then the caller reads it on its own). */
static char *read_page(const struct entry **page, int np, const char **text)
{
    if (!svc_ix.fd_open || np == 0)
        return NULL;
    struct page_ref *by = svc_xcalloc((size_t)np, sizeof *by);
    int nf = 0;
    for (int k = 0; k < np; k++)
        if (!page[k]->heap && page[k]->off >= 0)
            by[nf++] = (struct page_ref){.off = page[k]->off, .len = page[k]->len, .k = k};
    qsort(by, (size_t)nf, sizeof *by, cmp_page_off);
    /* the runs, and the bytes they span */
    size_t total = 0;
    for (int i = 0; i < nf;) {
        off_t lo = by[i].off, hi = lo + (off_t)by[i].len;
        for (i++; i < nf && by[i].off <= hi + RUN_GAP; i++)
            hi = by[i].off + (off_t)by[i].len > hi ? by[i].off + (off_t)by[i].len : hi;
        total += (size_t)(hi - lo);
    }
    char *buf = svc_xmalloc(total ? total : 1);
    size_t at = 0;
    for (int i = 0; i < nf;) {
        int first = i;
        off_t lo = by[i].off, hi = lo + (off_t)by[i].len;
        for (i++; i < nf && by[i].off <= hi + RUN_GAP; i++)
            hi = by[i].off + (off_t)by[i].len > hi ? by[i].off + (off_t)by[i].len : hi;
        size_t n = (size_t)(hi - lo);
        if (pread(svc_ix.fd, buf + at, n, lo) == (ssize_t)n)
            for (int j = first; j < i; j++)
                text[by[j].k] = buf + at + (by[j].off - lo);
        at += n;
    }
    free(by);
    return buf;
}

/* One page from the entries. Returns 0, -1 with err, or 1 when a summary could not be read
 * back from the index file (changed under this process): nothing is answered then. */
/* Where the page starts: the first entry after the cursor's key (0 without a cursor). */
static int page_start(const struct svc_list_query *q, size_t *start, struct svc_err *err)
{
    double cu = 0;
    char csid[SVC_ID_MAX + 2] = "";
    *start = 0;
    if (!q->cursor || !*q->cursor)
        return 0;
    if (svc_ix_cursor_decode(q->cursor, &cu, csid, sizeof csid) != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "cursor", "cursor is not valid");
    struct entry key = {.sid = csid, .updated = cu};
    size_t lo = 0, hi = svc_ix.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_entry(&svc_ix.v[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *start = lo;
    return 0;
}

/* Whether entry e passes the query's filters (qlc: the folded title search, or NULL). */
static bool entry_matches(const struct entry *e, const struct svc_list_query *q, const char *qlc)
{
    if (q->archived_only ? !e->archived : (e->archived && !q->include_archived))
        return false;
    if (q->status && *q->status && strcmp(q->status, e->status) != 0)
        return false;
    if (qlc && !strstr(e->title_lc, qlc))
        return false;
    if (q->owner && (!e->owner || strcmp(q->owner, e->owner) != 0))
        return false;
    if (q->pinned && *q->pinned && (strcmp(q->pinned, "true") == 0) != e->pinned)
        return false;
    return tags_match(e, q);
}

/* The summary of a page's entry e as raw JSON (text: its line read with the page, or
 * NULL), recounted when another program added a message file since (unless q says not);
 * NULL if unreadable. */
static json_object *page_summary(const struct svc_store *st, const struct svc_list_query *q,
                                 const struct entry *e, const char *text)
{
    json_object *raw = q->stored_counts ? NULL : svc_ix_recounted(st, e->sid, e->msgs, e->status);
    if (raw)
        return raw;
    if (text)
        return e->len >= 2 && text[0] == '{' && text[e->len - 1] == '}'
                   ? svc_json_new_raw_len(text, e->len)
                   : NULL;
    char *sum = svc_ix_entry_summary(e);
    size_t n = sum ? strlen(sum) : 0;
    raw = n >= 2 && sum[0] == '{' && sum[n - 1] == '}' ? svc_json_new_raw(sum) : NULL;
    free(sum);
    return raw;
}

static int list_page(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                     json_object **stale, struct svc_err *err)
{
    sort_entries();
    size_t start;
    if (page_start(q, &start, err) != 0)
        return -1;
    char *qlc = q->q && *q->q ? svc_fold(q->q) : NULL;
    int limit =
        q->limit > 0 && q->limit <= SVC_LIST_LIMIT_MAX ? (int)q->limit : SVC_LIST_LIMIT_DEFAULT;
    const struct entry **page = svc_xcalloc((size_t)limit, sizeof *page);
    int np = 0;
    bool more = false;
    for (size_t i = start; i < svc_ix.n && !more; i++) {
        if (!entry_matches(&svc_ix.v[i], q, qlc))
            continue;
        if (np == limit)
            more = true;
        else
            page[np++] = &svc_ix.v[i];
    }
    free(qlc);
    /* their summaries, read in as few preads as the file allows: a page's lines sit
     * together (a compacted file is in listing order, lines appended since are at its end),
     * so lines less than RUN_GAP apart are read as one run */
    const char **text = svc_xcalloc((size_t)limit, sizeof *text);
    char *span = read_page(page, np, text);
    json_object *list = json_object_new_array();
    const struct entry *last = NULL;
    bool unreadable = false;
    for (int k = 0; k < np && !unreadable; k++) {
        const struct entry *e = page[k];
        json_object *raw = page_summary(st, q, e, text[k]);
        if (!raw) {
            svc_logf("index: the summary of session %s could not be read", e->sid);
            unreadable = true;
            continue;
        }
        json_object_array_add(list, raw);
        last = e;
        if (stale && strcmp(e->status, "running") == 0 && !svc_ix_run_alive(st, e->sid)) {
            if (!*stale)
                *stale = json_object_new_array();
            json_object_array_add(*stale, json_object_new_string(e->sid));
        }
    }
    free(span);
    free(text);
    free(page);
    if (unreadable) {
        json_object_put(list);
        if (stale && *stale) {
            json_object_put(*stale);
            *stale = NULL;
        }
        return 1;
    }
    json_object *res = json_object_new_object();
    svc_json_set(res, "sessions", list);
    char *cur = more && last ? svc_ix_cursor_encode(last) : NULL;
    svc_json_set_str(res, "next_cursor", cur);
    free(cur);
    *out = res;
    return 0;
}

/* index_building, with how far the other process's rebuild is when it has counted. */
static int building_err(const struct svc_store *st, struct svc_err *err)
{
    size_t done, total;
    if (progress_get(st, &done, &total) != 0)
        return svc_err_set(err, SVC_E_INDEX_BUILDING,
                           "another process is rebuilding the session index from the "
                           "directories; retry in a few seconds");
    return svc_err_set(err, SVC_E_INDEX_BUILDING,
                       "another process is rebuilding the session index from the directories "
                       "(%zu of %zu sessions read); retry in a few seconds",
                       done, total);
}

int svc_index_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err)
{
    *out = NULL;
    if (stale)
        *stale = NULL;
    svc_ix_db.building = false;
    int lk = -1;
    int ready = st->index_dir ? svc_ix_db_ready(st, &lk) : -1;
    if (ready == 0) {
        int rc = svc_ix_db_list(st, q, out, stale, err);
        svc_ix_db_release(lk);
        if (rc != 1)
            return rc;
        svc_ix_db.live = false;
        svc_listdb_close(); /* read anew (or rebuilt) at the next look */
    }
    svc_ix_db.building = ready == 1;
    wait_briefly = true;
    int refreshed = svc_ix_refresh(st);
    wait_briefly = false;
    if (refreshed != 0 && errno == EAGAIN)
        return building_err(st, err);
    if (refreshed != 0)
        return svc_err_errno(err, "list sessions");
    int rc = list_page(st, q, out, stale, err);
    if (rc != 1)
        return rc;
    /* the file changed under this process after its check: rebuild, answer from that */
    if (svc_ix_refresh_locked(st, true) != 0)
        return svc_err_errno(err, "list sessions");
    rc = list_page(st, q, out, stale, err);
    if (rc == 1)
        return svc_err_set(err, SVC_E_IO, "the session index could not be read");
    return rc;
}

int svc_index_each(const struct svc_store *st, uint64_t *mark, svc_index_each_fn *fn, void *ctx)
{
    int lk = -1;
    if (st->index_dir && svc_ix_db_ready(st, &lk) == 0) {
        int rc = svc_listdb_each(mark, fn, ctx);
        svc_ix_db_release(lk);
        return rc;
    }
    if (svc_ix_refresh(st) != 0)
        return -1;
    if (*mark == changes)
        return 0;
    /* a mark above this copy's changes is the database's: walk whole */
    bool whole = *mark == 0 || removed_at > *mark || *mark > changes;
    for (size_t i = 0; i < svc_ix.n; i++)
        if (whole || svc_ix.v[i].changed > *mark)
            fn(ctx, svc_ix.v[i].sid, svc_ix.v[i].updated, svc_ix.v[i].msgs, svc_ix.v[i].archived);
    *mark = changes;
    return whole ? 1 : 0;
}

json_object *svc_index_summary(const char *sid)
{
    if (svc_ix_db.live)
        return svc_listdb_summary(sid);
    const struct entry *e = lookup(sid);
    char *text = e ? svc_ix_entry_summary(e) : NULL;
    json_object *o = text ? json_tokener_parse(text) : NULL;
    free(text);
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

int svc_index_rebuild(const struct svc_store *st, struct svc_err *err)
{
    if (!svc_ix.root || strcmp(svc_ix.root, st->root) != 0) {
        svc_index_reset();
        svc_ix.root = svc_xstrdup(st->root);
    }
    if (svc_ix_refresh_locked(st, true) != 0)
        return svc_err_errno(err, "rebuild the index");
    if (!st->index_dir)
        return 0;
    /* the database follows the journal just written: built now, by this process */
    const char *path = svc_ix_db_path(st);
    svc_ix_db.live = false;
    svc_listdb_close();
    if (svc_ix_db_mkdir(path) != 0)
        return svc_err_errno(err, "build the listing database");
    int b = svc_ix_db_lock(path, ".build", LOCK_EX);
    int rc = b >= 0 ? svc_ix_db_build(st, path) : -1;
    if (b >= 0)
        close(b);
    return rc < 0 ? svc_err_errno(err, "build the listing database") : 0;
}

/* Call fn for each line of fd between *at and size, in order, with its offset, until one
 * returns nonzero (returned); *at gets the end of the last whole line read, so a line still
 * being written (or torn) is left at *at. Memory: one line, or 1 MB. -1 on a read error. */
int svc_ix_lines(int fd, off_t size, off_t *at, svc_ix_line_fn *fn, void *ctx)
{
    size_t cap = 1 << 20, have = 0;
    char *buf = svc_xmalloc(cap);
    off_t pos = *at;
    int rc = 0;
    while (rc == 0 && pos + (off_t)have < size) {
        if (have == cap) { /* one line longer than the buffer */
            buf = svc_xrealloc(buf, cap * 2);
            cap *= 2;
        }
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

/* What svc_index_verify learns of the journal: the last summary of each session in a map on
 * disk (summap.h), so that its memory does not grow with the number of sessions; and the
 * sessions to look at again under the root lock (suspects: a mismatch seen without it, or
 * a line appended since the map was read). */
struct verify {
    struct svc_summap *map;
    char *why;
    size_t whysz;
    char **sus;
    size_t nsus, capsus;
    bool note;                /* lines read go to the suspects too (the catch-up under the lock) */
    size_t found, found_rows; /* sessions that matched; suspects that have a row */
};

static void suspect(struct verify *v, const char *sid)
{
    if (v->nsus == v->capsus) {
        v->capsus = v->capsus ? v->capsus * 2 : 64;
        v->sus = svc_xrealloc(v->sus, v->capsus * sizeof *v->sus);
    }
    v->sus[v->nsus++] = svc_xstrdup(sid);
}

/* One journal line into the map, as a listing would apply it: 0, 1 (why says what is wrong
 * with it), -1. */
static int verify_line(void *ctx, const char *line, size_t n, off_t at)
{
    struct verify *v = ctx;
    json_object *o = NULL;
    if (svc_json_parse(line, n, &o, NULL) != 0) {
        snprintf(v->why, v->whysz, "line at byte %lld of the index is not JSON", (long long)at);
        return 1;
    }
    const char *sid = svc_json_str(o, "session_id", NULL);
    int rc = 0;
    if (sid) {
        json_object *sum = svc_json_obj(o, "summary");
        size_t len = 0;
        const char *text =
            sum ? json_object_to_json_string_length(sum, JSON_C_TO_STRING_PLAIN, &len) : NULL;
        rc = svc_summap_put(v->map, sid, text, len);
        if (v->note)
            suspect(v, sid);
    }
    json_object_put(o);
    return rc;
}

/* Every session directory against the map, without the root lock (writers go on): the
 * sessions that differ become suspects; progress every 1,000. */
static int verify_dirs(const struct svc_store *st, struct verify *v, svc_index_progress_fn *pf,
                       void *pctx)
{
    DIR *d = opendir(st->root);
    if (!d)
        return -1;
    struct dirent *de;
    size_t seen = 0;
    while ((de = readdir(d))) {
        const char *sid = svc_store_session_of(de->d_name);
        if (!sid || !svc_store_session_exists(st, sid))
            continue;
        json_object *want = svc_ix_summary_of(st, sid);
        json_object *have = want ? svc_summap_get(v->map, sid) : NULL;
        if (want && have && json_object_equal(have, want))
            v->found++;
        else if (want) {
            suspect(v, sid);
            v->found_rows += have != NULL;
        }
        json_object_put(want);
        json_object_put(have);
        if (pf && ++seen % 1000 == 0)
            pf(pctx, seen);
    }
    closedir(d);
    test_scan_gate();
    return 0;
}

struct extras {
    const struct svc_store *st;
    struct verify *v;
};

static void suspect_if_gone(void *ctx, const char *sid)
{
    struct extras *x = ctx;
    if (!svc_store_session_exists(x->st, sid))
        suspect(x->v, sid);
}

/* Rows of the map whose session is gone (an extra row), as suspects: only looked for when
 * the counts say there is one (a session added or removed meanwhile says so too). */
static int suspect_extras(const struct svc_store *st, struct verify *v)
{
    int64_t listed = svc_summap_count(v->map);
    if (listed < 0)
        return -1;
    if ((size_t)listed == v->found + v->found_rows)
        return 0;
    return svc_summap_each(v->map, suspect_if_gone, &(struct extras){st, v});
}
/* Look again, under the root lock after the catch-up, at each suspect: 0 when every one
 * agrees now, 3 (why says which differs), -1. */
static int verify_suspects(const struct svc_store *st, struct verify *v)
{
    size_t extras = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < v->nsus; i++) {
        const char *sid = v->sus[i];
        json_object *want = svc_store_session_exists(st, sid) ? svc_ix_summary_of(st, sid) : NULL;
        json_object *have = svc_summap_get(v->map, sid);
        if (want && !have)
            snprintf(v->why, v->whysz, "session %s is missing from the index", sid);
        else if (want && !json_object_equal(have, want))
            snprintf(v->why, v->whysz, "the index holds an outdated summary of session %s", sid);
        else if (!want && have)
            extras++;
        rc = want && (!have || !json_object_equal(have, want)) ? 3 : 0;
        json_object_put(want);
        json_object_put(have);
    }
    int64_t listed = svc_summap_count(v->map);
    if (rc == 0 && extras)
        snprintf(v->why, v->whysz, "the index lists %lld sessions, the root holds %lld",
                 (long long)listed, (long long)listed - (long long)extras);
    return rc == 0 && extras ? 3 : listed < 0 ? -1 : rc;
}

static void verify_free(struct verify *v)
{
    for (size_t i = 0; i < v->nsus; i++)
        free(v->sus[i]);
    free(v->sus);
    svc_summap_close(v->map);
}

/* The journal under the root lock: whole by its stamp, read into the map up to *at (0, 1 or
 * 2 with why, -1); f stays open for the catch-up. */
static int verify_journal(const struct svc_store *st, int lock, struct idxfile *f, struct verify *v,
                          off_t *at)
{
    struct stamp s;
    drop_cached(st, lock);
    stamp_parse(lock, &s);
    if (svc_ix_index_open(st, f) != 0) {
        snprintf(v->why, v->whysz, "there is no index file (the next listing builds it)");
        return 2;
    }
    if (!svc_ix_stamp_matches(&s, f, true, st->shared)) {
        snprintf(v->why, v->whysz, "the index file is not the one its last writer left (stamp)");
        return 1;
    }
    if (!(v->map = svc_summap_open())) {
        svc_logf("index: cannot check the index (no temporary database)");
        return -1;
    }
    int rc = svc_ix_lines(f->fd, f->sb.st_size, at, verify_line, v);
    if (rc == 0 && *at < f->sb.st_size) {
        snprintf(v->why, v->whysz, "the index file ends inside a line (byte %lld)", (long long)*at);
        rc = 1;
    }
    return rc;
}

/* Under the root lock again: the lines appended since the map was read (the same file, by
 * its stamp), then the suspects; a writer between its sidecar and its line is waited for
 * three times. 0, 3 with why, 4 when the file was rewritten meanwhile, -1. */
static int verify_catch_up(const struct svc_store *st, int lock, struct idxfile *f,
                           struct verify *v, off_t *at)
{
    int rc = 3;
    for (int attempt = 0; rc == 3 && attempt < 4; attempt++) {
        if (attempt) {
            flock(lock, LOCK_UN);
            usleep(20000);
        }
        relock(lock);
        struct stamp s;
        drop_cached(st, lock);
        stamp_parse(lock, &s);
        struct stat sb;
        if (!s.ok || strcmp(s.gen, f->gen) != 0 || fstat(f->fd, &sb) != 0 || s.size < *at) {
            snprintf(v->why, v->whysz, "the index file was rewritten during the check");
            return 4;
        }
        v->note = true;
        if (svc_ix_lines(f->fd, (off_t)s.size, at, verify_line, v) != 0)
            return -1;
        rc = verify_suspects(st, v);
    }
    return rc;
}

/* The journal read under the root lock, the directories compared without it, what differs
 * looked at again under it: writers wait for the read of the journal, not for the walk. */
static int verify_once(const struct svc_store *st, char *why, size_t whysz,
                       svc_index_progress_fn *pf, void *pctx)
{
    bool writable = false;
    int lock = lock_root(st, &writable);
    struct idxfile f = {.fd = -1};
    struct verify v = {.why = why, .whysz = whysz};
    off_t at = 0;
    int rc = lock < 0 ? -1 : verify_journal(st, lock, &f, &v, &at);
    if (rc == 0) {
        flock(lock, LOCK_UN);
        rc = verify_dirs(st, &v, pf, pctx);
        if (rc == 0)
            rc = suspect_extras(st, &v);
        if (rc == 0)
            rc = verify_catch_up(st, lock, &f, &v, &at);
    }
    verify_free(&v);
    svc_ix_index_close(&f);
    if (lock >= 0)
        close(lock);
    return rc;
}

int svc_index_verify(const struct svc_store *st, char *why, size_t whysz,
                     svc_index_progress_fn *progress, void *ctx)
{
    int rc = verify_once(st, why, whysz, progress, ctx);
    for (int i = 0; i < 2 && rc == 4; i++) /* compacted or rebuilt meanwhile: again */
        rc = verify_once(st, why, whysz, progress, ctx);
    return rc == 3 || rc == 4 ? 1 : rc;
}

void svc_index_resync(const struct svc_store *st, const char *sid)
{
    json_object *sum = svc_store_session_exists(st, sid) ? svc_ix_summary_of(st, sid) : NULL;
    svc_index_update(st, sid, sum);
    json_object_put(sum);
}

int64_t svc_index_count(const struct svc_store *st)
{
    int lk = -1;
    if (st->index_dir && svc_ix_db_ready(st, &lk) == 0) {
        int64_t n = svc_listdb_count();
        svc_ix_db_release(lk);
        return n;
    }
    return svc_ix_refresh(st) == 0 ? (int64_t)svc_ix.n : -1;
}
