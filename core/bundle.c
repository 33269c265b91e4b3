/* bundle: export (SPEC 5). See bundle.h. Here: the selection, the destination, and the parts
 * made of each session; a session is read by snapshot.c, rendered as Markdown by
 * transcript.c, and the files go out through the output section (bout_*, agg_*). */
#include "bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "feedback.h"
#include "fsio.h"
#include "hostdb.h"
#include "jsonx.h"
#include "memory.h"
#include "query.h"
#include "snapshot.h"
#include "store.h"
#include "transcript.h"
#include "util.h"

/* ---- output: where the parts go (SPEC 5) ----
 * Files of a directory written under its temporary name, or members of a tar.gz stream.
 * Every file is recorded, with its size and SHA-256, as one compact JSON line in the spool
 * `list`, from which the manifest's "files" is written; top-level files are also kept in
 * `top` for the API answer. The three files that gather every session (sessions.json,
 * messages.jsonl, openai_dataset.jsonl) are written as the sessions go: straight into the
 * directory, or, for a tar stream, into unnamed temporary files in `spooldir` that join
 * the archive at the end, since a tar member's size comes before its data. Functions
 * return 0 or -1 with err. */

enum { AGG_SESSIONS, AGG_MESSAGES, AGG_DATASET };

struct bout_agg {
    const char *name;
    int fd;
    EVP_MD_CTX *md; /* directory output: the digest as it is written */
    uint64_t n;
    char buf[65536]; /* rows gather here: one write(2) per 64 KiB, not per row */
    size_t blen;
};

/* The caller fills tar/tw/tmpdir/spooldir and zeroes the rest; bout_free frees all. */
struct bout {
    bool tar;
    struct svc_tarw *tw;
    char prefix[80]; /* "chat-export-.../" inside the archive */
    char *tmpdir;    /* directory output: the bundle under its temporary name */
    char *spooldir;  /* where unnamed temporary files go (NULL: $TMPDIR) */
    FILE *list;      /* manifest "files" entries, one compact JSON line each */
    uint64_t bytes;  /* sum of file sizes */
    size_t sessions; /* sessions written */
    time_t now;
    struct bout_agg agg[3];
    json_object *top; /* the top-level files' entries, for the answer */
    char last_parent[PATH_MAX];
};

static int record(struct bout *o, const char *rel, uint64_t bytes, const char *sha,
                  struct svc_err *err)
{
    json_object *e = svc_json_new_obj("path", rel, NULL);
    svc_json_set_int(e, "bytes", (int64_t)bytes);
    svc_json_set_str(e, "sha256", sha);
    const char *txt =
        json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = fprintf(o->list, "%s\n", txt) < 0 ? svc_err_errno(err, "spool manifest") : 0;
    if (rc == 0 && !strchr(rel, '/'))
        json_object_array_add(o->top, json_object_get(e));
    json_object_put(e);
    o->bytes += bytes;
    return rc;
}

static int mkparent(struct bout *o, const char *rel, struct svc_err *err)
{
    const char *slash = strrchr(rel, '/');
    if (!slash)
        return 0;
    size_t n = (size_t)(slash - rel);
    if (n < sizeof o->last_parent && strncmp(o->last_parent, rel, n) == 0 &&
        o->last_parent[n] == '\0')
        return 0;
    char *path = NULL;
    svc_xasprintf(&path, "%s/%.*s", o->tmpdir, (int)n, rel);
    int rc = svc_mkdirs(path, 0755, err);
    free(path);
    if (rc == 0 && n < sizeof o->last_parent)
        snprintf(o->last_parent, sizeof o->last_parent, "%.*s", (int)n, rel);
    return rc;
}

/* rel's name in the output: a member of the archive, or a path in the directory (heap). */
static char *out_path(const struct bout *o, const char *rel)
{
    char *p = NULL;
    svc_xasprintf(&p, "%s%s%s", o->tar ? o->prefix : o->tmpdir, o->tar ? "" : "/", rel);
    return p;
}

static int bout_dir(struct bout *o, const char *rel, time_t mtime, struct svc_err *err)
{
    char *p = out_path(o, rel);
    int rc = o->tar ? svc_tarw_dir(o->tw, p, mtime, err) : svc_mkdirs(p, 0755, err);
    free(p);
    return rc;
}

/* Start file rel of len bytes: the archive's member, or a new file of the directory (*fd). */
static int out_begin(struct bout *o, const char *rel, uint64_t len, time_t mtime, int *fd,
                     struct svc_err *err)
{
    *fd = -1;
    if (!o->tar && mkparent(o, rel, err) != 0)
        return -1;
    char *p = out_path(o, rel);
    int rc = o->tar ? svc_tarw_file_begin(o->tw, p, len, mtime, err) : 0;
    if (!o->tar && (*fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
        rc = svc_err_errno(err, "write bundle file");
    free(p);
    return rc;
}

static int out_data(struct bout *o, int fd, const void *data, size_t len, struct svc_err *err)
{
    if (o->tar)
        return svc_tarw_data(o->tw, data, len, err);
    return svc_write_all(fd, data, len) == 0 ? 0 : svc_err_errno(err, "write bundle file");
}

/* End the file out_begin started (rc: how its writing went). */
static int out_end(struct bout *o, int fd, int rc, struct svc_err *err)
{
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = svc_err_errno(err, "write bundle file");
    return rc != 0 || (o->tar && svc_tarw_file_end(o->tw, err) != 0) ? -1 : 0;
}

static int bout_file(struct bout *o, const char *rel, const void *data, size_t len, time_t mtime,
                     struct svc_err *err)
{
    unsigned char md[32];
    char sha[65];
    if (EVP_Digest(data, len, md, NULL, EVP_sha256(), NULL) != 1)
        return svc_err_set(err, SVC_E_INTERNAL, "sha256 failed");
    svc_hex(md, 32, sha);
    int fd, rc = out_begin(o, rel, len, mtime, &fd, err);
    if (rc == 0)
        rc = out_data(o, fd, data, len, err);
    if (out_end(o, fd, rc, err) != 0)
        return -1;
    return record(o, rel, len, sha, err);
}

static int bout_file_fd(struct bout *o, const char *rel, int fd, struct svc_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "spool");
    int dst, rc = out_begin(o, rel, (uint64_t)sb.st_size, o->now, &dst, err);
    if (rc != 0)
        return -1;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        rc = svc_err_set(err, SVC_E_NOMEM, "sha256 init failed");
    char buf[65536];
    uint64_t left = (uint64_t)sb.st_size;
    while (rc == 0 && left > 0) {
        ssize_t got = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = svc_err_errno(err, "read spool");
            break;
        }
        EVP_DigestUpdate(md, buf, (size_t)got);
        rc = out_data(o, dst, buf, (size_t)got, err);
        left -= (uint64_t)got;
    }
    unsigned char d[32];
    char sha[65];
    EVP_DigestFinal_ex(md, d, NULL);
    EVP_MD_CTX_free(md);
    svc_hex(d, 32, sha);
    if (out_end(o, dst, rc, err) != 0)
        return -1;
    return record(o, rel, (uint64_t)sb.st_size, sha, err);
}

