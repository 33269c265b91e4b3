/* wincache: an entry is found again only under the life it was stored in and while no
 * inotify event named its file; a file of two links is never kept; a claimed entry survives
 * exactly its own rename's event; the window's trim and the heap bound drop entries; another inode
 * at the directory's path is another life; the child of a fork starts empty. Real files in a
 * temporary directory, real inotify. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "wincache.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void rename_in(const char *from, const char *to)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/%s", dir, from);
    snprintf(b, sizeof b, "%s/%s", dir, to);
    rename(a, b);
}

static json_object *msg(const char *text)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "text", json_object_new_string(text));
    return o;
}

/* A made-up stat of size bytes (inode ino). */
static struct stat fake_st(ino_t ino, off_t size)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_ino = ino;
    st.st_size = size;
    st.st_nlink = 1;
    return st;
}

/* The stat of message_<id>.json as it is now, or a made-up one when it is not there. */
static struct stat file_st(int64_t id)
{
    char path[512];
    snprintf(path, sizeof path, "%s/message_%lld.json", dir, (long long)id);
    struct stat st;
    return lstat(path, &st) == 0 ? st : fake_st((ino_t)(1000000 + id), 100);
}

/* Store message id under life (put), dropping the caller's reference. */
static void put(int64_t life, int64_t id, const char *text)
{
    json_object *m = msg(text);
    struct stat st = file_st(id);
    svc_wincache_put("s1", life, id, m, &st, false);
    json_object_put(m);
}

/* What a turn does with a message it writes: a temporary file renamed to message_<id>.json,
 * then the message claimed (no poll in between). */
static void write_and_claim(int64_t life, int64_t id, const char *text)
{
    char tmp[64], name[64];
    snprintf(tmp, sizeof tmp, "message_%lld.json.tmp-1-x", (long long)id);
    snprintf(name, sizeof name, "message_%lld.json", (long long)id);
    write_file(tmp, "{}");
    rename_in(tmp, name);
    json_object *m = msg(text);
    struct stat st = file_st(id);
    svc_wincache_put("s1", life, id, m, &st, true);
    json_object_put(m);
}

