#include "listmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirscan.h"
#include "fold.h"
#include "journal.h"
#include "jsonx.h"
#include "labels.h"
#include "log.h"
#include "sidecar.h"
#include "title.h"
#include "user.h"
#include "util.h"

/* An entry keeps what sorting and filtering need; its summary stays in the journal (off,
 * len within the file open as M.fd), or on the heap until a line of it is read back. */
struct entry {
    char *sid;
    char *heap;     /* compact JSON summary, when not (yet) at off in the file */
    off_t off;      /* where the summary's JSON starts in the journal, or -1 */
    uint32_t len;   /* its length in bytes */
    char *title_lc; /* title folded for q (svc_fold) */
    double updated; /* epoch */
    char status[12];
    int64_t msgs;      /* message_count of the summary */
    const char *owner; /* interned (owner_intern), NULL when it has none */
    bool archived;
    bool pinned;
    char *tags;       /* the summary's tags as "\x1f<tag>\x1f<tag>\x1f", or NULL for none */
    bool seen;        /* present in the latest directory scan */
    uint64_t changed; /* the value of changes when it last changed (svc_listmem_each) */
};

/* A hash from sid to position keeps applying lines O(1). */
struct slot {
    const char *sid;
    size_t pos;
};

/* This process's copy (cache.h), dropped whole by svc_listmem_reset but for changes and
 * removed_at: the marks of svc_listmem_each, across resets. */
static struct {
    char *root;
    struct entry *v;
    size_t n, cap;
    bool sorted;
    ino_t ino;
    dev_t dev;
    off_t offset;
    struct timespec root_mtime;
    bool loaded;
    char gen[17]; /* generation of the journal read, "" before its first rewrite */
    int fd;       /* that file, kept open: entries point into it (valid when fd_open) */
    bool fd_open;
    size_t live_bytes; /* what a compacted journal would hold, kept as entries change */
    size_t heaped;     /* entries whose summary is on the heap (parsed from a sidecar) */
    struct slot *hs;   /* the hash, hcap slots pointing into v */
    size_t hcap;
    uint64_t changes, removed_at;
} M = {.changes = 1};

static size_t summary_bytes(const struct entry *e)
{
    return e->heap ? strlen(e->heap) : e->len;
}

static size_t entry_bytes(const struct entry *e)
{
    return summary_bytes(e) + (e->sid ? strlen(e->sid) : 0) + 32;
}

static void entry_free(struct entry *e)
{
    M.live_bytes -= entry_bytes(e);
    M.heaped -= e->heap != NULL;
    free(e->sid);
    free(e->heap);
    free(e->title_lc);
    free(e->tags);
}

/* The summary's JSON text (heap, caller frees), or NULL when it cannot be read. */
static char *entry_summary(const struct entry *e)
{
    if (e->heap)
        return svc_xstrdup(e->heap);
    if (!M.fd_open || e->off < 0)
        return NULL;
    char *buf = svc_xmalloc((size_t)e->len + 1);
    ssize_t got = pread(M.fd, buf, e->len, e->off);
    if (got != (ssize_t)e->len) {
        free(buf);
        return NULL;
    }
    buf[e->len] = '\0';
    return buf;
}

static void close_fd(void)
{
    if (M.fd_open)
        close(M.fd);
    M.fd_open = false;
    M.fd = -1;
}

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void hash_put(size_t pos)
{
    size_t h = hash_str(M.v[pos].sid) & (M.hcap - 1);
    while (M.hs[h].sid)
        h = (h + 1) & (M.hcap - 1);
    M.hs[h] = (struct slot){M.v[pos].sid, pos};
}

static void hash_rebuild(void)
{
    free(M.hs);
    M.hcap = 1024;
    while (M.hcap < M.n * 2 + 16)
        M.hcap *= 2;
    M.hs = svc_xcalloc(M.hcap, sizeof *M.hs);
    for (size_t i = 0; i < M.n; i++)
        hash_put(i);
}

