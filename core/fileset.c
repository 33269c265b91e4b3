/* fileset: lists of files on disk, matched by path a bucket at a time. See fileset.h. */
#include "fileset.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util.h"

#define BUCKET_RECORDS 16384
#define BUCKETS_MAX 256

struct svc_fileset {
    FILE *f;
    size_t n;
};

/* A record on disk: this, then len bytes of path. */
struct hdr {
    uint32_t len;
    uint64_t bytes;
    char sha[64];
};

FILE *svc_fileset_tmpfile(struct svc_err *err)
{
    const char *dir = getenv("TMPDIR");
    char *p = NULL;
    svc_xasprintf(&p, "%s/svc-fileset.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkostemp(p, O_CLOEXEC);
    if (fd >= 0)
        unlink(p);
    free(p);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (!f) {
        svc_err_errno(err, "temporary file");
        if (fd >= 0)
            close(fd);
    }
    return f;
}

static int rec_write(FILE *f, const char *path, size_t len, uint64_t bytes, const char *sha)
{
    struct hdr h;
    memset(&h, 0, sizeof h);
    h.len = (uint32_t)len;
    h.bytes = bytes;
    memcpy(h.sha, sha, 64);
    return fwrite(&h, sizeof h, 1, f) == 1 && fwrite(path, 1, len, f) == len ? 0 : -1;
}

/* 1 with *r (its path in *buf, grown as needed), 0 at the end, -1 on a short record. */
static int rec_read(FILE *f, struct svc_fileset_rec *r, char **buf, size_t *cap)
{
    struct hdr h;
    if (fread(&h, sizeof h, 1, f) != 1)
        return ferror(f) || !feof(f) ? -1 : 0;
    if (h.len + 1 > *cap) {
        *cap = h.len + 1;
        *buf = svc_xrealloc(*buf, *cap);
    }
    if (fread(*buf, 1, h.len, f) != h.len)
        return -1;
    (*buf)[h.len] = '\0';
    r->path = *buf;
    r->bytes = h.bytes;
    memcpy(r->sha, h.sha, 64);
    r->sha[64] = '\0';
    return 1;
}

int svc_fileset_new(struct svc_fileset **out, struct svc_err *err)
{
    FILE *f = svc_fileset_tmpfile(err);
    if (!f)
        return -1;
    *out = svc_xcalloc(1, sizeof **out);
    (*out)->f = f;
    return 0;
}

int svc_fileset_add(struct svc_fileset *f, const char *path, uint64_t bytes, const char *sha,
                    struct svc_err *err)
{
    size_t len = strlen(path);
    if (len > UINT32_MAX / 2 || strlen(sha) != 64)
        return svc_err_set(err, SVC_E_IO, "fileset: a record out of bounds");
    if (rec_write(f->f, path, len, bytes, sha) != 0)
        return svc_err_errno(err, "write temporary file");
    f->n++;
    return 0;
}

size_t svc_fileset_count(const struct svc_fileset *f)
{
    return f->n;
}

void svc_fileset_free(struct svc_fileset *f)
{
    if (!f)
        return;
    if (f->f)
        fclose(f->f);
    free(f);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 29);
}

size_t svc_fileset_buckets(size_t total)
{
    size_t n = total / BUCKET_RECORDS + 1, max = BUCKETS_MAX;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)max * 2 + 64)
        max = rl.rlim_cur > 96 ? (size_t)(rl.rlim_cur - 64) / 2 : 1;
    return n < max ? n : max;
}

/* Copy every record of f to bucket (hash of its path) of bk (side 0) or bk + nb (side 1),
 * counting them in cnt. */