/* An unnamed temporary file in dir ($TMPDIR or /tmp when NULL): fd, or -1 with err. */
static int spool(const char *dir, struct svc_err *err)
{
    const char *t = getenv("TMPDIR");
    if (!dir)
        dir = t && *t ? t : "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno == EOPNOTSUPP || errno == EINVAL || errno == EISDIR) /* the flag refused */
        svc_fs_fallback_note("O_TMPFILE", errno);
    char *tmpl = NULL;
    svc_xasprintf(&tmpl, "%s/.svc-spool-XXXXXX", dir);
    fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tmpl);
    free(tmpl);
    return fd >= 0 ? fd : svc_err_errno(err, "temporary file");
}

FILE *svc_export_spool_file(const char *dir, const char *what, struct svc_err *err)
{
    int fd = spool(dir, err);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (fd >= 0 && !f) {
        svc_err_errno(err, what);
        close(fd);
    }
    return f;
}

static int agg_flush(struct bout_agg *a, struct svc_err *err)
{
    if (a->blen && svc_write_all(a->fd, a->buf, a->blen) != 0)
        return svc_err_errno(err, a->name);
    a->blen = 0;
    return 0;
}

static int agg_write(struct bout *o, int i, const char *data, size_t len, struct svc_err *err)
{
    struct bout_agg *a = &o->agg[i];
    if (a->md)
        EVP_DigestUpdate(a->md, data, len);
    a->n += len;
    if (a->blen + len > sizeof a->buf && agg_flush(a, err) != 0)
        return -1;
    if (len > sizeof a->buf)
        return svc_write_all(a->fd, data, len) == 0 ? 0 : svc_err_errno(err, a->name);
    memcpy(a->buf + a->blen, data, len);
    a->blen += len;
    return 0;
}

static int agg_open(struct bout *o, struct svc_err *err)
{
    static const char *names[3] = {"sessions.json", "messages.jsonl", "openai_dataset.jsonl"};
    for (int i = 0; i < 3; i++) {
        struct bout_agg *a = &o->agg[i];
        a->name = names[i];
        if (o->tar) {
            a->fd = spool(o->spooldir, err);
        } else {
            if (out_begin(o, names[i], 0, 0, &a->fd, err) != 0)
                return -1;
            a->md = EVP_MD_CTX_new();
            if (EVP_DigestInit_ex(a->md, EVP_sha256(), NULL) != 1)
                return svc_err_set(err, SVC_E_NOMEM, "sha256 init failed");
        }
        if (a->fd < 0)
            return -1;
    }
    return agg_write(o, AGG_SESSIONS, "[", 1, err);
}

static int agg_close(struct bout *o, struct svc_err *err)
{
    if (agg_write(o, AGG_SESSIONS, o->agg[AGG_SESSIONS].n > 1 ? "\n]\n" : "]\n",
                  o->agg[AGG_SESSIONS].n > 1 ? 3 : 2, err) != 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        struct bout_agg *a = &o->agg[i];
        if (agg_flush(a, err) != 0)
            return -1;
        unsigned char d[32];
        char sha[65];
        if (!o->tar) {
            EVP_DigestFinal_ex(a->md, d, NULL);
            svc_hex(d, 32, sha);
        }
        if (o->tar ? bout_file_fd(o, a->name, a->fd, err) != 0
                   : record(o, a->name, a->n, sha, err) != 0)
            return -1;
    }
    return 0;
}

static void bout_free(struct bout *o)
{
    for (int i = 0; i < 3; i++) {
        if (o->agg[i].fd > 0)
            close(o->agg[i].fd);
        EVP_MD_CTX_free(o->agg[i].md);
    }
    if (o->list)
        fclose(o->list);
    svc_tarw_free(o->tw);
    free(o->tmpdir);
    free(o->spooldir);
    json_object_put(o->top);
}

struct svc_export {
    const struct svc_config *cfg;
    struct svc_store st;
    struct svc_hostdb ids; /* the selection: ids(id) in a temporary database, in id order */
    sqlite3_stmt *walk;    /* ids_walk's, and its last step's result */
    int walk_rc;
    size_t nsids;
    char *dest; /* resolved destination directory (NULL for a download) */
    bool tar;
    char id[64]; /* chat-export-YYYYMMDDTHHMMSSZ-xxxxxx */
    char created_at[SVC_TIME_LEN];
    json_object *selection;
    bool allow_partial;
    json_object *left_out;   /* ids of selected sessions that could not be read */
    struct svc_err left_err; /* the first one's cause */
    struct svc_buf ratings;  /* feedback.jsonl */
    struct svc_feedback_pairs *pairs;
    bool memory; /* a memory file is there: the ids written go to table written */
};

