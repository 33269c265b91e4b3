#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "cache.h"
#include "cmgr.h"
#include "fsio.h"
#include "journal.h"
#include "jsonx.h"
#include "log.h"
#include "msgcache.h"
#include "util.h"
#include "wincache.h"

void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st)
{
    *st = (struct svc_store){.root = cfg->sessions.root, .agent_id = cfg->sessions.agent_id};
    st->durable = cfg->sessions.fsync;
    st->sidecars = cfg->sessions.provider == SVC_PROVIDER_SVC_REPOSITORY;
    st->shared = svc_fs_shared(cfg->sessions.shared, cfg->sessions.root);
    st->index_dir = cfg->sessions.index_db && cfg->sessions.cache != SVC_CACHE_OFF
                        ? cfg->search.index_dir
                        : NULL;
    st->cache = cfg->sessions.cache != SVC_CACHE_OFF && !st->shared;
    st->manager = (int)cfg->agent.conversation_manager;
}

int svc_store_sync(const struct svc_store *st, int sync)
{
    if (sync == SVC_SYNC_STORE_FILE)
        return st->durable ? SVC_SYNC_FILE : SVC_SYNC_NONE;
    return sync == SVC_SYNC_STORE ? svc_sync_full(st->durable) : sync;
}

int svc_store_session_mark(const struct svc_store *st, const char *sid, struct svc_sess_mark *m)
{
    memset(m, 0, sizeof *m);
    if (!svc_layout_id_valid(sid))
        return -1;
    char *dir = svc_layout_path(st->root, st->agent_id, sid, SVC_F_DIR, SVC_FROM_ABS);
    char *side = svc_layout_path(st->root, st->agent_id, sid, SVC_F_SIDECAR, SVC_FROM_ABS);
    struct stat d, f;
    int rc = lstat(dir, &d) == 0 && S_ISDIR(d.st_mode) ? 0 : -1;
    if (rc == 0) {
        *m = (struct svc_sess_mark){.dir_ino = d.st_ino, .dir_m = d.st_mtim, .dir_c = d.st_ctim};
        if (lstat(side, &f) == 0) {
            m->side_ino = f.st_ino;
            m->side_size = f.st_size;
            m->side_m = f.st_mtim;
            m->side_c = f.st_ctim;
        }
    }
    free(dir);
    free(side);
    return rc;
}

bool svc_store_session_exists(const struct svc_store *st, const char *sid)
{
    struct svc_sess_mark m;
    return svc_store_session_mark(st, sid, &m) == 0; /* a symlink is refused */
}

bool svc_store_mark_same(const struct svc_sess_mark *a, const struct svc_sess_mark *b)
{
    return a->dir_ino == b->dir_ino && a->side_ino == b->side_ino && a->side_size == b->side_size &&
           svc_msgcache_ts_eq(a->dir_m, b->dir_m) && svc_msgcache_ts_eq(a->dir_c, b->dir_c) &&
           svc_msgcache_ts_eq(a->side_m, b->side_m) && svc_msgcache_ts_eq(a->side_c, b->side_c);
}

int svc_sess_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                  struct svc_err *err)
{
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    return svc_sess_open_store(&st, sid, s, err);
}

int svc_sess_open_store(const struct svc_store *st, const char *sid, struct svc_sess *s,
                        struct svc_err *err)
{
    *s = (struct svc_sess)SVC_SESS_INIT;
    if (svc_layout_id_check(sid, err) != 0)
        return -1;
    s->st = *st;
    memcpy(s->sid, sid, strlen(sid) + 1); /* checked: at most SVC_ID_MAX */
    s->dir = svc_layout_path(st->root, st->agent_id, sid, SVC_F_DIR, SVC_FROM_ABS);
    s->msg_dir = svc_layout_path(st->root, st->agent_id, sid, SVC_F_MESSAGES, SVC_FROM_ABS);
    return 0;
}

char *svc_sess_path(const struct svc_sess *s, enum svc_file f, enum svc_from from)
{
    return svc_layout_path(s->st.root, s->st.agent_id, s->sid, f, from);
}

char *svc_sess_message_path(const struct svc_sess *s, int64_t id, enum svc_from from)
{
    return svc_layout_message_path(s->st.root, s->st.agent_id, s->sid, id, from);
}

