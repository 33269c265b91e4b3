/* snapshot: one session read whole under its shared lock. See snapshot.h. */
#include "snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "lock.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "util.h"

void svc_snap_free(struct svc_snap *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->f[i].rel);
        free(s->f[i].data);
    }
    free(s->f);
    free(s->msgdir);
    free(s->dirname);
    free(s->agent_file);
    json_object_put(s->summary);
}

void svc_snap_warn_native(struct svc_snap *s, const char *rel, const char *msg)
{
    char *file = NULL;
    if (s->dirname)
        svc_xasprintf(&file, "native/%s%s%s", s->dirname, rel ? "/" : "", rel ? rel : "");
    const char *where = file ? file : rel ? rel : s->sid;
    json_object_array_add(
        s->warnings, svc_json_new_obj("session_id", s->sid, "file", where, "message", msg, NULL));
    free(file);
}

static struct svc_snap_file *snap_add(struct svc_snap *s, const char *rel)
{
    s->f = svc_grow(s->f, s->n, &s->cap, sizeof *s->f);
    struct svc_snap_file *f = &s->f[s->n];
    memset(f, 0, sizeof *f);
    f->rel = svc_xstrdup(rel);
    s->n++;
    return f;
}

/* Copy the directory dirfd (relative path rel, "" at the top) into s, recursively. */
static void walk(struct svc_snap *s, int dirfd, const char *rel)
{
    DIR *d = fdopendir(dirfd); /* on a directory fd it fails only as malloc does: never */
    if (!d) {
        close(dirfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || svc_layout_is_internal(name))
            continue;
        char *child = NULL;
        svc_xasprintf(&child, "%s%s%s", rel, *rel ? "/" : "", name);
        struct stat sb;
        if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            free(child);
            continue; /* gone meanwhile */
        }
        if (S_ISDIR(sb.st_mode)) {
            struct svc_snap_file *f = snap_add(s, child);
            f->mtime = sb.st_mtime;
            int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk(s, sub, child);
        } else if (S_ISREG(sb.st_mode)) {
            /* a message after the in-flight boundary is left out */
            if (s->skip_from < 0 || strcmp(rel, s->msgdir) != 0 ||
                svc_layout_message_id_of(name) < s->skip_from) {
                struct svc_snap_file *f = snap_add(s, child);
                if (svc_file_read_at(dirfd, name, &f->data, &f->len, &sb, NULL) == 0) {
                    f->mtime = sb.st_mtime;
                } else {
                    svc_snap_warn_native(s, child, "could not be read; left out");
                    free(f->rel);
                    s->n--;
                }
            }
        } else {
            svc_snap_warn_native(s, child, "is a symbolic link or a special file; left out");
        }
        free(child);
    }
    closedir(d);
}

static int cmp_sfile(const void *a, const void *b)
{
    return strcmp(((const struct svc_snap_file *)a)->rel, ((const struct svc_snap_file *)b)->rel);
}

const struct svc_snap_file *svc_snap_find(const struct svc_snap *s, const char *rel)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].data && strcmp(s->f[i].rel, rel) == 0)
            return &s->f[i];
    return NULL;
}

/* Take the snapshot: shared lock, run-in-flight boundary, summary, every file. */
int svc_snap_take(const struct svc_config *cfg, struct svc_snap *s, struct svc_err *err)
{
    struct svc_sess h;
    if (svc_sess_open(cfg, s->sid, &h, err) != 0)
        return -1;
    s->dirname = svc_sess_path(&h, SVC_F_DIR, SVC_FROM_NAME);
    s->msgdir = svc_sess_path(&h, SVC_F_MESSAGES, SVC_FROM_SESSION);
    s->agent_file = svc_sess_path(&h, SVC_F_AGENT, SVC_FROM_SESSION);
    s->skip_from = -1;
    int64_t *ids = NULL;
    size_t nids = 0;
    int rc = -1;
    /* a `running` left by a dead run is repaired first, as every reader does (SPEC 2.3) */
    svc_run_repair(&h, NULL);
    if (!svc_sess_exists(&h)) {
        svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s no longer exists", s->sid);
        goto out;
    }
    if (svc_sess_lock(&h, false, err) != 0)
        goto out;
    bool in_flight = svc_lock_run_held(h.dir);
    json_object *sc = NULL;
    struct svc_err rerr;
    int src = svc_sidecar_read(&h, &sc, &rerr);
    if (src != 0 && rerr.code != SVC_E_NOT_FOUND)
        svc_snap_warn_native(s, svc_layout_name(SVC_F_SIDECAR), rerr.message);
    if (svc_sess_message_ids(&h, &ids, &nids, NULL) != 0)
        nids = 0;
    if (in_flight && sc) {
        /* messages a run stored after the last turn boundary: the sidecar's count was set
         * when it began (input included while it says running) */
        int64_t limit = svc_json_int(sc, "message_count", (int64_t)nids);
        if (strcmp(svc_json_str(sc, "status", ""), "running") == 0)
            limit--;
        if (limit < 0)
            limit = 0;
        if ((size_t)limit < nids)
            s->skip_from = ids[limit];
    }
    if (!sc && svc_sidecar_derive(&h, &sc, &rerr) != 0) {
        svc_snap_warn_native(s, svc_layout_name(SVC_F_SESSION), rerr.message);
        sc = svc_sidecar_new(s->sid, h.st.agent_id, NULL);
    }
    s->summary = svc_sidecar_summary(sc);
    json_object_put(sc);
    int dfd = open(h.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        svc_err_errno(err, "open session directory");
        goto out;
    }
    walk(s, dfd, "");
    if (s->n > 1) /* bundles list files in one order whatever the directory's */
        qsort(s->f, s->n, sizeof *s->f, cmp_sfile);
    rc = 0;
out:
    svc_sess_close(&h);
    free(ids);
    return rc;
}
