/* import: verify a bundle, then restore its sessions. See import.h. */
#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "lock.h"
#include "log.h"
#include "sidecar.h"
#include "store.h"
#include "tar.h"
#include "util.h"

#define MANIFEST_MAX (1024L * 1024 * 1024)

/* ---- a bundle's members, from a directory or a .tar.gz ---- */

struct src {
    bool tar;
    char *path;
    struct svc_tarr *tr;
    char **rel; /* directory: every member, walked first; dirs end with '/' */
    size_t n, cap, i;
    int fd; /* directory: the current file */
};

static void src_add(struct src *s, const char *rel)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        s->rel = svc_xrealloc(s->rel, nc * sizeof *s->rel);
        s->cap = nc;
    }
    s->rel[s->n++] = svc_xstrdup(rel);
}

static int src_walk(struct src *s, const char *rel, struct svc_err *err)
{
    char *abs = NULL;
    svc_xasprintf(&abs, "%s%s%s", s->path, *rel ? "/" : "", rel);
    DIR *d = opendir(abs);
    free(abs);
    if (!d)
        return svc_err_errno(err, "read bundle directory");
    int dfd = dirfd(d);
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *child = NULL;
        svc_xasprintf(&child, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        struct stat sb;
        if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            rc = svc_err_errno(err, "stat bundle member");
        else if (S_ISDIR(sb.st_mode)) {
            char *with = NULL;
            svc_xasprintf(&with, "%s/", child);
            src_add(s, with);
            free(with);
            rc = src_walk(s, child, err);
        } else if (S_ISREG(sb.st_mode)) {
            src_add(s, child);
        } else {
            rc = svc_err_set(err, SVC_E_IO,
                             "bundle member %.200s is a link or a special file: "
                             "refused",
                             child);
        }
        free(child);
    }
    closedir(d);
    return rc;
}

static void src_close(struct src *s)
{
    svc_tarr_close(s->tr);
    s->tr = NULL;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

static void src_free(struct src *s)
{
    src_close(s);
    for (size_t i = 0; i < s->n; i++)
        free(s->rel[i]);
    free(s->rel);
    free(s->path);
}

/* (Re)start reading the members from the first. */
static int src_open(struct src *s, struct svc_err *err)
{
    src_close(s);
    s->i = 0;
    if (s->tar)
        return svc_tarr_open(s->path, &s->tr, err);
    if (s->n == 0 && s->rel == NULL)
        return src_walk(s, "", err);
    return 0;
}

/* 1 with *rel, *is_dir, *size; 0 at the end; -1. */
static int src_next(struct src *s, const char **rel, bool *is_dir, uint64_t *size,
                    struct svc_err *err)
{
    if (s->tar) {
        struct svc_tar_member m;
        int r = svc_tarr_next(s->tr, &m, err);
        if (r == 1) {
            *rel = m.path;
            *is_dir = m.type == SVC_TAR_DIR;
            *size = m.size;
        }
        return r;
    }
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    if (s->i >= s->n)
        return 0;
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s", s->rel[s->i++]);
    size_t l = strlen(buf);
    *is_dir = l && buf[l - 1] == '/';
    if (*is_dir)
        buf[l - 1] = '\0';
    *rel = buf;
    *size = 0;
    if (*is_dir)
        return 1;
    char *abs = svc_path_join(s->path, buf);
    s->fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(abs);
    struct stat sb;
    if (s->fd < 0 || fstat(s->fd, &sb) != 0)
        return svc_err_errno(err, "read bundle member");
    *size = (uint64_t)sb.st_size;
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

struct fent {
    char *path;
    uint64_t bytes;
    char sha[65];
    bool seen;
};

struct fset {
    struct fent *v;
    size_t n, cap;
};

static struct fent *fset_add(struct fset *f, const char *path)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 1024;
        f->v = svc_xrealloc(f->v, nc * sizeof *f->v);
        f->cap = nc;
    }
    struct fent *e = &f->v[f->n];
    memset(e, 0, sizeof *e);
    e->path = svc_xstrdup(path);
    f->n++;
    return e;
}