const char *svc_export_id(const struct svc_export *ex)
{
    return ex->id;
}

void svc_export_free(struct svc_export *ex)
{
    if (!ex)
        return;
    svc_hostdb_close(&ex->ids);
    free(ex->dest);
    json_object_put(ex->selection);
    json_object_put(ex->left_out);
    svc_buf_free(&ex->ratings);
    svc_feedback_pairs_free(ex->pairs);
    free(ex);
}

/* ---- selection ---- */

/* sid into table ids (the selection) or written (its memory digests go into the bundle). */
static int ids_add(struct svc_export *ex, bool written, const char *sid, struct svc_err *err)
{
    if (svc_hostdb_run(&ex->ids,
                       written ? "INSERT OR IGNORE INTO written VALUES (?1)"
                               : "INSERT OR IGNORE INTO ids VALUES (?1)",
                       "s", sid) == 0)
        return 0;
    return svc_err_set(err, SVC_E_IO, "temporary database: %s", svc_hostdb_errmsg(&ex->ids));
}

/* The selection in id order: ids_walk, ids_next until NULL (the id borrowed until the next
 * call), then ids_end: 0, or -1 with err when the walk failed. */
static void ids_walk(struct svc_export *ex)
{
    ex->walk = svc_hostdb_stmt(&ex->ids, "SELECT id FROM ids ORDER BY id");
    ex->walk_rc = ex->walk ? SQLITE_ROW : SQLITE_ERROR;
}

static const char *ids_next(struct svc_export *ex)
{
    if (ex->walk_rc == SQLITE_ROW && (ex->walk_rc = sqlite3_step(ex->walk)) == SQLITE_ROW)
        return (const char *)sqlite3_column_text(ex->walk, 0);
    return NULL;
}

static int ids_end(struct svc_export *ex, struct svc_err *err)
{
    if (ex->walk)
        sqlite3_reset(ex->walk);
    if (ex->walk_rc == SQLITE_DONE)
        return 0;
    return svc_err_set(err, SVC_E_IO, "temporary database: %s", sqlite3_errstr(ex->walk_rc));
}

/* The named selection's "session_ids" holds this until the manifest is written: the ids
 * then come from ex->ids, a line at a time. A C string has no NUL, so its text, "\u0000",
 * is nothing else's in the manifest's head. */
#define IDS_MARK "\0"
#define IDS_MARK_TEXT "\"\\u0000\""

static int select_named(struct svc_export *ex, const struct svc_export_request *req,
                        struct svc_err *err)
{
    struct svc_buf missing;
    svc_buf_init(&missing);
    size_t nmissing = 0;
    int rc = 0;
    for (size_t i = 0; i < req->n_session_ids && rc == 0; i++) {
        const char *sid = req->session_ids[i];
        if (svc_layout_id_check(sid, err) != 0)
            rc = -1;
        else if (!svc_store_session_exists(&ex->st, sid) ||
                 svc_session_visible(ex->cfg, req->owner, sid, false, NULL) != 0)
            svc_buf_printf(&missing, "%s%s", nmissing++ ? ", " : "", sid);
        else
            rc = ids_add(ex, false, sid, err); /* a repeated one is kept once */
    }
    if (rc == 0 && nmissing)
        rc = svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session%s not found: %.400s",
                         nmissing > 1 ? "s" : "", missing.data ? missing.data : "");
    svc_buf_free(&missing);
    return rc;
}

/* Whether the listed summary s passes the request's filters. */
static bool row_selected(const struct svc_export_request *req, json_object *s, double after,
                         double before)
{
    if (!req->include_archived && svc_json_bool(s, "archived", false))
        return false;
    if (req->n_statuses) {
        bool hit = false;
        for (size_t k = 0; k < req->n_statuses && !hit; k++)
            hit = strcmp(svc_json_str(s, "status", "idle"), req->statuses[k]) == 0;
        if (!hit)
            return false;
    }
    double t = 0;
    if ((req->updated_after || req->updated_before) &&
        svc_time_parse_iso(svc_json_str(s, "updated_at", ""), &t) != 0)
        return false;
    if (req->updated_after && !(t > after))
        return false;
    return !(req->updated_before && !(t < before));
}

struct pick {
    struct svc_export *ex;
    const struct svc_export_request *req;
    double after, before;
    size_t seen;
};

static int pick_one(void *ctx, json_object *s, struct svc_err *err)
{
    struct pick *p = ctx;
    const char *sid = svc_json_str(s, "session_id", "");
    if (++p->seen % SVC_LIST_LIMIT_MAX == 0 && p->req->selecting)
        p->req->selecting->fn(p->req->selecting->ctx, p->seen, 0, 0);
    return svc_layout_id_valid(sid) && row_selected(p->req, s, p->after, p->before)
               ? ids_add(p->ex, false, sid, err)
               : 0;
}

/* Every session of the listing index that matches the filters. */
static int select_filtered(struct svc_export *ex, const struct svc_export_request *req,
                           double after, double before, struct svc_err *err)
{
    /* the stored counts: the files are read anyway, a stat a row would only slow it */
    struct svc_list_query q = {
        .include_archived = true, .owner = req->owner, .stored_counts = true};
    struct pick p = {ex, req, after, before, 0};
    int rc = svc_sessions_each(ex->cfg, &q, pick_one, &p, err);
    if (rc == 0 && req->selecting)
        req->selecting->fn(req->selecting->ctx, p.seen, 0, 0);
    return rc;
}

/* ---- destination ---- */

