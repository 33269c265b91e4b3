/* tar: streaming ustar/pax writer over gzip, and a refusing reader. See tar.h. */
#include "tar.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZLIB_CONST /* next_in points to const bytes */
#include <zlib.h>

#define BLOCK 512
#define OUTBUF (64 * 1024)
#define USTAR_MAX_SIZE 077777777777ULL

/* The writer's bytes gather in one of two input buffers; a full one goes to a compressor
 * thread, which deflates it and hands the output to out while the caller fills the other:
 * reading and rendering the sessions and compressing them share two cores, as tar and gzip
 * do in `tar czf` (docs/BENCH.md, "export"). Without a thread, the caller compresses. */
#define INBUF (256 * 1024)

struct svc_tarw {
    svc_tar_out_fn out;
    void *ctx;
    z_stream z;
    unsigned char obuf[OUTBUF];
    unsigned char *in[2];
    size_t inlen; /* bytes in in[cur], the caller's */
    int cur;
    _Atomic uint64_t bytes_out;
    uint64_t remaining; /* data still owed by the current file */
    uint64_t size;      /* the current file's declared size (for the padding) */
    bool in_file;
    /* the hand-off, under mu: one job at a time (a buffer, and whether it ends the stream) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    bool th_ok;
    const unsigned char *job;
    size_t joblen;
    int jobflush;
    bool has_job, quit, failed;
    struct svc_err terr; /* why the compressor failed */
};

static int z_feed(struct svc_tarw *w, const void *data, size_t len, int flush, struct svc_err *err)
{
    w->z.next_in = data;
    w->z.avail_in = (uInt)len;
    for (;;) {
        w->z.next_out = w->obuf;
        w->z.avail_out = OUTBUF;
        int zr = deflate(&w->z, flush);
        if (zr == Z_STREAM_ERROR)
            return svc_err_set(err, SVC_E_INTERNAL, "deflate failed");
        size_t have = OUTBUF - w->z.avail_out;
        if (have) {
            if (w->out(w->ctx, w->obuf, have) != 0)
                return svc_err_set(err, SVC_E_IO, "archive output failed");
            w->bytes_out += have;
        }
        if (flush == Z_FINISH ? zr == Z_STREAM_END : (w->z.avail_in == 0 && w->z.avail_out != 0))
            break;
    }
    return 0;
}

/* The compressor thread: each job deflated and written out, until quit or the last job. */
static void *compressor(void *arg)
{
    struct svc_tarw *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->has_job && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->has_job)
            break;
        bool skip = w->failed; /* after a failure, jobs are only taken off the slot */
        pthread_mutex_unlock(&w->mu);
        struct svc_err e;
        int rc = skip ? 0 : z_feed(w, w->job, w->joblen, w->jobflush, &e);
        pthread_mutex_lock(&w->mu);
        if (rc != 0) {
            w->failed = true;
            w->terr = e;
        }
        w->has_job = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* in[cur] to the compressor (or deflated here without a thread); then the other buffer is
 * the caller's. flush: Z_NO_FLUSH, or Z_FINISH for the last. */
static int hand_off(struct svc_tarw *w, int flush, struct svc_err *err)
{
    if (!w->th_ok) {
        int rc = z_feed(w, w->in[w->cur], w->inlen, flush, err);
        w->inlen = 0;
        return rc;
    }
    pthread_mutex_lock(&w->mu);
    while (w->has_job)
        pthread_cond_wait(&w->cv, &w->mu);
    if (!w->failed) {
        w->job = w->in[w->cur];
        w->joblen = w->inlen;
        w->jobflush = flush;
        w->has_job = true;
        pthread_cond_broadcast(&w->cv);
    }
    if (!w->failed && flush == Z_FINISH)
        while (w->has_job)
            pthread_cond_wait(&w->cv, &w->mu);
    bool failed = w->failed;
    if (failed)
        *err = w->terr;
    pthread_mutex_unlock(&w->mu);
    w->cur ^= 1;
    w->inlen = 0;
    return failed ? -1 : 0;
}