static int cmp_fent(const void *a, const void *b)
{
    return strcmp(((const struct fent *)a)->path, ((const struct fent *)b)->path);
}

static struct fent *fset_find(const struct fset *f, const char *path)
{
    struct fent key = {.path = (char *)path};
    return f->n ? bsearch(&key, f->v, f->n, sizeof key, cmp_fent) : NULL;
}

static void fset_free(struct fset *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].path);
    free(f->v);
}

static void hex32(const unsigned char *md, char *out)
{
    static const char h[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = h[md[i] >> 4];
        out[2 * i + 1] = h[md[i] & 15];
    }
    out[64] = '\0';
}

/* ---- sessions of the bundle ---- */

enum { S_IMPORT, S_SKIP, S_FAIL };

struct sess {
    char sid[SVC_ID_MAX + 2]; /* one more: an id too long is seen as one */
    char *staged;             /* its directory in staging (heap), once a member is staged */
    int state;
    char reason[600];
    bool exists;
};

struct job {
    const struct svc_config *cfg;
    const struct svc_import_options *opt;
    struct src src;
    struct fset have; /* members read in pass 1 (path relative to the archive) */
    struct fset want; /* the manifest's files (path relative to the bundle) */
    char prefix[256]; /* the bundle's top directory inside the archive, "" or "x/" */
    json_object *manifest;
    char *manifest_text;
    size_t manifest_len;
    struct sess *s;
    size_t ns, scap, last;
    char agent_id[SVC_ID_MAX + 2];
    char *staging;
    struct svc_store st;
    struct svc_store stg;   /* st with the staging directory as its root */
    char last_parent[4096]; /* the staging directory made last */
    uint64_t staged_bytes;
};

static int cmp_sess(const void *a, const void *b)
{
    return strcmp(((const struct sess *)a)->sid, ((const struct sess *)b)->sid);
}

static struct sess *sess_get(struct job *j, const char *sid, size_t n, bool add)
{
    /* a session's files come together in the manifest: look at the last one first */
    if (j->last < j->ns && strlen(j->s[j->last].sid) == n &&
        strncmp(j->s[j->last].sid, sid, n) == 0)
        return &j->s[j->last];
    for (size_t i = j->ns; i-- > 0;)
        if (strlen(j->s[i].sid) == n && strncmp(j->s[i].sid, sid, n) == 0)
            return &j->s[j->last = i];
    if (!add || n >= sizeof j->s[0].sid)
        return NULL;
    if (j->ns == j->scap) {
        size_t nc = j->scap ? j->scap * 2 : 64;
        j->s = svc_xrealloc(j->s, nc * sizeof *j->s);
        j->scap = nc;
    }
    struct sess *e = &j->s[j->ns++];
    memset(e, 0, sizeof *e);
    memcpy(e->sid, sid, n);
    e->sid[n] = '\0';
    j->last = j->ns - 1;
    return e;
}

/* A bundle's copy of the root (its session directories) is under native/. */
#define NATIVE "native/"

/* The length of "native/session_", the part of a bundle path before the session id. */
static size_t native_pre(void)
{
    return strlen(NATIVE) + strlen(svc_store_name(SVC_F_DIR));
}

/* The session a bundle path belongs to: "native/session_<sid>[/...]" -> sid, n. */
static const char *path_sid(const char *rel, size_t *n)
{
    const char *dp = svc_store_name(SVC_F_DIR);
    if (strncmp(rel, NATIVE, strlen(NATIVE)) != 0 ||
        strncmp(rel + strlen(NATIVE), dp, strlen(dp)) != 0)
        return NULL;
    const char *sid = rel + native_pre();
    const char *slash = strchr(sid, '/');
    *n = slash ? (size_t)(slash - sid) : strlen(sid);
    return *n ? sid : NULL;
}

static void fail_sess(struct sess *s, const char *fmt, const char *a, const char *b)
{
    if (s->state == S_FAIL)
        return;
    s->state = S_FAIL;
    snprintf(s->reason, sizeof s->reason, fmt, a, b);
}

