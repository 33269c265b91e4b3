/* import: verify a bundle, then restore its sessions. See import.h. */
#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "fsio.h"
#include "hostdb.h"
#include "journal.h"
#include "jsonx.h"
#include "jstream.h"
#include "lock.h"
#include "log.h"
#include "memory.h"
#include "sidecar.h"
#include "store.h"
#include "tar.h"
#include "util.h"

/* ---- a bundle's members, from a directory or a .tar.gz ---- */

/* A directory bundle is walked with one open directory a level, never listed whole. */
#define WALK_DEPTH 64

struct src {
    bool tar;
    char *path;
    struct svc_tarr *tr;
    DIR *dir[WALK_DEPTH];       /* directory: the levels being walked */
    char rel[8192];             /* directory: the current member's path */
    size_t lvl[WALK_DEPTH + 1]; /* the length of rel at each level */
    int depth;
    int fd; /* directory: the current file */
};

static void src_close(struct src *s)
{
    svc_tarr_close(s->tr);
    s->tr = NULL;
    while (s->depth > 0)
        closedir(s->dir[--s->depth]);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* (Re)start reading the members from the first. */
static int src_open(struct src *s, struct svc_err *err)
{
    src_close(s);
    if (s->tar)
        return svc_tarr_open(s->path, &s->tr, err);
    s->dir[0] = opendir(s->path);
    if (!s->dir[0])
        return svc_err_errno(err, "read bundle directory");
    s->depth = 1;
    s->rel[0] = '\0';
    s->lvl[0] = 0;
    return 0;
}

/* The walk's next entry, its path in s->rel: 1 with *sb, 0 at the end, -1. */
static int walk_next(struct src *s, struct stat *sb, struct svc_err *err)
{
    while (s->depth > 0) {
        DIR *d = s->dir[s->depth - 1];
        struct dirent *de = readdir(d);
        if (!de) {
            closedir(d);
            s->depth--;
            continue;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        size_t at = s->lvl[s->depth - 1];
        int n = snprintf(s->rel + at, sizeof s->rel - at, "%s%s", at ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n >= sizeof s->rel - at)
            return svc_err_set(err, SVC_E_IO, "bundle member %.200s...: path too long", s->rel);
        if (fstatat(dirfd(d), de->d_name, sb, AT_SYMLINK_NOFOLLOW) != 0)
            return svc_err_errno(err, "stat bundle member");
        if (S_ISDIR(sb->st_mode)) {
            int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            DIR *sub = fd >= 0 ? fdopendir(fd) : NULL;
            if (!sub) {
                if (fd >= 0)
                    close(fd);
                return svc_err_errno(err, "read bundle directory");
            }
            if (s->depth == WALK_DEPTH) {
                closedir(sub);
                return svc_err_set(err, SVC_E_IO, "bundle member %.200s: too deep", s->rel);
            }
            s->dir[s->depth] = sub;
            s->lvl[s->depth++] = at + (size_t)n;
            return 1;
        }
        if (S_ISREG(sb->st_mode)) {
            s->fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            return s->fd >= 0 ? 1 : svc_err_errno(err, "read bundle member");
        }
        return svc_err_set(err, SVC_E_IO,
                           "bundle member %.200s is a link or a special file: refused", s->rel);
    }
    return 0;
}

/* 1 with *rel and *is_dir; 0 at the end; -1. */
static int src_next(struct src *s, const char **rel, bool *is_dir, struct svc_err *err)
{
    if (s->tar) {
        struct svc_tar_member m;
        int r = svc_tarr_next(s->tr, &m, err);
        *rel = m.path;
        *is_dir = m.type == SVC_TAR_DIR;
        return r;
    }
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    struct stat sb;
    int r = walk_next(s, &sb, err);
    if (r != 1)
        return r;
    *rel = s->rel;
    *is_dir = S_ISDIR(sb.st_mode);
    return 1;
}

static long src_read(struct src *s, void *buf, size_t n, struct svc_err *err)
{
    if (s->tar)
        return svc_tarr_read(s->tr, buf, n, err);
    for (;;) {
        ssize_t got = read(s->fd, buf, n);
        if (got < 0 && errno == EINTR)
            continue;
        return got < 0 ? svc_err_errno(err, "read bundle member") : (long)got;
    }
}

/* ---- digests ---- */

/* One file of a session as a number (FNV-1a of its path, size and digest): a session's
 * staged files add up to what its manifest lists only if they are those files. */
static uint64_t file_fp(const char *rel, uint64_t bytes, const char *sha)
{
    uint64_t h = 1469598103934665603ULL;
    char nb[24];
    snprintf(nb, sizeof nb, "%llu", (unsigned long long)bytes);
    const char *parts[3] = {rel, nb, sha};
    for (int k = 0; k < 3; k++)
        for (const char *p = parts[k];; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            if (!*p)
                break;
        }
    return h;
}

/* ---- sessions of the bundle ---- */

/* A session's outcome (struct rec's state): import.h's enum. */
enum { S_IMPORT = SVC_IMPORT_IMPORTED, S_SKIP = SVC_IMPORT_SKIPPED, S_FAIL = SVC_IMPORT_FAILED };

/* What the import keeps of the bundle, in a temporary database (hostdb.h: its memory does
 * not grow with the bundle): every file read (side 0) and listed by the manifest (side
 * 1), matched by path; one record a session (num: its manifest files' file_fp, less those
 * staged; the first state other than S_IMPORT noted wins, with its reason). */
#define TABLES                                                                                     \
    "CREATE TABLE files(side INT NOT NULL, path TEXT NOT NULL, bytes INT NOT NULL,"                \
    " sha TEXT NOT NULL); CREATE TABLE sess(id TEXT PRIMARY KEY, num INT NOT NULL,"                \
    " state INT NOT NULL, why TEXT NOT NULL) WITHOUT ROWID"
#define WHY_MAX 640

/* A session's record as read from sess. */
struct rec {
    char id[SVC_ID_MAX + 2];
    uint64_t num;
    unsigned char state;
    char why[WHY_MAX]; /* "" when none */
};

static void rec_set(struct rec *r, unsigned char state, const char *why)
{
    r->state = state;
    snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

static int db_err(struct svc_hostdb *db, struct svc_err *err)
{
    return svc_err_set(err, SVC_E_IO, "temporary database: %s", svc_hostdb_errmsg(db));
}

/* The row st stepped to (rc: the step's result; id, num, state, why) into *r: 1, 0 when
 * there is none, -1. */
static int rec_get(struct svc_hostdb *db, sqlite3_stmt *st, int rc, struct rec *r,
                   struct svc_err *err)
{
    if (rc == SQLITE_ROW) {
        snprintf(r->id, sizeof r->id, "%s", (const char *)sqlite3_column_text(st, 0));
        r->num = (uint64_t)sqlite3_column_int64(st, 1);
        r->state = (unsigned char)sqlite3_column_int(st, 2);
        snprintf(r->why, sizeof r->why, "%s", (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : db_err(db, err);
}

/* Session (sid, n) into *r: 1, 0 when it has no record (only r->id set then), -1. */
static int rec_find(struct svc_hostdb *db, const char *sid, size_t n, struct rec *r,
                    struct svc_err *err)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(db, &st, "SELECT id, num, state, why FROM sess WHERE id = ?1", "t",
                             sid, (int)n);
    if ((rc = rec_get(db, st, rc, r, err)) == 0)
        snprintf(r->id, sizeof r->id, "%.*s", (int)n, sid);
    return rc;
}

static int rec_put(struct svc_hostdb *db, const struct rec *r, struct svc_err *err)
{
    /* num as int64: the fingerprints' sum wraps as uint64 */
    return svc_hostdb_run(db, "INSERT OR REPLACE INTO sess VALUES (?1, ?2, ?3, ?4)", "slis", r->id,
                          (int64_t)r->num, (int)r->state, r->why) == 0
               ? 0
               : db_err(db, err);
}

/* An event of session (sid, n): num added to its record's; the first state but S_IMPORT wins. */
static int note(struct svc_hostdb *db, const char *sid, size_t n, uint64_t num, unsigned char state,
                const char *why, struct svc_err *err)
{
    struct rec r = {.state = S_IMPORT};
    if (rec_find(db, sid, n, &r, err) < 0)
        return -1;
    r.num += num;
    if (r.state == S_IMPORT && state != S_IMPORT)
        rec_set(&r, state, why);
    return rec_put(db, &r, err);
}

/* fn on every record in id order, each written back when fn changed it; fn's non-zero
 * return stops the walk and is returned (-1 with err on a database error). */
static int recs_each(struct svc_hostdb *db, int (*fn)(void *ctx, struct rec *r), void *ctx,
                     struct svc_err *err)
{
    struct rec r, was;
    r.id[0] = '\0';
    for (;;) {
        sqlite3_stmt *st = svc_hostdb_stmt(
            db, "SELECT id, num, state, why FROM sess WHERE id > ?1 ORDER BY id LIMIT 1");
        if (!st)
            return db_err(db, err);
        sqlite3_bind_text(st, 1, r.id, -1, SQLITE_TRANSIENT);
        int rc = rec_get(db, st, sqlite3_step(st), &r, err);
        if (rc <= 0)
            return rc;
        was = r;
        if ((rc = fn(ctx, &r)) != 0)
            return rc;
        if ((r.num != was.num || r.state != was.state || strcmp(r.why, was.why) != 0) &&
            rec_put(db, &r, err) != 0)
            return -1;
    }
}

/* A file read (side 0) or listed by the manifest (side 1). */
static int file_add(struct svc_hostdb *db, int side, const char *path, uint64_t bytes,
                    const char *sha, struct svc_err *err)
{
    return svc_hostdb_run(db, "INSERT INTO files VALUES (?1, ?2, ?3, ?4)", "isls", side, path,
                          (int64_t)bytes, sha) == 0
               ? 0
               : db_err(db, err);
}

struct job {
    const struct svc_config *cfg;
    const struct svc_import_options *opt;
    struct src src;
    struct svc_hostdb *db; /* TABLES: what was read, what the manifest lists, the sessions */
    char prefix[256];      /* the bundle's top directory inside the archive, "" or "x/" */
    FILE *mf;              /* manifest.json: a copy (tar), or the file itself */
    json_object *head;     /* the manifest's members but its files */
    struct svc_err ferr;   /* the first bad entry of its files, reported after the head */
    struct svc_err herr;   /* the first member refused on the side of what was read */
    struct svc_err *err;
    char run_sid[SVC_ID_MAX + 2]; /* the manifest's session being read, and its file_fp */
    size_t run_len;
    uint64_t run_fp;
    size_t count[3]; /* sessions by outcome */
    size_t todo, done;
    char agent_id[SVC_ID_MAX + 2];
    char *staging;
    struct svc_store st;
    struct svc_store stg;   /* st with the staging directory as its root */
    char last_parent[4096]; /* the staging directory made last */
    struct rec cur;         /* the session of the member read last in pass 2 */
    int cur_found;          /* -1 none yet, 0 not in the bundle's sessions, 1 */
    bool cur_dirty;         /* cur.num changed */
    char *cur_staged;       /* its directory in staging, once opened */
    uint64_t staged_bytes;
    FILE *memf;                     /* memory/<agent>.jsonl as read in pass 1 (a copy) */
    char mem_agent[SVC_ID_MAX + 2]; /* the <agent> of its name */
};

/* A bundle's copy of the root (its session directories) is under native/. */
#define NATIVE "native/"

/* The length of "native/session_", the part of a bundle path before the session id. */
static size_t native_pre(void)
{
    return strlen(NATIVE) + strlen(svc_layout_name(SVC_F_DIR));
}

/* The session a bundle path belongs to: "native/session_<sid>[/...]" -> sid, n. */
static const char *path_sid(const char *rel, size_t *n)
{
    const char *dp = svc_layout_name(SVC_F_DIR);
    if (strncmp(rel, NATIVE, strlen(NATIVE)) != 0 ||
        strncmp(rel + strlen(NATIVE), dp, strlen(dp)) != 0)
        return NULL;
    const char *sid = rel + native_pre();
    const char *slash = strchr(sid, '/');
    *n = slash ? (size_t)(slash - sid) : strlen(sid);
    return *n ? sid : NULL;
}

static void fail_sess(struct rec *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_sess(struct rec *s, const char *fmt, ...)
{
    if (s->state == S_FAIL)
        return;
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rec_set(s, S_FAIL, why);
}

/* A problem with one file: its session fails, or (outside native/) the bundle is refused. */
static int problem(struct job *j, const char *rel, const char *what, struct svc_err *err)
{
    size_t n;
    const char *sid = path_sid(rel, &n);
    if (!sid || n >= SVC_ID_MAX + 2)
        return svc_err_set(err, SVC_E_IO, "bundle damaged: %.300s: %s", rel, what);
    char why[600];
    snprintf(why, sizeof why, "%.300s: %s", rel, what);
    return note(j->db, sid, n, 0, S_FAIL, why, err);
}

/* The bytes of the bundle read so far, for the progress bar (import.h). */
static void read_progress(struct job *j, uint64_t bytes)
{
    if (j->opt->progress.fn)
        j->opt->progress.fn(j->opt->progress.ctx, 0, 0, bytes);
}

/* manifest.json, met in pass 1 at rel: where verify reads it from. */
static int manifest_found(struct job *j, const char *rel, struct svc_err *err)
{
    if (j->mf)
        return svc_err_set(err, SVC_E_IO, "bundle has more than one manifest.json");
    const char *slash = strchr(rel, '/');
    snprintf(j->prefix, sizeof j->prefix, "%.*s", slash ? (int)(slash - rel + 1) : 0, rel);
    if (j->src.tar) {
        j->mf = svc_export_spool_file(NULL, "temporary file", err);
    } else {
        char *abs = svc_path_join(j->src.path, rel);
        int fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        free(abs);
        j->mf = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!j->mf) {
            svc_err_errno(err, "read manifest.json");
            if (fd >= 0)
                close(fd);
        }
    }
    return j->mf ? 0 : -1;
}

/* Digest the current member, copying it to copy (the tar's manifest, the memory digests)
 * or to fd (a staged file) when given. */
static int read_member(struct job *j, FILE *copy, int fd, uint64_t *bytes, char *sha,
                       struct svc_err *err)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new(); /* OpenSSL allocates with malloc: never NULL */
    static char buf[65536];
    long got = 0;
    *bytes = 0;
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        got = svc_err_set(err, SVC_E_NOMEM, "sha256 init failed");
    while (got >= 0 && (got = src_read(&j->src, buf, sizeof buf, err)) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)got);
        if (copy && fwrite(buf, 1, (size_t)got, copy) != (size_t)got)
            got = svc_err_errno(err, "copy a member");
        else if (fd >= 0 && svc_write_all(fd, buf, (size_t)got) != 0)
            got = svc_err_errno(err, "write staged file");
        else
            *bytes += (uint64_t)got;
    }
    unsigned char d[32];
    EVP_DigestFinal_ex(md, d, NULL);
    EVP_MD_CTX_free(md);
    svc_hex(d, 32, sha);
    return got < 0 ? -1 : 0;
}

/* The memory digests of the bundle, "[<top>/]memory/<agent>.jsonl" (SPEC 19): *copy is a
 * temporary file to keep them in as they are read (and checked); NULL for another member. */
static int memory_member(struct job *j, const char *rel, FILE **copy, struct svc_err *err)
{
    const char *slash = strchr(rel, '/');
    const char *m = strncmp(rel, "memory/", 7) == 0 ? rel : slash ? slash + 1 : "";
    size_t n = strlen(m);
    *copy = NULL;
    if (strncmp(m, "memory/", 7) != 0 || n < 14 || strcmp(m + n - 6, ".jsonl") != 0 ||
        strchr(m + 7, '/') || j->memf)
        return 0;
    snprintf(j->mem_agent, sizeof j->mem_agent, "%.*s", (int)(n - 13), m + 7);
    j->memf = svc_export_spool_file(NULL, "temporary file", err);
    *copy = j->memf;
    return j->memf ? 0 : -1;
}

/* Pass 1: read every member, digest it, keep the manifest aside. */
static int pass_read(struct job *j, struct svc_err *err)
{
    j->db = svc_xcalloc(1, sizeof *j->db);
    if (src_open(&j->src, err) != 0 || svc_hostdb_temp(j->db, TABLES, 1024, err) != 0)
        return -1;
    const char *rel;
    bool is_dir;
    uint64_t seen = 0;
    int r;
    while ((r = src_next(&j->src, &rel, &is_dir, err)) == 1) {
        if (is_dir)
            continue;
        const char *slash = strchr(rel, '/');
        bool is_manifest =
            strcmp(rel, "manifest.json") == 0 || (slash && strcmp(slash + 1, "manifest.json") == 0);
        FILE *copy = NULL;
        int bad = is_manifest ? manifest_found(j, rel, err) : memory_member(j, rel, &copy, err);
        if (is_manifest && j->src.tar)
            copy = j->mf;
        uint64_t bytes;
        char sha[65];
        if (bad != 0 || read_member(j, copy, -1, &bytes, sha, err) != 0 ||
            file_add(j->db, 0, rel, bytes, sha, err) != 0) {
            r = -1;
            break;
        }
        seen += bytes;
        read_progress(j, seen);
    }
    src_close(&j->src);
    return r < 0 ? -1 : 0;
}

/* A member of the manifest but its files: kept in j->head. */
static int manifest_member(void *ctx, const char *key, json_object *v)
{
    struct job *j = ctx;
    json_object_object_add(j->head, key, json_object_get(v));
    return 0;
}

/* The first bad entry of the manifest's files, told once the rest is known to be JSON. */
static int entry_bad(struct job *j, size_t i, const char *why)
{
    if (!j->ferr.code)
        svc_err_set(&j->ferr, SVC_E_IO, "bundle damaged: manifest.json files[%zu] %s", i, why);
    return 0;
}

/* The manifest's files of one session come together: one event for a run of them. */
static int run_flush(struct job *j, struct svc_err *err)
{
    int rc = 0;
    if (j->run_len)
        rc = note(j->db, j->run_sid, j->run_len, j->run_fp, S_IMPORT, NULL, err);
    j->run_len = 0;
    j->run_fp = 0;
    return rc;
}

static int run_add(struct job *j, const char *sid, size_t n, uint64_t fp, struct svc_err *err)
{
    if (j->run_len != n || memcmp(j->run_sid, sid, n) != 0) {
        if (run_flush(j, err) != 0)
            return -1;
        memcpy(j->run_sid, sid, n);
        j->run_len = n;
    }
    j->run_fp += fp;
    return 0;
}

/* One entry of the manifest's files, and its session's record. */
static int manifest_file(void *ctx, size_t i, json_object *f)
{
    struct job *j = ctx;
    if (j->ferr.code)
        return 0;
    const char *path = svc_json_str(f, "path", NULL);
    const char *sha = svc_json_str(f, "sha256", NULL);
    int64_t bytes = svc_json_int(f, "bytes", -1);
    char norm[4096];
    snprintf(norm, sizeof norm, "%s", path ? path : "");
    if (!path || !svc_tar_path_normalize(norm) || strcmp(norm, path) != 0 || !sha ||
        strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64 || bytes < 0 ||
        strcmp(path, "manifest.json") == 0)
        return entry_bad(j, i, "is not a valid entry");
    size_t n;
    const char *sid = path_sid(path, &n);
    if (sid && n >= SVC_ID_MAX + 2) /* an id too long to be one */
        return entry_bad(j, i, "names no valid session");
    if (sid && run_add(j, sid, n, file_fp(path, (uint64_t)bytes, sha), j->err) != 0)
        return -1;
    char *full = NULL;
    svc_xasprintf(&full, "%s%s", j->prefix, path);
    int rc = file_add(j->db, 1, full, (uint64_t)bytes, sha, j->err);
    free(full);
    return rc;
}

/* Read the manifest: its head into j->head, its files and sessions into j->db. */
static int manifest_read(struct job *j, struct svc_err *err)
{
    j->head = json_object_new_object();
    j->err = err;
    struct svc_jstream_fns fns = {
        .member = manifest_member, .each = "files", .element = manifest_file, .ctx = j};
    if (fflush(j->mf) != 0 || fseeko(j->mf, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "read manifest.json");
    struct svc_err jerr;
    int rc = svc_jstream_object(j->mf, 64 * 1024 * 1024, &fns, &jerr);
    if (rc == -1 && jerr.code == SVC_E_IO)
        return svc_err_set(err, SVC_E_IO, "manifest.json: %s", jerr.message);
    if (rc == -1)
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json is not a JSON object");
    return rc == 0 ? run_flush(j, err) : -1;
}

/* The manifest's head: its format, version and agent. */
static int verify_head(struct job *j, struct svc_err *err)
{
    json_object *m = j->head;
    if (strcmp(svc_json_str(m, "format", ""), SVC_EXPORT_FORMAT) != 0)
        return svc_err_set(err, SVC_E_IO, "not an %s bundle (manifest.json format is '%.60s')",
                           SVC_EXPORT_FORMAT, svc_json_str(m, "format", ""));
    int64_t ver = svc_json_int(m, "format_version", -1);
    if (ver != SVC_EXPORT_FORMAT_VERSION)
        return svc_err_set(err, SVC_E_IO,
                           "bundle format_version %lld is not supported (this svc reads %d)",
                           (long long)ver, SVC_EXPORT_FORMAT_VERSION);
    const char *aid = svc_json_str(m, "agent_id", "");
    if (!svc_layout_id_valid(aid))
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json agent_id is not valid");
    snprintf(j->agent_id, sizeof j->agent_id, "%s", aid);
    if (!svc_json_arr(m, "files"))
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json has no files list");
    if (j->ferr.code) {
        *err = j->ferr;
        return -1;
    }
    return 0;
}

/* A member read that the manifest does not list (or a second member of one path). */
static void have_only(struct job *j, const char *full)
{
    size_t pl = strlen(j->prefix);
    struct svc_err e;
    int rc = 0;
    if (strncmp(full, j->prefix, pl) != 0)
        rc = svc_err_set(&e, SVC_E_IO, "bundle member %.300s lies outside the bundle's directory",
                         full);
    else if (strcmp(full + pl, "manifest.json") != 0)
        rc = problem(j, full + pl, "not listed in manifest.json", &e);
    if (rc != 0 && !j->herr.code)
        j->herr = e;
}

/* One path of what was read and of the manifest together: a row of join's query. */
static int join_one(struct job *j, sqlite3_stmt *st)
{
    const char *full = (const char *)sqlite3_column_text(st, 0);
    const char *rel = full + strlen(j->prefix);
    int64_t nh = sqlite3_column_int64(st, 1), nw = sqlite3_column_int64(st, 2);
    if (nw > 1)
        return svc_err_set(j->err, SVC_E_IO, "bundle damaged: manifest.json lists %.300s twice",
                           rel);
    int rc = 0;
    if (nw == 1) {
        if (nh == 0)
            rc = problem(j, rel, "missing", j->err);
        else if (sqlite3_column_int64(st, 3) != sqlite3_column_int64(st, 5))
            rc = problem(j, rel, "size differs from the manifest", j->err);
        else if (strcmp((const char *)sqlite3_column_text(st, 4),
                        (const char *)sqlite3_column_text(st, 6)) != 0)
            rc = problem(j, rel, "SHA-256 differs from the manifest", j->err);
    }
    for (int64_t k = nw; rc == 0 && k < nh; k++)
        have_only(j, full);
    return rc;
}

/* Whether the root has a session of this id. */
static bool in_root(struct job *j, const char *sid)
{
    struct svc_sess h;
    struct stat lst;
    bool there = svc_sess_open_store(&j->st, sid, &h, NULL) == 0 && lstat(h.dir, &lst) == 0;
    svc_sess_close(&h);
    return there;
}

/* Each session of the bundle once, as the table is made: its id must be one; one the root
 * has already is skipped unless --overwrite. */
static int fold_one(void *ctx, struct rec *r)
{
    struct job *j = ctx;
    if (!svc_layout_id_valid(r->id))
        return svc_err_set(j->err, SVC_E_IO, "bundle damaged: '%.130s' is not a session id", r->id);
    if (r->state == S_IMPORT && !j->opt->overwrite && in_root(j, r->id))
        rec_set(r, S_SKIP, "exists (use --overwrite to replace it)");
    j->count[r->state]++;
    return 0;
}

/* Per path: the records read (side 0) and listed (side 1), one size and digest of each. */
static int join(struct job *j, struct svc_err *err)
{
    sqlite3_stmt *st = svc_hostdb_stmt(
        j->db, "SELECT path, sum(side = 0), sum(side = 1), max(CASE side WHEN 0 THEN bytes END),"
               " max(CASE side WHEN 0 THEN sha END), max(CASE side WHEN 1 THEN bytes END),"
               " max(CASE side WHEN 1 THEN sha END) FROM files GROUP BY path ORDER BY path");
    if (!st)
        return db_err(j->db, err);
    int rc = 0, step = SQLITE_ROW;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = join_one(j, st);
    sqlite3_reset(st);
    return rc == 0 && step != SQLITE_DONE ? db_err(j->db, err) : rc;
}

/* The manifest against what pass 1 read; then one record a session in j->db. */
static int verify(struct job *j, struct svc_err *err)
{
    if (!j->mf)
        return svc_err_set(err, SVC_E_IO, "not an export bundle: no manifest.json");
    int rc = manifest_read(j, err);
    fclose(j->mf); /* a copy of the tar's: its disk back */
    j->mf = NULL;
    if (rc != 0 || verify_head(j, err) != 0 || join(j, err) != 0)
        return -1;
    if (j->herr.code) {
        *err = j->herr;
        return -1;
    }
    return recs_each(j->db, fold_one, j, err) == 0 ? 0 : -1;
}

/* ---- pass 2: staging ---- */

/* mkdir, or mkdir -p when the parent is missing (an existing entry in staging is ours). */
static int mkdir_fast(const char *path, struct svc_err *err)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    return errno == ENOENT ? svc_mkdirs(path, 0755, err) : svc_err_errno(err, "mkdir staging");
}

/* j->cur written back to the table when pass 2 changed it. */
static int cur_flush(struct job *j, struct svc_err *err)
{
    int rc = j->cur_dirty ? rec_put(j->db, &j->cur, err) : 0;
    j->cur_dirty = false;
    return rc;
}

/* The session of the member read (sid, n) into j->cur, looked up once for each run of its
 * members (they come together): 1, 0 when the bundle's sessions have no such id, -1. */
static int cur_session(struct job *j, const char *sid, size_t n, struct svc_err *err)
{
    if (j->cur_found >= 0 && strlen(j->cur.id) == n && memcmp(j->cur.id, sid, n) == 0)
        return j->cur_found;
    if (cur_flush(j, err) != 0)
        return -1;
    free(j->cur_staged);
    j->cur_staged = NULL;
    j->cur_found = rec_find(j->db, sid, n, &j->cur, err);
    return j->cur_found;
}

/* Write one member of j->cur into staging, checking it against the manifest. */
static int stage_member(struct job *j, const char *rel, bool is_dir, uint64_t *bytes,
                        struct svc_err *err)
{
    char *dst = NULL;
    const char *inner = rel + native_pre() + strlen(j->cur.id); /* "" or "/..." */
    if (!j->cur_staged) {
        struct svc_sess h;
        if (svc_sess_open_store(&j->stg, j->cur.id, &h, err) != 0)
            return -1;
        j->cur_staged = svc_xstrdup(h.dir);
        svc_sess_close(&h);
    }
    svc_xasprintf(&dst, "%s%s", j->cur_staged, inner);
    int rc = 0;
    if (is_dir) {
        rc = mkdir_fast(dst, err);
        free(dst);
        return rc;
    }
    char *slash = strrchr(dst, '/');
    *slash = '\0';
    if (strcmp(dst, j->last_parent) != 0) { /* files of one directory come together */
        rc = mkdir_fast(dst, err);
        if (rc == 0)
            snprintf(j->last_parent, sizeof j->last_parent, "%s", dst);
    }
    *slash = '/';
    int fd = rc == 0 ? open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
    free(dst);
    if (rc != 0)
        return -1;
    if (fd < 0)
        return svc_err_errno(err, "write staged file");
    uint64_t n = 0;
    char sha[65];
    rc = read_member(j, NULL, fd, &n, sha, err);
    if (close(fd) != 0 && rc == 0)
        rc = svc_err_errno(err, "write staged file");
    if (rc != 0)
        return -1;
    *bytes += n;
    j->cur.num -= file_fp(rel, n, sha);
    j->cur_dirty = true;
    return 0;
}

/* Pass 2: every session to import written into the staging directory (its own store),
 * synced before any rename when sessions.fsync. 0, or -1 with err set. */
static int pass_stage(struct job *j, struct svc_err *err)
{
    if (src_open(&j->src, err) != 0)
        return -1;
    const char *rel;
    bool is_dir;
    uint64_t bytes = 0;
    int r;
    size_t pl = strlen(j->prefix);
    while ((r = src_next(&j->src, &rel, &is_dir, err)) == 1) {
        if (strncmp(rel, j->prefix, pl) != 0)
            continue;
        rel += pl;
        size_t n;
        const char *sid = path_sid(rel, &n);
        if (!sid)
            continue;
        int found = cur_session(j, sid, n, err);
        if (found == 0 || (found == 1 && j->cur.state != S_IMPORT))
            continue;
        if (found < 0 || stage_member(j, rel, is_dir, &bytes, err) != 0) {
            r = -1;
            break;
        }
        read_progress(j, bytes);
    }
    src_close(&j->src);
    j->staged_bytes = bytes;
    if (r < 0 || cur_flush(j, err) != 0)
        return -1;
    return j->st.durable ? svc_sync_tree(j->staging, err) : 0;
}

/* ---- into place ---- */

static void index_tell(struct job *j, const char *sid)
{
    struct svc_store st = j->st;
    st.agent_id = j->agent_id;
    json_object *sc = NULL;
    struct svc_sess h;
    if (svc_sess_open_store(&st, sid, &h, NULL) != 0)
        return;
    if (svc_sidecar_read(&h, &sc, NULL) == 0) {
        int64_t *ids = NULL;
        size_t n = 0;
        if (svc_sess_message_ids(&h, &ids, &n, NULL) == 0)
            svc_json_set_int(sc, "message_count", (int64_t)n);
        free(ids);
    } else {
        svc_sidecar_derive(&h, &sc, NULL); /* NULL when it cannot */
    }
    svc_sess_close(&h);
    json_object *sum = svc_sidecar_summary(sc);
    if (sum)
        svc_journal_note(&j->st, sid, sum);
    json_object_put(sum);
    json_object_put(sc);
}

/* Exchange staged and final (both locked by the caller); where the filesystem refuses
 * RENAME_EXCHANGE, two renames: the old session aside, the new one in, so that a reader
 * sees the old session, then for a moment none, then the new one, never a mix; the old
 * one ends at the staged name either way. 0, or -1 with errno (nothing moved). */
static int swap_into_place(struct job *j, const char *sid, const char *staged, const char *final)
{
    if (renameat2(AT_FDCWD, staged, AT_FDCWD, final, RENAME_EXCHANGE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return -1;
    svc_fs_fallback_note("renameat2 RENAME_EXCHANGE", errno);
    /* "<staging>/old_session_<sid>", put back by clean_stale if the import dies meanwhile */
    char *aside = NULL;
    svc_xasprintf(&aside, "%s/%s%s", j->staging, svc_layout_name(SVC_F_IMPORT_ASIDE),
                  strrchr(final, '/') + 1);
    int rc = rename(final, aside);
    if (rc == 0 && (rc = rename(staged, final)) != 0) {
        int e = errno;
        if (rename(aside, final) != 0)
            svc_logf("import: session %s left aside at %s: %s", sid, aside, strerror(errno));
        errno = e;
    }
    if (rc == 0) /* else the old session goes with the staging directory */
        rename(aside, staged);
    free(aside);
    return rc;
}

static void place(struct job *j, struct rec *s)
{
    struct svc_sess hs = SVC_SESS_INIT, ho = SVC_SESS_INIT;
    struct svc_lock orl = SVC_LOCK_INIT;
    struct svc_err e;
    if (svc_sess_open_store(&j->stg, s->id, &hs, &e) != 0 ||
        svc_sess_open_store(&j->st, s->id, &ho, &e) != 0 || svc_mkdirs(hs.dir, 0755, &e) != 0 ||
        svc_sess_lock(&hs, true, &e) != 0) {
        fail_sess(s, "staging: %s", e.message);
        goto out;
    }
    const char *staged = hs.dir, *final = ho.dir;
    /* its memory state names this host's memory file, where its digests go (SPEC 19) */
    char *state = svc_sess_path(&hs, SVC_F_MEMORY, SVC_FROM_ABS);
    int moved = svc_memory_relocate(j->cfg, j->agent_id, state, &e);
    free(state);
    if (moved != 0) {
        fail_sess(s, "staging: %s", e.message);
        goto out;
    }
    struct stat lst;
    bool exists = lstat(final, &lst) == 0;
    if (!exists && svc_rename_noreplace(staged, final) != 0) {
        if (errno == EEXIST)
            rec_set(s, S_SKIP, "exists (created meanwhile)");
        else
            fail_sess(s, "rename into place: %s", strerror(errno));
        goto out;
    }
    if (exists && !S_ISDIR(lst.st_mode)) {
        fail_sess(s, "the existing %s<id> is not a directory; left alone",
                  svc_layout_name(SVC_F_DIR));
        goto out;
    }
    if (exists && (svc_lock_run_try(final, &orl, &e) != 0 || svc_sess_lock(&ho, true, &e) != 0)) {
        fail_sess(s, "%s",
                  e.code == SVC_E_SESSION_BUSY ? "a run is in progress on the existing session"
                                               : e.message);
        goto out;
    }
    /* one atomic swap: readers see the old session or the new one, never a mix */
    if (exists && swap_into_place(j, s->id, staged, final) != 0) {
        fail_sess(s, "swap into place: %s", strerror(errno));
        goto out;
    }
    if (j->st.durable)
        svc_fsync_dir(j->st.root, NULL);
    svc_sess_unlock(&ho);
    svc_lock_release(&orl);
    svc_sess_unlock(&hs);
    if (exists)
        svc_file_remove_tree(staged); /* the old session, now at the staging name */
    index_tell(j, s->id);
out:
    svc_sess_unlock(&ho);
    svc_lock_release(&orl);
    svc_sess_close(&hs);
    svc_sess_close(&ho);
}

/* A session an import killed between its two renames (swap_into_place) left aside in
 * staging goes back under its name when nothing took that name since. */
static void put_back_aside(const char *root, const char *staging)
{
    DIR *d = opendir(staging);
    if (!d)
        return;
    const char *pre = svc_layout_name(SVC_F_IMPORT_ASIDE);
    size_t pl = strlen(pre);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, pre, pl) != 0 || !svc_layout_session_of(de->d_name + pl))
            continue;
        char *from = svc_path_join(staging, de->d_name), *to = svc_path_join(root, de->d_name + pl);
        if (svc_rename_noreplace(from, to) == 0)
            svc_logf("import: put back %s left aside by a killed import", de->d_name + pl);
        free(from);
        free(to);
    }
    closedir(d);
}

/* Remove staging directories that earlier imports left (killed); caller holds the lock. */
static void clean_stale(const char *root)
{
    DIR *d = opendir(root);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *pre = svc_layout_name(SVC_F_IMPORT_STAGING);
        if (strncmp(de->d_name, pre, strlen(pre)) != 0)
            continue;
        char *p = svc_path_join(root, de->d_name);
        put_back_aside(root, p);
        svc_file_remove_tree(p);
        free(p);
    }
    closedir(d);
}

