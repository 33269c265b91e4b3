/* idlist: a set of ids on disk, sorted by runs and a merge. See idlist.h. */
#include "idlist.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "fileset.h"
#include "util.h"

#define CHUNK_BYTES (256 * 1024)
#define READ_BUF 4096

struct svc_idlist {
    char *chunk; /* ids added since the last run, each ending in '\0' */
    size_t clen;
    const char **ptrs; /* into chunk, for the sort */
    size_t np, pcap;
    FILE *runs;    /* the runs, one after the other: "id\n" lines */
    off_t *starts; /* where each run starts; runs' end is the file's */
    size_t nruns;
    off_t end;
    FILE *sorted; /* after svc_idlist_sort: every distinct id, "id\n" */
    size_t count;
    char line[SVC_IDLIST_ID_MAX + 2];
};

int svc_idlist_new(struct svc_idlist **out, struct svc_err *err)
{
    FILE *f = svc_fileset_tmpfile(err);
    if (!f)
        return -1;
    struct svc_idlist *l = svc_xcalloc(1, sizeof *l);
    l->chunk = svc_xmalloc(CHUNK_BYTES);
    l->runs = f;
    *out = l;
    return 0;
}

void svc_idlist_free(struct svc_idlist *l)
{
    if (!l)
        return;
    free(l->chunk);
    free(l->ptrs);
    free(l->starts);
    if (l->runs)
        fclose(l->runs);
    if (l->sorted)
        fclose(l->sorted);
    free(l);
}

/* Write id and a newline to f unless it repeats prev (NULL: nothing before). */
static int put_unique(FILE *f, const char *id, const char *prev, size_t *count)
{
    if (prev && strcmp(prev, id) == 0)
        return 0;
    (*count)++;
    return fputs(id, f) >= 0 && putc('\n', f) != EOF ? 0 : -1;
}

/* The chunk sorted, as a run at the end of the runs file. */
static int flush_run(struct svc_idlist *l, struct svc_err *err)
{
    if (l->np == 0)
        return 0;
    qsort(l->ptrs, l->np, sizeof *l->ptrs, svc_cmp_strp);
    l->starts = svc_xrealloc(l->starts, (l->nruns + 1) * sizeof *l->starts);
    l->starts[l->nruns++] = l->end;
    size_t n = 0;
    for (size_t i = 0; i < l->np; i++)
        if (put_unique(l->runs, l->ptrs[i], i ? l->ptrs[i - 1] : NULL, &n) != 0)
            return svc_err_errno(err, "write temporary file");
    if (fflush(l->runs) != 0 || (l->end = ftello(l->runs)) < 0)
        return svc_err_errno(err, "write temporary file");
    l->count = n; /* the distinct ids when there is one run */
    l->np = 0;
    l->clen = 0;
    return 0;
}

int svc_idlist_add(struct svc_idlist *l, const char *id, struct svc_err *err)
{
    size_t len = strlen(id);
    if (len == 0 || len > SVC_IDLIST_ID_MAX || strchr(id, '\n'))
        return svc_err_set(err, SVC_E_IO, "idlist: an id out of bounds");
    if (l->clen + len + 1 > CHUNK_BYTES && flush_run(l, err) != 0)
        return -1;
    if (l->np == l->pcap) {
        l->pcap = l->pcap ? l->pcap * 2 : 1024;
        l->ptrs = svc_xrealloc(l->ptrs, l->pcap * sizeof *l->ptrs);
    }
    memcpy(l->chunk + l->clen, id, len + 1);
    l->ptrs[l->np++] = l->chunk + l->clen;
    l->clen += len + 1;
    return 0;
}

/* A run being merged: its next id in cur, read through buf by pread. */
struct reader {
    off_t pos, end;
    char buf[READ_BUF];
    size_t bpos, blen;
    char cur[SVC_IDLIST_ID_MAX + 2];
};