static int put(struct svc_tarw *w, const void *data, size_t len, struct svc_err *err)
{
    const unsigned char *p = data;
    while (len > 0) {
        size_t n = INBUF - w->inlen < len ? INBUF - w->inlen : len;
        memcpy(w->in[w->cur] + w->inlen, p, n);
        w->inlen += n;
        p += n;
        len -= n;
        if (w->inlen == INBUF && hand_off(w, Z_NO_FLUSH, err) != 0)
            return -1;
    }
    return 0;
}

/* The zeros that end a member's data of n bytes on a block boundary. */
static int put_pad(struct svc_tarw *w, uint64_t n, struct svc_err *err)
{
    static const unsigned char zeros[BLOCK];
    size_t pad = (size_t)((BLOCK - n % BLOCK) % BLOCK);
    return pad ? put(w, zeros, pad, err) : 0;
}

/* The compressor thread, with every signal blocked (they stay the caller's to handle);
 * false when it cannot be started (the caller then compresses). */
static bool start_compressor(struct svc_tarw *w)
{
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        return false;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&w->th, NULL, compressor, w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    return ok;
}

int svc_tarw_new(svc_tar_out_fn out, void *ctx, struct svc_tarw **out_w, struct svc_err *err)
{
    *out_w = NULL;
    struct svc_tarw *w = svc_xcalloc(1, sizeof *w);
    w->out = out;
    w->ctx = ctx;
    /* 15 + 16: the gzip wrapper; level 6 as gzip(1) and tar czf use */
    if (deflateInit2(&w->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(w);
        return svc_err_set(err, SVC_E_NOMEM, "deflateInit failed");
    }
    w->in[0] = svc_xmalloc(INBUF);
    w->in[1] = svc_xmalloc(INBUF);
    w->th_ok = start_compressor(w);
    *out_w = w;
    return 0;
}

static void octal(char *field, size_t width, uint64_t v)
{
    /* width - 1 digits and a NUL, zero-padded */
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0;) {
        field[i] = (char)('0' + (v & 7));
        v >>= 3;
    }
}

/* Split path into ustar prefix (<= 155) and name (<= 100); false when it does not fit. */
static bool ustar_split(const char *path, char *name, char *prefix)
{
    size_t n = strlen(path);
    if (n <= 100) {
        memcpy(name, path, n);
        return true;
    }
    for (size_t i = n; i-- > 0;) {
        if (path[i] != '/')
            continue;
        if (i <= 155 && n - i - 1 <= 100 && n - i - 1 > 0) {
            memcpy(prefix, path, i);
            memcpy(name, path + i + 1, n - i - 1);
            return true;
        }
        if (i < n - 101)
            break;
    }
    return false;
}

static int header(struct svc_tarw *w, const char *path, char type, uint64_t size, time_t mtime,
                  unsigned mode, struct svc_err *err)
{
    unsigned char h[BLOCK];
    memset(h, 0, sizeof h);
    char *name = (char *)h, *prefix = (char *)h + 345;
    bool fits = ustar_split(path, name, prefix) && size <= USTAR_MAX_SIZE;
    if (!fits) {
        /* a pax extended header carrying the path and the size */
        char rec[4200];
        size_t rl = 0;
        const char *keys[2] = {"path", "size"};
        char sizebuf[24];
        snprintf(sizebuf, sizeof sizebuf, "%llu", (unsigned long long)size);
        const char *vals[2] = {path, sizebuf};
        for (int k = 0; k < 2; k++) {
            size_t body = 1 + strlen(keys[k]) + 1 + strlen(vals[k]) + 1; /* " k=v\n" */
            size_t len = body + 1;
            while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
                len = body + (size_t)snprintf(NULL, 0, "%zu", len);
            if (rl + len >= sizeof rec)
                return svc_err_set(err, SVC_E_INTERNAL, "archive path too long");
            rl += (size_t)snprintf(rec + rl, sizeof rec - rl, "%zu %s=%s\n", len, keys[k], vals[k]);
        }
        char xname[100];
        snprintf(xname, sizeof xname, "PaxHeaders/%.80s", path);
        if (header(w, xname, 'x', rl, mtime, 0644, err) != 0 || put(w, rec, rl, err) != 0 ||
            put_pad(w, rl, err) != 0)
            return -1;
        memset(h, 0, sizeof h);
        /* the ustar fields get a truncated name; readers use the pax path */
        size_t n = strlen(path);
        memcpy(name, n > 99 ? path + n - 99 : path, n > 99 ? 99 : n);
    }
    octal((char *)h + 100, 8, mode);
    octal((char *)h + 108, 8, 0);
    octal((char *)h + 116, 8, 0);
    octal((char *)h + 124, 12, size <= USTAR_MAX_SIZE ? size : 0);
    octal((char *)h + 136, 12, (uint64_t)(mtime > 0 ? mtime : 0));
    memset(h + 148, ' ', 8);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6); /* "ustar\0" */
    memcpy(h + 263, "00", 2);
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    return put(w, h, BLOCK, err);
}

