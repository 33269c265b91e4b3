/* fsio: replacing a file (exchanged names when unsynced, a plain rename for a new file),
 * reading a whole file in one read or sized by fstat, appending a line after a torn one,
 * writing a new JSON-lines file straight under its name, temp names after a fork. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsio.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static char dir[256];

static char *path_of(const char *name)
{
    return svc_path_join(dir, name);
}

static char *slurp(const char *name, size_t *len, struct svc_err *e)
{
    char *p = path_of(name), *b = NULL;
    size_t n = 0;
    int rc = svc_file_read(p, &b, &n, e);
    free(p);
    if (len)
        *len = n;
    return rc == 0 ? b : NULL;
}

/* Entries of dir other than . and .. whose name contains sub. */
static int count_entries(const char *sub)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strstr(de->d_name, sub))
            n++;
    if (d)
        closedir(d);
    return n;
}

static ino_t ino_of(const char *name)
{
    char *p = path_of(name);
    struct stat sb;
    ino_t ino = lstat(p, &sb) == 0 ? sb.st_ino : 0;
    free(p);
    return ino;
}

static int write_file(const char *name, const char *s, int sync)
{
    char *p = path_of(name);
    struct svc_err e;
    int rc = svc_file_write_synced(p, s, strlen(s), sync, &e);
    free(p);
    return rc;
}

/* s.json written with sync past a spare that is another file's link: text lands in
 * s.json and other keeps other_text. */
