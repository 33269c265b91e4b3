#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unistr.h>

static void (*oom_handler)(size_t n);

void svc_oom_set_handler(void (*fn)(size_t n))
{
    oom_handler = fn;
}

_Noreturn void svc_oom(size_t n)
{
    if (oom_handler)
        oom_handler(n);
    abort(); /* callers never see NULL */
}

void *svc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        svc_oom(n);
    return p;
}

void *svc_xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        svc_oom(nmemb * size);
    return p;
}

void *svc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        svc_oom(n);
    return q;
}

void *svc_grow(void *v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return v;
    *cap = *cap ? *cap * 2 : 16;
    return svc_xrealloc(v, *cap * size);
}

char *svc_xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        svc_oom(strlen(s) + 1);
    return p;
}

char *svc_xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        svc_oom(n + 1);
    return p;
}

int svc_xvasprintf(char **out, const char *fmt, va_list ap)
{
    int n = vasprintf(out, fmt, ap);
    if (n < 0)
        svc_oom(0);
    return n;
}

int svc_xasprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = svc_xvasprintf(out, fmt, ap);
    va_end(ap);
    return n;
}

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double svc_time_now(void)
{
    return clock_s(CLOCK_REALTIME);
}

double svc_time_monotonic(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

long long svc_time_ns(struct timespec t)
{
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void svc_sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static char *time_format(time_t sec, long usec, char *buf)
{
    struct tm tm;
    gmtime_r(&sec, &tm);
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec % 1000000);
    memcpy(buf, tmp, SVC_TIME_LEN - 1);
    buf[SVC_TIME_LEN - 1] = '\0';
    return buf;
}

char *svc_time_now_iso(char *buf)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return time_format(ts.tv_sec, ts.tv_nsec / 1000, buf);
}

char *svc_time_format_iso(double epoch, char *buf)
{
    time_t sec = (time_t)epoch;
    long usec = (long)((epoch - (double)sec) * 1e6 + 0.5); /* 1000000: the next second */
    return time_format(sec + (usec >= 1000000), usec, buf);
}

int svc_time_parse_iso(const char *s, double *epoch)
{
    int y, mo, d, h, mi, se, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n != 19)
        return -1;
    const char *p = s + n;
    double frac = 0;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9') {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5)
            return -1;
        off = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else if (*p != '\0') {
        return -1;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    *epoch = (double)timegm(&tm) - (double)off + frac;
    return 0;
}

/* ---- process id and random bytes, per process ---- */

/* getpid() and RAND_bytes (its fork check) are a system call each: the pid is cached, and
 * random bytes drawn 256 at a time into a pool; both forgotten in a forked child. */
static struct {
    pid_t pid;
    unsigned char pool[256];
    size_t used; /* bytes of pool handed out; sizeof pool: empty */
} proc = {.used = 256};

static void proc_forget(void)
{
    proc.pid = 0;
    OPENSSL_cleanse(proc.pool, sizeof proc.pool);
    proc.used = sizeof proc.pool;
}

static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void proc_register(void)
{
    pthread_atfork(NULL, NULL, proc_forget);
}

int svc_pid(void)
{
    if (proc.pid == 0) {
        pthread_once(&proc_once, proc_register);
        proc.pid = getpid();
    }
    return (int)proc.pid;
}

static void random_fill(unsigned char *raw, size_t nbytes)
{
    if (RAND_bytes(raw, (int)nbytes) != 1) {
        /* fall back to the kernel directly; never to a predictable source */
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(raw, 1, nbytes, f) != nbytes)
            abort();
        fclose(f);
    }
}

void svc_random_bytes(unsigned char *out, size_t n)
{
    pthread_once(&proc_once, proc_register);
    while (n > 0) {
        if (proc.used == sizeof proc.pool) {
            random_fill(proc.pool, sizeof proc.pool);
            proc.used = 0;
        }
        size_t take = sizeof proc.pool - proc.used < n ? sizeof proc.pool - proc.used : n;
        memcpy(out, proc.pool + proc.used, take);
        OPENSSL_cleanse(proc.pool + proc.used, take); /* handed out once */
        proc.used += take;
        out += take;
        n -= take;
    }
}

int svc_cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int svc_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void svc_hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    out[2 * n] = '\0';
}

void svc_random_hex(char *out, size_t nhex)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    size_t nbytes = (nhex + 1) / 2;
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    svc_random_bytes(raw, nbytes);
    for (size_t i = 0; i < nhex && i / 2 < nbytes; i++)
        out[i] = hex[(raw[i / 2] >> ((i % 2) ? 0 : 4)) & 0xf];
    out[nhex] = '\0';
}

void svc_random_id(const char *prefix, char *out, size_t outsz)
{
    char hex[17];
    svc_random_hex(hex, 16);
    snprintf(out, outsz, "%s-%s", prefix, hex);
}

