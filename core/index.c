#include "index.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fold.h"
#include "indexdb.h"
#include "journal.h"
#include "jsonx.h"
#include "listdb.h"
#include "sidecar.h"
#include "util.h"

/* Which copy answers, and the root a page's rows are checked from. */
static struct {
    bool live;     /* the last look found this host's database caught up: it answers */
    bool building; /* the last listing was answered from this process's copy meanwhile */
    int root_fd;   /* the root directory, for the per-row stat relative to it (root_open) */
    bool root_open;
    dev_t root_dev;
    ino_t root_ino;
} I;

void svc_index_set_spawn(svc_spawn_fn *fn)
{
    svc_indexdb_set_spawn(fn);
}

void svc_index_reset(void)
{
    svc_indexdb_own_close();
}

static char *cursor_encode(double updated, const char *sid)
{
    char *raw = NULL;
    size_t n = (size_t)svc_xasprintf(&raw, "%.6f|%s", updated, sid);
    char *out = svc_b64_encode(raw, n, true);
    free(raw);
    return out;
}

static int cursor_decode(const char *c, double *updated, char *sid, size_t sidsz)
{
    size_t n = strlen(c);
    char *raw = n && n <= 400 ? (char *)svc_b64_decode(c, n, true, &n) : NULL;
    char *bar = raw ? strchr(raw, '|') : NULL, *end = NULL;
    if (bar) {
        *bar = '\0';
        *updated = strtod(raw, &end);
        snprintf(sid, sidsz, "%s", bar + 1);
    }
    int rc = bar && !*end && isfinite(*updated) && svc_layout_id_valid(sid) ? 0 : -1;
    free(raw);
    return rc;
}

/* (Re)open the root when it is another directory: a page's per-row stat walks from it. */
static void root_open(const struct svc_store *st)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0 ||
        (I.root_open && rs.st_dev == I.root_dev && rs.st_ino == I.root_ino))
        return;
    if (I.root_open)
        close(I.root_fd);
    I.root_fd = open(st->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat fs;
    I.root_open = I.root_fd >= 0 && fstat(I.root_fd, &fs) == 0 && fs.st_dev == rs.st_dev &&
                  fs.st_ino == rs.st_ino;
    if (!I.root_open && I.root_fd >= 0)
        close(I.root_fd);
    I.root_dev = rs.st_dev;
    I.root_ino = rs.st_ino;
}

/* The summary of a row listed with msgs messages and status, recounted when a message file
 * beyond its count exists (written by another program, e.g. a Strands agent); NULL when the
 * count holds. One stat a row; the journal learns the new summary. */
static json_object *recounted(const struct svc_store *st, const struct svc_list_row *r)
{
    if (r->msgs < 0 || strcmp(r->status, "running") == 0)
        return NULL;
    /* named on the stack: the handle and its heap paths only for a row that changed */
    char path[PATH_MAX];
    struct stat sb;
    bool rel = I.root_open;
    if (!svc_layout_message_path_in(st->root, st->agent_id, r->sid, r->msgs,
                                    rel ? SVC_FROM_ROOT : SVC_FROM_ABS, path, sizeof path) ||
        (rel ? fstatat(I.root_fd, path, &sb, AT_SYMLINK_NOFOLLOW) : lstat(path, &sb)) != 0)
        return NULL; /* the count holds */
    json_object *sum = svc_sidecar_summary_of(st, r->sid);
    int64_t *ids = NULL, cnt = 0, next = 0;
    struct svc_sess h = SVC_SESS_INIT;
    int rc = sum && svc_sess_open_store(st, r->sid, &h, NULL) == 0
                 ? svc_sess_message_count(&h, -1, &cnt, &next, &ids, NULL)
                 : -1;
    svc_sess_close(&h);
    free(ids);
    if (rc != 0) {
        json_object_put(sum);
        return NULL;
    }
    svc_json_set_int(sum, "message_count", cnt);
    svc_journal_note(st, r->sid, sum);
    return sum;
}

/* The answer from a page's rows (p->limit of them wanted: one more than the page says
 * there is more): {"sessions": [...], "next_cursor"}, the stale sessions into *stale. */
static json_object *answer(const struct svc_store *st, const struct svc_list_page *p,
                           const struct svc_list_row *rows, int n, json_object **stale)
{
    int limit = p->limit - 1;
    json_object *list = json_object_new_array();
    for (int k = 0; k < n && k < limit; k++) {
        const struct svc_list_row *r = &rows[k];
        json_object *raw = p->q->stored_counts ? NULL : recounted(st, r);
        json_object_array_add(list, raw ? raw : json_object_get(r->summary));
        if (stale && strcmp(r->status, "running") == 0 && !svc_store_run_held(st, r->sid)) {
            if (!*stale)
                *stale = json_object_new_array();
            json_object_array_add(*stale, json_object_new_string(r->sid));
        }
    }
    json_object *res = json_object_new_object();
    svc_json_set(res, "sessions", list);
    char *cur = n > limit ? cursor_encode(rows[limit - 1].updated, rows[limit - 1].sid) : NULL;
    svc_json_set_str(res, "next_cursor", cur);
    free(cur);
    return res;
}