static struct entry *lookup(const char *sid)
{
    if (!M.hs)
        return NULL;
    size_t h = hash_str(sid) & (M.hcap - 1);
    while (M.hs[h].sid) {
        if (strcmp(M.hs[h].sid, sid) == 0)
            return &M.v[M.hs[h].pos];
        h = (h + 1) & (M.hcap - 1);
    }
    return NULL;
}

/* Owners are few and sessions many: each entry points at one shared copy of its owner's
 * id, kept for the life of the process. */
static const char *owner_intern(const char *id)
{
    static char **v;
    static size_t n;
    if (!id)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], id) == 0)
            return v[i];
    v = svc_xrealloc(v, (n + 1) * sizeof *v);
    v[n] = svc_xstrdup(id);
    return v[n++];
}

/* Fill e from a summary; its JSON is at (off, len) of the journal when off >= 0, else it is
 * kept on the heap. */
static void entry_fill(struct entry *e, json_object *summary, off_t off, size_t len)
{
    M.live_bytes -= summary_bytes(e);
    M.heaped -= e->heap != NULL;
    free(e->heap);
    e->heap = NULL;
    free(e->title_lc);
    if (off >= 0 && len <= UINT32_MAX) {
        e->off = off;
        e->len = (uint32_t)len;
    } else {
        e->off = -1;
        e->len = 0;
        e->heap = svc_json_dump_compact(summary);
        M.heaped++;
    }
    M.live_bytes += summary_bytes(e);
    e->title_lc = svc_fold(svc_title_search_text(summary));
    double t = 0;
    svc_time_parse_iso(svc_json_str(summary, "updated_at", ""), &t);
    e->updated = t;
    snprintf(e->status, sizeof e->status, "%s", svc_json_str(summary, "status", "idle"));
    e->archived = svc_json_bool(summary, "archived", false);
    e->pinned = svc_json_bool(summary, "pinned", false);
    e->msgs = svc_json_int(summary, "message_count", -1);
    e->owner = owner_intern(svc_user_owner(summary));
    free(e->tags);
    e->tags = svc_labels_tags_joined(svc_json_arr(summary, "tags"));
}

static void apply(const char *sid, json_object *summary, off_t off, size_t len)
{
    M.changes++;
    if (!summary)
        M.removed_at = M.changes;
    struct entry *e = lookup(sid);
    if (!summary) {
        if (e) {
            size_t pos = (size_t)(e - M.v);
            entry_free(e);
            M.v[pos] = M.v[--M.n];
            hash_rebuild();
            M.sorted = false;
        }
        return;
    }
    if (!e) {
        if (M.n == M.cap) {
            M.cap = M.cap ? M.cap * 2 : 256;
            M.v = svc_xrealloc(M.v, M.cap * sizeof *M.v);
        }
        e = &M.v[M.n++];
        memset(e, 0, sizeof *e);
        e->sid = svc_xstrdup(sid);
        M.live_bytes += strlen(e->sid) + 32;
        if (!M.hs || M.n * 2 > M.hcap)
            hash_rebuild();
        else
            hash_put(M.n - 1);
    }
    entry_fill(e, summary, off, len);
    e->changed = M.changes;
    e->seen = true;
    M.sorted = false;
}

static int sink_put(void *ctx, const char *sid, json_object *summary)
{
    (void)ctx;
    apply(sid, summary, -1, 0);
    return 0;
}

static void entries_clear(void)
{
    M.removed_at = ++M.changes;
    for (size_t i = 0; i < M.n; i++)
        entry_free(&M.v[i]);
    M.n = 0;
    hash_rebuild();
    M.sorted = false;
}

/* Forget the file read (the entries pointing into it go too). */
static void forget_file(void)
{
    entries_clear();
    close_fd();
    M.offset = 0;
    M.ino = 0;
    M.gen[0] = '\0';
}

