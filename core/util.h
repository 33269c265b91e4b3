/* util: small helpers shared by every module: time stamps in the Strands format,
 * random ids, `~` expansion, directory creation, and a growable string buffer.
 * Functions named *_new / *_dup / *_expand return heap memory the caller frees. */
#ifndef SVC_UTIL_H
#define SVC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"

/* The version: the file VERSION, passed by the Makefile (-DSVC_VERSION). */
#ifndef SVC_VERSION
#error "SVC_VERSION comes from the file VERSION: build with make"
#endif
#define SVC_TIME_LEN 40

/* Now as "2026-05-16T08:15:30.123456+00:00" into buf (SVC_TIME_LEN bytes); returns buf. */
char *svc_time_now_iso(char *buf);
/* Format an epoch (seconds, with fraction) the same way. */
char *svc_time_format_iso(double epoch, char *buf);
/* Parse ISO 8601 UTC with or without fraction, "+00:00" or "Z" (other offsets applied).
 * Returns 0 and sets *epoch, or -1 when unparseable. */
int svc_time_parse_iso(const char *s, double *epoch);
double svc_time_now(void);                /* wall clock, seconds since the epoch */
long long svc_time_ns(struct timespec t); /* t in nanoseconds (a file's mtime as a stamp) */
double svc_time_monotonic(void);          /* monotonic seconds */
/* Sleep s seconds (s >= 0) in full: after a signal's handler the sleep goes on. */
void svc_sleep_s(double s);

/* qsort's comparison of two char * (strcmp order: SQLite's BINARY, a listing's id order). */
int svc_cmp_strp(const void *a, const void *b);
int svc_cmp_i64(const void *a, const void *b); /* of two int64_t */
/* This process's id, cached (forgotten in the child of a fork). */
int svc_pid(void);
/* n bytes from a per-process pool of OpenSSL's CSPRNG (each byte handed out once; a forked
 * child draws anew). */
void svc_random_bytes(unsigned char *out, size_t n);
/* Fill out with nhex random lowercase hex digits and a NUL (out holds nhex + 1). */
void svc_random_hex(char *out, size_t nhex);
/* n bytes as 2n lower-case hex digits and a NUL into out. */
void svc_hex(const unsigned char *b, size_t n, char *out);
/* "<prefix>-<16 hex>" into out (at least strlen(prefix) + 18 bytes). */
void svc_random_id(const char *prefix, char *out, size_t outsz);

/* malloc, calloc, realloc, strdup, strndup and asprintf that never fail: each calls svc_oom
 * instead (err.h's policy); svc_xasprintf/svc_xvasprintf always return >= 0. */
void *svc_xmalloc(size_t n);
void *svc_xcalloc(size_t nmemb, size_t size);
void *svc_xrealloc(void *p, size_t n);
/* Room for element n of the growable array v (*cap elements of size bytes, doubled when
 * full): returns v, moved perhaps. v = svc_grow(v, n, &cap, sizeof *v); v[n++] = x; */
void *svc_grow(void *v, size_t n, size_t *cap, size_t size);
char *svc_xstrdup(const char *s);
char *svc_xstrndup(const char *s, size_t n);
int svc_xasprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int svc_xvasprintf(char **out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The program's out-of-memory handler (err.h), called with the size asked for. */
void svc_oom_set_handler(void (*fn)(size_t n));
/* Out of memory: the program's handler, then abort() if it returned (or there is none). */
_Noreturn void svc_oom(size_t n);

/* Expand a leading "~" or "~/" with $HOME (unset or empty: the user's home from the
 * password database). Heap result, never NULL. */
char *svc_path_expand(const char *path);
/* "a" + "/" + "b"; heap result, never NULL. */
char *svc_path_join(const char *a, const char *b);
/* mkdir -p with mode; 0 or -1 with err. With durable, the parent of each directory it
 * creates is fsynced (a session created by a completed run must not vanish in a crash). */
int svc_mkdirs_durable(const char *path, mode_t mode, bool durable, struct svc_err *err);
static inline int svc_mkdirs(const char *path, mode_t mode, struct svc_err *err)
{
    return svc_mkdirs_durable(path, mode, false, err);
}
/* fsync the directory holding path, so a new entry in it survives a crash; 0 or -1, errno. */
int svc_fsync_parent(const char *path);
/* Whether the path is an existing directory. */
bool svc_is_dir(const char *path);

/* Growable NUL-terminated buffer; allocation follows the abort policy of err.h. */
struct svc_buf {
    char *data;
    size_t len;
    size_t cap;
};
void svc_buf_init(struct svc_buf *b);
void svc_buf_add(struct svc_buf *b, const char *s, size_t n);
void svc_buf_adds(struct svc_buf *b, const char *s);
void svc_buf_printf(struct svc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the data to the caller (heap, NUL-terminated, never NULL) and reset b. */
char *svc_buf_steal(struct svc_buf *b);
void svc_buf_free(struct svc_buf *b);

/* Count UTF-8 code points; copy at most max code points of s into a heap string. */
size_t svc_utf8_len(const char *s);
char *svc_utf8_prefix(const char *s, size_t max_cp);
/* Whether s is valid UTF-8 (len bytes). */
bool svc_utf8_valid(const char *s, size_t len);

/* base64 of n bytes (heap); url: the URL-safe alphabet, without padding. */
char *svc_b64_encode(const void *p, size_t n, bool url);
/* The bytes of base64 text s (len chars; padding may be left out, nothing else may stand
 * between the characters; url: '-' and '_' as well as '+' and '/') on the heap, *n of them
 * and a NUL, or NULL when it is not base64. */
unsigned char *svc_b64_decode(const char *s, size_t len, bool url, size_t *n);

/* Constant-time comparison of two NUL-terminated secrets. */
bool svc_secret_equal(const char *a, const char *b);

#endif
