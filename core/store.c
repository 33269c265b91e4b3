#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
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
#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "log.h"
#include "sidecar.h"
#include "util.h"
#include "wincache.h"

/* Every name of the layout (FORMAT.md), and nowhere else in the code. */
#define LOCK_NAME ".svc.lock"
#define RUN_LOCK_NAME ".svc.run.lock"
static const char *const lock_names[] = {LOCK_NAME, RUN_LOCK_NAME, NULL};
static const char *const names[SVC_F__MAX] = {
    [SVC_F_DIR] = "session_",
    [SVC_F_SESSION] = "session.json",
    [SVC_F_SIDECAR] = "svc_session.json",
    [SVC_F_TURNS] = "svc_turns.jsonl",
    [SVC_F_TURNS_CORRUPT] = "svc_turns.jsonl.corrupt",
    [SVC_F_MEMORY] = "svc_memory.json",
    [SVC_F_FEEDBACK] = "svc_feedback.json",
    [SVC_F_AGENTS] = "agents",
    [SVC_F_AGENT_DIR] = "agent_",
    [SVC_F_AGENT] = "agent.json",
    [SVC_F_MESSAGES] = "messages",
    [SVC_F_MULTI_AGENTS] = "multi_agents",
    [SVC_F_LOCK] = LOCK_NAME,
    [SVC_F_RUN_LOCK] = RUN_LOCK_NAME,
    [SVC_F_INDEX] = ".svc_index.jsonl",
    [SVC_F_INDEX_LOCK] = ".svc_index.lock",
    [SVC_F_INDEX_BUILD] = ".svc_index.build",
    [SVC_F_RUNS] = ".svc_runs",
    [SVC_F_RESPONSES] = ".svc_responses",
    [SVC_F_IMPORT_LOCK] = ".svc_import.lock",
    [SVC_F_IMPORT_STAGING] = ".svc_import-",
    [SVC_F_IMPORT_ASIDE] = "old_",
    [SVC_F_TRASH] = ".svc_trash-",
    [SVC_F_STAGE] = ".svc_new-",
    [SVC_F_RETENTION] = ".svc_retention.json",
    [SVC_F_RETENTION_LOCK] = ".svc_retention.lock",
};
static const char *const run_suffix[SVC_RUN__MAX] = {
    [SVC_RUN_RECORD] = ".json",
    [SVC_RUN_EVENTS] = ".events.jsonl",
    [SVC_RUN_CANCEL] = ".cancel",
    [SVC_RUN_LOCK] = ".lock",
};
#define MESSAGE_PRE "message_"
#define MESSAGE_SUF ".json"