int svc_import_staging(const struct svc_store *st, int *lockfd, char **staging,
                       struct svc_store *stg, struct svc_err *err)
{
    if (svc_mkdirs_durable(st->root, 0755, st->durable, err) != 0)
        return -1;
    char *lp = svc_layout_root_path(st->root, SVC_F_IMPORT_LOCK, NULL);
    *lockfd = svc_lock_file(lp, LOCK_EX, true);
    free(lp);
    if (*lockfd < 0)
        return svc_err_errno(err, "import lock");
    clean_stale(st->root);
    if (!staging)
        return 0;
    char hex[17];
    svc_random_hex(hex, 16);
    svc_xasprintf(staging, "%s/%s%s", st->root, svc_layout_name(SVC_F_IMPORT_STAGING), hex);
    if (mkdir(*staging, 0755) == 0) {
        *stg = *st;
        stg->root = *staging;
        stg->staged = true;
        return 0;
    }
    int rc = svc_err_errno(err, "create staging directory");
    free(*staging);
    *staging = NULL;
    return rc;
}

/* The outcome: counts and the sessions' table, which *r now owns. */
static void report(struct job *j, struct svc_import_report *r)
{
    const char *eid = svc_json_str(j->head, "export_id", NULL);
    r->export_id = eid ? svc_xstrdup(eid) : NULL;
    snprintf(r->agent_id, sizeof r->agent_id, "%s", j->agent_id);
    if (strcmp(j->agent_id, j->cfg->sessions.agent_id) != 0)
        svc_xasprintf(&r->note,
                      "the bundle is of agent '%s', this root's agent is '%s': its sessions keep "
                      "their messages under %s/%s%s/",
                      j->agent_id, j->cfg->sessions.agent_id, svc_layout_name(SVC_F_AGENTS),
                      svc_layout_name(SVC_F_AGENT_DIR), j->agent_id);
    r->imported = j->count[S_IMPORT];
    r->skipped = j->count[S_SKIP];
    r->failed = j->count[S_FAIL];
    r->tab = j->db;
    j->db = NULL;
}

