#include "wincache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "dirwatch.h"
#include "layout.h"
#include "util.h"

#define NBUCKETS 4096u  /* a power of two */
#define KEY_PREFIX "w:" /* dirwatch keys of this cache: a session id has no ':' */

struct entry {
    struct entry *next;
    int64_t life;
    int64_t id;
    json_object *msg; /* a reference */
    size_t bytes;
    bool pending; /* claimed: waits for the one event of its own rename */
    char sid[];   /* NUL-terminated */
};

static struct {
    struct entry *buckets[NBUCKETS];
    size_t bytes, entries; /* held */
    bool registered;       /* the dirwatch listener and the fork handler */
} wc;

static unsigned bucket_of(const char *sid, int64_t id)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)id;
    for (; *sid; sid++)
        h = (h ^ (unsigned char)*sid) * 1099511628211ull;
    return (unsigned)((h ^ (h >> 31)) & (NBUCKETS - 1));
}

static void unlink_entry(struct entry **slot)
{
    struct entry *e = *slot;
    *slot = e->next;
    json_object_put(e->msg);
    wc.bytes -= e->bytes;
    wc.entries--;
    free(e);
}

void svc_wincache_clear(void)
{
    for (unsigned i = 0; i < NBUCKETS; i++)
        while (wc.buckets[i])
            unlink_entry(&wc.buckets[i]);
}

static void drop_session(const char *sid)
{
    for (unsigned i = 0; i < NBUCKETS; i++)
        for (struct entry **p = &wc.buckets[i]; *p;) {
            if (strcmp((*p)->sid, sid) == 0)
                unlink_entry(p);
            else
                p = &(*p)->next;
        }
}

static struct entry **find(const char *sid, int64_t id)
{
    for (struct entry **p = &wc.buckets[bucket_of(sid, id)]; *p; p = &(*p)->next)
        if ((*p)->id == id && strcmp((*p)->sid, sid) == 0)
            return p;
    return NULL;
}

static void drop(const char *sid, int64_t id)
{
    struct entry **p = find(sid, id);
    if (p)
        unlink_entry(p);
}

/* dirwatch's listener: an entry of a watched messages directory changed (name), or the
 * directory's life ended (name NULL), or every life did (key NULL) */
static void on_change(const char *key, const char *name, uint32_t mask)
{
    if (!key) {
        svc_wincache_clear();
        return;
    }
    if (strncmp(key, KEY_PREFIX, sizeof KEY_PREFIX - 1) != 0)
        return;
    const char *sid = key + sizeof KEY_PREFIX - 1;
    if (!name) {
        drop_session(sid);
        return;
    }
    int64_t id = svc_layout_message_id_of(name);
    struct entry **p = id >= 0 ? find(sid, id) : NULL;
    if (!p)
        return;
    if ((*p)->pending && mask == IN_MOVED_TO)
        (*p)->pending = false; /* its own rename: what it holds is what the file holds */
    else
        unlink_entry(p);
}

int64_t svc_wincache_begin(const char *sid, int dirfd)
{
    if (!wc.registered) {
        svc_dirwatch_on_change(on_change);
        /* the parent's lives are the parent's (dirwatch forgets them too) */
        pthread_atfork(NULL, NULL, svc_wincache_clear);
        wc.registered = true;
    }
    struct stat st;
    char key[160];
    if (dirfd < 0 || fstat(dirfd, &st) != 0 ||
        (size_t)snprintf(key, sizeof key, KEY_PREFIX "%s", sid) >= sizeof key)
        return 0;
    svc_dirwatch_poll(); /* every change so far has dropped its entries */
    return svc_dirwatch_content_life(key, dirfd, &st);
}

json_object *svc_wincache_get(const char *sid, int64_t life, int64_t id)
{
    struct entry **p = life > 0 ? find(sid, id) : NULL;
    if (!p)
        return NULL;
    if ((*p)->pending || (*p)->life != life) {
        unlink_entry(p); /* the event of its rename never came, or an earlier life's */
        return NULL;
    }
    return (*p)->msg;
}

void svc_wincache_put(const char *sid, int64_t life, int64_t id, json_object *msg,
                      const struct stat *st, bool claim)
{
    drop(sid, id); /* an entry of an earlier life */
    /* a file another directory's name reaches can be written with no event here */
    if (life <= 0 || !msg || !st || st->st_nlink != 1)
        return;
    size_t bytes = (size_t)st->st_size;
    /* what the parsed message takes on the heap: json-c's objects and tables are several
     * times the file's text (measured: about 9 bytes per byte of a short message) */
    bytes = bytes * SVC_WINCACHE_HEAP_PER_BYTE + 256;
    if (bytes > SVC_WINCACHE_MAX_BYTES / 8)
        return;
    if (wc.bytes + bytes > SVC_WINCACHE_MAX_BYTES)
        svc_wincache_clear();
    size_t n = strlen(sid) + 1;
    struct entry *e = svc_xmalloc(sizeof *e + n);
    e->life = life;
    e->id = id;
    e->msg = json_object_get(msg);
    e->bytes = bytes;
    e->pending = claim;
    memcpy(e->sid, sid, n);
    unsigned b = bucket_of(sid, id);
    e->next = wc.buckets[b];
    wc.buckets[b] = e;
    wc.bytes += bytes;
    wc.entries++;
}

void svc_wincache_trim(const char *sid, int64_t below)
{
    for (int64_t id = below > SVC_WINCACHE_TRIM ? below - SVC_WINCACHE_TRIM : 0; id < below; id++)
        drop(sid, id);
}

size_t svc_wincache_entries(void)
{
    return wc.entries;
}
