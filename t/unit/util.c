/* util: the cached process id and the per-process random pool are the child's own after a
 * fork (a child never hands out its parent's bytes), and the pool hands each byte out once. */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "tap.h"
#include "util.h"

int main(void)
{
    is_int(svc_pid(), getpid(), "svc_pid is getpid");
    unsigned char a[32], b[32];
    svc_random_bytes(a, sizeof a);
    svc_random_bytes(b, sizeof b);
    ok(memcmp(a, b, sizeof a) != 0, "two draws differ");

    /* the parent's next bytes, and the child's first, across a pipe */
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char c[32];
        svc_random_bytes(c, sizeof c);
        int same_pid = svc_pid() == getpid();
        if (write(fds[1], c, sizeof c) != (ssize_t)sizeof c)
            _exit(2);
        _exit(same_pid ? 0 : 1);
    }
    close(fds[1]); /* a child that dies before writing is an end of file, not a hang */
    unsigned char p[32], c[32];
    svc_random_bytes(p, sizeof p);
    ssize_t n = read(fds[0], c, sizeof c);
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's svc_pid is its own");
    ok(n == (ssize_t)sizeof c && memcmp(p, c, sizeof c) != 0,
       "the child does not hand out the parent's pooled bytes");

    /* many ids: no repeat (the pool refills past its 256 bytes) */
    char ids[200][40];
    int dup = 0;
    for (int i = 0; i < 200; i++) {
        svc_random_id("run", ids[i], sizeof ids[i]);
        for (int k = 0; k < i; k++)
            dup += strcmp(ids[i], ids[k]) == 0;
    }
    is_int(dup, 0, "200 ids, no repeat");
    ok(strncmp(ids[0], "run-", 4) == 0 && strlen(ids[0]) == 20, "an id is <prefix>-<16 hex>");
    /* ~ expansion: $HOME; without it the password database's home; never "//" */
    char *saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", "/home/u/", 1);
    char *x = svc_path_expand("~/Desktop/e");
    is_str(x, "/home/u/Desktop/e", "~/ with $HOME (its trailing slash dropped)");
    free(x);
    setenv("HOME", "/", 1);
    x = svc_path_expand("~/Desktop/e");
    is_str(x, "/Desktop/e", "~/ with HOME=/: one slash");
    free(x);
    x = svc_path_expand("~");
    is_str(x, "/", "~ with HOME=/");
    free(x);
    unsetenv("HOME");
    struct passwd *pw = getpwuid(geteuid());
    x = svc_path_expand("~/d");
    char want[4096];
    size_t hl = pw ? strlen(pw->pw_dir) : 0;
    while (hl > 0 && pw->pw_dir[hl - 1] == '/')
        hl--;
    snprintf(want, sizeof want, "%.*s/d", (int)hl, pw ? pw->pw_dir : "");
    is_str(x, want, "~/ without HOME: the password database's home");
    free(x);
    x = svc_path_expand("/abs/~x");
    is_str(x, "/abs/~x", "a path not starting with ~ is kept");
    free(x);
    if (saved)
        setenv("HOME", saved, 1);
    free(saved);

    /* an error cut to its buffers never ends inside a UTF-8 character */
    char longname[400] = "";
    for (int i = 0; i < 150; i++)
        strcat(longname, "\xc3\xa9"); /* é: 300 bytes */
    struct svc_err e;
    svc_err_setp(&e, SVC_E_INVALID_FIELD, longname, "field %s%s", longname, longname);
    ok(strlen(e.param) < sizeof e.param && strlen(e.param) % 2 == 0 &&
           (strlen(e.param) == 0 || (unsigned char)e.param[strlen(e.param) - 1] == 0xa9),
       "param cut at a character boundary (%zu bytes)", strlen(e.param));
    size_t ml = strlen(e.message);
    ok(ml < sizeof e.message && (unsigned char)e.message[ml - 1] == 0xa9 &&
           (ml - strlen("field ")) % 2 == 0,
       "message cut at a character boundary (%zu bytes)", ml);
    svc_err_setp(&e, SVC_E_INVALID_FIELD, "ok", "a \xe2\x82\xac sign");
    is_str(e.message, "a \xe2\x82\xac sign", "a whole message is left as it is");

    /* base64: both alphabets, padding optional on the way in, left out by url on the way out */
    char *enc = svc_b64_encode("\xfb\xff", 2, false);
    is_str(enc, "+/8=", "standard alphabet, padded");
    free(enc);
    enc = svc_b64_encode("\xfb\xff", 2, true);
    is_str(enc, "-_8", "url alphabet, no padding");
    free(enc);
    size_t dn = 0;
    unsigned char *d = svc_b64_decode("-_8", 3, true, &dn);
    ok(d && dn == 2 && memcmp(d, "\xfb\xff", 3) == 0, "url text decoded, NUL after");
    free(d);
    d = svc_b64_decode("+/8=", 4, true, &dn);
    ok(d && dn == 2, "url decoding takes the standard alphabet too");
    free(d);
    ok(!svc_b64_decode("-_8", 3, false, &dn), "the url alphabet refused where it is not asked");
    ok(!svc_b64_decode("A=B=", 4, false, &dn), "padding inside refused");
    ok(!svc_b64_decode("AAAAA", 5, true, &dn), "a length of 4k+1 refused");
    ok(!svc_b64_decode("AA E", 4, false, &dn) && !svc_b64_decode("AA=", 3, false, &dn),
       "a stray character, and padding that leaves the length short, refused");
    return done_testing();
}