/* Resolve a path that may not exist yet: the longest existing ancestor through realpath,
 * then the missing components, which may not be "." or "..". Heap result or NULL. */
static char *resolve_dest(const char *path)
{
    if (!path || path[0] != '/')
        return NULL;
    char *work = svc_xstrdup(path);
    size_t n = strlen(work);
    while (n > 1 && work[n - 1] == '/')
        work[--n] = '\0';
    char *rest = NULL; /* points into work after the existing part */
    char *real = NULL;
    for (;;) {
        real = realpath(work, NULL);
        if (real)
            break;
        if (errno != ENOENT && errno != ENOTDIR)
            goto fail;
        char *slash = strrchr(work, '/'); /* work starts with '/' throughout */
        if (rest)
            rest[-1] = '/';
        rest = slash + 1;
        *slash = '\0';
        if (slash == work) {
            real = svc_xstrdup("/");
            break;
        }
    }
    if (!rest) {
        free(work);
        return real;
    }
    /* work now holds the existing part, NUL, then the rest with its slashes */
    char *full = NULL;
    svc_xasprintf(&full, "/%s/", rest);
    bool dots = strstr(full, "/./") || strstr(full, "/../");
    free(full);
    if (dots)
        goto fail;
    svc_xasprintf(&full, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", rest);
    free(real);
    free(work);
    return full;
fail:
    free(real);
    free(work);
    return NULL;
}

static bool inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int check_dest(struct svc_export *ex, const struct svc_export_request *req,
                      struct svc_err *err)
{
    const struct svc_config *cfg = ex->cfg;
    char *want = svc_path_expand(
        req->output_dir && *req->output_dir ? req->output_dir : cfg->sessions.export_default_dir);
    char *dest = resolve_dest(want);
    bool ok = dest != NULL && req->output_dir_trusted;
    for (size_t i = 0; dest && !ok; i++) {
        const char *allowed =
            i == 0 ? cfg->sessions.export_default_dir : cfg->sessions.export_allowed_dirs[i - 1];
        if (!allowed)
            break;
        char *ra = resolve_dest(allowed);
        ok = ra && inside(dest, ra);
        free(ra);
    }
    free(want);
    if (ok) {
        ex->dest = dest;
        return 0;
    }
    free(dest);
    return svc_err_setp(err, SVC_E_EXPORT_DIR_FORBIDDEN, "output_dir",
                        "output_dir must lie inside export_default_dir or one of "
                        "export_allowed_dirs (after symbolic links)");
}

int svc_export_prepare(const struct svc_config *cfg, const struct svc_export_request *req,
                       struct svc_export **out, struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    double after = 0, before = 0;
    if (req->updated_after && svc_time_parse_iso(req->updated_after, &after) != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "updated_after",
                            "updated_after must be an ISO 8601 time");
    if (req->updated_before && svc_time_parse_iso(req->updated_before, &before) != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "updated_before",
                            "updated_before must be an ISO 8601 time");
    for (size_t i = 0; i < req->n_statuses; i++)
        if (!svc_session_status_valid(req->statuses[i]))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "status",
                                "status must hold running, idle, error or cancelled");
    struct svc_export *ex = svc_xcalloc(1, sizeof *ex);
    ex->cfg = cfg;
    svc_store_from_config(cfg, &ex->st);
    ex->tar = req->tar || req->download;
    ex->allow_partial = req->allow_partial;
    ex->left_out = json_object_new_array();
    if (svc_hostdb_temp(&ex->ids,
                        "CREATE TABLE ids(id TEXT PRIMARY KEY) WITHOUT ROWID;"
                        "CREATE TABLE written(id TEXT PRIMARY KEY) WITHOUT ROWID",
                        256, err) != 0)
        goto fail;
    if (req->n_session_ids ? select_named(ex, req, err) != 0
                           : select_filtered(ex, req, after, before, err) != 0)
        goto fail;
    if (!req->download && check_dest(ex, req, err) != 0)
        goto fail;
    ex->nsids = (size_t)svc_hostdb_int(&ex->ids, "SELECT count(*) FROM ids", 0);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32], hex[7];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    svc_random_hex(hex, 6);
    snprintf(ex->id, sizeof ex->id, "chat-export-%s-%s", stamp, hex);
    svc_time_now_iso(ex->created_at);
    /* the selection as the manifest records it */
    json_object *sel = json_object_new_object();
    if (req->n_session_ids) { /* the ids are written from ex->ids (manifest_head) */
        svc_json_set(sel, "session_ids", json_object_new_string_len(IDS_MARK, 1));
    } else {
        svc_json_set_bool(sel, "include_archived", req->include_archived);
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < req->n_statuses; i++)
            json_object_array_add(a, json_object_new_string(req->statuses[i]));
        svc_json_set(sel, "status", a);
        svc_json_set_str(sel, "updated_after", req->updated_after);
        svc_json_set_str(sel, "updated_before", req->updated_before);
    }
    ex->selection = sel;
    *out = ex;
    return 0;
fail:
    svc_export_free(ex);
    return -1;
}

/* ---- the per-session parts ---- */

/* The session's rated messages: a feedback.jsonl line each, and their inputs and answers for
 * the preference pairs (feedback.h). rows: the session's message rows, in order. */
static void gather_feedback(struct svc_export *ex, const char *sid, json_object *rows,
                            json_object *fb)
{
    json_object *input = json_object_new_array();
    for (size_t i = 0; fb && i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        int64_t id = svc_json_int(row, "message_id", -1);
        json_object *f = svc_feedback_of(fb, id), *out = svc_json_arr(row, "openai_messages");
        if (f) {
            json_object *line = svc_json_new_obj("session_id", sid, NULL);
            svc_json_set_int(line, "message_id", id);
            svc_json_merge(line, f);
            char *t = svc_json_dump_compact(line);
            svc_buf_printf(&ex->ratings, "%s\n", t);
            free(t);
            json_object_put(line);
            const char *rating = svc_json_str(f, "rating", NULL);
            if (rating && out) {
                if (!ex->pairs)
                    ex->pairs = svc_feedback_pairs_new();
                svc_feedback_pairs_add(ex->pairs, rating, input, out);
            }
        }
        for (size_t k = 0; out && k < json_object_array_length(out); k++)
            json_object_array_add(input, json_object_get(json_object_array_get_idx(out, k)));
    }
    json_object_put(input);
}