int svc_import_each(struct svc_import_report *r, enum svc_import_outcome which,
                    svc_import_each_fn fn, void *ctx, struct svc_err *err)
{
    if (!r->tab)
        return 0;
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(r->tab, &st, "SELECT id, why FROM sess WHERE state = ?1 ORDER BY id",
                             "i", (int)which);
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st))
        fn(ctx, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1));
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_err(r->tab, err);
}

void svc_import_report_free(struct svc_import_report *r)
{
    free(r->export_id);
    free(r->note);
    if (r->tab)
        svc_hostdb_close(r->tab);
    free(r->tab);
    memset(r, 0, sizeof *r);
}

/* One session after pass 2: failed if a file changed, came or went since pass 1, else
 * renamed into place; counted by its outcome. */
static int place_one(void *ctx, struct rec *r)
{
    struct job *j = ctx;
    if (r->state == S_IMPORT && r->num != 0) {
        fail_sess(r, "%s%s: changed while it was imported", NATIVE, r->id);
    } else if (r->state == S_IMPORT) {
        place(j, r);
        j->done++;
        if (j->opt->progress.fn)
            j->opt->progress.fn(j->opt->progress.ctx, j->done, j->todo, j->staged_bytes);
    }
    j->count[r->state]++;
    return 0;
}