/* A problem with one file: its session fails, or (outside native/) the bundle is refused. */
static int problem(struct job *j, const char *rel, const char *what, struct svc_err *err)
{
    size_t n;
    const char *sid = path_sid(rel, &n);
    struct sess *s = sid ? sess_get(j, sid, n, true) : NULL;
    if (!s)
        return svc_err_set(err, SVC_E_IO, "bundle damaged: %.300s: %s", rel, what);
    fail_sess(s, "%.300s: %s", rel, what);
    return 0;
}

/* The bytes of the bundle read so far, for the progress bar (import.h). */
static void read_progress(struct job *j, uint64_t bytes)
{
    if (j->opt->progress.fn)
        j->opt->progress.fn(j->opt->progress.ctx, 0, 0, bytes);
}

/* Pass 1: read every member, digest it, keep the manifest. */
static int pass_read(struct job *j, struct svc_err *err)
{
    if (src_open(&j->src, err) != 0)
        return -1;
    const char *rel;
    bool is_dir;
    uint64_t size;
    int r;
    uint64_t seen = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new(); /* OpenSSL allocates with malloc: never NULL */
    char *buf = svc_xmalloc(65536);
    while ((r = src_next(&j->src, &rel, &is_dir, &size, err)) == 1) {
        if (is_dir)
            continue;
        const char *slash = strchr(rel, '/');
        bool is_manifest =
            strcmp(rel, "manifest.json") == 0 || (slash && strcmp(slash + 1, "manifest.json") == 0);
        if (is_manifest) {
            if (size > MANIFEST_MAX || j->manifest_text) {
                r = svc_err_set(err, SVC_E_IO, "bundle has %s manifest.json",
                                j->manifest_text ? "more than one" : "an oversized");
                break;
            }
            snprintf(j->prefix, sizeof j->prefix, "%.*s", slash ? (int)(slash - rel + 1) : 0, rel);
            j->manifest_text = svc_xmalloc((size_t)size + 1);
        }
        struct fent *e = fset_add(&j->have, rel);
        EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        long got;
        while ((got = src_read(&j->src, buf, 65536, err)) > 0) {
            EVP_DigestUpdate(md, buf, (size_t)got);
            if (is_manifest && e->bytes + (uint64_t)got <= size)
                memcpy(j->manifest_text + e->bytes, buf, (size_t)got);
            e->bytes += (uint64_t)got;
        }
        seen += e->bytes;
        read_progress(j, seen);
        if (got < 0) {
            r = -1;
            break;
        }
        if (is_manifest) {
            j->manifest_len = (size_t)(e->bytes < size ? e->bytes : size);
            j->manifest_text[j->manifest_len] = '\0';
        }
        unsigned char d[32];
        EVP_DigestFinal_ex(md, d, NULL);
        hex32(d, e->sha);
    }
    EVP_MD_CTX_free(md);
    free(buf);
    src_close(&j->src);
    if (r < 0)
        return -1;
    if (j->have.n > 1)
        qsort(j->have.v, j->have.n, sizeof *j->have.v, cmp_fent);
    return 0;
}