/* feedback.jsonl and feedback_pairs.jsonl, after every session. */
static int emit_feedback(struct svc_export *ex, struct bout *o, struct svc_err *err)
{
    char *pairs = ex->pairs ? svc_feedback_pairs_jsonl(ex->pairs) : svc_xstrdup("");
    const char *ratings = ex->ratings.data ? ex->ratings.data : "";
    int rc = bout_file(o, "feedback.jsonl", ratings, strlen(ratings), o->now, err);
    if (rc == 0)
        rc = bout_file(o, "feedback_pairs.jsonl", pairs, strlen(pairs), o->now, err);
    free(pairs);
    return rc;
}

/* A message file of the snapshot with its id. */
struct bmsg {
    int64_t id;
    const struct svc_snap_file *f;
};

/* The session's other native JSON files and its turn lines checked, so that damage is named. */
static void warn_damaged(struct svc_snap *s)
{
    const char *json_files[] = {svc_layout_name(SVC_F_SESSION), svc_layout_name(SVC_F_SIDECAR),
                                svc_layout_name(SVC_F_MEMORY), svc_layout_name(SVC_F_FEEDBACK),
                                s->agent_file};
    for (size_t k = 0; k < sizeof json_files / sizeof json_files[0]; k++) {
        const struct svc_snap_file *f = svc_snap_find(s, json_files[k]);
        json_object *o2 = NULL;
        if (f && svc_json_parse(f->data, f->len, &o2, NULL) != 0)
            svc_snap_warn_native(s, json_files[k], "damaged: not valid JSON");
        json_object_put(o2);
    }
    const struct svc_snap_file *tf = svc_snap_find(s, svc_layout_name(SVC_F_TURNS));
    if (tf) {
        int torn = 0;
        for (const char *p = tf->data; p < tf->data + tf->len;) {
            const char *nl = memchr(p, '\n', (size_t)(tf->data + tf->len - p));
            size_t n = nl ? (size_t)(nl - p) : (size_t)(tf->data + tf->len - p);
            json_object *t = NULL;
            if (n && svc_json_parse(p, n, &t, NULL) != 0)
                torn++;
            json_object_put(t);
            p += n + 1;
        }
        if (torn) {
            char m[80];
            snprintf(m, sizeof m, "%d torn or undecodable line%s skipped by readers", torn,
                     torn > 1 ? "s" : "");
            svc_snap_warn_native(s, svc_layout_name(SVC_F_TURNS), m);
        }
    }
}

/* obj as one compact line of the gathering file i. */
static int agg_line(struct bout *o, int i, json_object *obj, struct svc_err *err)
{
    char *txt = svc_json_dump_compact(obj);
    int rc = agg_write(o, i, txt, strlen(txt), err);
    free(txt);
    return rc == 0 ? agg_write(o, i, "\n", 1, err) : -1;
}

/* messages.jsonl's rows of the session's messages (mv, nm of them, in id order), with their
 * feedback; their OpenAI messages into dataset and the rows into rows (for the transcript). */
static int emit_rows(struct svc_export *ex, struct bout *o, struct svc_snap *s,
                     const struct bmsg *mv, size_t nm, json_object *fb, json_object *dataset,
                     json_object *rows, struct svc_err *err)
{
    for (size_t i = 0; i < nm; i++) {
        json_object *rec = NULL;
        if (svc_json_parse(mv[i].f->data, mv[i].f->len, &rec, NULL) != 0 ||
            !svc_json_obj(rec, "message")) {
            json_object_put(rec);
            svc_snap_warn_native(s, mv[i].f->rel,
                                 "damaged message file: not exported to messages.jsonl");
            continue;
        }
        json_object *row = svc_message_row(rec, mv[i].id);
        json_object_put(rec);
        json_object *line =
            svc_json_new_obj("session_id", s->sid, "agent_id", ex->st.agent_id, NULL);
        svc_json_merge(line, row);
        json_object *rated = svc_feedback_of(fb, mv[i].id);
        if (rated)
            svc_json_set(line, "feedback", json_object_get(rated));
        int w = agg_line(o, AGG_MESSAGES, line, err);
        json_object_put(line);
        if (w != 0) {
            json_object_put(row);
            return -1;
        }
        json_object *proj = svc_json_arr(row, "openai_messages");
        for (size_t k = 0; proj && k < json_object_array_length(proj); k++)
            json_object_array_add(dataset, json_object_get(json_object_array_get_idx(proj, k)));
        json_object_array_add(rows, row);
    }
    return 0;
}