void svc_listmem_reset(void)
{
    for (size_t i = 0; i < M.n; i++)
        entry_free(&M.v[i]);
    free(M.v);
    free(M.root);
    close_fd();
    free(M.hs); /* it points into the entries just freed */
    uint64_t changes = M.changes + 1;
    memset(&M, 0, sizeof M);
    M.fd = -1;
    M.changes = M.removed_at = changes;
}

/* Apply one journal line found at offset at; *garbage when it is not one of ours. */
static int apply_line(void *ctx, const char *line, size_t n, off_t at)
{
    bool *garbage = ctx;
    json_object *o, *sum;
    const char *sid;
    off_t so;
    size_t sl;
    int kind = svc_journal_line(line, n, at, &o, &sid, &sum, &so, &sl);
    if (kind == 1)
        apply(sid, sum, so, sl);
    else if (kind < 0)
        *garbage = true;
    json_object_put(o);
    return 0;
}

/* Read the lines of j's file that this process has not read yet (all of them when it is
 * another file than the one read before); j's descriptor is taken. Whether the file was
 * read whole: no line not ours, none torn, up to the stamp's size at least. */
static bool read_lines(struct svc_journal *j)
{
    if (!M.fd_open || j->sb.st_ino != M.ino || j->sb.st_size < M.offset ||
        strcmp(j->gen, M.gen) != 0) {
        forget_file();
        snprintf(M.gen, sizeof M.gen, "%s", j->gen);
        M.ino = j->sb.st_ino;
        M.dev = j->sb.st_dev;
        M.fd = j->fd;
        M.fd_open = true;
    } else if (j->fd >= 0) {
        close(j->fd); /* the same file as M.fd */
    }
    j->fd = -1;
    bool garbage = false;
    if (j->sb.st_size > M.offset) {
        if (j->shared)
            posix_fadvise(M.fd, 0, 0, POSIX_FADV_DONTNEED);
        svc_journal_lines(M.fd, j->sb.st_size, &M.offset, apply_line, &garbage);
    }
    return !garbage && M.offset == j->sb.st_size && M.offset >= j->stamp.size;
}

/* Whether the journal is whole by its stamp, read on (under the root lock). */
static bool read_whole(const struct svc_store *st, struct svc_journal *j)
{
    return svc_journal_open(st, j) == 1 && read_lines(j);
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->updated != y->updated)
        return x->updated < y->updated ? 1 : -1;
    return strcmp(x->sid, y->sid);
}

static void sort_entries(void)
{
    if (M.sorted)
        return;
    if (M.n > 1)
        qsort(M.v, M.n, sizeof *M.v, cmp_entry);
    hash_rebuild();
    M.sorted = true;
}

/* The entries as rows in listing order, for a new generation of the journal. */
static int rows(void *ctx, svc_journal_emit_fn *emit, void *ectx)
{
    (void)ctx;
    sort_entries();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < M.n; i++) {
        char *sum = entry_summary(&M.v[i]);
        rc = sum ? emit(ectx, M.v[i].sid, sum) : -1; /* never a journal that lost a session */
        free(sum);
    }
    return rc;
}

/* Rebuild the journal from the directories into the entries (under j's lock), then read
 * it back so that the entries point into it. As svc_dirscan_rebuild's return. */
static int rebuild(const struct svc_store *st, struct svc_journal *j, bool may_wait, bool brief)
{
    forget_file();
    struct svc_dirscan_sink sink = {sink_put, rows, NULL};
    struct timespec mtime;
    bool written = false;
    int rc = svc_dirscan_rebuild(st, j, &sink, may_wait, brief, &mtime, &written);
    if (rc == -1 && errno == ENOENT) {
        M.loaded = false;
        return 0;
    }
    if (rc != 0)
        return rc;
    M.root_mtime = mtime;
    M.loaded = true;
    if (written) { /* when it cannot be written the entries stay on the heap, complete */
        forget_file();
        if (!read_whole(st, j))
            svc_logf("index: the index just written could not be read back");
    }
    return 0;
}