int svc_tarw_dir(struct svc_tarw *w, const char *path, time_t mtime, struct svc_err *err)
{
    char *p = NULL;
    svc_xasprintf(&p, "%s/", path);
    int rc = header(w, p, '5', 0, mtime, 0755, err);
    free(p);
    return rc;
}

int svc_tarw_file_begin(struct svc_tarw *w, const char *path, uint64_t size, time_t mtime,
                        struct svc_err *err)
{
    if (w->in_file)
        return svc_err_set(err, SVC_E_INTERNAL, "archive member not ended");
    if (header(w, path, '0', size, mtime, 0644, err) != 0)
        return -1;
    w->in_file = true;
    w->remaining = size;
    w->size = size;
    return 0;
}

int svc_tarw_data(struct svc_tarw *w, const void *data, size_t len, struct svc_err *err)
{
    if (!w->in_file || len > w->remaining)
        return svc_err_set(err, SVC_E_INTERNAL, "archive member longer than declared");
    if (put(w, data, len, err) != 0)
        return -1;
    w->remaining -= len;
    return 0;
}

int svc_tarw_file_end(struct svc_tarw *w, struct svc_err *err)
{
    if (!w->in_file || w->remaining)
        return svc_err_set(err, SVC_E_INTERNAL, "archive member shorter than declared");
    w->in_file = false;
    return put_pad(w, w->size, err);
}

int svc_tarw_finish(struct svc_tarw *w, struct svc_err *err)
{
    static const unsigned char zeros[2 * BLOCK];
    if (w->in_file)
        return svc_err_set(err, SVC_E_INTERNAL, "archive member not ended");
    if (put(w, zeros, sizeof zeros, err) != 0)
        return -1;
    return hand_off(w, Z_FINISH, err);
}

uint64_t svc_tarw_bytes(const struct svc_tarw *w)
{
    return w->bytes_out;
}