static const char *get_text(int64_t life, int64_t id)
{
    json_object *m = svc_wincache_get("s1", life, id);
    json_object *t = NULL;
    return m && json_object_object_get_ex(m, "text", &t) ? json_object_get_string(t) : NULL;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/wincache-t-%d", (int)getpid());
    mkdir(dir, 0755);
    for (int i = 0; i < 6; i++) {
        char name[64];
        snprintf(name, sizeof name, "message_%d.json", i);
        write_file(name, "{}");
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int64_t life = svc_wincache_begin("s1", fd);
    if (life == 0) { /* not a filesystem inotify sees whole (dirwatch.h): nothing is cached */
        printf("1..0 # SKIP %s is not on a local filesystem\n", dir);
        return 0;
    }
    ok(life > 0, "a life on a local directory (%lld)", (long long)life);
    is_int(svc_wincache_begin("s1", fd), life, "the same life while nothing happened");
    put(life, 1, "one");
    put(life, 2, "two");
    put(life, 3, "three");
    is_str(get_text(life, 1), "one", "an entry is found under its life");
    ok(get_text(life + 1, 1) == NULL, "not under another life");
    ok(svc_wincache_get("s2", life, 1) == NULL, "nor for another session");
    struct stat linked = file_st(3);
    linked.st_nlink = 2;
    json_object *l = msg("linked");
    svc_wincache_put("s1", life, 3, l, &linked, false);
    json_object_put(l);
    ok(get_text(life, 3) == NULL,
       "a file of two links is not kept (a write through the other name is no event here)");
    put(life, 3, "three");
    put(life, 1, "one"); /* asked under another life above: dropped */

    /* a write names the file: that entry goes, the others stay */
    write_file("message_2.json", "{\"x\":1}");
    is_int(svc_wincache_begin("s1", fd), life, "the life goes on after an entry changed");
    ok(get_text(life, 2) == NULL, "the written file's entry is dropped");
    is_str(get_text(life, 1), "one", "another entry stays");

    /* a temporary file renamed over a message: only the message's name counts */
    write_file("message_3.json.tmp-1-x", "{}");
    svc_wincache_begin("s1", fd);
    is_str(get_text(life, 3), "three", "a temporary file's events drop nothing");
    rename_in("message_3.json.tmp-1-x", "message_3.json");
    svc_wincache_begin("s1", fd);
    ok(get_text(life, 3) == NULL, "renamed over: dropped");

    /* claimed: survives its own rename's event, not a second event */
    write_and_claim(life, 4, "four");
    svc_wincache_begin("s1", fd);
    is_str(get_text(life, 4), "four", "a claimed entry survives its own rename");
    write_file("message_4.json", "{\"y\":2}");
    svc_wincache_begin("s1", fd);
    ok(get_text(life, 4) == NULL, "and is dropped by a later write");

    write_and_claim(life, 5, "five");
    write_file("message_5.json", "{\"z\":3}"); /* another program, before any poll */
    svc_wincache_begin("s1", fd);
    ok(get_text(life, 5) == NULL, "a claimed file written again before the poll: dropped");

    json_object *m9 = msg("nine");
    struct stat st9 = file_st(9);
    svc_wincache_put("s1", life, 9, m9, &st9, true); /* no rename of message_9.json ever came */
    json_object_put(m9);
    svc_wincache_begin("s1", fd);
    ok(get_text(life, 9) == NULL, "a claim whose rename never came is not served");

    /* a removal */
    put(life, 0, "zero");
    char p0[512];
    snprintf(p0, sizeof p0, "%s/message_0.json", dir);
    unlink(p0);
    svc_wincache_begin("s1", fd);
    ok(get_text(life, 0) == NULL, "a removed file: dropped");

    /* trim: the ids a window slid past */
    put(life, 10, "ten");
    put(life, 11, "eleven");
    put(life, 12, "twelve");
    svc_wincache_trim("s1", 12);
    ok(get_text(life, 10) == NULL && get_text(life, 11) == NULL, "trim drops the ids below");
    is_str(get_text(life, 12), "twelve", "and keeps the window");

    /* the fork child starts empty */
    pid_t pid = fork();
    if (pid == 0)
        _exit(svc_wincache_entries() == 0 ? 0 : 1);
    int wst = 0;
    waitpid(pid, &wst, 0);
    ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the child of a fork starts empty");
    ok(svc_wincache_entries() > 0, "the parent keeps its entries");

    /* another directory at the path: another life, nothing of the old one */
    char old[300];
    snprintf(old, sizeof old, "%s.old", dir);
    rename(dir, old);
    mkdir(dir, 0755);
    int fd2 = open(dir, O_RDONLY | O_DIRECTORY);
    int64_t life2 = svc_wincache_begin("s1", fd2);
    ok(life2 > 0 && life2 != life, "a new inode at the path: a new life");
    ok(get_text(life2, 12) == NULL && get_text(life, 12) == NULL,
       "and the old life's entries are gone");

    /* the heap bound: storing past it empties the cache */
    size_t big = SVC_WINCACHE_MAX_BYTES / SVC_WINCACHE_HEAP_PER_BYTE / 16;
    for (int i = 0; i < 40; i++) {
        json_object *m = msg("big");
        struct stat st = fake_st((ino_t)(2000 + i), (off_t)big);
        svc_wincache_put("s1", life2, 100 + i, m, &st, false);
        json_object_put(m);
    }
    ok(svc_wincache_entries() < 40, "the bound holds (%zu entries of 40 stored)",
       svc_wincache_entries());
    json_object *huge = msg("huge");
    struct stat hst = fake_st(3000, (off_t)SVC_WINCACHE_MAX_BYTES);
    svc_wincache_put("s1", life2, 500, huge, &hst, false);
    json_object_put(huge);
    ok(svc_wincache_get("s1", life2, 500) == NULL, "a message too large for the cache is not kept");
    ok(svc_wincache_begin("s1", -1) == 0, "no directory: no life");

    svc_wincache_clear();
    is_int(svc_wincache_entries(), 0, "clear empties it");
    close(fd);
    close(fd2);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, old);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return done_testing();
}