/* The locked path: the journal is checked against its stamp once more, with writers
 * excluded, and read on when whole, else rebuilt (or read once another process's rebuild
 * is done). 0, or -1 when the root cannot be read or (errno EAGAIN) another process's
 * rebuild outlasted a list's brief wait. force rebuilds in any case. */
static int refresh_locked(const struct svc_store *st, bool force, bool brief)
{
    struct svc_journal j;
    int rc = 0;
    if (svc_journal_lock(st, &j) != 0 || force || !read_whole(st, &j)) {
        rc = rebuild(st, &j, !force, brief);
        if (rc == 1 && !read_whole(st, &j))
            rc = rebuild(st, &j, false, false);
        if (rc == 1)
            rc = 0;
        if (rc == 2) {
            errno = EAGAIN;
            rc = -1;
        }
    }
    svc_journal_done(&j);
    return rc;
}

int svc_listmem_rebuild(const struct svc_store *st)
{
    return refresh_locked(st, true, false);
}

/* The unlocked look: when the name still gives the file this process holds open, one lstat
 * says so (an inode number cannot be reused while its file is held open) and j->fd stays
 * -1; any other file is opened. Whether it is the stamped one (or grew since). */
static bool look(const struct svc_store *st, struct svc_journal *j)
{
    svc_journal_peek(st, j);
    if (M.fd_open) {
        char *path = svc_layout_root_path(st->root, SVC_F_INDEX, NULL);
        bool held = lstat(path, &j->sb) == 0 && S_ISREG(j->sb.st_mode) && j->sb.st_ino == M.ino &&
                    j->sb.st_dev == M.dev && j->sb.st_size >= M.offset;
        free(path);
        if (held) {
            snprintf(j->gen, sizeof j->gen, "%s", M.gen);
            return svc_journal_whole(j);
        }
    }
    return svc_journal_open(st, j) == 1;
}

/* Compare the root's names with the entries (its mtime moved): a session the copy lacks is
 * summarised and told to the journal (for every other process and host), one gone is
 * dropped and told too. */
static int rescan(const struct svc_store *st)
{
    char **names = NULL;
    size_t n = 0;
    if (svc_dirscan_names(st, &names, &n) != 0)
        return -1;
    for (size_t i = 0; i < M.n; i++)
        M.v[i].seen = false;
    for (size_t i = 0; i < n; i++) {
        struct entry *e = lookup(names[i]);
        if (e) {
            e->seen = true;
            continue;
        }
        json_object *sum =
            svc_store_session_exists(st, names[i]) ? svc_sidecar_summary_of(st, names[i]) : NULL;
        if (sum) {
            apply(names[i], sum, -1, 0); /* kept on the heap as compact text until read */
            svc_journal_note(st, names[i], sum);
        }
        json_object_put(sum);
    }
    svc_dirscan_names_free(names, n);
    for (size_t i = 0; i < M.n;) {
        if (!M.v[i].seen) {
            svc_journal_note(st, M.v[i].sid, NULL);
            apply(M.v[i].sid, NULL, -1, 0); /* moves the last entry here */
        } else {
            i++;
        }
    }
    return 0;
}

/* Compaction: under the root lock, after catching up with every appended line; the new
 * generation read back. */
static void compact(const struct svc_store *st)
{
    struct svc_journal j;
    if (svc_journal_lock(st, &j) == 0 && j.writable) {
        if (!read_whole(st, &j))
            rebuild(st, &j, false, false);
        else if (svc_journal_write(st, &j, rows, NULL) == 0) {
            forget_file();
            read_whole(st, &j);
        }
    }
    svc_journal_done(&j);
}

