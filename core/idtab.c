/* idtab: session ids and their outcomes on disk, a bucket in memory at a time. See idtab.h. */
#include "idtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileset.h"
#include "util.h"

/* Records read or written at once by svc_idtab_each and a fold. */
#define CHUNK 256

struct svc_idtab {
    FILE *ev; /* the events, until the fold */
    size_t nev;
    FILE *tab; /* the records (struct drec), by bucket, each in id order */
    FILE *why; /* their reasons, appended */
    uint64_t why_end;
    size_t n, nb;
    size_t *start; /* nb + 1: where each bucket's records begin */
    size_t *next;  /* nb: the record after the one found last in each bucket */
};

/* A record on disk (zeroed first: a record changed is told by its bytes). */
struct drec {
    char id[SVC_ID_MAX + 2];
    unsigned char state;
    uint32_t why_len;
    uint64_t num;
    uint64_t why_off;
};

/* An event on disk: this, then id_len bytes of id and why_len of reason. */
struct ehdr {
    uint32_t id_len, why_len;
    uint64_t num;
    unsigned char state;
};

/* An event in memory, pos its order within the bucket. */
struct ev {
    char *id, *why;
    uint64_t num;
    size_t pos;
    unsigned char state;
};

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static int pread_all(FILE *f, void *p, size_t n, uint64_t off)
{
    ssize_t got;
    while ((got = pread(fileno(f), p, n, (off_t)off)) < 0 && errno == EINTR)
        ;
    return got == (ssize_t)n ? 0 : -1;
}

static int pwrite_all(FILE *f, const void *p, size_t n, uint64_t off)
{
    ssize_t put;
    while ((put = pwrite(fileno(f), p, n, (off_t)off)) < 0 && errno == EINTR)
        ;
    return put == (ssize_t)n ? 0 : -1;
}

int svc_idtab_new(struct svc_idtab **out, struct svc_err *err)
{
    struct svc_idtab *t = svc_xcalloc(1, sizeof *t);
    if (!(t->ev = svc_fileset_tmpfile(err)) || !(t->tab = svc_fileset_tmpfile(err)) ||
        !(t->why = svc_fileset_tmpfile(err))) {
        svc_idtab_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void svc_idtab_free(struct svc_idtab *t)
{
    if (!t)
        return;
    FILE *fs[3] = {t->ev, t->tab, t->why};
    for (int i = 0; i < 3; i++)
        if (fs[i])
            fclose(fs[i]);
    free(t->start);
    free(t->next);
    free(t);
}

static int ev_write(FILE *f, const char *id, size_t n, uint64_t num, unsigned char state,
                    const char *why)
{
    struct ehdr h;
    memset(&h, 0, sizeof h);
    h.id_len = (uint32_t)n;
    h.why_len = why ? (uint32_t)strlen(why) : 0;
    h.num = num;
    h.state = state;
    return fwrite(&h, sizeof h, 1, f) == 1 && fwrite(id, 1, n, f) == n &&
                   fwrite(why ? why : "", 1, h.why_len, f) == h.why_len
               ? 0
               : -1;
}

/* 1 with *e (its strings allocated), 0 at the end, -1 on a short or oversized event. */
static int ev_read(FILE *f, struct ev *e)
{
    struct ehdr h;
    if (fread(&h, sizeof h, 1, f) != 1)
        return ferror(f) || !feof(f) ? -1 : 0;
    if (h.id_len > SVC_ID_MAX + 1 || h.why_len >= SVC_IDTAB_WHY)
        return -1;
    e->id = svc_xmalloc(h.id_len + 1);
    e->why = h.why_len ? svc_xmalloc(h.why_len + 1) : NULL;
    if (fread(e->id, 1, h.id_len, f) != h.id_len ||
        (e->why && fread(e->why, 1, h.why_len, f) != h.why_len)) {
        free(e->id);
        free(e->why);
        return -1;
    }
    e->id[h.id_len] = '\0';
    if (e->why)
        e->why[h.why_len] = '\0';
    e->num = h.num;
    e->state = h.state;
    return 1;
}

int svc_idtab_note(struct svc_idtab *t, const char *id, size_t n, uint64_t num, unsigned char state,
                   const char *why, struct svc_err *err)
{
    if (n > SVC_ID_MAX + 1 || (why && strlen(why) >= SVC_IDTAB_WHY))
        return svc_err_set(err, SVC_E_IO, "idtab: an id or a reason out of bounds");
    if (ev_write(t->ev, id, n, num, state, why) != 0)
        return svc_err_errno(err, "write temporary file");
    t->nev++;
    return 0;
}

void svc_idrec_set(struct svc_idrec *r, unsigned char state, const char *why)
{
    r->state = state;
    snprintf(r->why, sizeof r->why, "%s", why ? why : "");
    r->why_len = 0; /* a new reason: appended when the record is written */
}

/* r as it goes on disk, its new reason appended first. */
static int to_disk(struct svc_idtab *t, struct svc_idrec *r, struct drec *d, struct svc_err *err)
{
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "%s", r->id);
    d->state = r->state;
    d->num = r->num;
    if (r->why[0] && r->why_len == 0) {
        size_t len = strlen(r->why);
        if (pwrite_all(t->why, r->why, len, t->why_end) != 0)
            return svc_err_errno(err, "write temporary file");
        r->why_off = t->why_end;
        r->why_len = (uint32_t)len;
        t->why_end += len;
    }
    if (r->why[0]) {
        d->why_off = r->why_off;
        d->why_len = r->why_len;
    }
    return 0;
}

static int from_disk(struct svc_idtab *t, const struct drec *d, size_t at, struct svc_idrec *r,
                     struct svc_err *err)
{
    memcpy(r->id, d->id, sizeof r->id);
    r->id[sizeof r->id - 1] = '\0';
    r->num = d->num;
    r->state = d->state;
    r->at = at;
    r->why_off = d->why_off;
    r->why_len = d->why_len < SVC_IDTAB_WHY ? d->why_len : 0;
    r->why[r->why_len] = '\0';
    if (r->why_len && pread_all(t->why, r->why, r->why_len, r->why_off) != 0)
        return svc_err_errno(err, "read temporary file");
    return 0;
}

int svc_idtab_put(struct svc_idtab *t, struct svc_idrec *r, struct svc_err *err)
{
    struct drec d;
    if (to_disk(t, r, &d, err) != 0)
        return -1;
    if (pwrite_all(t->tab, &d, sizeof d, (uint64_t)r->at * sizeof d) != 0)
        return svc_err_errno(err, "write temporary file");
    return 0;
}

/* Copy every event to the bucket of its id's hash (counted in cnt), then give the events'
 * disk back. */
static int split(struct svc_idtab *t, FILE **bk, size_t *cnt, size_t nb, struct svc_err *err)
{
    if (fflush(t->ev) != 0 || fseeko(t->ev, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "read temporary file");
    struct ev e;
    int got, rc = 0;
    while (rc == 0 && (got = ev_read(t->ev, &e)) == 1) {
        size_t k = id_hash(e.id) % nb;
        cnt[k]++;
        if (ev_write(bk[k], e.id, strlen(e.id), e.num, e.state, e.why) != 0)
            rc = svc_err_errno(err, "write temporary file");
        free(e.id);
        free(e.why);
    }
    if (rc == 0 && got < 0)
        rc = svc_err_errno(err, "read temporary file");
    fclose(t->ev);
    t->ev = NULL;
    return rc;
}

static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

struct bucket {
    struct ev *v;
    size_t n, cap;
    struct drec *out; /* CHUNK records on their way to the table */
    size_t nout;
};

static void bucket_free(struct bucket *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].id);
        free(b->v[i].why);
    }
    free(b->v);
    free(b->out);
}