bool svc_sess_exists(const struct svc_sess *s)
{
    struct stat lst;
    return s->dir && lstat(s->dir, &lst) == 0 && S_ISDIR(lst.st_mode); /* a symlink is refused */
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
    svc_sess_forget_sidecar(s); /* read under the lock: stale without it */
    svc_lock_release(&s->lock);
}

void svc_sess_close(struct svc_sess *s)
{
    if (s->msg_fd >= 0)
        close(s->msg_fd);
    s->msg_fd = -1;
    svc_sess_unlock(s);
    free(s->dir);
    free(s->msg_dir);
    s->dir = s->msg_dir = NULL;
}

char *svc_store_stage(const struct svc_store *st, struct svc_store *stg, struct svc_err *err)
{
    char hex[17];
    svc_random_hex(hex, 16);
    char *stage = svc_layout_root_path(st->root, SVC_F_STAGE, hex);
    if (svc_mkdirs(st->root, 0755, err) != 0 ||
        (mkdir(stage, 0755) != 0 && svc_err_errno(err, "staging directory"))) {
        free(stage);
        return NULL;
    }
    *stg = *st;
    stg->root = stage;
    stg->staged = true;
    return stage;
}

int svc_sess_publish(struct svc_sess *s, const struct svc_store *st, json_object *summary,
                     struct svc_err *err)
{
    static const enum svc_file dirs[] = {SVC_F_MESSAGES, SVC_F_AGENT_DIR, SVC_F_AGENTS, SVC_F_DIR};
    int rc = 0;
    for (size_t i = 0; st->durable && rc == 0 && i < sizeof dirs / sizeof dirs[0]; i++) {
        char *d = svc_sess_path(s, dirs[i], SVC_FROM_ABS);
        rc = svc_fsync_dir(d, err);
        free(d);
    }
    char *final = svc_layout_path(st->root, st->agent_id, s->sid, SVC_F_DIR, SVC_FROM_ABS);
    if (rc == 0 && svc_rename_noreplace(s->dir, final) != 0)
        rc = errno == EEXIST ? svc_err_set(err, SVC_E_SESSION_EXISTS, "session %s exists", s->sid)
                             : svc_err_errno(err, "publish session");
    if (rc == 0 && st->durable)
        rc = svc_fsync_dir(st->root, err);
    free(final);
    svc_file_remove_tree(s->st.root);
    if (rc == 0)
        svc_journal_note(st, s->sid, summary);
    return rc;
}

int svc_sess_remove(struct svc_sess *s, struct svc_err *err)
{
    if (!svc_sess_exists(s))
        return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", s->sid);
    char tail[SVC_ID_MAX + 20];
    int n = snprintf(tail, sizeof tail, "%s-", s->sid);
    svc_random_hex(tail + n, 16);
    char *trash = svc_layout_root_path(s->st.root, SVC_F_TRASH, tail);
    if (rename(s->dir, trash) != 0) {
        free(trash);
        return svc_err_errno(err, "delete session");
    }
    /* out of the namespace: the session is gone; what is left of it is nobody's */
    struct svc_err serr;
    if (s->st.durable && svc_fsync_dir(s->st.root, &serr) != 0)
        svc_logf("session %s: %s", s->sid, serr.message);
    if (svc_file_remove_tree(trash) != 0)
        svc_logf("session %s: %s could not be removed: %s", s->sid, trash, strerror(errno));
    free(trash);
    svc_journal_note(&s->st, s->sid, NULL);
    return 0;
}

void svc_sess_forget_sidecar(struct svc_sess *s)
{
    json_object_put(s->sidecar);
    s->sidecar = NULL;
    s->sidecar_read = false;
}

/* Set once openat2 cannot help on this root (a link in the root's own path, no openat2). */
static bool plain_useless;

/* Whether every component of dir is a directory and none a link, in one system call
 * (openat2 RESOLVE_NO_SYMLINKS); false when it cannot tell (*why: its errno). With keep,
 * *keep is the O_PATH descriptor of dir when true (-1 otherwise). */
