/* bundle_out: the directory or tar.gz a bundle is written to. See bundle_out.h. */
#include "bundle_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "util.h"

void svc_bout_hex(const unsigned char *md, char *out)
{
    static const char h[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = h[md[i] >> 4];
        out[2 * i + 1] = h[md[i] & 15];
    }
    out[64] = '\0';
}

static int record(struct svc_bout *o, const char *rel, uint64_t bytes, const char *sha,
                  struct svc_err *err)
{
    json_object *e = json_object_new_object();
    svc_json_set_str(e, "path", rel);
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

int svc_bout_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int mkparent(struct svc_bout *o, const char *rel, struct svc_err *err)
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

int svc_bout_dir(struct svc_bout *o, const char *rel, time_t mtime, struct svc_err *err)
{
    if (o->tar) {
        char *p = NULL;
        svc_xasprintf(&p, "%s%s", o->prefix, rel);
        int rc = svc_tarw_dir(o->tw, p, mtime, err);
        free(p);
        return rc;
    }
    char *path = NULL;
    svc_xasprintf(&path, "%s/%s", o->tmpdir, rel);
    int rc = svc_mkdirs(path, 0755, err);
    free(path);
    return rc;
}

int svc_bout_file(struct svc_bout *o, const char *rel, const void *data, size_t len, time_t mtime,
                  struct svc_err *err)
{
    unsigned char md[32];
    char sha[65];
    if (EVP_Digest(data, len, md, NULL, EVP_sha256(), NULL) != 1)
        return svc_err_set(err, SVC_E_INTERNAL, "sha256 failed");
    svc_bout_hex(md, sha);
    if (o->tar) {
        char *p = NULL;
        svc_xasprintf(&p, "%s%s", o->prefix, rel);
        int rc = svc_tarw_file_begin(o->tw, p, len, mtime, err);
        free(p);
        if (rc != 0 || svc_tarw_data(o->tw, data, len, err) != 0 ||
            svc_tarw_file_end(o->tw, err) != 0)
            return -1;
    } else {
        if (mkparent(o, rel, err) != 0)
            return -1;
        char *path = NULL;
        svc_xasprintf(&path, "%s/%s", o->tmpdir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        free(path);
        if (fd < 0)
            return svc_err_errno(err, "write bundle file");
        int wr = svc_bout_write_all(fd, data, len);
        if (close(fd) != 0 || wr != 0)
            return svc_err_errno(err, "write bundle file");
    }
    return record(o, rel, len, sha, err);
}

int svc_bout_file_fd(struct svc_bout *o, const char *rel, int fd, struct svc_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        return svc_err_errno(err, "spool");
    char *p = NULL;
    int rc = 0, dst = -1;
    if (o->tar) {
        svc_xasprintf(&p, "%s%s", o->prefix, rel);
        rc = svc_tarw_file_begin(o->tw, p, (uint64_t)sb.st_size, o->now, err);
    } else if ((rc = mkparent(o, rel, err)) == 0) {
        svc_xasprintf(&p, "%s/%s", o->tmpdir, rel);
        dst = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        rc = dst < 0 ? svc_err_errno(err, "write bundle file") : 0;
    }
    free(p);
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
        if (o->tar)
            rc = svc_tarw_data(o->tw, buf, (size_t)got, err);
        else if (svc_bout_write_all(dst, buf, (size_t)got) != 0)
            rc = svc_err_errno(err, "write bundle file");
        left -= (uint64_t)got;
    }
    unsigned char d[32];
    char sha[65];
    EVP_DigestFinal_ex(md, d, NULL);
    EVP_MD_CTX_free(md);
    svc_bout_hex(d, sha);
    if (dst >= 0 && close(dst) != 0 && rc == 0)
        rc = svc_err_errno(err, "write bundle file");
    if (rc != 0 || (o->tar && svc_tarw_file_end(o->tw, err) != 0))
        return -1;
    return record(o, rel, (uint64_t)sb.st_size, sha, err);
}

int svc_bout_spool(const char *dir, struct svc_err *err)
{
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

static int agg_flush(struct svc_bout_agg *a, struct svc_err *err)
{
    if (a->blen && svc_bout_write_all(a->fd, a->buf, a->blen) != 0)
        return svc_err_errno(err, a->name);
    a->blen = 0;
    return 0;
}

int svc_bout_agg_write(struct svc_bout *o, int i, const char *data, size_t len, struct svc_err *err)
{
    struct svc_bout_agg *a = &o->agg[i];
    if (a->md)
        EVP_DigestUpdate(a->md, data, len);
    a->n += len;
    if (a->blen + len > sizeof a->buf && agg_flush(a, err) != 0)
        return -1;
    if (len > sizeof a->buf)
        return svc_bout_write_all(a->fd, data, len) == 0 ? 0 : svc_err_errno(err, a->name);
    memcpy(a->buf + a->blen, data, len);
    a->blen += len;
    return 0;
}

int svc_bout_agg_open(struct svc_bout *o, struct svc_err *err)
{
    static const char *names[3] = {"sessions.json", "messages.jsonl", "openai_dataset.jsonl"};
    for (int i = 0; i < 3; i++) {
        struct svc_bout_agg *a = &o->agg[i];
        a->name = names[i];
        if (o->tar) {
            a->fd = svc_bout_spool(o->spooldir, err);
        } else {
            char *path = NULL;
            svc_xasprintf(&path, "%s/%s", o->tmpdir, names[i]);
            a->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            free(path);
            if (a->fd < 0)
                return svc_err_errno(err, "write bundle file");
            a->md = EVP_MD_CTX_new();
            if (EVP_DigestInit_ex(a->md, EVP_sha256(), NULL) != 1)
                return svc_err_set(err, SVC_E_NOMEM, "sha256 init failed");
        }
        if (a->fd < 0)
            return -1;
    }
    return svc_bout_agg_write(o, SVC_BOUT_SESSIONS, "[", 1, err);
}

int svc_bout_agg_close(struct svc_bout *o, struct svc_err *err)
{
    if (svc_bout_agg_write(o, SVC_BOUT_SESSIONS, o->agg[SVC_BOUT_SESSIONS].n > 1 ? "\n]\n" : "]\n",
                           o->agg[SVC_BOUT_SESSIONS].n > 1 ? 3 : 2, err) != 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        struct svc_bout_agg *a = &o->agg[i];
        if (agg_flush(a, err) != 0)
            return -1;
        unsigned char d[32];
        char sha[65];
        if (!o->tar) {
            EVP_DigestFinal_ex(a->md, d, NULL);
            svc_bout_hex(d, sha);
        }
        if (o->tar ? svc_bout_file_fd(o, a->name, a->fd, err) != 0
                   : record(o, a->name, a->n, sha, err) != 0)
            return -1;
    }
    return 0;
}

void svc_bout_free(struct svc_bout *o)
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