static bool hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* The manifest against what pass 1 read. */
static int verify(struct job *j, struct svc_err *err)
{
    if (!j->manifest_text)
        return svc_err_set(err, SVC_E_IO, "not an export bundle: no manifest.json");
    if (svc_json_parse(j->manifest_text, j->manifest_len, &j->manifest, NULL) != 0 ||
        !json_object_is_type(j->manifest, json_type_object))
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json is not a JSON object");
    json_object *m = j->manifest;
    if (strcmp(svc_json_str(m, "format", ""), SVC_EXPORT_FORMAT) != 0)
        return svc_err_set(err, SVC_E_IO, "not an %s bundle (manifest.json format is '%.60s')",
                           SVC_EXPORT_FORMAT, svc_json_str(m, "format", ""));
    int64_t ver = svc_json_int(m, "format_version", -1);
    if (ver != SVC_EXPORT_FORMAT_VERSION)
        return svc_err_set(err, SVC_E_IO,
                           "bundle format_version %lld is not supported (this svc reads %d)",
                           (long long)ver, SVC_EXPORT_FORMAT_VERSION);
    const char *aid = svc_json_str(m, "agent_id", "");
    if (!svc_id_valid(aid))
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json agent_id is not valid");
    snprintf(j->agent_id, sizeof j->agent_id, "%s", aid);
    json_object *files = svc_json_arr(m, "files");
    if (!files)
        return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json has no files list");
    for (size_t i = 0; i < json_object_array_length(files); i++) {
        json_object *f = json_object_array_get_idx(files, i);
        const char *path = svc_json_str(f, "path", NULL);
        const char *sha = svc_json_str(f, "sha256", NULL);
        int64_t bytes = svc_json_int(f, "bytes", -1);
        char norm[4096];
        snprintf(norm, sizeof norm, "%s", path ? path : "");
        if (!path || !svc_tar_path_normalize(norm) || strcmp(norm, path) != 0 || !hex64(sha) ||
            bytes < 0 || strcmp(path, "manifest.json") == 0)
            return svc_err_set(err, SVC_E_IO,
                               "bundle damaged: manifest.json files[%zu] is not "
                               "a valid entry",
                               i);
        struct fent *e = fset_add(&j->want, path);
        e->bytes = (uint64_t)bytes;
        snprintf(e->sha, sizeof e->sha, "%s", sha);
        size_t n;
        const char *sid = path_sid(path, &n);
        if (sid && !sess_get(j, sid, n, true)) /* NULL: an id too long to be one */
            return svc_err_set(err, SVC_E_IO,
                               "bundle damaged: manifest.json files[%zu] names no valid session",
                               i);
    }
    if (j->want.n > 1)
        qsort(j->want.v, j->want.n, sizeof *j->want.v, cmp_fent);
    size_t pl = strlen(j->prefix);
    for (size_t i = 0; i < j->want.n; i++) {
        struct fent *w = &j->want.v[i];
        if (i > 0 && strcmp(w->path, j->want.v[i - 1].path) == 0)
            return svc_err_set(err, SVC_E_IO, "bundle damaged: manifest.json lists %.300s twice",
                               w->path);
        char *full = NULL;
        svc_xasprintf(&full, "%s%s", j->prefix, w->path);
        struct fent *h = fset_find(&j->have, full);
        free(full);
        int rc = 0;
        if (!h)
            rc = problem(j, w->path, "missing", err);
        else {
            h->seen = true;
            if (h->bytes != w->bytes)
                rc = problem(j, w->path, "size differs from the manifest", err);
            else if (strcmp(h->sha, w->sha) != 0)
                rc = problem(j, w->path, "SHA-256 differs from the manifest", err);
        }
        if (rc != 0)
            return -1;
    }
    for (size_t i = 0; i < j->have.n; i++) {
        struct fent *h = &j->have.v[i];
        if (h->seen)
            continue;
        if (strncmp(h->path, j->prefix, pl) != 0)
            return svc_err_set(err, SVC_E_IO,
                               "bundle member %.300s lies outside the bundle's "
                               "directory",
                               h->path);
        const char *rel = h->path + pl;
        if (strcmp(rel, "manifest.json") == 0)
            continue;
        if (problem(j, rel, "not listed in manifest.json", err) != 0)
            return -1;
    }
    /* session ids must be ids */
    for (size_t i = 0; i < j->ns; i++)
        if (!svc_id_valid(j->s[i].sid))
            return svc_err_set(err, SVC_E_IO, "bundle damaged: '%.130s' is not a session id",
                               j->s[i].sid);
    if (j->ns > 1)
        qsort(j->s, j->ns, sizeof *j->s, cmp_sess);
    return 0;
}

/* ---- pass 2: staging ---- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static struct sess *find_sess(struct job *j, const char *sid)
{
    struct sess key;
    snprintf(key.sid, sizeof key.sid, "%s", sid);
    return j->ns ? bsearch(&key, j->s, j->ns, sizeof key, cmp_sess) : NULL;
}

/* mkdir, and mkdir -p only when the parent is missing (staging is ours: an existing entry
 * there is a directory we made). */
static int mkdir_fast(const char *path, struct svc_err *err)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    return errno == ENOENT ? svc_mkdirs(path, 0755, err) : svc_err_errno(err, "mkdir staging");
}