void svc_tarw_free(struct svc_tarw *w)
{
    if (!w)
        return;
    if (w->th_ok) { /* the job in hand is finished first: out is the caller's after this */
        pthread_mutex_lock(&w->mu);
        w->quit = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    deflateEnd(&w->z);
    free(w->in[0]);
    free(w->in[1]);
    free(w);
}

/* ---- reader ---- */

struct svc_tarr {
    int fd;
    z_stream z;
    unsigned char ibuf[OUTBUF];
    uint64_t remaining; /* data of the current member not yet read */
    uint64_t pad;       /* padding after it */
    char *path;
    char *long_name; /* from a pax 'x' or GNU 'L' header, for the next member */
    bool has_size;
    uint64_t pax_size;
};

int svc_tarr_open(const char *path, struct svc_tarr **out, struct svc_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? svc_err_set(err, SVC_E_NOT_FOUND, "%s: no such file", path)
                               : svc_err_errno(err, path);
    struct svc_tarr *r = svc_xcalloc(1, sizeof *r);
    r->fd = fd;
    if (inflateInit2(&r->z, 15 + 32) != Z_OK) {
        close(r->fd);
        free(r);
        return svc_err_set(err, SVC_E_NOMEM, "inflateInit failed");
    }
    *out = r;
    return 0;
}

/* Exactly n decompressed bytes into buf (NULL: discard); -1 on a damaged or short archive. */
static int raw_read(struct svc_tarr *r, void *buf, size_t n, struct svc_err *err)
{
    unsigned char scratch[8192];
    unsigned char *p = buf;
    while (n > 0) {
        size_t want = n;
        if (!p && want > sizeof scratch)
            want = sizeof scratch;
        r->z.next_out = p ? p : scratch;
        r->z.avail_out = (uInt)(want > (1u << 30) ? (1u << 30) : want);
        size_t before = r->z.avail_out;
        if (r->z.avail_in == 0) {
            ssize_t got;
            do
                got = read(r->fd, r->ibuf, sizeof r->ibuf);
            while (got < 0 && errno == EINTR);
            if (got < 0)
                return svc_err_errno(err, "read archive");
            if (got == 0)
                return svc_err_set(err, SVC_E_IO, "archive is truncated");
            r->z.next_in = r->ibuf;
            r->z.avail_in = (uInt)got;
        }
        int zr = inflate(&r->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return svc_err_set(err, SVC_E_IO, "archive is not valid gzip data (%s)",
                               r->z.msg ? r->z.msg : "inflate error");
        /* concatenated gzip members are one stream to gzip(1): go on with the next */
        if (zr == Z_STREAM_END && inflateReset(&r->z) != Z_OK)
            return svc_err_set(err, SVC_E_IO, "archive: inflateReset failed");
        size_t got = before - r->z.avail_out;
        if (p)
            p += got;
        n -= got;
    }
    return 0;
}

bool svc_tar_path_normalize(char *path)
{
    if (!path || path[0] == '/' || path[0] == '\0')
        return false;
    char *w = path;
    const char *s = path;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        if (!(n == 0 || (n == 1 && s[0] == '.'))) {
            if (w != path)
                *w++ = '/';
            memmove(w, s, n);
            w += n;
        }
        s += n;
        if (*s == '/')
            s++;
    }
    *w = '\0';
    return true; /* may be "" for "./": the caller skips it */
}

static int parse_octal(const unsigned char *f, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (f[0] & 0x80)
        return -1; /* base-256: sizes beyond what we write or accept */
    while (i < n && (f[i] == ' ' || f[i] == '\0'))
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
        v = v * 8 + (uint64_t)(f[i] - '0');
    *out = v;
    return 0;
}

static int skip_current(struct svc_tarr *r, struct svc_err *err)
{
    if (r->remaining + r->pad == 0)
        return 0;
    int rc = raw_read(r, NULL, (size_t)(r->remaining + r->pad), err);
    r->remaining = r->pad = 0;
    return rc;
}

/* Read a pax/GNU extension member's data (at most 1 MiB). Heap, NUL-terminated. */
static char *read_ext(struct svc_tarr *r, uint64_t size, struct svc_err *err)
{
    if (size > (1u << 20)) {
        svc_err_set(err, SVC_E_IO, "archive: extension header too large");
        return NULL;
    }
    char *buf = svc_xmalloc((size_t)size + 1);
    uint64_t pad = (BLOCK - size % BLOCK) % BLOCK;
    if (raw_read(r, buf, (size_t)size, err) != 0 || raw_read(r, NULL, (size_t)pad, err) != 0) {
        free(buf);
        return NULL;
    }
    buf[size] = '\0';
    return buf;
}

static int apply_pax(struct svc_tarr *r, char *rec, size_t len, struct svc_err *err)
{
    size_t i = 0;
    while (i < len) {
        char *end;
        unsigned long l = strtoul(rec + i, &end, 10);
        if (l == 0 || *end != ' ' || i + l > len || rec[i + l - 1] != '\n')
            return svc_err_set(err, SVC_E_IO, "archive: damaged pax header");
        char *kv = end + 1;
        rec[i + l - 1] = '\0';
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = '\0';
            if (strcmp(kv, "path") == 0) {
                free(r->long_name);
                r->long_name = svc_xstrdup(eq + 1);
            } else if (strcmp(kv, "size") == 0) {
                r->pax_size = strtoull(eq + 1, NULL, 10);
                r->has_size = true;
            } else if (strcmp(kv, "linkpath") == 0) {
                return svc_err_set(err, SVC_E_IO, "archive member is a link: refused");
            }
        }
        i += l;
    }
    return 0;
}