/* Read a bucket's n events whole (an array of that size), sorted by id, then by the order
 * they were noted in. */
static int bucket_load(FILE *f, size_t n, struct bucket *b, struct svc_err *err)
{
    b->cap = n;
    b->v = svc_xmalloc((n ? n : 1) * sizeof *b->v);
    if (fflush(f) != 0 || fseeko(f, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "read temporary file");
    struct ev e;
    int got;
    while ((got = ev_read(f, &e)) == 1) {
        if (b->n == b->cap) {
            b->cap = b->cap ? b->cap * 2 : 1024;
            b->v = svc_xrealloc(b->v, b->cap * sizeof *b->v);
        }
        e.pos = b->n;
        b->v[b->n++] = e;
    }
    if (got < 0)
        return svc_err_errno(err, "read temporary file");
    if (b->n > 1)
        qsort(b->v, b->n, sizeof *b->v, cmp_ev);
    return 0;
}

/* Write the records gathered in b->out after the table's t->n first. */
static int bucket_flush(struct svc_idtab *t, struct bucket *b, struct svc_err *err)
{
    if (b->nout &&
        pwrite_all(t->tab, b->out, b->nout * sizeof *b->out, (uint64_t)t->n * sizeof *b->out) != 0)
        return svc_err_errno(err, "write temporary file");
    t->n += b->nout;
    b->nout = 0;
    return 0;
}

/* One bucket's events, one record an id, onto the end of the table. */
static int fold_bucket(struct svc_idtab *t, FILE *f, size_t n, svc_idtab_fn fn, void *ctx,
                       struct svc_err *err)
{
    struct bucket b = {0};
    b.out = svc_xmalloc(CHUNK * sizeof *b.out);
    int rc = bucket_load(f, n, &b, err);
    struct svc_idrec r;
    for (size_t i = 0, k; rc == 0 && i < b.n; i = k) {
        memset(&r, 0, sizeof r);
        snprintf(r.id, sizeof r.id, "%s", b.v[i].id);
        for (k = i; k < b.n && strcmp(b.v[k].id, r.id) == 0; k++) {
            r.num += b.v[k].num;
            if (b.v[k].state && !r.state)
                svc_idrec_set(&r, b.v[k].state, b.v[k].why);
        }
        r.at = t->n + b.nout;
        rc = fn ? fn(ctx, &r) : 0;
        if (rc == 0)
            rc = to_disk(t, &r, &b.out[b.nout++], err);
        if (rc == 0 && b.nout == CHUNK)
            rc = bucket_flush(t, &b, err);
    }
    if (rc == 0)
        rc = bucket_flush(t, &b, err);
    bucket_free(&b);
    return rc;
}

int svc_idtab_fold(struct svc_idtab *t, svc_idtab_fn fn, void *ctx, struct svc_err *err)
{
    if (!t->ev)
        return svc_err_set(err, SVC_E_IO, "idtab: folded twice");
    size_t nb = svc_fileset_buckets(t->nev);
    FILE **bk = svc_xcalloc(nb, sizeof *bk);
    size_t *cnt = svc_xcalloc(nb, sizeof *cnt);
    int rc = 0;
    for (size_t i = 0; i < nb && rc == 0; i++)
        if (!(bk[i] = svc_fileset_tmpfile(err)))
            rc = -1;
    if (rc == 0)
        rc = split(t, bk, cnt, nb, err);
    t->nb = nb;
    t->start = svc_xcalloc(nb + 1, sizeof *t->start);
    t->next = svc_xcalloc(nb, sizeof *t->next);
    for (size_t i = 0; i < nb && rc == 0; i++) {
        t->start[i] = t->n;
        rc = fold_bucket(t, bk[i], cnt[i], fn, ctx, err);
        fclose(bk[i]); /* its disk back at once */
        bk[i] = NULL;
    }
    t->start[nb] = t->n;
    memcpy(t->next, t->start, nb * sizeof *t->next);
    for (size_t i = 0; i < nb; i++)
        if (bk[i])
            fclose(bk[i]);
    free(bk);
    free(cnt);
    return rc;
}

/* Compare key with record at (read into *d): <0, 0, >0, or 2 with err set. */
static int probe(struct svc_idtab *t, const char *key, size_t at, struct drec *d,
                 struct svc_err *err)
{
    if (pread_all(t->tab, d, sizeof *d, (uint64_t)at * sizeof *d) != 0) {
        svc_err_errno(err, "read temporary file");
        return 2;
    }
    int c = strncmp(key, d->id, sizeof d->id);
    return c < 0 ? -1 : c > 0;
}

int svc_idtab_find(struct svc_idtab *t, const char *id, size_t n, struct svc_idrec *r,
                   struct svc_err *err)
{
    char key[SVC_ID_MAX + 2];
    if (n >= sizeof key || t->nb == 0)
        return 0;
    memcpy(key, id, n);
    key[n] = '\0';
    size_t b = id_hash(key) % t->nb, lo = t->start[b], hi = t->start[b + 1], at = t->next[b];
    struct drec d;
    int c = 1;
    if (at < hi) { /* ids looked up in order (a bundle's): the one after the last, first */
        c = probe(t, key, at, &d, err);
        if (c < 0)
            hi = at;
        else if (c > 0)
            lo = at + 1;
    }
    while (c != 0 && c != 2 && lo < hi) {
        at = lo + (hi - lo) / 2;
        c = probe(t, key, at, &d, err);
        if (c < 0)
            hi = at;
        else if (c > 0)
            lo = at + 1;
    }
    if (c == 2)
        return -1;
    if (c != 0)
        return 0;
    t->next[b] = at + 1;
    return from_disk(t, &d, at, r, err) == 0 ? 1 : -1;
}

/* fn on each record of one chunk read at i; the chunk written back when one changed. */
static int each_chunk(struct svc_idtab *t, struct drec *c, size_t i, size_t k, svc_idtab_fn fn,
                      void *ctx, struct svc_err *err)
{
    if (pread_all(t->tab, c, k * sizeof *c, (uint64_t)i * sizeof *c) != 0)
        return svc_err_errno(err, "read temporary file");
    struct svc_idrec r;
    struct drec d;
    bool dirty = false;
    int rc = 0;
    for (size_t x = 0; x < k && rc == 0; x++) {
        if (from_disk(t, &c[x], i + x, &r, err) != 0)
            return -1;
        rc = fn(ctx, &r);
        if (to_disk(t, &r, &d, err) != 0)
            return -1;
        if (memcmp(&d, &c[x], sizeof d) != 0) {
            c[x] = d;
            dirty = true;
        }
    }
    if (dirty && pwrite_all(t->tab, c, k * sizeof *c, (uint64_t)i * sizeof *c) != 0)
        return svc_err_errno(err, "write temporary file");
    return rc;
}

int svc_idtab_each(struct svc_idtab *t, svc_idtab_fn fn, void *ctx, struct svc_err *err)
{
    struct drec *c = svc_xmalloc(CHUNK * sizeof *c);
    int rc = 0;
    for (size_t i = 0; i < t->n && rc == 0; i += CHUNK)
        rc = each_chunk(t, c, i, t->n - i < CHUNK ? t->n - i : CHUNK, fn, ctx, err);
    free(c);
    return rc;
}