static int emit_session(struct svc_export *ex, struct bout *o, struct svc_snap *s, int64_t *msgs,
                        struct svc_err *err)
{
    char base[160];
    snprintf(base, sizeof base, "native/%s", s->dirname);
    if (bout_dir(o, base, o->now, err) != 0)
        return -1;
    /* native copy; messages of our agent in id order for the other files */
    size_t nm = 0;
    struct bmsg *mv = svc_xcalloc(s->n ? s->n : 1, sizeof *mv);
    size_t ml = strlen(s->msgdir);
    int rc = -1;
    json_object *fb = NULL; /* the session's feedback entries */
    for (size_t i = 0; i < s->n; i++) {
        const struct svc_snap_file *f = &s->f[i];
        char *rel = NULL;
        svc_xasprintf(&rel, "%s/%s", base, f->rel);
        int r = f->data ? bout_file(o, rel, f->data, f->len, f->mtime, err)
                        : bout_dir(o, rel, f->mtime, err);
        free(rel);
        if (r != 0)
            goto out;
        int64_t id = f->data && strncmp(f->rel, s->msgdir, ml) == 0 && f->rel[ml] == '/'
                         ? svc_layout_message_id_of(f->rel + ml + 1)
                         : -1;
        if (id >= 0) {
            mv[nm].id = id;
            mv[nm].f = f;
            nm++;
        }
    }
    for (size_t i = 1; i < nm; i++) /* insertion sort: files come in name order (10 before 9) */
        for (size_t k = i; k > 0 && mv[k - 1].id > mv[k].id; k--) {
            struct bmsg t = mv[k];
            mv[k] = mv[k - 1];
            mv[k - 1] = t;
        }
    warn_damaged(s);
    /* messages.jsonl rows, the dataset row, the transcript */
    const struct svc_snap_file *ff = svc_snap_find(s, svc_layout_name(SVC_F_FEEDBACK));
    fb = ff ? svc_feedback_parse(ff->data, ff->len) : NULL;
    json_object *dataset = json_object_new_array();
    json_object *rows = json_object_new_array(); /* for the transcript */
    if (emit_rows(ex, o, s, mv, nm, fb, dataset, rows, err) != 0) {
        json_object_put(dataset);
        json_object_put(rows);
        goto out;
    }
    *msgs = (int64_t)json_object_array_length(rows);
    svc_json_set_int(s->summary, "message_count", *msgs);
    gather_feedback(ex, s->sid, rows, fb);
    json_object *d = json_object_new_object();
    svc_json_set(d, "messages", dataset);
    int w = json_object_array_length(dataset) ? agg_line(o, AGG_DATASET, d, err) : 0;
    json_object_put(d);
    char *sum = w == 0 ? svc_json_dump_compact(s->summary) : NULL;
    if (w == 0) {
        w = agg_write(o, AGG_SESSIONS, o->agg[AGG_SESSIONS].n > 1 ? ",\n" : "\n",
                      o->agg[AGG_SESSIONS].n > 1 ? 2 : 1, err);
        if (w == 0)
            w = agg_write(o, AGG_SESSIONS, sum, strlen(sum), err);
    }
    free(sum);
    char *md = w == 0 ? svc_transcript_markdown(s->sid, ex->st.agent_id, s->summary, rows) : NULL;
    json_object_put(rows);
    char trel[160];
    snprintf(trel, sizeof trel, "transcripts/%s.md", s->sid);
    rc = w == 0 ? bout_file(o, trel, md, strlen(md), o->now, err) : -1;
    free(md);
out:
    json_object_put(fb);
    free(mv);
    return rc;
}

/* The head's text (n bytes of txt) into f, the named ids written where IDS_MARK_TEXT stands,
 * as the dumper would have written them (jsonx.c: an id needs no escape, svc_layout_id_valid):
 * each on a line two spaces deeper than the key's, the bracket at the key's depth. */
static int manifest_head(struct svc_export *ex, FILE *f, const char *txt, size_t n,
                         struct svc_err *err)
{
    const char *mark = strstr(txt, IDS_MARK_TEXT);
    if (!mark || (size_t)(mark - txt) >= n) {
        fwrite(txt, 1, n, f);
        return 0;
    }
    const char *line = mark;
    while (line > txt && line[-1] != '\n')
        line--;
    int depth = (int)strspn(line, " ");
    fwrite(txt, 1, (size_t)(mark - txt), f);
    ids_walk(ex);
    const char *sid;
    size_t k = 0;
    while ((sid = ids_next(ex)))
        fprintf(f, "%s\n%*s\"%s\"", k++ ? "," : "[", depth + 2, "", sid);
    if (ids_end(ex, err) != 0)
        return -1;
    if (k)
        fprintf(f, "\n%*s]", depth, "");
    else
        fputs("[]", f);
    const char *rest = mark + strlen(IDS_MARK_TEXT);
    fwrite(rest, 1, n - (size_t)(rest - txt), f);
    return 0;
}