/* Whether sid is a session the import put in place. */
static bool imported(void *ctx, const char *sid)
{
    struct job *j = ctx;
    struct rec r;
    struct svc_err e;
    return rec_find(j->db, sid, strlen(sid), &r, &e) == 1 && r.state == S_IMPORT;
}

/* Each staged session into place, in the table's order, the bar counting them; then the
 * bundle's memory digests of those into the memory file, in place of any they had there.
 * Digests that cannot be written are said in the log: the sessions are imported. */
static int place_all(struct job *j, struct svc_err *err)
{
    memset(j->count, 0, sizeof j->count);
    if (recs_each(j->db, place_one, j, err) != 0)
        return -1;
    struct svc_err e;
    if (j->memf && j->count[S_IMPORT] > 0 && strcmp(j->mem_agent, j->agent_id) == 0 &&
        (fseek(j->memf, 0, SEEK_SET) != 0 ||
         svc_memory_replace(j->cfg, j->agent_id, j->memf, imported, j, &e) != 0))
        svc_logf("import: the memory digests of the imported sessions were not written: %s",
                 e.message);
    return 0;
}

int svc_import(const struct svc_config *cfg, const char *bundle,
               const struct svc_import_options *opt, struct svc_import_report *out,
               struct svc_err *err)
{
    memset(out, 0, sizeof *out);
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled");
    struct job j = {.cfg = cfg, .opt = opt, .src.fd = -1, .cur_found = -1};
    svc_store_from_config(cfg, &j.st);
    int lockfd = -1, rc = -1;
    struct stat sb;
    if (stat(bundle, &sb) != 0) {
        svc_err_set(err, SVC_E_NOT_FOUND, "%s: %s", bundle, strerror(errno));
        goto out;
    }
    j.src.tar = !S_ISDIR(sb.st_mode);
    j.src.path = svc_xstrdup(bundle);
    /* verify everything before the root is touched */
    if (pass_read(&j, err) != 0 || verify(&j, err) != 0)
        goto out;
    j.todo = j.count[S_IMPORT];
    if (!opt->dry_run) {
        if (svc_import_staging(&j.st, &lockfd, j.todo ? &j.staging : NULL, &j.stg, err) != 0)
            goto out;
        if (j.todo > 0 && (pass_stage(&j, err) != 0 || place_all(&j, err) != 0))
            goto out;
    }
    report(&j, out);
    rc = 0;
out:
    if (j.staging)
        svc_file_remove_tree(j.staging);
    free(j.staging);
    if (lockfd >= 0)
        close(lockfd);
    src_close(&j.src);
    free(j.src.path);
    if (j.memf)
        fclose(j.memf);
    if (j.mf)
        fclose(j.mf);
    json_object_put(j.head);
    if (j.db)
        svc_hostdb_close(j.db);
    free(j.db);
    free(j.cur_staged);
    return rc;
}