int svc_listmem_refresh(const struct svc_store *st, bool brief, bool may_compact)
{
    if (!M.root || strcmp(M.root, st->root) != 0) {
        svc_listmem_reset();
        M.root = svc_xstrdup(st->root);
    }
    struct stat rs;
    if (stat(st->root, &rs) != 0) {
        if (errno != ENOENT)
            return -1;
        entries_clear(); /* no root yet: no sessions */
        M.loaded = false;
        return 0;
    }
    /* the fast path: the file is the stamped one (or grew since): read what is new */
    struct svc_journal j;
    bool whole = look(st, &j) && read_lines(&j);
    svc_journal_done(&j);
    if (!whole && refresh_locked(st, false, brief) != 0)
        return -1;
    /* the root as it was before the journal was read serves below (an older mtime only
     * means one more rescan); after a rebuild, as it is now */
    if (!whole && stat(st->root, &rs) != 0)
        return 0;
    if (!M.loaded || rs.st_mtim.tv_sec != M.root_mtime.tv_sec ||
        rs.st_mtim.tv_nsec != M.root_mtime.tv_nsec) {
        /* a session directory was added, removed or swapped (svc import) */
        if (rescan(st) != 0)
            return -1;
        M.root_mtime = rs.st_mtim;
        M.loaded = true;
    }
    /* compact when most of the journal is superseded lines */
    if (may_compact && M.fd_open && (size_t)M.offset > 2 * M.live_bytes + 65536)
        compact(st);
    return 0;
}

void svc_listmem_warm(const struct svc_store *st)
{
    if (svc_listmem_refresh(st, false, true) == 0 && M.heaped && M.fd_open) {
        /* A rescan parsed the sidecars of the sessions the journal lacked: their leftovers
         * lie between the entries, pages that can neither be shared usefully nor given
         * back. Load the journal it appended to instead. */
        svc_listmem_reset();
        svc_listmem_refresh(st, false, true);
    }
    sort_entries();
}

#define RUN_GAP 4096

struct page_ref {
    off_t off;
    uint32_t len;
    int k; /* position on the page */
};