static void rows_free(struct svc_list_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free(rows[i].sid);
        json_object_put(rows[i].summary);
    }
    free(rows);
}

/* index_building, with how far the other process's rebuild is when it has counted. */
static int building_err(const struct svc_store *st, struct svc_err *err)
{
    size_t done, total;
    char far[64] = "";
    if (svc_journal_progress_of(st, &done, &total) == 0)
        snprintf(far, sizeof far, " (%zu of %zu sessions read)", done, total);
    return svc_err_set(err, SVC_E_INDEX_BUILDING,
                       "another process is rebuilding the session index from the directories%s; "
                       "retry in a few seconds",
                       far);
}

/* Which copy answers: this host's database when caught up (*ready 0; I.live), else this
 * process's own (*ready 1 while the file is built, else -1; ready and err may be NULL). 0
 * with the copy selected in a read transaction until svc_indexdb_release, 1 when there is
 * no root (no sessions), or -1 with err. */
static int db_ready(const struct svc_store *st, bool brief, int *ready, struct svc_err *err)
{
    struct stat rs;
    if (stat(st->root, &rs) != 0 && errno == ENOENT)
        return 1; /* no root yet: no sessions */
    int r = st->index_dir ? svc_indexdb_ready(st) : -1;
    if (ready)
        *ready = r;
    I.live = r == 0;
    if (I.live) {
        svc_indexdb_own_close();
        svc_listdb_select(false);
        return 0;
    }
    if (svc_indexdb_own(st, brief, false) == 0)
        return 0;
    if (errno == EAGAIN)
        return building_err(st, err);
    return svc_err_errno(err, "list sessions");
}

int svc_index_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err)
{
    *out = NULL;
    if (stale)
        *stale = NULL;
    char csid[SVC_ID_MAX + 2] = "";
    struct svc_list_page p = {.q = q};
    if (q->cursor && *q->cursor) {
        if (cursor_decode(q->cursor, &p.cu, csid, sizeof csid) != 0)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, "cursor", "cursor is not valid");
        p.csid = csid;
    }
    p.limit = 1 + (q->limit > 0 && q->limit <= SVC_LIST_LIMIT_MAX ? (int)q->limit
                                                                  : SVC_LIST_LIMIT_DEFAULT);
    char *qlc = q->q && *q->q ? svc_fold(q->q) : NULL;
    p.qlc = qlc;
    root_open(st);
    struct svc_list_row *rows = NULL;
    int n = 0, ready = -1, rc = -1, got = 0;
    for (int attempt = 0; rc != 0 && got == 0 && attempt < 2; attempt++) {
        if ((got = db_ready(st, true, &ready, err)) != 0)
            break;
        I.building = ready == 1;
        if (svc_listdb_page(&p, &rows, &n) == 0) {
            *out = answer(st, &p, rows, n, stale);
            rc = 0;
        }
        svc_indexdb_release();
        rows_free(rows, n);
        if (rc != 0 && I.live) /* read anew (or rebuilt) at the next look */
            svc_indexdb_close();
        else if (rc != 0) /* the own copy is made anew */
            svc_indexdb_own_close();
    }
    if (got == 1) { /* no root */
        *out = answer(st, &p, NULL, 0, stale);
        rc = 0;
    } else if (rc != 0 && got == 0) {
        svc_err_set(err, SVC_E_IO, "the session index could not be read");
    }
    free(qlc);
    return rc;
}

int svc_index_each(const struct svc_store *st, struct svc_list_mark *mark, svc_index_each_fn *fn,
                   void *ctx)
{
    int got = db_ready(st, false, NULL, NULL);
    if (got != 0)
        return got == 1 ? 1 : -1;
    int rc = svc_listdb_each(mark, fn, ctx);
    svc_indexdb_release();
    return rc;
}

json_object *svc_index_summary(const char *sid)
{
    svc_listdb_select(!I.live);
    return svc_listdb_summary(sid);
}

int64_t svc_index_count(const struct svc_store *st)
{
    int got = db_ready(st, false, NULL, NULL);
    if (got != 0)
        return got == 1 ? 0 : -1;
    int64_t n = svc_listdb_count();
    svc_indexdb_release();
    return n;
}

void svc_index_warm(const struct svc_store *st)
{
    if (db_ready(st, false, NULL, NULL) == 0)
        svc_indexdb_release();
    I.live = false;
    svc_indexdb_close(); /* a connection is no process's but one's */
    svc_indexdb_own_close();
}

void svc_index_seal(const struct svc_store *st)
{
    if (st->index_dir)
        svc_indexdb_seal(st);
}

bool svc_index_building(void)
{
    return I.building;
}

int svc_index_rebuild(const struct svc_store *st, struct svc_err *err)
{
    I.live = false;
    int rc = st->index_dir ? svc_indexdb_build(st, true) : svc_indexdb_own(st, false, true);
    if (!st->index_dir)
        svc_indexdb_release();
    return rc == 0 ? 0 : svc_err_errno(err, "rebuild the index");
}