/* Write one member of a session into staging, checking it against the manifest. */
static int stage_member(struct job *j, struct sess *s, const char *rel, bool is_dir,
                        uint64_t *bytes, struct svc_err *err)
{
    char *dst = NULL;
    const char *inner = rel + native_pre() + strlen(s->sid); /* "" or "/..." */
    if (!s->staged) {
        struct svc_sess h;
        if (svc_sess_open_store(&j->stg, s->sid, &h, err) != 0)
            return -1;
        s->staged = svc_xstrdup(h.dir);
        svc_sess_close(&h);
    }
    svc_xasprintf(&dst, "%s%s", s->staged, inner);
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
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    char *buf = svc_xmalloc(65536);
    uint64_t n = 0;
    long got = 0;
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        rc = svc_err_set(err, SVC_E_NOMEM, "sha256 init failed");
    while (rc == 0 && (got = src_read(&j->src, buf, 65536, err)) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)got);
        if (write_all(fd, buf, (size_t)got) != 0)
            rc = svc_err_errno(err, "write staged file");
        n += (uint64_t)got;
    }
    if (got < 0)
        rc = -1;
    unsigned char d[32];
    char sha[65] = "";
    if (md && rc == 0) {
        EVP_DigestFinal_ex(md, d, NULL);
        hex32(d, sha);
    }
    EVP_MD_CTX_free(md);
    free(buf);
    if (close(fd) != 0 && rc == 0)
        rc = svc_err_errno(err, "write staged file");
    if (rc != 0)
        return -1;
    *bytes += n;
    struct fent *w = fset_find(&j->want, rel);
    if (!w || w->bytes != n || strcmp(w->sha, sha) != 0)
        fail_sess(s, "%.300s: %s", rel, "changed while it was imported");
    return 0;
}