static bool dirs_plain(const char *dir, int *why, int *keep)
{
    *why = 0;
    if (keep)
        *keep = -1;
#ifdef SYS_openat2
    if (plain_useless || !dir)
        return false;
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS};
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
    if (fd >= 0) {
        if (keep)
            *keep = fd;
        else
            close(fd);
        return true;
    }
    *why = errno;
    if (errno == ENOSYS || errno == EPERM)
        plain_useless = true;
#else
    plain_useless = true;
#endif
    return false;
}

int svc_sess_check_layout(struct svc_sess *s, bool *has_messages, struct svc_err *err)
{
    int kept = -1;
    char *paths[3] = {svc_sess_path(s, SVC_F_AGENTS, SVC_FROM_ABS),
                      svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_ABS),
                      svc_sess_path(s, SVC_F_MESSAGES, SVC_FROM_ABS)};
    int rc = 0, why = 0, dirs = 0;
    /* the common case in one call: all three plain directories; else one lstat each */
    bool plain = dirs_plain(paths[2], &why, s->msg_fd < 0 ? &kept : NULL), msgs = plain;
    for (int i = plain ? 3 : 0; i < 3 && rc == 0; i++) {
        struct stat lst;
        bool there = lstat(paths[i], &lst) == 0;
        if (there && !S_ISDIR(lst.st_mode)) {
            rc = svc_err_set(err, SVC_E_IO,
                             "session %s: %s is a symbolic link or not a directory; refused",
                             s->sid, paths[i] + strlen(s->dir) + 1);
        } else if (there) {
            dirs++;
            msgs = msgs || i == 2;
        }
    }
    if (has_messages)
        *has_messages = msgs;
    if (why == ELOOP && rc == 0 && dirs == 3)
        plain_useless = true; /* the link is above the session: in the root's own path */
    for (int i = 0; i < 3; i++)
        free(paths[i]);
    /* the one file we append to (atomic rewrites replace a link instead of following it) */
    char *turns = rc == 0 ? svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS) : NULL;
    struct stat lst;
    if (turns && lstat(turns, &lst) == 0 && !S_ISREG(lst.st_mode))
        rc = svc_err_set(err, SVC_E_IO, "session %s: %s is a symbolic link or not a file; refused",
                         s->sid, svc_layout_name(SVC_F_TURNS));
    free(turns);
    if (kept >= 0 && rc != 0)
        close(kept);
    else if (kept >= 0)
        s->msg_fd = kept;
    return rc;
}

static int write_session_json(const char *path, const char *sid, int sync, struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *o = json_object_new_object();
    svc_json_set_str(o, "session_id", sid);
    svc_json_set_str(o, "session_type", "AGENT");
    svc_json_set_str(o, "created_at", now);
    svc_json_set_str(o, "updated_at", now);
    int rc = svc_json_write_native_sync(path, o, sync, err);
    json_object_put(o);
    return rc;
}

int svc_sess_ensure(struct svc_sess *s, bool dirs_seen, int sync, bool *made, struct svc_err *err)
{
    struct stat lst;
    if (!dirs_seen && lstat(s->dir, &lst) == 0 && !S_ISDIR(lst.st_mode))
        return svc_err_set(err, SVC_E_IO, "session path is not a directory");
    if (!dirs_seen && lstat(s->msg_dir, &lst) != 0) {
        if (svc_mkdirs(s->msg_dir, 0755, err) != 0)
            return -1;
        if (made)
            *made = true;
    }
    char *sfile = svc_sess_path(s, SVC_F_SESSION, SVC_FROM_ABS);
    /* a new session: also the empty multi_agents/ Strands creates (SPEC 2.1 layout) */
    char *ma = access(sfile, F_OK) != 0 ? svc_sess_path(s, SVC_F_MULTI_AGENTS, SVC_FROM_ABS) : NULL;
    int rc = ma && (svc_mkdirs(ma, 0755, err) != 0 ||
                    write_session_json(sfile, s->sid, svc_store_sync(&s->st, sync), err) != 0)
                 ? -1
                 : 0;
    if (ma && made)
        *made = true;
    free(ma);
    free(sfile);
    return rc;
}

int svc_sess_ensure_natives(struct svc_sess *s, int sync, struct svc_err *err)
{
    if (svc_sess_ensure(s, false, sync, NULL, err) != 0)
        return -1;
    json_object *a = NULL;
    if (svc_sess_read_agent(s, &a, NULL) == 0) {
        json_object_put(a);
        return 0;
    }
    a = svc_store_new_agent(&s->st);
    int rc = svc_sess_write_agent(s, a, sync, err);
    json_object_put(a);
    return rc;
}

