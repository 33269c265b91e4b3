/* oom: out of memory ends the process through the handler the program installs (err.h):
 * svc_x* and jsonx's setters call it, and abort() follows even when it returns or none is
 * installed. The C library's allocator is left alone: malloc of an impossible size returns
 * NULL, as glibc's does. Each case runs in a child (under a low RLIMIT_AS or asking for an
 * impossible size) and the parent checks how the child ended. Under ASan only what needs
 * no failing malloc runs (its allocator dies itself, and RLIMIT_AS cannot hold its shadow). */
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

#include "jsonx.h"
#include "tap.h"
#include "util.h"

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

/* What a program installs: one line, then abort. */
static void test_handler(size_t n)
{
    fprintf(stderr, "test: out of memory allocating %zu bytes\n", n);
    abort();
}

/* A handler that returns: svc_oom must abort anyway. */
static void returning_handler(size_t n)
{
    fprintf(stderr, "test: handler returned\n");
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

/* json-c objects filled through jsonx's setters until the heap is gone. */
static void json_until_oom(void)
{
    svc_oom_set_handler(test_handler);
    limit_address_space();
    json_object *arr = json_object_new_array();
    for (int64_t i = 0;; i++) {
        json_object *o = json_object_new_object();
        svc_json_set_int(o, "n", i);
        svc_json_set_str(o, "s", "some text that takes room");
        json_object_array_add(arr, o);
    }
}

static void xmalloc_impossible(void)
{
    svc_oom_set_handler(test_handler);
    sink = svc_xmalloc(impossible_size);
    _exit(6);
}

static void xcalloc_overflow(void)
{
    svc_oom_set_handler(test_handler);
    sink = svc_xcalloc(impossible_size, 4);
    _exit(6);
}

static void xrealloc_impossible(void)
{
    svc_oom_set_handler(test_handler);
    sink = svc_xrealloc(svc_xmalloc(16), impossible_size);
    _exit(6);
}

static void oom_no_handler(void)
{
    svc_oom(16);
}

static void handler_returns(void)
{
    svc_oom_set_handler(returning_handler);
    svc_oom(16);
}

/* glibc's malloc is glibc's: NULL for what cannot be had. */
static void libc_malloc_untouched(void)
{
    sink = malloc(impossible_size);
    _exit(sink == NULL ? 0 : 7);
}

static void expect_abort(const char *name, void (*fn)(void), const char *line)
{
    struct death d;
    run_child(fn, &d);
    int sig = WIFSIGNALED(d.status) ? WTERMSIG(d.status) : 0;
    if (!ok(sig == SIGABRT, "%s: the process dies of SIGABRT", name))
        printf("#   status %d (exit %d, signal %d); stderr: %s\n", d.status,
               WIFEXITED(d.status) ? WEXITSTATUS(d.status) : -1, sig, d.err);
    if (line)
        ok(strstr(d.err, line) != NULL, "%s: stderr says '%s'", name, line);
}

int main(void)
{
    struct death d;
    if (UNDER_ASAN) {
        printf("# under ASan its allocator dies before svc_oom: only svc_oom itself\n");
        expect_abort("svc_oom without a handler", oom_no_handler, NULL);
        expect_abort("a handler that returns", handler_returns, "test: handler returned");
        return done_testing();
    }
    expect_abort("svc_xmalloc(SIZE_MAX / 2)", xmalloc_impossible, "test: out of memory allocating");
    expect_abort("svc_xcalloc overflow", xcalloc_overflow, "test: out of memory allocating");
    expect_abort("svc_xrealloc(p, SIZE_MAX / 2)", xrealloc_impossible,
                 "test: out of memory allocating");
    expect_abort("svc_oom without a handler", oom_no_handler, NULL);
    expect_abort("a handler that returns", handler_returns, "test: handler returned");
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
        printf("# memcheck's allocator: the RLIMIT_AS case is skipped\n");
    else
        expect_abort("jsonx setters under RLIMIT_AS", json_until_oom, NULL);
    run_child(libc_malloc_untouched, &d);
    ok(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0,
       "malloc(SIZE_MAX / 2) returns NULL: the C library's allocator is not replaced");
    return done_testing();
}