bool svc_id_valid(const char *id)
{
    if (!id || !*id || id[0] == '.')
        return false;
    size_t n = 0;
    for (const char *p = id; *p; p++, n++) {
        char c = *p;
        if (n >= SVC_ID_MAX)
            return false;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int svc_id_check(const char *id, struct svc_err *err)
{
    if (!id || !*id)
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id", "session id is empty");
    if (strlen(id) > SVC_ID_MAX)
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id is longer than %d characters", SVC_ID_MAX);
    if (id[0] == '.')
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id must not start with '.'");
    if (!svc_id_valid(id))
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id may contain only A-Z a-z 0-9 . _ -");
    return 0;
}

/* Concatenate up to 16 strings into a new heap string (NULL prints as "(null)", as %s did).
 * Paths are built on every request: plain copies, no printf. */
static char *path_cat(int n, const char *const *parts)
{
    const char *part[16];
    size_t lens[16], total = 1;
    for (int i = 0; i < n && i < 16; i++) {
        part[i] = parts[i] ? parts[i] : "(null)";
        lens[i] = strlen(part[i]);
        total += lens[i];
    }
    char *out = svc_xmalloc(total), *p = out;
    for (int i = 0; i < n && i < 16; i++) {
        memcpy(p, part[i], lens[i]);
        p += lens[i];
    }
    *p = '\0';
    return out;
}

const char *svc_store_name(enum svc_file f)
{
    return f >= 0 && f < SVC_F__MAX ? names[f] : NULL;
}

char *svc_store_root_path(const struct svc_store *st, enum svc_file f)
{
    const char *parts[] = {st->root, "/", names[f]};
    return path_cat(3, parts);
}

char *svc_store_run_path(const char *root, const char *run_id, enum svc_run_file f)
{
    const char *parts[] = {root, "/", names[SVC_F_RUNS], "/", run_id, run_suffix[f]};
    return root ? path_cat(6, parts) : path_cat(2, parts + 4);
}

char *svc_store_run_id_of(const char *name, enum svc_run_file f)
{
    size_t n = strlen(name), m = strlen(run_suffix[f]);
    if (n <= m || strcmp(name + n - m, run_suffix[f]) != 0)
        return NULL;
    return svc_xstrndup(name, n - m);
}

const char *svc_store_session_of(const char *name)
{
    size_t pl = strlen(names[SVC_F_DIR]);
    return strncmp(name, names[SVC_F_DIR], pl) == 0 && svc_id_valid(name + pl) ? name + pl : NULL;
}

int64_t svc_store_message_id_of(const char *name)
{
    static const size_t pl = sizeof MESSAGE_PRE - 1;
    if (strncmp(name, MESSAGE_PRE, pl) != 0)
        return -1;
    const char *p = name + pl, *d = p;
    if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
        return -1; /* padded: not a name Strands writes */
    int64_t id = 0;
    while (*p >= '0' && *p <= '9' && p - d < 18)
        id = id * 10 + (*p++ - '0');
    return p > d && strcmp(p, MESSAGE_SUF) == 0 ? id : -1;
}

const char *const *svc_store_lock_names(void)
{
    return lock_names;
}

bool svc_store_is_lock(const char *name)
{
    for (int i = 0; lock_names[i]; i++)
        if (strcmp(name, lock_names[i]) == 0)
            return true;
    return false;
}

bool svc_store_is_internal(const char *name)
{
    return strstr(name, ".tmp-") != NULL || svc_store_is_lock(name);
}

void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st)
{
    st->root = cfg->sessions.root;
    st->agent_id = cfg->sessions.agent_id;
    st->durable = cfg->sessions.fsync;
    st->sidecars = cfg->sessions.provider == SVC_PROVIDER_SVC_REPOSITORY;
    st->shared = svc_fs_shared(cfg->sessions.shared, cfg->sessions.root);
    st->index_dir = cfg->sessions.index_db && cfg->sessions.cache != SVC_CACHE_OFF
                        ? cfg->search.index_dir
                        : NULL;
    st->cache = cfg->sessions.cache != SVC_CACHE_OFF && !st->shared;
}

int svc_store_sync(const struct svc_store *st, int sync)
{
    return sync == SVC_SYNC_STORE ? svc_sync_full(st->durable) : sync;
}

/* The parts of f's path from the root (session_<sid>[/...]) into p; returns their number. */
static int sess_parts(const struct svc_store *st, const char *sid, enum svc_file f, const char **p)
{
    int n = 0;
    p[n++] = names[SVC_F_DIR];
    p[n++] = sid;
    if (f == SVC_F_DIR)
        return n;
    p[n++] = "/";
    if (f == SVC_F_AGENT_DIR || f == SVC_F_AGENT || f == SVC_F_MESSAGES) {
        p[n++] = names[SVC_F_AGENTS];
        p[n++] = "/";
        p[n++] = names[SVC_F_AGENT_DIR];
        p[n++] = st->agent_id;
        if (f == SVC_F_AGENT_DIR)
            return n;
        p[n++] = "/";
    }
    p[n++] = names[f];
    return n;
}

/* The path of f (a session's file) or, with num, of message num's file. */
static char *store_path(const struct svc_store *st, const char *sid, enum svc_file f,
                        const char *num, enum svc_from from)
{
    const char *p[16];
    int n = 0;
    if (from == SVC_FROM_ABS) {
        p[n++] = st->root;
        p[n++] = "/";
    }
    int top = n, first = 0; /* top: where session_<sid> starts */
    n += sess_parts(st, sid, f, p + n);
    if (num) {
        const char *msg[] = {"/", MESSAGE_PRE, num, MESSAGE_SUF};
        memcpy(p + n, msg, sizeof msg);
        n += 4;
    }
    if (from == SVC_FROM_SESSION)
        first = top + (f == SVC_F_DIR && !num ? 2 : 3);
    else if (from == SVC_FROM_NAME)
        for (int i = first = top; i < n; i++)
            if (strcmp(p[i], "/") == 0)
                first = i + 1;
    return path_cat(n - first, p + first);
}

/* id in decimal into num (at least 24 bytes), NUL-terminated; returns its length. Without
 * printf, which cost more than the stat a listed row or a cached message row makes. */
static size_t id_digits(char *num, int64_t id)
{
    char rev[24];
    size_t n = 0, k = 0;
    uint64_t v = id < 0 ? 0 - (uint64_t)id : (uint64_t)id;
    do
        rev[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    if (id < 0)
        num[k++] = '-';
    while (n > 0)
        num[k++] = rev[--n];
    num[k] = '\0';
    return k;
}

static char *store_message_path(const struct svc_store *st, const char *sid, int64_t id,
                                enum svc_from from)
{
    char num[24];
    id_digits(num, id);
    return store_path(st, sid, SVC_F_MESSAGES, num, from);
}

/* Append n bytes of s at *at in buf (sz bytes); false when they do not fit. */
static bool put(char *buf, size_t sz, size_t *at, const char *s, size_t n)
{
    if (*at + n >= sz)
        return false;
    memcpy(buf + *at, s, n);
    *at += n;
    return true;
}

size_t svc_store_message_path_in(const struct svc_store *st, const char *sid, int64_t id,
                                 enum svc_from from, char *buf, size_t sz)
{
    /* "/agents/agent_<aid>/messages/message_" of the last agent id asked (a pure memo,
     * cache.h): a listed row's path is then four copies, not thirteen parts measured */
    static char aid[SVC_ID_MAX + 1], mid[SVC_ID_MAX + 64];
    static size_t midlen;
    if (midlen == 0 || strcmp(aid, st->agent_id) != 0) {
        const char *p[16];
        int n = sess_parts(st, "", SVC_F_MESSAGES, p) - 2; /* past session_<sid> */
        char *m = path_cat(n, p + 2);
        midlen = (size_t)snprintf(mid, sizeof mid, "%s/%s", m, MESSAGE_PRE);
        free(m);
        snprintf(aid, sizeof aid, "%s", st->agent_id);
        if (midlen >= sizeof mid) {
            aid[0] = '\0';
            midlen = 0;
        }
    }
    char num[24];
    size_t at = 0, nl = id_digits(num, id);
    bool ok = midlen &&
              (from != SVC_FROM_ABS ||
               (put(buf, sz, &at, st->root, strlen(st->root)) && put(buf, sz, &at, "/", 1))) &&
              put(buf, sz, &at, names[SVC_F_DIR], strlen(names[SVC_F_DIR])) &&
              put(buf, sz, &at, sid, strlen(sid)) && put(buf, sz, &at, mid, midlen) &&
              put(buf, sz, &at, num, nl) && put(buf, sz, &at, MESSAGE_SUF, sizeof MESSAGE_SUF);
    return ok ? at - 1 : 0;
}

bool svc_store_session_exists(const struct svc_store *st, const char *sid)
{
    if (!svc_id_valid(sid))
        return false;
    char *dir = store_path(st, sid, SVC_F_DIR, NULL, SVC_FROM_ABS);
    struct stat lst;
    bool ok = lstat(dir, &lst) == 0 && S_ISDIR(lst.st_mode); /* a symlink is refused */
    free(dir);
    return ok;
}

int svc_store_session_mark(const struct svc_store *st, const char *sid, struct svc_sess_mark *m)
{
    memset(m, 0, sizeof *m);
    if (!svc_id_valid(sid))
        return -1;
    char *dir = store_path(st, sid, SVC_F_DIR, NULL, SVC_FROM_ABS);
    char *side = store_path(st, sid, SVC_F_SIDECAR, NULL, SVC_FROM_ABS);
    struct stat d, f;
    int rc = lstat(dir, &d) == 0 && S_ISDIR(d.st_mode) ? 0 : -1;
    if (rc == 0) {
        m->dir_ino = d.st_ino;
        m->dir_m = d.st_mtim;
        m->dir_c = d.st_ctim;
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

static bool ts_same(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool svc_store_mark_same(const struct svc_sess_mark *a, const struct svc_sess_mark *b)
{
    return a->dir_ino == b->dir_ino && a->side_ino == b->side_ino && a->side_size == b->side_size &&
           ts_same(a->dir_m, b->dir_m) && ts_same(a->dir_c, b->dir_c) &&
           ts_same(a->side_m, b->side_m) && ts_same(a->side_c, b->side_c);
}

/* ---- the handle ---- */

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
    if (svc_id_check(sid, err) != 0)
        return -1;
    s->st = *st;
    memcpy(s->sid, sid, strlen(sid) + 1); /* checked: at most SVC_ID_MAX */
    s->dir = store_path(st, sid, SVC_F_DIR, NULL, SVC_FROM_ABS);
    s->msg_dir = store_path(st, sid, SVC_F_MESSAGES, NULL, SVC_FROM_ABS);
    return 0;
}

char *svc_sess_path(const struct svc_sess *s, enum svc_file f, enum svc_from from)
{
    return store_path(&s->st, s->sid, f, NULL, from);
}

char *svc_sess_message_path(const struct svc_sess *s, int64_t id, enum svc_from from)
{
    return store_message_path(&s->st, s->sid, id, from);
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
    svc_sess_forget_sidecar(s);
    free(s->dir);
    free(s->msg_dir);
    s->dir = s->msg_dir = NULL;
}

char *svc_store_stage(const struct svc_store *st, struct svc_err *err)
{
    char hex[17];
    svc_random_hex(hex, 16);
    const char *parts[] = {st->root, "/", names[SVC_F_STAGE], hex};
    char *stage = path_cat(4, parts);
    if (svc_mkdirs(st->root, 0755, err) != 0 ||
        (mkdir(stage, 0755) != 0 && svc_err_errno(err, "staging directory"))) {
        free(stage);
        return NULL;
    }
    return stage;
}

int svc_sess_publish(struct svc_sess *s, const struct svc_store *st, struct svc_err *err)
{
    static const enum svc_file dirs[] = {SVC_F_MESSAGES, SVC_F_AGENT_DIR, SVC_F_AGENTS, SVC_F_DIR};
    int rc = 0;
    for (size_t i = 0; st->durable && rc == 0 && i < sizeof dirs / sizeof dirs[0]; i++) {
        char *d = svc_sess_path(s, dirs[i], SVC_FROM_ABS);
        rc = svc_fsync_dir(d, err);
        free(d);
    }
    char *final = store_path(st, s->sid, SVC_F_DIR, NULL, SVC_FROM_ABS);
    if (rc == 0 && renameat2(AT_FDCWD, s->dir, AT_FDCWD, final, RENAME_NOREPLACE) != 0)
        rc = errno == EEXIST || errno == ENOTEMPTY
                 ? svc_err_set(err, SVC_E_SESSION_EXISTS, "session %s exists", s->sid)
                 : svc_err_errno(err, "publish session");
    if (rc == 0 && st->durable)
        rc = svc_fsync_dir(st->root, err);
    free(final);
    svc_file_remove_tree(s->st.root);
    return rc;
}

int svc_sess_remove(struct svc_sess *s, struct svc_err *err)
{
    if (!svc_sess_exists(s))
        return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", s->sid);
    char hex[17];
    svc_random_hex(hex, 16);
    const char *parts[] = {s->st.root, "/", names[SVC_F_TRASH], s->sid, "-", hex};
    char *trash = path_cat(6, parts);
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
    return 0;
}

int svc_sess_sidecar(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    if (!s->sidecar_read) {
        struct svc_err rerr;
        if (svc_sidecar_read(s, &s->sidecar, &rerr) != 0) {
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

/* ---- the layout check ---- */

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
    (void)dir;
    plain_useless = true;
#endif
    return false;
}

int svc_sess_check_layout(struct svc_sess *s, bool *has_messages, struct svc_err *err)
{
    if (has_messages)
        *has_messages = false;
    int kept = -1;
    char *paths[3] = {svc_sess_path(s, SVC_F_AGENTS, SVC_FROM_ABS),
                      svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_ABS),
                      svc_sess_path(s, SVC_F_MESSAGES, SVC_FROM_ABS)};
    static const char *what[3] = {"agents", "agents/agent_<id>", "messages"};
    int rc = 0, why = 0, dirs = 0;
    /* the common case in one call: all three plain directories; else one lstat each */
    bool plain = dirs_plain(paths[2], &why, s->msg_fd < 0 ? &kept : NULL);
    if (plain && has_messages)
        *has_messages = true; /* all three plain directories, messages among them */
    for (int i = plain ? 3 : 0; i < 3 && rc == 0; i++) {
        struct stat lst;
        bool there = lstat(paths[i], &lst) == 0;
        if (there && !S_ISDIR(lst.st_mode)) {
            rc = svc_err_set(err, SVC_E_IO,
                             "session %s: %s is a symbolic link or not a directory; refused",
                             s->sid, what[i]);
        } else if (there) {
            dirs++;
            if (i == 2 && has_messages)
                *has_messages = true;
        }
    }
    if (why == ELOOP && rc == 0 && dirs == 3)
        plain_useless = true; /* the link is above the session: in the root's own path */
    for (int i = 0; i < 3; i++)
        free(paths[i]);
    /* the one file we append to (atomic rewrites replace a link instead of following it) */
    char *turns = rc == 0 ? svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS) : NULL;
    struct stat lst;
    if (turns && lstat(turns, &lst) == 0 && !S_ISREG(lst.st_mode))
        rc = svc_err_set(err, SVC_E_IO, "session %s: %s is a symbolic link or not a file; refused",
                         s->sid, names[SVC_F_TURNS]);
    free(turns);
    if (rc != 0 && kept >= 0) {
        close(kept);
        kept = -1;
    }
    if (kept >= 0)
        s->msg_fd = kept;
    return rc;
}

/* ---- session.json, agent.json ---- */

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
    int rc = -1;
    char *sfile = svc_sess_path(s, SVC_F_SESSION, SVC_FROM_ABS);
    struct stat lst;
    if (!dirs_seen && lstat(s->dir, &lst) == 0 && !S_ISDIR(lst.st_mode)) {
        svc_err_set(err, SVC_E_IO, "session path is not a directory");
        goto out;
    }
    if (!dirs_seen && lstat(s->msg_dir, &lst) != 0) {
        if (svc_mkdirs(s->msg_dir, 0755, err) != 0)
            goto out;
        if (made)
            *made = true;
    }
    if (access(sfile, F_OK) != 0) {
        /* a new session: also the empty multi_agents/ Strands creates (SPEC 2.1 layout) */
        char *ma = svc_sess_path(s, SVC_F_MULTI_AGENTS, SVC_FROM_ABS);
        int mrc = svc_mkdirs(ma, 0755, err);
        free(ma);
        if (made)
            *made = true;
        if (mrc != 0 || write_session_json(sfile, s->sid, svc_store_sync(&s->st, sync), err) != 0)
            goto out;
    }
    rc = 0;
out:
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
    a = svc_store_new_agent(s->st.agent_id);
    int rc = svc_sess_write_agent(s, a, sync, err);
    json_object_put(a);
    return rc;
}

json_object *svc_store_new_agent(const char *agent_id)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *a = json_object_new_object();
    svc_json_set_str(a, "agent_id", agent_id);
    svc_json_set(a, "state", json_object_new_object());
    json_object *cm = json_object_new_object();
    svc_json_set_str(cm, "__name__", "SlidingWindowConversationManager");
    svc_json_set_int(cm, "removed_message_count", 0);
    svc_json_set_int(cm, "model_call_count", 0);
    svc_json_set(a, "conversation_manager_state", cm);
    json_object *is = json_object_new_object();
    json_object *intr = json_object_new_object();
    svc_json_set(intr, "interrupts", json_object_new_object());
    svc_json_set(intr, "context", json_object_new_object());
    svc_json_set_bool(intr, "activated", false);
    svc_json_set(is, "interrupt_state", intr);
    svc_json_set(is, "model_state", json_object_new_object());
    svc_json_set(a, "_internal_state", is);
    svc_json_set_str(a, "created_at", now);
    svc_json_set_str(a, "updated_at", now);
    return a;
}

int svc_sess_read_agent(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    char *path = svc_sess_path(s, SVC_F_AGENT, SVC_FROM_ABS);
    int rc = svc_json_read_object_file(path, out, err);
    if (rc != 0 && svc_file_is_empty(path))
        rc = svc_err_set(err, SVC_E_NOT_FOUND, "%s is empty", names[SVC_F_AGENT]);
    free(path);
    return rc;
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
    svc_json_set_int(cm, "model_call_count", model_calls);
}

/* ---- message files ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
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
    for (;;) {
        ssize_t got = getdents64(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(arr);
            close(fd);
            errno = e;
            return svc_err_errno(err, "readdir messages");
        }
        if (got == 0)
            break;
        for (ssize_t off = 0; off < got;) {
            const struct dirent64 *de = (const struct dirent64 *)(buf + off);
            off += de->d_reclen;
            const char *name = de->d_name;
            if (strncmp(name, MESSAGE_PRE, sizeof MESSAGE_PRE - 1) != 0)
                continue;
            const char *num = name + sizeof MESSAGE_PRE - 1;
            char *end;
            if (*num < '0' || *num > '9')
                continue;
            errno = 0;
            long long v = strtoll(num, &end, 10);
            if (errno || strcmp(end, MESSAGE_SUF) != 0)
                continue;
            if (cnt == cap) {
                cap = cap ? cap * 2 : 64;
                arr = svc_xrealloc(arr, cap * sizeof *arr);
            }
            arr[cnt++] = v;
        }
    }
    close(fd);
    if (cnt > 1)
        qsort(arr, cnt, sizeof *arr, cmp_i64);
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

/* message_<id>.json into name (at least 48 bytes). */
static void message_name(char *name, int64_t id)
{
    memcpy(name, MESSAGE_PRE, sizeof MESSAGE_PRE - 1);
    char *p = name + sizeof MESSAGE_PRE - 1;
    p += id_digits(p, id);
    memcpy(p, MESSAGE_SUF, sizeof MESSAGE_SUF); /* with its NUL */
}

static int open_messages_dir(struct svc_sess *s, int64_t id, struct svc_err *err)
{
    if (s->msg_fd >= 0)
        return 0;
    s->msg_fd = open(s->msg_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->msg_fd >= 0)
        return 0;
    if (errno == ENOENT)
        return svc_err_set(err, SVC_E_NOT_FOUND, "no such file: " MESSAGE_PRE "%lld" MESSAGE_SUF,
                           (long long)id);
    return svc_err_errno(err, "open messages directory");
}

int svc_sess_read_message(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                          size_t *bytes, struct svc_err *err)
{
    *out = NULL;
    if (open_messages_dir(s, id, err) != 0)
        return -1;
    char name[48];
    message_name(name, id);
    char *buf = NULL;
    size_t len = 0;
    int rc = svc_file_read_at(s->msg_fd, name, &buf, &len, st, err);
    if (bytes)
        *bytes = len;
    if (rc == 0) {
        struct svc_err perr;
        rc = svc_json_parse(buf, len, out, &perr);
        if (rc != 0)
            svc_err_set(err, SVC_E_IO, "damaged file %s: %s", name, perr.message);
    }
    free(buf);
    /* a record without a message object is damaged */
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
        svc_wincache_claim(s->sid, s->win_life, id, message, &fst);
    return rc;
}

/* Message id of the window (new reference), from the cache while no event named its file. */
static int window_message(struct svc_sess *s, int64_t id, json_object **out, struct svc_err *err)
{
    int64_t life = s->win_life;
    struct stat fst;
    json_object *m = svc_wincache_get(s->sid, life, id);
    json_object *rec = NULL;
    if (m) {
        *out = json_object_get(m);
        return 0;
    }
    if (svc_sess_read_message(s, id, &rec, life > 0 ? &fst : NULL, NULL, err) != 0)
        return -1;
    m = svc_store_effective_message(rec);
    if (life > 0)
        svc_wincache_put(s->sid, life, id, m, &fst);
    *out = json_object_get(m);
    json_object_put(rec);
    return 0;
}

/* The effective messages (svc_store_effective_message) at positions from..to-1 appended to
 * out, shared with this process's window cache (wincache.h) and so modified by nobody: a
 * file unchanged since this process read or wrote it is not parsed again. ids NULL:
 * position is id. slide: from is where the window starts, the cache forgets ids below it.
 * From then on svc_sess_write_message keeps what it writes in the cache too. */
static int read_window(struct svc_sess *s, int64_t from, int64_t to, const int64_t *ids, bool slide,
                       json_object *out, struct svc_err *err)
{
    int mfd = open_messages_dir(s, 0, NULL) == 0 ? s->msg_fd : -1;
    s->win_life = s->st.cache && svc_cache_local(mfd) ? svc_wincache_begin(s->sid, mfd) : 0;
    if (slide && s->win_life > 0 && !ids)
        svc_wincache_trim(s->sid, from); /* what the window slid past */
    for (int64_t pos = from; pos < to; pos++) {
        json_object *m = NULL;
        if (window_message(s, ids ? ids[pos] : pos, &m, err) != 0)
            return -1;
        json_object_array_add(out, m);
    }
    return 0;
}

bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st)
{
    char name[48];
    message_name(name, id);
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

static void run_event_add(void *ctx, const char *line, size_t n, size_t off)
{
    (void)off;
    json_object *ev = svc_jsonl_object(line, n);
    if (ev)
        json_object_array_add(ctx, ev);
}

json_object *svc_store_run_events(const char *root, const char *run_id)
{
    json_object *arr = json_object_new_array();
    char *buf = NULL;
    size_t len = 0;
    if (!run_id || strlen(run_id) > 64 || !svc_id_valid(run_id))
        return arr;
    char *path = svc_store_run_path(root, run_id, SVC_RUN_EVENTS);
    if (svc_file_read(path, &buf, &len, NULL) == 0)
        svc_jsonl_lines(buf, len, run_event_add, arr); /* a torn tail is not an event */
    free(buf);
    free(path);
    return arr;
}

/* ---- a turn: the sequence of a run's writes (core/run.c gives what they say) ---- */

static int turn_sync(const struct svc_turn *t)
{
    return t->s->st.durable ? SVC_SYNC_FILE : SVC_SYNC_NONE;
}

static void turn_index(const struct svc_sess *s, json_object *sc)
{
    json_object *sum = svc_sidecar_summary(sc);
    if (sum)
        svc_index_update(&s->st, s->sid, sum);
    json_object_put(sum);
}

/* The session directory before any lock: refused when it is not a plain directory, 1 when
 * missing and not create, made when create (synced at the run's end, turn_sync_dirs), its
 * layout checked when present. */
static int turn_dirs(struct svc_turn *t, bool create, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    struct stat lst;
    t->dirs_seen = false;
    if (create)
        return svc_mkdirs_durable(s->st.root, 0755, s->st.durable, err) != 0 ||
                       svc_mkdirs(s->dir, 0755, err) != 0
                   ? -1
                   : 0;
    if (lstat(s->dir, &lst) != 0)
        return 1;
    if (!S_ISDIR(lst.st_mode)) /* a symlink or a file: never follow it */
        return svc_err_set(err, SVC_E_IO, "session path of %s is not a plain directory", s->sid);
    return svc_sess_check_layout(s, &t->dirs_seen, err);
}

int svc_turn_count(struct svc_turn *t, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    free(t->ids);
    t->ids = NULL;
    json_object_put(t->last);
    t->last = NULL;
    t->counted = svc_sess_message_count(s, t->sc ? svc_json_int(t->sc, "message_count", -1) : -1,
                                        &t->stored, &t->next_id, &t->ids, err) == 0;
    if (!t->counted)
        return -1;
    /* through the window cache, where the restore finds it again */
    json_object *one = json_object_new_array();
    if (t->stored > 0 && read_window(s, t->stored - 1, t->stored, t->ids, false, one, NULL) == 0)
        t->last = json_object_get(json_object_array_get_idx(one, 0));
    json_object_put(one);
    return 0;
}

int svc_turn_lock(struct svc_turn *t, bool create, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    int rc = turn_dirs(t, create, err);
    if (rc != 0)
        return rc;
    if (svc_lock_run_try(s->dir, &t->run_lock, err) != 0)
        return -1;
    if (svc_sess_lock(s, true, err) != 0 || svc_sess_sidecar(s, &t->sc, err) != 0) {
        svc_turn_release(t);
        return -1;
    }
    svc_turn_count(t, NULL); /* a failure is reported by the caller's svc_turn_count */
    return 0;
}

void svc_turn_release(struct svc_turn *t)
{
    svc_sess_unlock(t->s);
    t->sc = NULL;
    svc_lock_release(&t->run_lock);
}

/* session.json and agent.json where missing (written synced, SVC_SYNC_FILE; the directories
 * naming them are synced once, at the run's end), and the agent record. */
static int turn_agent(struct svc_turn *t, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    bool made = false;
    if (svc_sess_ensure(s, t->dirs_seen, turn_sync(t), &made, err) != 0)
        return -1;
    struct svc_err rerr;
    if (svc_sess_read_agent(s, &t->agent, &rerr) != 0) {
        if (rerr.code != SVC_E_NOT_FOUND) {
            *err = rerr;
            return -1;
        }
        t->agent = svc_store_new_agent(s->st.agent_id);
        made = true;
        if (svc_sess_write_agent(s, t->agent, turn_sync(t), err) != 0)
            return -1;
    }
    /* and again by every run until one of the session's runs completes (a new session has
     * none): the run that made them may have died before its end synced them */
    bool completed = s->st.sidecars ? t->sc && svc_json_int(t->sc, "turn_count", 0) > 0
                                    : svc_agent_model_calls(t->agent) > 0;
    t->dirs_unsynced = s->st.durable && (made || !completed);
    t->removed = svc_agent_removed_count(t->agent);
    return 0;
}

/* The window (messages from removed_message_count on) into win; when a file of the trusted
 * range is missing (removed by another program), count by scanning and restore again. */
static int turn_window(struct svc_turn *t, json_object *win, struct svc_err *err)
{
    for (int pass = 0; pass < 2; pass++) {
        int64_t from = t->removed < t->stored ? t->removed : t->stored;
        if (read_window(t->s, from, t->stored, t->ids, true, win, err) == 0)
            return 0;
        if (pass || t->ids)
            return -1;
        json_object_array_del_idx(win, 0, json_object_array_length(win));
        if (svc_sess_message_count(t->s, -1, &t->stored, &t->next_id, &t->ids, err) != 0)
            return -1;
    }
    return -1;
}

/* Caller holds the exclusive session lock: msg as the next id, its file synced now, its
 * directory once at the end of the run. */
static int turn_write(struct svc_turn *t, json_object *msg, bool is_output, struct svc_err *err)
{
    if (svc_sess_write_message(t->s, t->next_id, msg, turn_sync(t), NULL, err) != 0)
        return -1;
    t->msgs_unsynced = t->s->st.durable;
    if (is_output)
        json_object_array_add(t->output_ids, json_object_new_int64(t->next_id));
    t->next_id++;
    t->stored++;
    return 0;
}

/* The imported history, then the opening messages; the first of those is the input. */
static int turn_inputs(struct svc_turn *t, json_object *import, json_object *opening,
                       json_object *win, struct svc_err *err)
{
    for (int pass = 0; pass < 2; pass++) {
        json_object *list = pass ? opening : import;
        if (pass)
            t->input_id = t->next_id;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *m = json_object_array_get_idx(list, i);
            if (turn_write(t, m, false, err) != 0)
                return -1;
            json_object_array_add(win, json_object_get(m));
        }
    }
    return 0;
}

/* Begin failed (a disk error) after the sidecar said `running`: the session goes back to
 * what it was (t->sc, or no sidecar); if that cannot be written either, the `running` left
 * is repaired as interrupted. Through the spare, which holds that very file: on a full
 * disk, bytes rewritten over their own blocks need no new space. */
static void turn_undo(struct svc_turn *t)
{
    const struct svc_store *st = &t->s->st;
    char *path = svc_sess_path(t->s, SVC_F_SIDECAR, SVC_FROM_ABS);
    if (t->sc &&
        svc_sidecar_write(t->s, t->sc, svc_sync_spare(svc_sync_full(st->durable), st->durable),
                          NULL) == 0)
        turn_index(t->s, t->sc);
    else if (!t->sc && path)
        unlink(path);
    free(path);
}

int svc_turn_start(struct svc_turn *t, json_object *running, json_object *import,
                   json_object *opening, json_object *win, struct svc_err *err)
{
    const struct svc_store *st = &t->s->st;
    /* SPEC 3: the sidecar says `running` before any native file is written; the session
     * lock is held, so the sidecar's spare may be used (core/fsio.h) */
    if (running &&
        svc_sidecar_write(t->s, running, svc_sync_spare(svc_sync_full(st->durable), st->durable),
                          err) != 0) {
        svc_turn_release(t);
        return -1;
    }
    if (running)
        turn_index(t->s, running);
    int rc = turn_agent(t, err) == 0 && turn_window(t, win, err) == 0 &&
                     turn_inputs(t, import, opening, win, err) == 0
                 ? 0
                 : -1;
    if (rc != 0 && running)
        turn_undo(t);
    svc_sess_unlock(t->s); /* never held across a model call */
    t->sc = NULL;
    if (rc != 0)
        svc_lock_release(&t->run_lock);
    return rc;
}

int svc_turn_store_output(void *turn, json_object *msg, struct svc_err *err)
{
    struct svc_turn *t = turn;
    int rc = svc_sess_lock(t->s, true, err);
    if (rc == 0)
        rc = turn_write(t, msg, true, err);
    svc_sess_unlock(t->s);
    return rc;
}

/* The directories above the messages directory, each synced once: a new session's
 * agent_<id>/ (messages/, agent.json), agents/, the session directory (agents/,
 * multi_agents/, session.json) and the root (the session directory). Before the commit
 * record, so a completed run's session cannot vanish in a power cut. */
static int turn_sync_dirs(const struct svc_sess *s, struct svc_err *err)
{
    char *agent = svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_ABS);
    char *agents = svc_sess_path(s, SVC_F_AGENTS, SVC_FROM_ABS);
    int rc = 0;
    if (svc_fsync_dir(agent, err) != 0 || svc_fsync_dir(agents, err) != 0 ||
        svc_fsync_dir(s->dir, err) != 0 || svc_fsync_dir(s->st.root, err) != 0)
        rc = -1;
    free(agent);
    free(agents);
    return rc;
}