static int split(struct svc_fileset *f, FILE **bk, size_t *cnt, size_t nb, struct svc_err *err)
{
    if (fflush(f->f) != 0 || fseeko(f->f, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "read temporary file");
    struct svc_fileset_rec r;
    char *buf = NULL;
    size_t cap = 0;
    int got, rc = 0;
    while (rc == 0 && (got = rec_read(f->f, &r, &buf, &cap)) == 1) {
        size_t k = fnv1a(r.path) % nb;
        cnt[k]++;
        if (rec_write(bk[k], r.path, strlen(r.path), r.bytes, r.sha) != 0)
            rc = svc_err_errno(err, "write temporary file");
    }
    free(buf);
    if (rc == 0 && got < 0)
        rc = svc_err_errno(err, "read temporary file");
    if (rc == 0 && ftruncate(fileno(f->f), 0) != 0) /* its disk back, now it is split */
        rc = svc_err_errno(err, "truncate temporary file");
    return rc;
}

struct side {
    struct svc_fileset_rec *v;
    size_t n, cap;
};

static int cmp_rec(const void *a, const void *b)
{
    return strcmp(((const struct svc_fileset_rec *)a)->path,
                  ((const struct svc_fileset_rec *)b)->path);
}

/* Read a bucket of n records whole (its array of that size: no doubling's slack), sorted by
 * path. */
static int side_load(FILE *f, size_t n, struct side *s, struct svc_err *err)
{
    s->cap = n;
    s->v = svc_xmalloc((n ? n : 1) * sizeof *s->v);
    if (fflush(f) != 0 || fseeko(f, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "read temporary file");
    struct svc_fileset_rec r;
    char *buf = NULL;
    size_t cap = 0;
    int got;
    while ((got = rec_read(f, &r, &buf, &cap)) == 1) {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1024;
            s->v = svc_xrealloc(s->v, s->cap * sizeof *s->v);
        }
        r.path = svc_xstrdup(r.path);
        s->v[s->n++] = r;
    }
    free(buf);
    if (got < 0)
        return svc_err_errno(err, "read temporary file");
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, cmp_rec);
    return 0;
}

static void side_free(struct side *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
}

/* Walk both sorted sides of one bucket together, one fn call per path. */
static int join_bucket(FILE *fa, size_t na, FILE *fb, size_t nb, svc_fileset_fn fn, void *ctx,
                       struct svc_err *err)
{
    struct side a = {0}, b = {0};
    int rc = side_load(fa, na, &a, err);
    if (rc == 0)
        rc = side_load(fb, nb, &b, err);
    size_t i = 0, k = 0;
    while (rc == 0 && (i < a.n || k < b.n)) {
        const char *p = i == a.n                         ? b.v[k].path
                        : k == b.n                       ? a.v[i].path
                        : cmp_rec(&a.v[i], &b.v[k]) <= 0 ? a.v[i].path
                                                         : b.v[k].path;
        size_t ca = 0, cb = 0;
        while (i + ca < a.n && strcmp(a.v[i + ca].path, p) == 0)
            ca++;
        while (k + cb < b.n && strcmp(b.v[k + cb].path, p) == 0)
            cb++;
        rc = fn(ctx, p, ca ? &a.v[i] : NULL, ca, cb ? &b.v[k] : NULL, cb);
        i += ca;
        k += cb;
    }
    side_free(&a);
    side_free(&b);
    return rc;
}

int svc_fileset_join(struct svc_fileset *a, struct svc_fileset *b, svc_fileset_fn fn, void *ctx,
                     struct svc_err *err)
{
    size_t nb = svc_fileset_buckets(a->n + b->n);
    FILE **bk = svc_xcalloc(nb * 2, sizeof *bk);
    size_t *cnt = svc_xcalloc(nb * 2, sizeof *cnt);
    int rc = 0;
    for (size_t i = 0; i < nb * 2 && rc == 0; i++)
        if (!(bk[i] = svc_fileset_tmpfile(err)))
            rc = -1;
    if (rc == 0)
        rc = split(a, bk, cnt, nb, err);
    if (rc == 0)
        rc = split(b, bk + nb, cnt + nb, nb, err);
    for (size_t i = 0; i < nb && rc == 0; i++) {
        rc = join_bucket(bk[i], cnt[i], bk[nb + i], cnt[nb + i], fn, ctx, err);
        fclose(bk[i]);
        fclose(bk[nb + i]);
        bk[i] = bk[nb + i] = NULL;
    }
    for (size_t i = 0; i < nb * 2; i++)
        if (bk[i])
            fclose(bk[i]);
    free(bk);
    free(cnt);
    return rc;
}
