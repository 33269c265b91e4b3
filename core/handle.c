#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "sidecar.h"

void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st)
{
    st->root = cfg->sessions.root;
    st->agent_id = cfg->sessions.agent_id;
    st->durable = cfg->sessions.fsync;
    st->shared = svc_fs_shared(cfg->sessions.shared, cfg->sessions.root);
}

int svc_sess_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                  struct svc_err *err)
{
    *s = (struct svc_sess)SVC_SESS_INIT;
    if (svc_id_check(sid, err) != 0)
        return -1;
    svc_store_from_config(cfg, &s->st);
    snprintf(s->sid, sizeof s->sid, "%s", sid);
    s->dir = svc_store_session_dir(&s->st, sid);
    s->msg_dir = svc_store_messages_dir(&s->st, sid);
    return 0;
}

int svc_sess_lock(struct svc_sess *s, bool exclusive, struct svc_err *err)
{
    if (s->lock.fd >= 0) {
        if (s->exclusive == exclusive)
            return 0;
        svc_sess_unlock(s);
    }
    if (svc_lock_session(s->dir, exclusive, &s->lock, err) != 0)
        return -1;
    s->exclusive = exclusive;
    return 0;
}

void svc_sess_unlock(struct svc_sess *s)
{
    svc_lock_release(&s->lock);
}

int svc_sess_sidecar(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    if (!s->sidecar_read) {
        struct svc_err rerr;
        if (svc_sidecar_read(&s->st, s->sid, &s->sidecar, &rerr) != 0) {
            s->sidecar = NULL;
            if (rerr.code != SVC_E_NOT_FOUND) {
                if (err)
                    *err = rerr;
                return -1;
            }
        }
        s->sidecar_read = true;
    }
    *out = s->sidecar;
    return 0;
}

void svc_sess_forget_sidecar(struct svc_sess *s)
{
    json_object_put(s->sidecar);
    s->sidecar = NULL;
    s->sidecar_read = false;
}

int svc_sess_message_count(struct svc_sess *s, int64_t trusted, int64_t *count, int64_t *next,
                           int64_t **ids, struct svc_err *err)
{
    return svc_store_message_count(&s->st, s->sid, trusted, count, next, ids, err);
}

static int open_messages_dir(struct svc_sess *s, int64_t id, struct svc_err *err)
{
    if (s->msg_fd >= 0)
        return 0;
    s->msg_fd = open(s->msg_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->msg_fd >= 0)
        return 0;
    if (errno == ENOENT)
        return svc_err_set(err, SVC_E_NOT_FOUND, "no such file: message_%lld.json", (long long)id);
    return svc_err_errno(err, "open messages directory");
}

int svc_sess_read_message_stat(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                               struct svc_err *err)
{
    *out = NULL;
    if (open_messages_dir(s, id, err) != 0)
        return -1;
    return svc_store_read_message_at(s->msg_fd, id, out, st, NULL, err);
}

int svc_sess_read_message_len(struct svc_sess *s, int64_t id, json_object **out, size_t *bytes,
                              struct svc_err *err)
{
    *out = NULL;
    if (open_messages_dir(s, id, err) != 0)
        return -1;
    return svc_store_read_message_at(s->msg_fd, id, out, NULL, bytes, err);
}

int svc_sess_messages_fd(struct svc_sess *s)
{
    return open_messages_dir(s, 0, NULL) == 0 ? s->msg_fd : -1;
}

bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st)
{
    char name[48];
    snprintf(name, sizeof name, "message_%lld.json", (long long)id);
    return open_messages_dir(s, id, NULL) == 0 &&
           fstatat(s->msg_fd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode);
}

void svc_sess_close(struct svc_sess *s)
{
    if (s->msg_fd >= 0)
        close(s->msg_fd);
    s->msg_fd = -1;
    svc_sess_unlock(s);
    json_object_put(s->sidecar);
    s->sidecar = NULL;
    s->sidecar_read = false;
    free(s->dir);
    free(s->msg_dir);
    s->dir = s->msg_dir = NULL;
}