/* manifest.json into a spool, returns its fd (the caller closes). */
static int manifest_build(struct svc_export *ex, struct bout *o, int64_t msgs,
                          json_object *warnings, struct svc_err *err)
{
    FILE *f = svc_export_spool_file(o->spooldir, "manifest", err);
    if (!f)
        return -1;
    char done[SVC_TIME_LEN];
    svc_time_now_iso(done);
    json_object *head = svc_json_new_obj("format", SVC_EXPORT_FORMAT, NULL);
    svc_json_set_int(head, "format_version", SVC_EXPORT_FORMAT_VERSION);
    svc_json_set_str(head, "export_id", ex->id);
    svc_json_set_str(head, "created_at", ex->created_at);
    svc_json_set_str(head, "completed_at", done);
    svc_json_set_str(head, "generator", "svc " SVC_VERSION);
    svc_json_set_str(head, "agent_id", ex->st.agent_id);
    svc_json_set_int(head, "session_count", (int64_t)o->sessions);
    svc_json_set_int(head, "message_count", msgs);
    svc_json_set(head, "selection", json_object_get(ex->selection));
    svc_json_set(head, "warnings", json_object_get(warnings));
    char *txt = svc_json_dump_native(head);
    json_object_put(head);
    /* head without its closing brace, then "files" streamed from the spooled list */
    size_t n = strlen(txt);
    while (n > 0 && txt[n - 1] != '}')
        n--;
    n = n ? n - 1 : 0;
    while (n > 0 && (txt[n - 1] == '\n' || txt[n - 1] == ' '))
        n--;
    int rc = manifest_head(ex, f, txt, n, err);
    free(txt);
    if (rc != 0) {
        fclose(f);
        return -1;
    }
    fputs(",\n  \"files\": [", f);
    rewind(o->list);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    bool first = true;
    while ((got = getline(&line, &cap, o->list)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        fprintf(f, "%s\n    %s", first ? "" : ",", line);
        first = false;
    }
    free(line);
    fputs(first ? "]\n}\n" : "\n  ]\n}\n", f);
    fseek(o->list, 0, SEEK_END);
    if (fflush(f) != 0 || ferror(f)) {
        fclose(f);
        return svc_err_errno(err, "manifest");
    }
    int dup_fd = dup(fileno(f));
    fclose(f);
    return dup_fd >= 0 ? dup_fd : svc_err_errno(err, "manifest");
}

/* Whether the sessions left out fail the export (not allow_partial): err then names them,
 * with the first one's cause, so a backup never ends quietly short of what it was asked. */
static bool left_out_fails(const struct svc_export *ex, struct svc_err *err)
{
    size_t n = json_object_array_length(ex->left_out);
    if (n == 0 || ex->allow_partial)
        return false;
    char names[300] = "";
    size_t used = 0, named = 0;
    for (; named < n; named++) {
        const char *sid = json_object_get_string(json_object_array_get_idx(ex->left_out, named));
        if (used + strlen(sid) + 16 > sizeof names)
            break;
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", named ? ", " : "", sid);
    }
    if (named < n)
        snprintf(names + used, sizeof names - used, " and %zu more", n - named);
    svc_err_set(err, ex->left_err.code,
                "export left out %zu of %zu sessions (%s): %s; allow_partial (--allow-partial) "
                "exports the rest",
                n, ex->nsids, names, ex->left_err.message);
    return true;
}

struct mem_out {
    struct svc_hostdb *ids;
    FILE *f;
    size_t n;
};

static int mem_line(void *ctx, const char *sid, const char *line, size_t n)
{
    struct mem_out *m = ctx;
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(m->ids, &st, "SELECT 1 FROM written WHERE id = ?1", "s", sid);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 0 : 1;
    m->n++;
    return fwrite(line, 1, n, m->f) == n ? 0 : 1;
}

/* memory/<agent_id>.jsonl: the digests of the sessions exported, as the memory file has
 * them (each with its owner), in its order; spooled, so memory stays flat (SPEC 19). */
static int emit_memory(struct svc_export *ex, struct bout *o, struct svc_err *err)
{
    if (!ex->memory)
        return 0;
    int fd = spool(o->spooldir, err);
    struct mem_out m = {.ids = &ex->ids, .f = fd >= 0 ? fdopen(dup(fd), "w") : NULL};
    int rc = m.f ? svc_memory_each(ex->cfg, ex->cfg->sessions.agent_id, mem_line, &m, err)
                 : svc_err_errno(err, "spool");
    if (m.f && fclose(m.f) != 0 && rc == 0)
        rc = 1;
    if (rc > 0)
        rc = svc_err_errno(err, "spool memory digests");
    char rel[SVC_ID_MAX + 16];
    snprintf(rel, sizeof rel, "memory/%s.jsonl", ex->cfg->sessions.agent_id);
    if (rc == 0 && m.n > 0 &&
        (bout_dir(o, "memory", o->now, err) != 0 || bout_file_fd(o, rel, fd, err) != 0))
        rc = -1;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Write every part of the bundle into o; *msgs, *warnings for the answer. */
static int produce(struct svc_export *ex, struct bout *o, const struct svc_export_progress *pg,
                   int64_t *msgs_out, json_object *warnings, struct svc_err *err)
{
    int64_t msgs = 0;
    o->now = time(NULL);
    o->top = json_object_new_array();
    char *mdir, *mfile = svc_memory_file(ex->cfg, ex->cfg->sessions.agent_id, &mdir);
    ex->memory = access(mfile, R_OK) == 0; /* no memory file: no memory/ in the bundle */
    free(mfile);
    free(mdir);
    if (!(o->list = svc_export_spool_file(o->spooldir, "spool", err)))
        return -1;
    snprintf(o->prefix, sizeof o->prefix, "%s/", ex->id);
    if (o->tar && svc_tarw_dir(o->tw, ex->id, o->now, err) != 0)
        return -1;
    if (agg_open(o, err) != 0 || bout_dir(o, "transcripts", o->now, err) != 0 ||
        bout_dir(o, "native", o->now, err) != 0)
        return -1;
    ids_walk(ex);
    const char *sid;
    for (size_t i = 0; (sid = ids_next(ex)); i++) {
        struct svc_snap s = {.sid = sid, .warnings = warnings};
        struct svc_err serr;
        int64_t m = 0;
        if (svc_snap_take(ex->cfg, &s, &serr) != 0) {
            /* gone or unreadable since the selection: named, the export goes on */
            svc_snap_warn_native(&s, NULL, serr.message);
            if (json_object_array_length(ex->left_out) == 0)
                ex->left_err = serr;
            json_object_array_add(ex->left_out, json_object_new_string(s.sid));
            svc_snap_free(&s);
            continue;
        }
        int rc = emit_session(ex, o, &s, &m, err);
        if (rc == 0 && ex->memory)
            rc = ids_add(ex, true, s.sid, err);
        svc_snap_free(&s);
        if (rc != 0)
            return -1;
        msgs += m;
        o->sessions++;
        if (pg && pg->fn)
            pg->fn(pg->ctx, i + 1, ex->nsids, o->tar ? svc_tarw_bytes(o->tw) : o->bytes);
    }
    if (ids_end(ex, err) != 0 || left_out_fails(ex, err) || emit_feedback(ex, o, err) != 0 ||
        emit_memory(ex, o, err) != 0 || agg_close(o, err) != 0)
        return -1;
    int mfd = manifest_build(ex, o, msgs, warnings, err);
    if (mfd < 0)
        return -1;
    /* listed in the answer, not in itself: its entry goes to the spent list */
    int rc = bout_file_fd(o, "manifest.json", mfd, err);
    close(mfd);
    if (rc != 0 || (o->tar && svc_tarw_finish(o->tw, err) != 0))
        return -1;
    if (pg && pg->fn)
        pg->fn(pg->ctx, ex->nsids, ex->nsids, o->tar ? svc_tarw_bytes(o->tw) : o->bytes);
    *msgs_out = msgs;
    return 0;
}

/* ---- entry points ---- */

struct fd_out {
    int fd;
    int werr; /* errno of a failed write: the archive writer only knows "output failed" */
};

static int fd_write(void *ctx, const void *data, size_t len)
{
    struct fd_out *fo = ctx;
    if (svc_write_all(fo->fd, data, len) == 0)
        return 0;
    fo->werr = errno;
    return -1;
}

/* The destination directory, made when missing and checked again where it really is (it
 * may have been created just now). */
static int dest_ready(struct svc_export *ex, struct svc_err *err)
{
    if (svc_mkdirs_durable(ex->dest, 0755, ex->st.durable, err) != 0)
        return -1;
    char *real = realpath(ex->dest, NULL);
    bool same = real && strcmp(real, ex->dest) == 0;
    free(real);
    if (!same)
        return svc_err_setp(err, SVC_E_EXPORT_DIR_FORBIDDEN, "output_dir",
                            "output_dir changed while it was created");
    return 0;
}

/* The API answer of a written bundle (new reference). */
static json_object *write_result(const struct svc_export *ex, const struct bout *o,
                                 const char *final, int64_t msgs, uint64_t bytes,
                                 json_object *warnings)
{
    json_object *res = json_object_new_object();
    svc_json_set_bool(res, "ok", true);
    svc_json_set_str(res, "export_id", ex->id);
    svc_json_set_str(res, o->tar ? "export_file" : "export_dir", final);
    svc_json_set_str(res, "format", o->tar ? "tar.gz" : "dir");
    svc_json_set_int(res, "session_count", (int64_t)o->sessions);
    svc_json_set_int(res, "message_count", msgs);
    svc_json_set_int(res, "bytes", (int64_t)bytes);
    svc_json_set(res, "files", json_object_get(o->top));
    svc_json_set(res, "warnings", json_object_get(warnings));
    svc_json_set(res, "left_out", json_object_get(ex->left_out));
    return res;
}

int svc_export_write(struct svc_export *ex, const struct svc_export_progress *progress,
                     json_object **result, struct svc_err *err)
{
    *result = NULL;
    struct bout o = {.tar = ex->tar};
    json_object *warnings = json_object_new_array();
    char *tmp = NULL, *final = NULL;
    int rc = -1;
    int64_t msgs = 0;
    struct fd_out fo = {.fd = -1};
    if (dest_ready(ex, err) != 0)
        goto out;
    o.spooldir = svc_xstrdup(ex->dest);
    svc_xasprintf(&tmp, "%s/.%s%s.tmp-%d", ex->dest, ex->id, o.tar ? ".tar.gz" : "", (int)getpid());
    svc_xasprintf(&final, "%s/%s%s", ex->dest, ex->id, o.tar ? ".tar.gz" : "");
    if (o.tar ? (fo.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0
              : mkdir(tmp, 0755) != 0) {
        svc_err_errno(err, o.tar ? "create export file" : "create export directory");
        goto out;
    }
    if (!o.tar)
        o.tmpdir = svc_xstrdup(tmp);
    else if (svc_tarw_new(fd_write, &fo, &o.tw, err) != 0)
        goto out;
    if (produce(ex, &o, progress, &msgs, warnings, err) != 0) {
        if (fo.werr) /* a full disk: say so, not just "archive output failed" */
            svc_err_set(err, SVC_E_IO, "write export file: %s", strerror(fo.werr));
        goto out;
    }
    if (ex->st.durable && o.tar && fsync(fo.fd) != 0) {
        svc_err_errno(err, "sync export");
        goto out;
    }
    if (ex->st.durable && !o.tar && svc_sync_tree(tmp, err) != 0)
        goto out;
    uint64_t bytes = o.tar ? svc_tarw_bytes(o.tw) : o.bytes;
    int closed = fo.fd >= 0 ? close(fo.fd) : 0;
    fo.fd = -1;
    if (closed != 0) {
        svc_err_errno(err, "close export file");
        goto out;
    }
    /* into place, never over an existing bundle (two exports in one second differ by
     * their random suffix; this makes a clash an error instead of a loss) */
    if (svc_rename_noreplace(tmp, final) != 0) {
        svc_err_errno(err, "rename export into place");
        goto out;
    }
    if (ex->st.durable) /* the new name reaches the disk too */
        svc_fsync_dir(ex->dest, NULL);
    *result = write_result(ex, &o, final, msgs, bytes, warnings);
    rc = 0;
out:
    if (fo.fd >= 0)
        close(fo.fd);
    if (rc != 0 && tmp)
        svc_file_remove_tree(tmp);
    bout_free(&o);
    json_object_put(warnings);
    free(tmp);
    free(final);
    return rc;
}

int svc_export_stream(struct svc_export *ex, svc_tar_out_fn outfn, void *ctx,
                      const struct svc_export_progress *progress, struct svc_err *err)
{
    struct bout o = {.tar = true}; /* spooled in $TMPDIR */
    json_object *warnings = json_object_new_array();
    int64_t msgs = 0;
    int rc = -1;
    if (svc_tarw_new(outfn, ctx, &o.tw, err) == 0)
        rc = produce(ex, &o, progress, &msgs, warnings, err);
    bout_free(&o);
    json_object_put(warnings);
    return rc;
}