char *svc_path_expand(const char *path)
{
    if (!path)
        return NULL;
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
        /* as a shell does: $HOME, else the user's home from the password database (a web
         * server's CGI environment has no HOME), else the root directory */
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(geteuid());
            home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : "/";
        }
        size_t hl = strlen(home);
        while (hl > 0 && home[hl - 1] == '/')
            hl--; /* "/" is "": "~/x" is "/x", not "//x" */
        if (hl == 0 && path[1] == '\0')
            return svc_xstrdup("/");
        char *out;
        svc_xasprintf(&out, "%.*s%s", (int)hl, home, path + 1);
        return out;
    }
    return svc_xstrdup(path);
}

char *svc_path_join(const char *a, const char *b)
{
    size_t al = strlen(a), bl = strlen(b);
    char *out = svc_xmalloc(al + bl + 2);
    memcpy(out, a, al);
    size_t o = al;
    if (al == 0 || a[al - 1] != '/')
        out[o++] = '/';
    memcpy(out + o, b, bl + 1);
    return out;
}

int svc_fsync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? svc_xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : svc_xstrdup(".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int svc_mkdirs_durable(const char *path, mode_t mode, bool durable, struct svc_err *err)
{
    if (svc_is_dir(path))
        return 0; /* the usual case: one stat, not a mkdir per component */
    char *tmp = svc_xstrdup(path);
    int rc = 0;
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, mode) == 0) {
                if (durable && strchr(tmp, '/') && svc_fsync_parent(tmp) != 0) {
                    rc = svc_err_errno(err, "fsync directory");
                    break;
                }
            } else if (errno != EEXIST) {
                rc = svc_err_errno(err, "mkdir");
                break;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    if (rc == 0 && !svc_is_dir(path))
        rc = svc_err_set(err, SVC_E_IO, "not a directory: %s", path);
    free(tmp);
    return rc;
}

bool svc_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void svc_buf_init(struct svc_buf *b)
{
    memset(b, 0, sizeof *b);
}

void svc_buf_add(struct svc_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = svc_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void svc_buf_adds(struct svc_buf *b, const char *s)
{
    svc_buf_add(b, s, strlen(s));
}

void svc_buf_printf(struct svc_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        svc_buf_add(b, small, (size_t)n);
        return;
    }
    char *big = svc_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    svc_buf_add(b, big, (size_t)n);
    free(big);
}

char *svc_buf_steal(struct svc_buf *b)
{
    char *d = b->data ? b->data : svc_xstrdup("");
    svc_buf_init(b);
    return d;
}

void svc_buf_free(struct svc_buf *b)
{
    free(b->data);
    svc_buf_init(b);
}

size_t svc_utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

char *svc_utf8_prefix(const char *s, size_t max_cp)
{
    size_t i = 0, cp = 0;
    while (s[i]) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (cp == max_cp)
                break;
            cp++;
        }
        i++;
    }
    return svc_xstrndup(s, i);
}

bool svc_utf8_valid(const char *s, size_t len)
{
    return u8_check((const uint8_t *)s, len) == NULL; /* RFC 3629 */
}

char *svc_b64_encode(const void *p, size_t n, bool url)
{
    unsigned char *out = svc_xmalloc((n + 2) / 3 * 4 + 1);
    int len = EVP_EncodeBlock(out, n ? p : (const void *)"", (int)n);
    for (int i = 0; url && i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    while (url && len > 0 && out[len - 1] == '=')
        out[--len] = '\0';
    return (char *)out;
}

unsigned char *svc_b64_decode(const char *s, size_t len, bool url, size_t *n)
{
    static const char alpha[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";
    size_t body = len;
    while (body > 0 && s[body - 1] == '=' && len - body < 2)
        body--;
    if (strspn(s, alpha) < body || (!url && strcspn(s, "-_") < body) || body % 4 == 1 ||
        (len != body && len % 4 != 0))
        return NULL;
    size_t padded = (body + 3) / 4 * 4;
    char *in = svc_xmalloc(padded + 1);
    for (size_t i = 0; i < body; i++)
        in[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
    memset(in + body, '=', padded - body);
    in[padded] = '\0';
    unsigned char *out = svc_xmalloc(padded / 4 * 3 + 1);
    int got = padded ? EVP_DecodeBlock(out, (const unsigned char *)in, (int)padded) : 0;
    free(in);
    if (got < 0) {
        free(out);
        return NULL;
    }
    *n = (size_t)got - (padded - body);
    out[*n] = '\0';
    return out;
}

bool svc_secret_equal(const char *a, const char *b)
{
    size_t al = strlen(a), bl = strlen(b);
    /* compare the whole of a against b padded; length mismatch still takes the same time */
    unsigned char diff = (unsigned char)(al != bl);
    for (size_t i = 0; i < al; i++)
        diff |= (unsigned char)(a[i] ^ (i < bl ? b[i] : 0));
    return diff == 0 && CRYPTO_memcmp(&al, &bl, sizeof al) == 0;
}
