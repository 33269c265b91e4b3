/* tap.h: a thirty-line TAP producer for the C unit tests (run by prove).
 * ok(cond, name...), is_int(got, want, name), is_str(got, want, name), done_testing();
 * tap_rm_rf(path) removes a test's scratch directory. */
#ifndef SVC_TAP_H
#define SVC_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_fail;
static int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond)
        tap_fail++;
    fflush(stdout);
    return cond;
}
#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        if (!ok(g_ == w_, __VA_ARGS__))                                                            \
            printf("#   got %lld, want %lld (%s:%d)\n", g_, w_, __FILE__, __LINE__);               \
    } while (0)
#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                                     \
            printf("#   got '%s'\n#  want '%s' (%s:%d)\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)", \
                   __FILE__, __LINE__);                                                            \
    } while (0)
static inline void tap_rm_rf(const char *path)
{
    char cmd[600];
    if (!path || !*path || strchr(path, '\'') ||
        (size_t)snprintf(cmd, sizeof cmd, "rm -rf '%s'", path) >= sizeof cmd || system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", path ? path : "(null)");
}
static int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_fail ? 1 : 0;
}
#endif
