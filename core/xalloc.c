/* xalloc: the process allocator of every svc program aborts instead of returning NULL.
 * This file defines malloc, calloc, realloc, reallocarray, memalign, aligned_alloc and
 * posix_memalign; because the definitions live in the executable (linked from libsvccore.a),
 * every shared library of the process (json-c, libyaml, libcurl, zlib, OpenSSL, glibc's own
 * strdup/asprintf/fopen) allocates through them. Each forwards to glibc's allocator
 * (__libc_malloc and friends; free, malloc_usable_size, valloc and pvalloc stay glibc's) and,
 * when that returns NULL for a request that is not a free, writes one line to stderr with
 * write(2) (no stdio, no allocation) and calls abort(): the out-of-memory policy of err.h.
 * Requests glibc refuses as invalid (posix_memalign with a bad alignment: EINVAL) still fail
 * normally; realloc(p, 0) frees and returns NULL as in glibc.
 * Not compiled in under AddressSanitizer, MemorySanitizer, ThreadSanitizer or HWASan: they
 * replace the allocator themselves, and ASan already dies on a failed allocation
 * (allocator_may_return_null=0, its default). Under valgrind, memcheck redirects these
 * definitions (and __libc_malloc, the same address as glibc's malloc) to its own allocator,
 * so it still sees every block; its malloc returns NULL, so the policy is off there. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) ||                         \
    __has_feature(thread_sanitizer) || __has_feature(hwaddress_sanitizer)
#define SVC_XALLOC_OFF 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_HWADDRESS__)
#define SVC_XALLOC_OFF 1
#endif

#ifndef SVC_XALLOC_OFF

/* glibc's allocator under its exported internal names (GLIBC_2.2.5). */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t nmemb, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

/* "svc: out of memory allocating <n> bytes\n" on fd 2, then abort(). Async-signal-safe and
 * allocation-free: the heap is exhausted, and stdio might allocate or hold a lock. */
static _Noreturn void xalloc_fail(size_t n)
{
    static const char head[] = "svc: out of memory allocating ";
    static const char tail[] = " bytes\n";
    char digits[24];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n && i > 0);
    ssize_t w = write(2, head, sizeof head - 1);
    w = write(2, digits + i, sizeof digits - i);
    w = write(2, tail, sizeof tail - 1);
    (void)w;
    abort();
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (!p)
        xalloc_fail(n);
    return p;
}

void *calloc(size_t nmemb, size_t size)
{
    void *p = __libc_calloc(nmemb, size);
    if (!p && nmemb && size)
        xalloc_fail(nmemb > SIZE_MAX / size ? SIZE_MAX : nmemb * size);
    return p;
}

void *realloc(void *p, size_t n)
{
    void *q = __libc_realloc(p, n);
    if (!q && (n || !p))
        xalloc_fail(n);
    return q;
}

void *reallocarray(void *p, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size)
        xalloc_fail(SIZE_MAX);
    return realloc(p, nmemb * size);
}

void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (!p && align <= SIZE_MAX / 2 + 1) /* a larger alignment is glibc's EINVAL */
        xalloc_fail(n);
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        xalloc_fail(n);
    *out = p;
    return 0;
}

#endif