static int pass_stage(struct job *j, struct svc_err *err)
{
    if (src_open(&j->src, err) != 0)
        return -1;
    const char *rel;
    bool is_dir;
    uint64_t size, bytes = 0;
    int r;
    size_t pl = strlen(j->prefix);
    while ((r = src_next(&j->src, &rel, &is_dir, &size, err)) == 1) {
        if (strncmp(rel, j->prefix, pl) != 0)
            continue;
        rel += pl;
        size_t n;
        const char *sid = path_sid(rel, &n);
        if (!sid)
            continue;
        char id[SVC_ID_MAX + 2];
        snprintf(id, sizeof id, "%.*s", (int)(n < SVC_ID_MAX + 1 ? n : SVC_ID_MAX + 1), sid);
        struct sess *s = find_sess(j, id);
        if (!s || s->state != S_IMPORT)
            continue;
        if (stage_member(j, s, rel, is_dir, &bytes, err) != 0) {
            r = -1;
            break;
        }
        read_progress(j, bytes);
    }
    src_close(&j->src);
    j->staged_bytes = bytes;
    return r < 0 ? -1 : 0;
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
    if (svc_sidecar_read(&h, &sc, NULL) != 0) {
        if (svc_sidecar_derive(&h, &sc, NULL) != 0) {
            svc_sess_close(&h);
            return;
        }
    } else {
        int64_t *ids = NULL;
        size_t n = 0;
        if (svc_sess_message_ids(&h, &ids, &n, NULL) == 0)
            svc_json_set_int(sc, "message_count", (int64_t)n);
        free(ids);
    }
    svc_sess_close(&h);
    json_object *sum = svc_sidecar_summary(sc);
    if (sum)
        svc_index_update(&j->st, sid, sum);
    json_object_put(sum);
    json_object_put(sc);
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The staging name an overwritten session is moved to when the filesystem cannot
 * exchange: "old_session_<sid>", put back by clean_stale if the import dies meanwhile. */
static char *aside_path(const char *staging, const char *sid)
{
    struct svc_store st = {.root = staging};
    struct svc_sess h;
    if (svc_sess_open_store(&st, sid, &h, NULL) != 0)
        return NULL;
    char *name = svc_sess_path(&h, SVC_F_DIR, SVC_FROM_NAME), *p = NULL;
    svc_xasprintf(&p, "%s/%s%s", staging, svc_store_name(SVC_F_IMPORT_ASIDE), name);
    free(name);
    svc_sess_close(&h);
    return p;
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
    char *aside = aside_path(j->staging, sid);
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

static void place(struct job *j, struct sess *s)
{
    struct svc_sess hs = SVC_SESS_INIT, ho = SVC_SESS_INIT;
    struct svc_lock orl = SVC_LOCK_INIT;
    struct svc_err e;
    if (svc_sess_open_store(&j->stg, s->sid, &hs, &e) != 0 ||
        svc_sess_open_store(&j->st, s->sid, &ho, &e) != 0) {
        fail_sess(s, "staging: %s%s", e.message, "");
        goto out;
    }
    const char *staged = hs.dir, *final = ho.dir;
    if (svc_mkdirs(staged, 0755, &e) != 0 || svc_sess_lock(&hs, true, &e) != 0) {
        fail_sess(s, "staging: %s%s", e.message, "");
        goto out;
    }
    struct stat lst;
    bool exists = lstat(final, &lst) == 0;
    if (!exists) {
        if (svc_rename_noreplace(staged, final) != 0) {
            if (errno == EEXIST) {
                s->state = S_SKIP;
                snprintf(s->reason, sizeof s->reason, "exists (created meanwhile)");
            } else {
                fail_sess(s, "rename into place: %s%s", strerror(errno), "");
            }
            goto out;
        }
    } else {
        if (!S_ISDIR(lst.st_mode)) {
            fail_sess(s, "the existing %s<id> is not a directory; left alone%s",
                      svc_store_name(SVC_F_DIR), "");
            goto out;
        }
        if (svc_lock_run_try(final, &orl, &e) != 0 || svc_sess_lock(&ho, true, &e) != 0) {
            fail_sess(s, "%s%s",
                      e.code == SVC_E_SESSION_BUSY ? "a run is in progress on the existing session"
                                                   : e.message,
                      "");
            goto out;
        }
        /* one atomic swap: readers see the old session or the new one, never a mix */
        if (swap_into_place(j, s->sid, staged, final) != 0) {
            fail_sess(s, "swap into place: %s%s", strerror(errno), "");
            goto out;
        }
    }
    if (j->st.durable)
        fsync_dir(j->st.root);
    svc_sess_unlock(&ho);
    svc_lock_release(&orl);
    svc_sess_unlock(&hs);
    if (exists)
        svc_file_remove_tree(staged); /* the old session, now at the staging name */
    index_tell(j, s->sid);
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
    const char *pre = svc_store_name(SVC_F_IMPORT_ASIDE);
    size_t pl = strlen(pre);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, pre, pl) != 0 || !svc_store_session_of(de->d_name + pl))
            continue;
        char *from = svc_path_join(staging, de->d_name), *to = svc_path_join(root, de->d_name + pl);
        if (from && to && svc_rename_noreplace(from, to) == 0)
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
        const char *pre = svc_store_name(SVC_F_IMPORT_STAGING);
        if (strncmp(de->d_name, pre, strlen(pre)) != 0)
            continue;
        char *p = svc_path_join(root, de->d_name);
        if (p)
            put_back_aside(root, p);
        if (p)
            svc_file_remove_tree(p);
        free(p);
    }
    closedir(d);
}

static json_object *report(struct job *j)
{
    json_object *r = json_object_new_object();
    json_object *imp = json_object_new_array(), *sk = json_object_new_array(),
                *fl = json_object_new_array();
    svc_json_set_str(r, "export_id", svc_json_str(j->manifest, "export_id", NULL));
    svc_json_set_str(r, "agent_id", j->agent_id);
    for (size_t i = 0; i < j->ns; i++) {
        struct sess *s = &j->s[i];
        if (s->state == S_IMPORT) {
            json_object_array_add(imp, json_object_new_string(s->sid));
            continue;
        }
        json_object *e = json_object_new_object();
        svc_json_set_str(e, "session_id", s->sid);
        svc_json_set_str(e, "reason", s->reason);
        json_object_array_add(s->state == S_SKIP ? sk : fl, e);
    }
    svc_json_set(r, "imported", imp);
    svc_json_set(r, "skipped", sk);
    svc_json_set(r, "failed", fl);
    if (strcmp(j->agent_id, j->cfg->sessions.agent_id) != 0) {
        char note[400];
        snprintf(note, sizeof note,
                 "the bundle is of agent '%s', this root's agent is '%s': its sessions keep "
                 "their messages under %s/%s%s/",
                 j->agent_id, j->cfg->sessions.agent_id, svc_store_name(SVC_F_AGENTS),
                 svc_store_name(SVC_F_AGENT_DIR), j->agent_id);
        svc_json_set_str(r, "note", note);
    }
    return r;
}

