/* msgcache: a row is found again only while its file's identity, size, mtime and ctime are
 * those it was rendered from, or without a stat only under the watch generation it was last
 * checked under and for a file of one link; a file changed within the last second is never
 * stored (the "racy" rule); the cache stays within its byte bound. Stat records are made up
 * here, so every field can be moved on its own. */
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "msgcache.h"
#include "tap.h"

/* A stat of a regular file changed `age_s` seconds ago. */
static struct stat file_stat(ino_t ino, off_t size, double age_s)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    st.st_dev = 42;
    st.st_ino = ino;
    st.st_mode = S_IFREG | 0644;
    st.st_nlink = 1;
    st.st_size = size;
    long long ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec - (long long)(age_s * 1e9);
    st.st_ctim.tv_sec = (time_t)(ns / 1000000000LL);
    st.st_ctim.tv_nsec = (long)(ns % 1000000000LL);
    st.st_mtim = st.st_ctim;
    return st;
}

/* The messages directory of every row here, without a watch generation. */
static struct svc_msgcache_dir D = {.dev = 42, .ino = 9, .gen = 0};

static int got(const struct stat *st, int64_t id, const char *want)
{
    const char *text = NULL;
    size_t len = 0;
    if (!svc_msgcache_get(&D, id, st, &text, &len))
        return want == NULL;
    return want && len == strlen(want) && memcmp(text, want, len) == 0 && text[len] == '\0';
}

/* Rows served without a stat: only under the generation they were last checked under. */
static void watched(void)
{
    struct stat a = file_stat(3000, 40, 60), linked = file_stat(3001, 40, 60);
    linked.st_nlink = 2;
    D.gen = 5;
    ok(svc_msgcache_put(&D, 1, &a, "{\"r\":1}", 7), "stored under generation 5");
    ok(svc_msgcache_put(&D, 2, &linked, "{\"r\":2}", 7), "a file of two links too");
    ok(got(NULL, 1, "{\"r\":1}"), "served without a stat under generation 5");
    ok(got(NULL, 2, NULL), "not a file another directory's name reaches");
    ok(got(&linked, 2, "{\"r\":2}"), "which serves after its stat");
    D.gen = 0;
    ok(got(NULL, 1, NULL), "no generation (no inotify, or its events lost): no row without a stat");
    D.gen = 6;
    ok(got(NULL, 1, NULL), "a later generation (the directory changed): no row without a stat");
    struct stat moved = a;
    moved.st_mtim.tv_nsec ^= 1;
    ok(got(&moved, 1, NULL), "nor with a stat that differs");
    ok(got(&a, 1, "{\"r\":1}"), "its stat the same: served");
    ok(got(NULL, 1, "{\"r\":1}"), "and now without a stat under generation 6");
    D.gen = 0;
    svc_msgcache_clear();
}

int main(void)
{
    struct stat a = file_stat(1000, 120, 60);
    ok(got(&a, 7, NULL), "an empty cache has nothing");
    ok(svc_msgcache_put(&D, 7, &a, "{\"message_id\":7}", 16), "a settled file's row is stored");
    ok(got(&a, 7, "{\"message_id\":7}"), "and found again with the same stat");
    is_int(svc_msgcache_entries(), 1, "one entry");
    is_int(svc_msgcache_bytes(), 16, "its bytes counted");
    ok(got(&a, 8, NULL), "another id of the same file: not found");

    struct stat b = a;
    b.st_ino = 1001;
    ok(got(&b, 7, NULL), "another inode (a file renamed over it): not found");
    D.ino = 10;
    ok(got(&a, 7, NULL), "another messages directory: not found");
    D.ino = 9;
    b = a;
    b.st_size = 121;
    ok(got(&b, 7, NULL), "another size: not found");
    b = a;
    b.st_mtim.tv_nsec ^= 1;
    ok(got(&b, 7, NULL), "mtime moved by a nanosecond: not found");
    b = a;
    b.st_ctim.tv_nsec ^= 1;
    ok(got(&b, 7, NULL), "ctime moved by a nanosecond (mtime set back by touch -d): not found");

    /* a changed file's new row replaces the old one */
    b = a;
    b.st_ctim.tv_sec -= 1;
    ok(svc_msgcache_put(&D, 7, &b, "{\"v\":2}", 7), "the rewritten file's row is stored");
    ok(got(&b, 7, "{\"v\":2}"), "the new row is found");
    ok(got(&a, 7, NULL), "the old stat finds nothing");
    is_int(svc_msgcache_entries(), 1, "still one entry for the file");
    is_int(svc_msgcache_bytes(), 7, "bytes follow the replacement");

    /* the racy rule */
    struct stat fresh = file_stat(2000, 50, 0.2);
    ok(!svc_msgcache_put(&D, 1, &fresh, "{}", 2), "a file changed 0.2 s ago is not stored");
    ok(got(&fresh, 1, NULL), "so it is not found");
    struct stat future = file_stat(2001, 50, -5);
    ok(!svc_msgcache_put(&D, 1, &future, "{}", 2), "a ctime in the future is not stored");
    struct stat old = file_stat(2002, 50, 1.5);
    ok(svc_msgcache_put(&D, 1, &old, "{}", 2), "a file changed 1.5 s ago is stored");

    /* a recent rewrite of a cached file drops the stale row even though it is not stored */
    struct stat rewritten = file_stat(b.st_ino, b.st_size, 0.1);
    ok(!svc_msgcache_put(&D, 7, &rewritten, "{\"v\":3}", 7), "a fresh rewrite is not stored");
    ok(got(&b, 7, NULL), "and the row of the file before it is gone");

    /* the bound */
    svc_msgcache_clear();
    is_int(svc_msgcache_entries(), 0, "clear empties it");
    is_int(svc_msgcache_bytes(), 0, "clear: no bytes");
    static char big[SVC_MSGCACHE_MAX_BYTES / 8 + 2];
    memset(big, 'x', sizeof big - 1);
    ok(!svc_msgcache_put(&D, 1, &a, big, sizeof big - 1),
       "a row over an eighth of the bound is not stored");
    size_t row = SVC_MSGCACHE_MAX_BYTES / 64;
    static struct stat many[200];
    int stored = 0;
    size_t most = 0;
    for (int i = 0; i < 200; i++) {
        many[i] = file_stat((ino_t)(5000 + i), 10, 30);
        stored += svc_msgcache_put(&D, i, &many[i], big, row);
        if (svc_msgcache_bytes() > most)
            most = svc_msgcache_bytes();
    }
    is_int(stored, 200, "every row stored");
    ok(most <= SVC_MSGCACHE_MAX_BYTES, "held bytes never passed the bound (at most %zu)", most);
    ok(svc_msgcache_entries() < 200, "older rows went to make room (%zu left)",
       svc_msgcache_entries());
    const char *t;
    size_t l;
    ok(svc_msgcache_get(&D, 199, &many[199], &t, &l) && l == row, "the last row stored is there");
    ok(!svc_msgcache_get(&D, 0, &many[0], &t, &l), "the first row stored is gone");
    svc_msgcache_clear();

    watched();

    return done_testing();
}
