/* xalloc: out of memory kills the process with SIGABRT and one line on stderr, whoever
 * allocates: json-c (a shared library, which would otherwise get NULL back), glibc's own
 * strdup, or a direct malloc/calloc/realloc/posix_memalign (core/xalloc.c, err.h's policy).
 * Each case runs in a child under a low RLIMIT_AS (or asks for an impossible size) and the
 * parent checks how the child ended. Under ASan the interposer is not compiled in and ASan's
 * own allocator dies instead (RLIMIT_AS cannot be used with ASan's shadow memory), so only
 * the impossible-size case runs there. Under valgrind everything is skipped: memcheck
 * replaces the executable's malloc with its own, which returns NULL by design. */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UNDER_ASAN)
#define UNDER_ASAN 1
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* volatile, so the compiler cannot fold or drop the calls below */
static volatile size_t impossible_size = SIZE_MAX / 2; /* more than any address space holds */
static volatile size_t zero_size = 0;
static void *volatile sink;

/* How a child exited, and the first bytes of its stderr. */
struct death {
    int status;
    char err[2048];
};

/* Run fn in a child with stderr on a pipe; the child _exit(3)s if fn returns. */
static void run_child(void (*fn)(void), struct death *d)
{
    int pfd[2];
    memset(d, 0, sizeof *d);
    if (pipe(pfd) != 0) {
        d->status = -1;
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], 2);
        close(pfd[1]);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(3);
    }
    close(pfd[1]);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(pfd[0], d->err + got, sizeof d->err - 1 - got);
        if (r > 0 && got + (size_t)r < sizeof d->err - 1) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        break;
    }
    close(pfd[0]);
    d->err[got] = '\0';
    while (waitpid(pid, &d->status, 0) < 0 && errno == EINTR)
        ;
}

/* Leave the child about 32 MiB of address space beyond what it maps now. */
static void limit_address_space(void)
{
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
        _exit(4);
    fclose(f);
    rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)32 << 20);
    struct rlimit rl = {lim, lim};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        _exit(5);
}

/* json-c objects until the heap is gone; a NULL from json-c means the policy is broken. */
static void json_until_oom(void)
{
    limit_address_space();
    json_object *arr = json_object_new_array();
    for (;;) {
        json_object *o = json_object_new_object();
        if (!o || !arr)
            _exit(6);
        json_object_array_add(arr, o);
    }
}

/* glibc's strdup allocates inside libc: it must reach the same policy. */
static void strdup_until_oom(void)
{
    static char big[4096];
    memset(big, 'x', sizeof big - 1);
    limit_address_space();
    for (;;)
        if (!(sink = strdup(big)))
            _exit(6);
}

static size_t impossible(void)
{
    return impossible_size;
}

static void malloc_impossible(void)
{
    if (!(sink = malloc(impossible())))
        _exit(6);
}

static void calloc_overflow(void)
{
    if (!(sink = calloc(impossible(), 4)))
        _exit(6);
}

static void realloc_impossible(void)
{
    char *p = malloc(16);
    if (!p || !(sink = realloc(p, impossible())))
        _exit(6);
}

static void posix_memalign_impossible(void)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, impossible()) != 0)
        _exit(6);
}

/* What must still return normally: a free through realloc, a zero-size malloc, a bad
 * alignment (EINVAL is not out of memory). */
static void not_oom(void)
{
    char *p = malloc(32);
    if (!p)
        _exit(7);
    if ((sink = realloc(p, zero_size)) != NULL)
        _exit(8);
    sink = malloc(zero_size);
    free(sink);
    void *a = NULL;
    if (posix_memalign(&a, 3, 16) != EINVAL)
        _exit(9);
    _exit(0);
}

static void expect_abort(const char *name, void (*fn)(void))
{
    struct death d;
    run_child(fn, &d);
    int sig = WIFSIGNALED(d.status) ? WTERMSIG(d.status) : 0;
    if (!ok(sig == SIGABRT, "%s: the process dies of SIGABRT", name))
        printf("#   status %d (exit %d, signal %d); stderr: %s\n", d.status,
               WIFEXITED(d.status) ? WEXITSTATUS(d.status) : -1, sig, d.err);
    ok(strstr(d.err, "svc: out of memory allocating ") != NULL,
       "%s: one line on stderr says out of memory", name);
}

static int under_valgrind(void)
{
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") != NULL;
}

int main(void)
{
    struct death d;
    if (UNDER_ASAN) {
        run_child(malloc_impossible, &d);
        ok(!(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 6),
           "ASan: malloc of an impossible size does not return NULL");
        ok(strstr(d.err, "AddressSanitizer") != NULL, "ASan: its report is on stderr");
        printf("# the interposer is not compiled in under ASan; the other cases are skipped\n");
        return done_testing();
    }
    if (under_valgrind()) {
        printf("1..0 # SKIP memcheck replaces the allocator (its malloc returns NULL)\n");
        return 0;
    }
    expect_abort("json-c objects under RLIMIT_AS", json_until_oom);
    expect_abort("glibc strdup under RLIMIT_AS", strdup_until_oom);
    expect_abort("malloc(SIZE_MAX / 2)", malloc_impossible);
    expect_abort("calloc overflow", calloc_overflow);
    expect_abort("realloc(p, SIZE_MAX / 2)", realloc_impossible);
    expect_abort("posix_memalign(SIZE_MAX / 2)", posix_memalign_impossible);
    run_child(not_oom, &d);
    ok(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0,
       "realloc(p, 0), malloc(0) and a bad alignment return normally (exit %d)",
       WIFEXITED(d.status) ? WEXITSTATUS(d.status) : -1);
    return done_testing();
}
