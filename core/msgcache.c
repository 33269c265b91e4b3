#include "msgcache.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define NBUCKETS 4096u /* a power of two */

struct entry {
    struct entry *next;
    dev_t dev;
    ino_t ino;
    int64_t id;
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
    uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev ^ ((uint64_t)id << 17);
    h ^= h >> 29;
    return (unsigned)(h & (NBUCKETS - 1));
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool entry_matches(const struct entry *e, const struct stat *st, int64_t id)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->id == id;
}

bool svc_msgcache_get(const struct stat *st, int64_t id, const char **text, size_t *len)
{
    for (struct entry *e = mc.buckets[bucket_of(st->st_dev, st->st_ino, id)]; e; e = e->next) {
        if (!entry_matches(e, st, id))
            continue;
        if (e->size != st->st_size || !same_time(e->mtime, st->st_mtim) ||
            !same_time(e->ctime, st->st_ctim))
            return false; /* changed since: the next put replaces it */
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
    int64_t age = ((int64_t)now.tv_sec - (int64_t)st->st_ctim.tv_sec) * 1000000000LL +
                  ((int64_t)now.tv_nsec - (int64_t)st->st_ctim.tv_nsec);
    return age >= SVC_MSGCACHE_SETTLE_NS;
}

static void unlink_entry(struct entry **slot)
{
    struct entry *e = *slot;
    *slot = e->next;
    mc.bytes -= e->len;
    mc.entries--;
    free(e);
}

bool svc_msgcache_put(const struct stat *st, int64_t id, const char *text, size_t len)
{
    struct entry **head = &mc.buckets[bucket_of(st->st_dev, st->st_ino, id)];
    for (struct entry **p = head; *p; p = &(*p)->next)
        if (entry_matches(*p, st, id)) {
            unlink_entry(p); /* an older rendering of this file */
            break;
        }
    if (len > SVC_MSGCACHE_MAX_BYTES / 8 || !settled(st))
        return false;
    if (mc.bytes + len > SVC_MSGCACHE_MAX_BYTES)
        svc_msgcache_clear();
    struct entry *e = svc_xmalloc(sizeof *e + len + 1);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->id = id;
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