/* Under the session lock, what the commit record depends on: the message names synced, the
 * directories a new session made synced, agent.json's counts written. */
static int turn_flush(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    const struct svc_store *st = &s->st;
    if (svc_sess_lock(s, true, err) != 0)
        return -1;
    if (t->msgs_unsynced && svc_fsync_dir(s->msg_dir, err) != 0)
        return -1;
    t->msgs_unsynced = false;
    if (t->dirs_unsynced &&
        ((st->sidecars && svc_turns_create(s, err) != 0) || turn_sync_dirs(s, err) != 0))
        return -1;
    t->dirs_unsynced = false;
    if (!t->agent)
        return 0;
    svc_agent_set_counts(t->agent, e->removed, svc_agent_model_calls(t->agent) + e->model_calls);
    /* with sidecars the turn line is the commit record and agent.json's name is not synced
     * (see core/run.c's budget); native_file has no other record */
    int sync = st->sidecars ? SVC_SYNC_NONE : svc_sync_full(st->durable);
    return svc_sess_write_agent(s, t->agent, svc_sync_spare(sync, st->durable), err);
}

/* The sidecar read under the lock, or a new one (new reference); the handle forgets it. */
static json_object *turn_sidecar(struct svc_turn *t, const char *model)
{
    struct svc_sess *s = t->s;
    json_object *cur = NULL, *sc;
    if (svc_sess_sidecar(s, &cur, NULL) == 0 && cur)
        sc = json_object_get(cur);
    else
        sc = svc_sidecar_new(s->sid, s->st.agent_id, model);
    svc_sess_forget_sidecar(s);
    return sc;
}

/* native_file writes no sidecar; the listing index still learns of the turn. */
static int turn_commit(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    struct svc_sess *s = t->s;
    if (!s->st.sidecars) {
        json_object *derived = NULL;
        if (svc_sidecar_derive(s, &derived, NULL) == 0)
            turn_index(s, derived);
        json_object_put(derived);
        return 0;
    }
    json_object *sc = turn_sidecar(t, e->model);
    /* the commit record, synced (fdatasync); then the sidecar, its name not synced */
    int rc = svc_turns_append(s, e->line, err);
    if (rc == 0) {
        e->leave(e->ctx, sc);
        rc = svc_sidecar_write(s, sc, svc_sync_spare(SVC_SYNC_NONE, s->st.durable), err);
    }
    if (rc == 0)
        turn_index(s, sc);
    json_object_put(sc);
    return rc;
}

int svc_turn_end(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err)
{
    int rc = turn_flush(t, e, err) == 0 && turn_commit(t, e, err) == 0 ? 0 : -1;
    svc_sess_unlock(t->s);
    svc_lock_release(&t->run_lock);
    return rc;
}