int svc_tarr_next(struct svc_tarr *r, struct svc_tar_member *m, struct svc_err *err)
{
    memset(m, 0, sizeof *m);
    if (skip_current(r, err) != 0)
        return -1;
    for (;;) {
        unsigned char h[BLOCK];
        if (raw_read(r, h, BLOCK, err) != 0)
            return -1;
        unsigned sum = 0, any = 0;
        for (int i = 0; i < BLOCK; i++) {
            any |= h[i];
            sum += (i >= 148 && i < 156) ? ' ' : h[i];
        }
        if (!any)
            return 0; /* end of archive (the second zero block is not needed) */
        uint64_t stored = 0, size = 0;
        parse_octal(h + 148, 8, &stored);
        if (stored != sum)
            return svc_err_set(err, SVC_E_IO, "archive: header checksum mismatch");
        if (parse_octal(h + 124, 12, &size) != 0)
            return svc_err_set(err, SVC_E_IO, "archive: member size not supported");
        char type = (char)h[156];
        if (type == 'x' || type == 'L') {
            char *ext = read_ext(r, size, err);
            if (!ext)
                return -1;
            int rc = 0;
            if (type == 'L') {
                free(r->long_name);
                r->long_name = ext;
            } else {
                rc = apply_pax(r, ext, (size_t)size, err);
                free(ext);
            }
            if (rc != 0)
                return -1;
            continue;
        }
        free(r->path);
        if (r->long_name) {
            r->path = r->long_name;
            r->long_name = NULL;
        } else if (memcmp(h + 257, "ustar", 5) == 0 && h[345] && h[262] == '\0') {
            svc_xasprintf(&r->path, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
        } else {
            r->path = svc_xstrndup((const char *)h, 100);
        }
        if (r->has_size) {
            size = r->pax_size;
            r->has_size = false;
        }
        if (type == 'g') { /* global pax header: nothing we use */
            r->remaining = size;
            r->pad = (BLOCK - size % BLOCK) % BLOCK;
            if (skip_current(r, err) != 0)
                return -1;
            continue;
        }
        char shown[160];
        snprintf(shown, sizeof shown, "%.150s", r->path);
        if (type != '0' && type != '\0' && type != '7' && type != '5')
            return svc_err_set(err, SVC_E_IO, "archive member %s is a %s: refused", shown,
                               type == '1'                    ? "hard link"
                               : type == '2'                  ? "symbolic link"
                               : (type == '3' || type == '4') ? "device"
                               : type == '6'                  ? "fifo"
                                                              : "member of an unsupported type");
        if (r->path[0] == '/')
            return svc_err_set(err, SVC_E_IO, "archive member %s has an absolute path: refused",
                               shown);
        if (!svc_tar_path_normalize(r->path))
            return svc_err_set(err, SVC_E_IO, "archive member %s leaves the bundle: refused",
                               shown);
        m->type = type == '5' ? SVC_TAR_DIR : SVC_TAR_FILE;
        m->size = m->type == SVC_TAR_DIR ? 0 : size;
        r->remaining = m->size;
        r->pad = type == '5' ? 0 : (BLOCK - size % BLOCK) % BLOCK;
        if (type == '5' && size) /* a directory with data: skip it */
            r->pad = size + (BLOCK - size % BLOCK) % BLOCK;
        if (r->path[0] == '\0') {
            if (skip_current(r, err) != 0) /* "./": the archive's own top */
                return -1;
            continue;
        }
        m->path = r->path;
        return 1;
    }
}

long svc_tarr_read(struct svc_tarr *r, void *buf, size_t n, struct svc_err *err)
{
    if (n > r->remaining)
        n = (size_t)r->remaining;
    if (n == 0)
        return 0;
    if (raw_read(r, buf, n, err) != 0)
        return -1;
    r->remaining -= n;
    return (long)n;
}

void svc_tarr_close(struct svc_tarr *r)
{
    if (!r)
        return;
    inflateEnd(&r->z);
    close(r->fd);
    free(r->path);
    free(r->long_name);
    free(r);
}