static int cmp_page_off(const void *a, const void *b)
{
    const struct page_ref *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Read the summaries of the page's entries that are in the journal, in as few preads as
 * the file allows (a rewritten file is in listing order, lines appended since are at its
 * end: lines less than RUN_GAP apart are read as one run): text[k] points at page[k]'s
 * JSON inside the returned buffer (caller frees), or stays NULL when it is on the heap or
 * its run could not be read. */
static char *read_page(const struct entry **page, int np, const char **text)
{
    if (!M.fd_open || np == 0)
        return NULL;
    struct page_ref *by = svc_xcalloc((size_t)np, sizeof *by);
    int nf = 0;
    for (int k = 0; k < np; k++)
        if (!page[k]->heap && page[k]->off >= 0)
            by[nf++] = (struct page_ref){.off = page[k]->off, .len = page[k]->len, .k = k};
    qsort(by, (size_t)nf, sizeof *by, cmp_page_off);
    size_t total = 0; /* the runs' bytes */
    for (int pass = 0; pass < 2; pass++) {
        char *buf = pass ? svc_xmalloc(total ? total : 1) : NULL;
        size_t at = 0;
        for (int i = 0; i < nf;) {
            int first = i;
            off_t lo = by[i].off, hi = lo + (off_t)by[i].len;
            for (i++; i < nf && by[i].off <= hi + RUN_GAP; i++)
                hi = by[i].off + (off_t)by[i].len > hi ? by[i].off + (off_t)by[i].len : hi;
            size_t n = (size_t)(hi - lo);
            if (pass && pread(M.fd, buf + at, n, lo) == (ssize_t)n)
                for (int k = first; k < i; k++)
                    text[by[k].k] = buf + at + (by[k].off - lo);
            at += n;
        }
        total = at;
        if (pass) {
            free(by);
            return buf;
        }
    }
    return NULL;
}

/* Whether e has every tag q asks for. */
static bool tags_match(const struct entry *e, const struct svc_list_query *q)
{
    for (size_t i = 0; i < q->ntags; i++) {
        char needle[SVC_TAG_LEN_MAX * 4 + 3]; /* checked by query.c */
        snprintf(needle, sizeof needle, "\x1f%s\x1f", q->tags[i]);
        if (!e->tags || !strstr(e->tags, needle))
            return false;
    }
    return true;
}

/* Whether entry e passes the query's filters (qlc: the folded title search, or NULL). */
static bool entry_matches(const struct entry *e, const struct svc_list_query *q, const char *qlc)
{
    if (q->archived_only ? !e->archived : (e->archived && !q->include_archived))
        return false;
    if (q->status && *q->status && strcmp(q->status, e->status) != 0)
        return false;
    if (qlc && !strstr(e->title_lc, qlc))
        return false;
    if (q->owner && (!e->owner || strcmp(q->owner, e->owner) != 0))
        return false;
    if (q->pinned && *q->pinned && (strcmp(q->pinned, "true") == 0) != e->pinned)
        return false;
    return tags_match(e, q);
}

int svc_listmem_page(const struct svc_list_page *p, struct svc_list_row **out, int *n)
{
    *n = 0;
    sort_entries();
    size_t lo = 0, hi = M.n; /* the first entry after the cursor's key */
    struct entry key = {.sid = (char *)(uintptr_t)p->csid, .updated = p->cu};
    while (p->csid && lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_entry(&M.v[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct entry **page = svc_xcalloc((size_t)p->limit, sizeof *page);
    int np = 0;
    for (size_t i = p->csid ? lo : 0; i < M.n && np < p->limit; i++)
        if (entry_matches(&M.v[i], p->q, p->qlc))
            page[np++] = &M.v[i];
    const char **text = svc_xcalloc((size_t)p->limit, sizeof *text);
    char *span = read_page(page, np, text);
    struct svc_list_row *rows = svc_xcalloc((size_t)p->limit, sizeof *rows);
    int rc = 0;
    for (int k = 0; k < np && rc == 0; k++) {
        const struct entry *e = page[k];
        rows[k].summary = text[k] ? svc_xstrndup(text[k], e->len) : entry_summary(e);
        size_t len = rows[k].summary ? strlen(rows[k].summary) : 0;
        if (len < 2 || rows[k].summary[0] != '{' || rows[k].summary[len - 1] != '}') {
            svc_logf("index: the summary of session %s could not be read", e->sid);
            rc = 1;
        }
        rows[k].sid = svc_xstrdup(e->sid);
        memcpy(rows[k].status, e->status, sizeof rows[k].status);
        rows[k].msgs = e->msgs;
        rows[k].updated = e->updated;
        *n = k + 1;
    }
    free(span);
    free(text);
    free(page);
    *out = rows;
    return rc;
}

int svc_listmem_each(struct svc_list_mark *mark, svc_index_each_fn *fn, void *ctx)
{
    if (mark->copy == 1 && mark->seq == M.changes)
        return 0;
    /* a mark of another copy, or from before a removal: walk whole */
    bool whole = mark->copy != 1 || M.removed_at > mark->seq || mark->seq > M.changes;
    for (size_t i = 0; i < M.n; i++)
        if (whole || M.v[i].changed > mark->seq)
            fn(ctx, M.v[i].sid, M.v[i].updated, M.v[i].msgs, M.v[i].archived);
    *mark = (struct svc_list_mark){1, M.changes};
    return whole ? 1 : 0;
}

json_object *svc_listmem_summary(const char *sid)
{
    const struct entry *e = lookup(sid);
    char *text = e ? entry_summary(e) : NULL;
    json_object *o = text ? json_tokener_parse(text) : NULL;
    free(text);
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

size_t svc_listmem_count(void)
{
    return M.n;
}

bool svc_listmem_loaded(void)
{
    return M.loaded || M.n;
}