/* Which sessions of the bundle the root has already: skipped unless --overwrite. */
static void mark_existing(struct job *j)
{
    for (size_t i = 0; i < j->ns; i++) {
        struct sess *s = &j->s[i];
        if (s->state != S_IMPORT)
            continue;
        struct svc_sess h;
        struct stat lst;
        s->exists = svc_sess_open_store(&j->st, s->sid, &h, NULL) == 0 && lstat(h.dir, &lst) == 0;
        svc_sess_close(&h);
        if (s->exists && !j->opt->overwrite) {
            s->state = S_SKIP;
            snprintf(s->reason, sizeof s->reason, "exists (use --overwrite to replace it)");
        }
    }
}

/* Write every session to import into a staging directory under the root (its own store),
 * synced before any rename when sessions.fsync. 0, or -1 with err set. */
static int stage_all(struct job *j, struct svc_err *err)
{
    char hex[17];
    svc_random_hex(hex, 16);
    svc_xasprintf(&j->staging, "%s/%s%s", j->st.root, svc_store_name(SVC_F_IMPORT_STAGING), hex);
    j->stg = j->st;
    j->stg.root = j->staging;
    if (mkdir(j->staging, 0755) != 0)
        return svc_err_errno(err, "create staging directory");
    if (pass_stage(j, err) != 0)
        return -1;
    if (!j->st.durable)
        return 0;
    int fd = open(j->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && syncfs(fd) == 0 ? 0 : svc_err_errno(err, "sync staged sessions");
    if (fd >= 0)
        close(fd);
    return rc;
}

int svc_import(const struct svc_config *cfg, const char *bundle,
               const struct svc_import_options *opt, json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled");
    struct job j;
    memset(&j, 0, sizeof j);
    j.cfg = cfg;
    j.opt = opt;
    j.src.fd = -1;
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
    mark_existing(&j);
    size_t todo = 0;
    for (size_t i = 0; i < j.ns; i++)
        todo += j.s[i].state == S_IMPORT;
    if (opt->dry_run) {
        *out = report(&j);
        rc = 0;
        goto out;
    }
    if (svc_mkdirs_durable(j.st.root, 0755, j.st.durable, err) != 0)
        goto out;
    char *lp = svc_store_root_path(&j.st, SVC_F_IMPORT_LOCK);
    lockfd = svc_lock_file(lp, LOCK_EX, true);
    free(lp);
    if (lockfd < 0) {
        svc_err_errno(err, "import lock");
        goto out;
    }
    clean_stale(j.st.root);
    if (todo == 0) {
        *out = report(&j);
        rc = 0;
        goto out;
    }
    if (stage_all(&j, err) != 0)
        goto out;
    size_t done = 0;
    for (size_t i = 0; i < j.ns; i++) {
        if (j.s[i].state != S_IMPORT)
            continue;
        place(&j, &j.s[i]);
        done++;
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, done, todo, j.staged_bytes);
    }
    *out = report(&j);
    rc = 0;
out:
    if (j.staging) {
        svc_file_remove_tree(j.staging);
        free(j.staging);
    }
    if (lockfd >= 0)
        close(lockfd);
    src_free(&j.src);
    fset_free(&j.have);
    fset_free(&j.want);
    json_object_put(j.manifest);
    free(j.manifest_text);
    for (size_t i = 0; i < j.ns; i++)
        free(j.s[i].staged);
    free(j.s);
    return rc;
}