json_object *svc_store_new_agent(const struct svc_store *st)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *a = json_tokener_parse(
        "{\"agent_id\": null, \"state\": {}, \"conversation_manager_state\": null, "
        "\"_internal_state\": {\"interrupt_state\": {\"interrupts\": {}, \"context\": {}, "
        "\"activated\": false}, \"model_state\": {}}}");
    svc_json_set_str(a, "agent_id", st->agent_id);
    svc_json_set(a, "conversation_manager_state",
                 svc_cm_new_state((enum svc_conv_manager)st->manager));
    svc_json_set_str(a, "created_at", now);
    svc_json_set_str(a, "updated_at", now);
    return a;
}

int svc_sess_read_object(const struct svc_sess *s, enum svc_file f, json_object **out,
                         struct svc_err *err)
{
    char *path = svc_sess_path(s, f, SVC_FROM_ABS);
    int rc = svc_json_read_object_file(path, out, err);
    if (rc != 0 && svc_file_is_empty(path))
        rc = svc_err_set(err, SVC_E_NOT_FOUND, "%s is empty", svc_layout_name(f));
    free(path);
    return rc;
}

int svc_sess_read_agent(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    return svc_sess_read_object(s, SVC_F_AGENT, out, err);
}

bool svc_store_run_held(const struct svc_store *st, const char *sid)
{
    struct svc_sess h;
    bool held = svc_sess_open_store(st, sid, &h, NULL) == 0 && svc_lock_run_held(h.dir);
    svc_sess_close(&h);
    return held;
}

int svc_sess_write_agent(struct svc_sess *s, json_object *agent, int sync, struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    if (!svc_json_str(agent, "created_at", NULL))
        svc_json_set_str(agent, "created_at", now);
    svc_json_set_str(agent, "updated_at", now);
    char *path = svc_sess_path(s, SVC_F_AGENT, SVC_FROM_ABS);
    int rc = svc_json_write_native_sync(path, agent, svc_store_sync(&s->st, sync), err);
    free(path);
    return rc;
}

int64_t svc_agent_removed_count(json_object *agent)
{
    int64_t n =
        svc_json_int(svc_json_obj(agent, "conversation_manager_state"), "removed_message_count", 0);
    return n < 0 ? 0 : n;
}

int64_t svc_agent_model_calls(json_object *agent)
{
    return svc_json_int(svc_json_obj(agent, "conversation_manager_state"), "model_call_count", 0);
}

void svc_agent_set_counts(json_object *agent, int64_t removed, int64_t model_calls)
{
    json_object *cm = svc_json_obj(agent, "conversation_manager_state");
    if (!cm) {
        cm = json_object_new_object();
        svc_json_set_str(cm, "__name__", "SlidingWindowConversationManager");
        svc_json_set(agent, "conversation_manager_state", cm);
    }
    svc_json_set_int(cm, "removed_message_count", removed);
    if (!svc_cm_summarizing(agent))
        svc_json_set_int(cm, "model_call_count", model_calls);
}

size_t svc_sess_multi_agents(const struct svc_sess *s,
                             void (*each)(void *ctx, const char *id, const char *abs,
                                          const char *rel),
                             void *ctx)
{
    char *dir = svc_sess_path(s, SVC_F_MULTI_AGENTS, SVC_FROM_ABS);
    char *rel = svc_sess_path(s, SVC_F_MULTI_AGENTS, SVC_FROM_ROOT);
    struct stat sb;
    /* a directory's link count is 2 plus its subdirectories where the filesystem keeps it
     * (ext4, xfs, tmpfs; btrfs says 1): an empty multi_agents/ is not listed */
    bool none = stat(dir, &sb) != 0 || (S_ISDIR(sb.st_mode) && sb.st_nlink == 2);
    DIR *d = none ? NULL : opendir(dir);
    struct dirent *de;
    char **ids = NULL;
    size_t n = 0, cap = 0;
    const char *id;
    while (d && (de = readdir(d)))
        if ((id = svc_layout_multi_agent_of(de->d_name))) {
            ids = svc_grow(ids, n, &cap, sizeof *ids);
            ids[n++] = svc_xstrdup(id);
        }
    if (d)
        closedir(d);
    if (n)
        qsort(ids, n, sizeof *ids, svc_cmp_strp);
    for (size_t i = 0; i < n; i++) {
        char *fa = svc_layout_multi_agent_path(dir, ids[i], true);
        char *fr = svc_layout_multi_agent_path(rel, ids[i], true);
        each(ctx, ids[i], fa, fr);
        free(fa);
        free(fr);
        free(ids[i]);
    }
    free(ids);
    free(dir);
    free(rel);
    return n;
}