static void written_past(int sync, const char *what, const char *text, const char *other,
                         const char *other_text)
{
    char *b;
    is_int(write_file("s.json", text, sync), 0, "%s: written anyway", what);
    is_str(b = slurp("s.json", NULL, NULL), text, "%s: its content", what);
    free(b);
    is_str(b = slurp(other, NULL, NULL), other_text, "%s: %s untouched", what, other);
    free(b);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/svc-fsio-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    struct svc_err e;
    char *b;
    size_t n;

    /* ---- replacing ---- */
    is_int(write_file("a.json", "one", SVC_SYNC_NONE), 0, "a new file, unsynced");
    is_str(b = slurp("a.json", NULL, NULL), "one", "its content");
    free(b);
    ino_t first = ino_of("a.json");
    is_int(write_file("a.json", "two!", SVC_SYNC_NONE), 0, "replaced unsynced (names exchanged)");
    is_str(b = slurp("a.json", NULL, NULL), "two!", "the new content");
    free(b);
    ok(ino_of("a.json") != first && ino_of("a.json") != 0, "a new file under the name");
    is_int(count_entries(".tmp-"), 0, "the old file is gone: no temp file left");
    is_int(write_file("a.json", "three", SVC_SYNC_FULL), 0, "replaced synced (rename)");
    is_str(b = slurp("a.json", NULL, NULL), "three", "the synced content");
    free(b);
    is_int(write_file("a.json", "four", SVC_SYNC_NONE | SVC_WRITE_NEW), 0,
           "SVC_WRITE_NEW over an existing file still replaces it");
    is_str(b = slurp("a.json", NULL, NULL), "four", "its content");
    free(b);
    is_int(write_file("new.json", "n", SVC_SYNC_NONE | SVC_WRITE_NEW), 0, "a new file, hinted");
    is_str(b = slurp("new.json", NULL, NULL), "n", "its content");
    free(b);
    is_int(count_entries(".tmp-"), 0, "no temp file left");

    /* a directory where the file should be: refused as before, and left in place */
    char *dp = path_of("d.json");
    mkdir(dp, 0755);
    is_int(write_file("d.json", "x", SVC_SYNC_NONE), -1, "a directory at the target: refused");
    struct stat sb;
    ok(lstat(dp, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory is still there");
    is_int(count_entries(".tmp-"), 0, "no temp file (nor the directory) under a temp name");
    free(dp);

    /* a symbolic link at the target is replaced, never followed */
    char *lp = path_of("l.json"), *tp = path_of("target");
    write_file("target", "kept", SVC_SYNC_NONE);
    if (symlink(tp, lp) != 0)
        printf("# symlink: %s\n", strerror(errno));
    is_int(write_file("l.json", "file", SVC_SYNC_NONE), 0, "a link at the target: replaced");
    ok(lstat(lp, &sb) == 0 && S_ISREG(sb.st_mode), "a regular file now");
    is_str(b = slurp("target", NULL, NULL), "kept", "the link's target untouched");
    free(b);
    free(lp);
    free(tp);

    /* ---- through a spare (SVC_WRITE_SPARE) ---- */
    const int SP = SVC_SYNC_NONE | SVC_WRITE_SPARE;
    is_int(write_file("s.json", "first version", SP), 0, "spare: a first write");
    is_str(b = slurp("s.json", NULL, NULL), "first version", "its content");
    free(b);
    is_int(count_entries(".tmp-"), 0, "nothing to exchange with: the spare became the file");
    ino_t s1 = ino_of("s.json");
    is_int(write_file("s.json", "second, longer version", SP), 0, "spare: a rewrite");
    is_str(b = slurp("s.json", NULL, NULL), "second, longer version", "its content");
    free(b);
    ino_t s2 = ino_of("s.json");
    ok(s2 != s1 && ino_of(".s.json" SVC_SPARE_SUFFIX) == s1, "the old file is the spare now");
    is_str(b = slurp(".s.json" SVC_SPARE_SUFFIX, NULL, NULL), "first version",
           "the spare holds the version before");
    free(b);
    is_int(write_file("s.json", "third", SVC_SYNC_FULL | SVC_WRITE_SPARE), 0,
           "spare: a synced rewrite, shorter");
    is_str(b = slurp("s.json", NULL, NULL), "third", "its content, the longer tail cut");
    free(b);
    ok(ino_of("s.json") == s1 && ino_of(".s.json" SVC_SPARE_SUFFIX) == s2,
       "two inodes take turns: none created, none freed");
    is_int(count_entries(".tmp-"), 1, "one spare, no temp file");
    ok(svc_file_is_spare("s.json" SVC_SPARE_SUFFIX) && svc_layout_is_internal("s.json.tmp-spare") &&
           !svc_file_is_spare("s.json") && !svc_file_is_spare("s.json.tmp-1-ab"),
       "svc_file_is_spare, svc_layout_is_internal");
    /* a spare hard-linked elsewhere (cp -al, a backup by links) is never written into */
    char *sp = path_of(".s.json" SVC_SPARE_SUFFIX), *hl = path_of("backup");
    if (link(sp, hl) != 0)
        printf("# link: %s\n", strerror(errno));
    written_past(SP, "spare hard-linked", "fourth", "backup", "second, longer version");
    /* a symbolic link at the spare's name is not followed */
    unlink(sp);
    write_file("elsewhere", "kept", SVC_SYNC_NONE);
    char *ep = path_of("elsewhere");
    if (symlink(ep, sp) != 0)
        printf("# symlink: %s\n", strerror(errno));
    written_past(SP, "spare is a symbolic link", "fifth", "elsewhere", "kept");
    struct stat ls;
    ok(lstat(sp, &ls) != 0 || !S_ISLNK(ls.st_mode), "the link is gone");
    /* a directory where the file should be: refused, left in place, no spare under it */
    dp = path_of("sd.json");
    mkdir(dp, 0755);
    is_int(write_file("sd.json", "x", SP), -1, "spare: a directory at the target: refused");
    ok(lstat(dp, &ls) == 0 && S_ISDIR(ls.st_mode), "the directory is still there");
    char *sdp = path_of(".sd.json" SVC_SPARE_SUFFIX);
    ok(lstat(sdp, &ls) != 0, "and nothing under the spare's name");
    free(sdp);
    free(dp);
    free(ep);
    free(hl);
    free(sp);

    /* ---- reading ---- */
    write_file("empty", "", SVC_SYNC_NONE);
    b = slurp("empty", &n, &e);
    ok(b && n == 0 && b[0] == '\0', "an empty file: empty, NUL-terminated");
    free(b);
    size_t sizes[] = {1, 16382, 16383, 16384, 40000, 300000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *big = malloc(sizes[i] + 1);
        for (size_t k = 0; k < sizes[i]; k++)
            big[k] = (char)('a' + (k * 7 + i) % 26);
        big[sizes[i]] = '\0';
        write_file("big", big, SVC_SYNC_NONE);
        b = slurp("big", &n, &e);
        ok(b && n == sizes[i] && memcmp(b, big, n) == 0 && b[n] == '\0',
           "a file of %zu bytes read whole", sizes[i]);
        free(b);
        free(big);
    }
    ok(!slurp("missing", NULL, &e) && e.code == SVC_E_NOT_FOUND, "missing: SVC_E_NOT_FOUND");
    mkdir((dp = path_of("adir")), 0755);
    ok(!slurp("adir", NULL, &e) && e.code == SVC_E_IO, "a directory: SVC_E_IO");
    free(dp);
    lp = path_of("l2");
    tp = path_of("big");
    if (symlink(tp, lp) != 0)
        printf("# symlink: %s\n", strerror(errno));
    ok(!slurp("l2", NULL, &e) && e.code == SVC_E_IO, "a symbolic link: refused (SVC_E_IO)");
    free(lp);
    free(tp);

    /* ---- appending a line ---- */
    char *jp = path_of("t.jsonl");
    const char l1[] = "\n{\"a\":1}\n"; /* [0] is the caller's spare '\n' */
    is_int(svc_file_append_line(jp, l1 + 1, strlen(l1) - 1, false, &e), 0, "append to nothing");
    is_int(svc_file_append_line(jp, l1 + 1, strlen(l1) - 1, true, &e), 0, "append, synced");
    is_str(b = slurp("t.jsonl", NULL, NULL), "{\"a\":1}\n{\"a\":1}\n", "two whole lines");
    free(b);
    svc_file_append(jp, "{\"torn", 6, false, &e);
    is_int(svc_file_append_line(jp, l1 + 1, strlen(l1) - 1, false, &e), 0,
           "append after a torn line");
    is_str(b = slurp("t.jsonl", NULL, NULL), "{\"a\":1}\n{\"a\":1}\n{\"torn\n{\"a\":1}\n",
           "the new line starts a line of its own");
    free(b);
    free(jp);

    /* ---- a new JSON-lines file ---- */
    char *np = path_of("ev.jsonl");
    is_int(svc_file_write_new(np, "{}\n", 3, false, &e), 0, "a new file straight under its name");
    is_str(b = slurp("ev.jsonl", NULL, NULL), "{}\n", "its content");
    free(b);
    is_int(svc_file_write_new(np, "{\"b\":2}\n", 8, true, &e), 0, "an existing one: replaced");
    is_str(b = slurp("ev.jsonl", NULL, NULL), "{\"b\":2}\n", "replaced whole");
    free(b);
    free(np);
    is_int(count_entries(".tmp-"), 0, "no temp file left");

    /* ---- temp names after a fork: the child's own pid, and writes that succeed ---- */
    write_file("p.json", "parent", SVC_SYNC_NONE);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        setenv("SVC_TEST_CRASH_BEFORE_RENAME", "c.json", 1);
        int rc = write_file("c.json", "child", SVC_SYNC_NONE); /* exits 77 in a test build */
        _exit(rc == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    char want[64];
    snprintf(want, sizeof want, "c.json.tmp-%ld-", (long)child);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        is_int(count_entries(want), 1, "the child's temp file names the child's pid");
    else
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's write (no test hook)");
    is_int(write_file("p.json", "parent again", SVC_SYNC_NONE), 0, "the parent writes on");
    is_str(b = slurp("p.json", NULL, NULL), "parent again", "its content");
    free(b);

    /* not regular files: a FIFO neither blocks the open nor the read; a device that never
     * ends is refused once it fills the first buffer (not read until memory runs out) */
    char *fifo = path_of("fifo.json");
    ok(mkfifo(fifo, 0600) == 0, "a FIFO where a file belongs");
    struct svc_err fe;
    svc_err_clear(&fe);
    size_t flen = 1;
    alarm(10); /* a blocked open or read ends the test here, failed */
    char *fb = slurp("fifo.json", &flen, &fe);
    alarm(0);
    ok(fb ? flen == 0 : 1, "reading it returns at once (no writer: empty, or an error)");
    free(fb);
    free(fifo);
    b = NULL;
    svc_err_clear(&fe);
    ok(svc_file_read_follow("/dev/zero", &b, NULL, &fe) != 0 && !b, "/dev/zero is refused");
    ok(strstr(fe.message, "not a regular file") != NULL, "as not a regular file: %s", fe.message);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# cleanup failed\n");
    return done_testing();
}