/* The reader's next id into cur: 1, 0 at the run's end, -1 on a read error. */
static int reader_next(int fd, struct reader *r)
{
    size_t n = 0;
    for (;;) {
        if (r->bpos == r->blen) {
            size_t want = r->end - r->pos < READ_BUF ? (size_t)(r->end - r->pos) : READ_BUF;
            ssize_t got = want ? pread(fd, r->buf, want, r->pos) : 0;
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return got < 0 || n ? -1 : 0;
            r->pos += got;
            r->bpos = 0;
            r->blen = (size_t)got;
        }
        char c = r->buf[r->bpos++];
        if (c == '\n')
            break;
        if (n > SVC_IDLIST_ID_MAX)
            return -1;
        r->cur[n++] = c;
    }
    r->cur[n] = '\0';
    return 1;
}

/* Restore the heap order of h (n readers, by cur) below slot i. */
static void sift_down(struct reader **h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, a = 2 * i + 1, b = a + 1;
        if (a < n && strcmp(h[a]->cur, h[m]->cur) < 0)
            m = a;
        if (b < n && strcmp(h[b]->cur, h[m]->cur) < 0)
            m = b;
        if (m == i)
            return;
        struct reader *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Merge every run into l->sorted, each id once. */
static int merge_runs(struct svc_idlist *l, struct svc_err *err)
{
    int fd = fileno(l->runs), rc = 0;
    struct reader *rv = svc_xcalloc(l->nruns, sizeof *rv);
    struct reader **h = svc_xcalloc(l->nruns, sizeof *h);
    size_t n = 0;
    for (size_t i = 0; i < l->nruns && rc == 0; i++) {
        rv[i].pos = l->starts[i];
        rv[i].end = i + 1 < l->nruns ? l->starts[i + 1] : l->end;
        int got = reader_next(fd, &rv[i]);
        if (got > 0)
            h[n++] = &rv[i];
        rc = got < 0 ? -1 : 0;
    }
    for (size_t i = n; i-- > 0;)
        sift_down(h, n, i);
    char prev[SVC_IDLIST_ID_MAX + 2] = "";
    l->count = 0;
    while (rc == 0 && n > 0) {
        if (put_unique(l->sorted, h[0]->cur, l->count ? prev : NULL, &l->count) != 0)
            rc = -2;
        memcpy(prev, h[0]->cur, strlen(h[0]->cur) + 1);
        int got = rc == 0 ? reader_next(fd, h[0]) : 0;
        if (got < 0)
            rc = -1;
        else if (got == 0)
            h[0] = h[--n];
        sift_down(h, n, 0);
    }
    free(h);
    free(rv);
    if (rc == -1)
        return svc_err_errno(err, "read temporary file");
    return rc == 0 ? 0 : svc_err_errno(err, "write temporary file");
}

int svc_idlist_sort(struct svc_idlist *l, struct svc_err *err)
{
    if (flush_run(l, err) != 0)
        return -1;
    free(l->chunk);
    free(l->ptrs);
    l->chunk = NULL;
    l->ptrs = NULL;
    if (l->nruns <= 1) { /* one run is sorted already */
        l->sorted = l->runs;
        l->runs = NULL;
        return 0;
    }
    if (!(l->sorted = svc_fileset_tmpfile(err)) || merge_runs(l, err) != 0)
        return -1;
    fclose(l->runs); /* its disk back */
    l->runs = NULL;
    return fflush(l->sorted) == 0 ? 0 : svc_err_errno(err, "write temporary file");
}

size_t svc_idlist_count(const struct svc_idlist *l)
{
    return l->count;
}

int svc_idlist_rewind(struct svc_idlist *l, struct svc_err *err)
{
    if (!l->sorted)
        return svc_err_set(err, SVC_E_IO, "idlist: read before it is sorted");
    return fflush(l->sorted) == 0 && fseeko(l->sorted, 0, SEEK_SET) == 0
               ? 0
               : svc_err_errno(err, "read temporary file");
}

int svc_idlist_next(struct svc_idlist *l, const char **id, struct svc_err *err)
{
    if (!l->sorted)
        return svc_err_set(err, SVC_E_IO, "idlist: read before it is sorted");
    if (!fgets(l->line, sizeof l->line, l->sorted))
        return ferror(l->sorted) ? svc_err_errno(err, "read temporary file") : 0;
    size_t n = strlen(l->line);
    if (n == 0 || l->line[n - 1] != '\n')
        return svc_err_set(err, SVC_E_IO, "idlist: a damaged temporary file");
    l->line[n - 1] = '\0';
    *id = l->line;
    return 1;
}