struct copy_multi {
    const struct svc_sess *dst;
    int sync;
    struct svc_err *err;
    int rc;
};

static void copy_multi_one(void *ctx, const char *id, const char *abs, const char *rel)
{
    struct copy_multi *c = ctx;
    char *buf = NULL, *dir = svc_sess_path(c->dst, SVC_F_MULTI_AGENTS, SVC_FROM_ABS);
    char *sub = svc_layout_multi_agent_path(dir, id, false);
    char *file = svc_layout_multi_agent_path(dir, id, true);
    size_t len = 0;
    if (c->rc == 0 && svc_file_read(abs, &buf, &len, NULL) == 0 &&
        (svc_mkdirs(sub, 0777, c->err) != 0 ||
         svc_file_write_synced(file, buf, len, c->sync, c->err) != 0))
        c->rc = -1;
    free(buf);
    free(file);
    free(sub);
    free(dir);
}

int svc_sess_copy_multi_agents(const struct svc_sess *src, const struct svc_sess *dst, int sync,
                               struct svc_err *err)
{
    struct copy_multi c = {dst, svc_store_sync(&dst->st, sync), err, 0};
    svc_sess_multi_agents(src, copy_multi_one, &c);
    return c.rc;
}

int svc_sess_message_ids(struct svc_sess *s, int64_t **ids, size_t *n, struct svc_err *err)
{
    *ids = NULL;
    *n = 0;
    /* getdents64 into a stack buffer: opendir would fstat and malloc 32 KiB each time */
    int fd = open(s->msg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return svc_err_errno(err, "opendir messages");
    }
    size_t cap = 0, cnt = 0;
    int64_t *arr = NULL;
    char buf[16384] __attribute__((aligned(8)));
    ssize_t got;
    while ((got = getdents64(fd, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(arr);
            close(fd);
            errno = e;
            return svc_err_errno(err, "readdir messages");
        }
        for (ssize_t off = 0; off < got;) {
            const struct dirent64 *de = (const struct dirent64 *)(buf + off);
            off += de->d_reclen;
            int64_t v = svc_layout_message_id_of(de->d_name);
            if (v < 0)
                continue;
            arr = svc_grow(arr, cnt, &cap, sizeof *arr);
            arr[cnt++] = v;
        }
    }
    close(fd);
    if (cnt > 1)
        qsort(arr, cnt, sizeof *arr, svc_cmp_i64);
    *ids = arr;
    *n = cnt;
    return 0;
}

static bool message_exists(const struct svc_sess *s, int64_t id)
{
    char *path = svc_sess_message_path(s, id, SVC_FROM_ABS);
    struct stat sb;
    bool ok = path && lstat(path, &sb) == 0;
    free(path);
    return ok;
}

int svc_sess_message_count(struct svc_sess *s, int64_t trusted, int64_t *count, int64_t *next,
                           int64_t **ids, struct svc_err *err)
{
    *ids = NULL;
    /* ids are contiguous when we wrote them all: two stats confirm the count */
    if (trusted >= 0 && !message_exists(s, trusted) &&
        (trusted == 0 || message_exists(s, trusted - 1))) {
        *count = *next = trusted;
        return 0;
    }
    int64_t *arr = NULL;
    size_t n = 0;
    if (svc_sess_message_ids(s, &arr, &n, err) != 0)
        return -1;
    *count = (int64_t)n;
    *next = n ? arr[n - 1] + 1 : 0;
    if (n > 0 && arr[n - 1] == (int64_t)n - 1) {
        free(arr); /* contiguous after all */
        arr = NULL;
    }
    *ids = arr;
    return 0;
}

static int open_messages_dir(struct svc_sess *s, int64_t id, struct svc_err *err)
{
    if (s->msg_fd >= 0)
        return 0;
    s->msg_fd = open(s->msg_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->msg_fd >= 0)
        return 0;
    if (errno == ENOENT) {
        char name[48];
        svc_layout_message_name(name, id);
        return svc_err_set(err, SVC_E_NOT_FOUND, "no such file: %s", name);
    }
    return svc_err_errno(err, "open messages directory");
}

int svc_sess_read_message(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                          size_t *bytes, struct svc_err *err)
{
    *out = NULL;
    if (open_messages_dir(s, id, err) != 0)
        return -1;
    char name[48];
    svc_layout_message_name(name, id);
    char *buf = NULL;
    size_t len = 0;
    int rc = svc_file_read_at(s->msg_fd, name, &buf, &len, st, err);
    if (bytes)
        *bytes = len;
    struct svc_err perr;
    if (rc == 0 && svc_json_parse(buf, len, out, &perr) != 0)
        rc = svc_err_set(err, SVC_E_IO, "damaged file %s: %s", name, perr.message);
    free(buf);
    if (rc == 0 && !svc_json_obj(*out, "message")) {
        json_object_put(*out);
        *out = NULL;
        return svc_err_set(err, SVC_E_IO, "damaged %s: no message object", name);
    }
    return rc;
}

int svc_sess_write_message(struct svc_sess *s, int64_t id, json_object *message, int sync,
                           size_t *bytes, struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *rec = json_object_new_object();
    svc_json_set(rec, "message", svc_json_copy(message));
    svc_json_set_int(rec, "message_id", id);
    svc_json_set(rec, "redact_message", NULL);
    svc_json_set_str(rec, "created_at", now);
    svc_json_set_str(rec, "updated_at", now);
    char *path = svc_sess_message_path(s, id, SVC_FROM_ABS);
    char *text = svc_json_dump_native(rec);
    size_t len = strlen(text);
    if (bytes)
        *bytes = len;
    int rc = svc_file_write_synced(path, text, len, svc_store_sync(&s->st, sync) | SVC_WRITE_NEW,
                                   err); /* a new id */
    free(text);
    free(path);
    json_object_put(rec);
    /* the next turn takes it from the window cache, unless another program touches it */
    struct stat fst;
    if (rc == 0 && s->win_life > 0 && svc_sess_stat_message(s, id, &fst))
        svc_wincache_put(s->sid, s->win_life, id, message, &fst, true);
    return rc;
}

/* The messages are shared with the window cache: modified by nobody. */
int svc_sess_read_window(struct svc_sess *s, int64_t from, int64_t to, const int64_t *ids,
                         bool slide, json_object *out, struct svc_err *err)
{
    int mfd = svc_sess_messages_fd(s);
    int64_t life = s->st.cache && svc_cache_local(mfd) ? svc_wincache_begin(s->sid, mfd) : 0;
    s->win_life = life;
    if (slide && life > 0 && !ids)
        svc_wincache_trim(s->sid, from); /* what the window slid past */
    for (int64_t pos = from; pos < to; pos++) {
        int64_t id = ids ? ids[pos] : pos;
        /* from the cache while no event named its file */
        json_object *m = svc_wincache_get(s->sid, life, id), *rec = NULL;
        struct stat fst;
        if (!m) {
            if (svc_sess_read_message(s, id, &rec, life > 0 ? &fst : NULL, NULL, err) != 0)
                return -1;
            m = svc_store_effective_message(rec);
            if (life > 0)
                svc_wincache_put(s->sid, life, id, m, &fst, false);
        }
        json_object_array_add(out, json_object_get(m));
        json_object_put(rec);
    }
    return 0;
}

bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st)
{
    char name[48];
    svc_layout_message_name(name, id);
    return open_messages_dir(s, id, NULL) == 0 &&
           fstatat(s->msg_fd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode);
}

int svc_sess_messages_fd(struct svc_sess *s)
{
    return open_messages_dir(s, 0, NULL) == 0 ? s->msg_fd : -1;
}

json_object *svc_store_effective_message(json_object *rec)
{
    json_object *r = svc_json_obj(rec, "redact_message");
    return r ? r : svc_json_obj(rec, "message");
}
