#include "msgcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dirwatch.h"
#include "util.h"

#define NBUCKETS 4096u /* a power of two */

struct entry {
    struct entry *next;
    dev_t dev; /* the messages directory's */
    ino_t ino;
    int64_t id;
    int64_t gen; /* the watch generation it was last checked under; 0: none */
    ino_t file;  /* the file's inode, size and times when rendered */
    off_t size;
    struct timespec mtime, ctime;
    size_t len;
    char text[]; /* len bytes and a NUL */
};

static struct {
    struct entry *buckets[NBUCKETS];
    size_t bytes, entries; /* held */
} mc;

static unsigned bucket_of(dev_t dev, ino_t ino, int64_t id)
{
    /* the directory is the same for a whole page: the id must reach the low bits */
    uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32) ^ (uint64_t)id) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (unsigned)(h & (NBUCKETS - 1));
}

bool svc_msgcache_ts_eq(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool entry_matches(const struct entry *e, const struct svc_msgcache_dir *d, int64_t id)
{
    return e->dev == d->dev && e->ino == d->ino && e->id == id;
}

bool svc_msgcache_begin(const char *sid, int dirfd, bool watch, struct svc_msgcache_dir *d)
{
    struct stat st;
    d->gen = 0;
    if (dirfd < 0 || fstat(dirfd, &st) != 0)
        return false;
    d->dev = st.st_dev;
    d->ino = st.st_ino;
    char key[160];
    if (!watch || (size_t)snprintf(key, sizeof key, "m:%s", sid) >= sizeof key)
        return true;
    svc_dirwatch_poll(); /* every change so far has ended the generation */
    if ((d->gen = svc_dirwatch_unchanged(key, &st)) == 0)
        d->gen = svc_dirwatch_arm_content_ignoring(key, dirfd, &st, NULL);
    return true;
}

/* Whether e's file is the one st describes (one link: no other directory's name reaches
 * it, so every write to it is an event of this directory). */
static bool same_file(const struct entry *e, const struct stat *st)
{
    return e->file == st->st_ino && e->size == st->st_size &&
           svc_msgcache_ts_eq(e->mtime, st->st_mtim) && svc_msgcache_ts_eq(e->ctime, st->st_ctim);
}

bool svc_msgcache_get(const struct svc_msgcache_dir *d, int64_t id, const struct stat *st,
                      const char **text, size_t *len)
{
    for (struct entry *e = mc.buckets[bucket_of(d->dev, d->ino, id)]; e; e = e->next) {
        if (!entry_matches(e, d, id))
            continue;
        if (st ? !same_file(e, st) : d->gen <= 0 || e->gen != d->gen)
            return false; /* changed since, or not known: the next put replaces it */
        if (st)
            e->gen = st->st_nlink == 1 ? d->gen : 0;
        *text = e->text;
        *len = e->len;
        return true;
    }
    return false;
}

/* Whether the file's last change is old enough that a later change must show in ctime. */
static bool settled(const struct stat *st)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return svc_time_ns(now) - svc_time_ns(st->st_ctim) >= SVC_MSGCACHE_SETTLE_NS;
}

static void unlink_entry(struct entry **slot)
{
    struct entry *e = *slot;
    *slot = e->next;
    mc.bytes -= e->len;
    mc.entries--;
    free(e);
}

bool svc_msgcache_put(const struct svc_msgcache_dir *d, int64_t id, const struct stat *st,
                      const char *text, size_t len)
{
    struct entry **head = &mc.buckets[bucket_of(d->dev, d->ino, id)];
    for (struct entry **p = head; *p; p = &(*p)->next)
        if (entry_matches(*p, d, id)) {
            unlink_entry(p); /* an older rendering of this file */
            break;
        }
    if (len > SVC_MSGCACHE_MAX_BYTES / 8 || !settled(st))
        return false;
    if (mc.bytes + len > SVC_MSGCACHE_MAX_BYTES)
        svc_msgcache_clear();
    struct entry *e = svc_xmalloc(sizeof *e + len + 1);
    e->dev = d->dev;
    e->ino = d->ino;
    e->id = id;
    e->gen = st->st_nlink == 1 ? d->gen : 0;
    e->file = st->st_ino;
    e->size = st->st_size;
    e->mtime = st->st_mtim;
    e->ctime = st->st_ctim;
    e->len = len;
    memcpy(e->text, text, len);
    e->text[len] = '\0';
    e->next = *head;
    *head = e;
    mc.bytes += len;
    mc.entries++;
    return true;
}

void svc_msgcache_clear(void)
{
    for (unsigned i = 0; i < NBUCKETS; i++)
        while (mc.buckets[i])
            unlink_entry(&mc.buckets[i]);
}

size_t svc_msgcache_bytes(void)
{
    return mc.bytes;
}

size_t svc_msgcache_entries(void)
{
    return mc.entries;
}
