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

#include "fsio.h"
#include "jsonx.h"
#include "util.h"

bool svc_id_valid(const char *id)
{
    if (!id || !*id || id[0] == '.')
        return false;
    size_t n = 0;
    for (const char *p = id; *p; p++, n++) {
        char c = *p;
        if (n >= 128)
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
    if (strlen(id) > 128)
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id is longer than 128 characters");
    if (id[0] == '.')
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id must not start with '.'");
    if (!svc_id_valid(id))
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id may contain only A-Z a-z 0-9 . _ -");
    return 0;
}

/* Concatenate up to 8 strings into a new heap string (NULL prints as "(null)", as %s did).
 * Paths are built on every request: plain copies, no printf. */
static char *path_cat(int n, const char *const *parts)
{
    const char *part[8];
    size_t lens[8], total = 1;
    for (int i = 0; i < n && i < 8; i++) {
        part[i] = parts[i] ? parts[i] : "(null)";
        lens[i] = strlen(part[i]);
        total += lens[i];
    }
    char *out = svc_xmalloc(total), *p = out;
    for (int i = 0; i < n && i < 8; i++) {
        memcpy(p, part[i], lens[i]);
        p += lens[i];
    }
    *p = '\0';
    return out;
}

#define PATH_CAT(...)                                                                              \
    path_cat((int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),                  \
             (const char *const[]){__VA_ARGS__})

char *svc_store_session_dir(const struct svc_store *st, const char *sid)
{
    return PATH_CAT(st->root, "/session_", sid);
}

char *svc_store_session_file(const struct svc_store *st, const char *sid, const char *name)
{
    return PATH_CAT(st->root, "/session_", sid, "/", name);
}

char *svc_store_agent_dir(const struct svc_store *st, const char *sid)
{
    return PATH_CAT(st->root, "/session_", sid, "/agents/agent_", st->agent_id);
}

char *svc_store_messages_dir(const struct svc_store *st, const char *sid)
{
    return PATH_CAT(st->root, "/session_", sid, "/agents/agent_", st->agent_id, "/messages");
}

char *svc_store_message_path(const struct svc_store *st, const char *sid, int64_t id)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)id);
    return PATH_CAT(st->root, "/session_", sid, "/agents/agent_", st->agent_id,
                    "/messages/message_", num, ".json");
}

bool svc_store_session_exists(const struct svc_store *st, const char *sid)
{
    if (!svc_id_valid(sid))
        return false;
    char *dir = svc_store_session_dir(st, sid);
    struct stat lst;
    bool ok = lstat(dir, &lst) == 0 && S_ISDIR(lst.st_mode); /* a symlink is refused */
    free(dir);
    return ok;
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
    (void)dir;
    plain_useless = true;
#endif
    return false;
}

int svc_store_check_layout(const struct svc_store *st, const char *sid, struct svc_err *err)
{
    return svc_store_check_layout_seen(st, sid, NULL, NULL, err);
}

int svc_store_check_layout_seen(const struct svc_store *st, const char *sid, bool *has_messages,
                                int *msg_fd, struct svc_err *err)
{
    if (has_messages)
        *has_messages = false;
    int kept = -1;
    char *paths[3] = {svc_store_session_file(st, sid, "agents"), svc_store_agent_dir(st, sid),
                      svc_store_messages_dir(st, sid)};
    static const char *names[3] = {"agents", "agents/agent_<id>", "messages"};
    int rc = 0, why = 0, dirs = 0;
    /* the common case in one call: all three plain directories; else one lstat each */
    bool plain = dirs_plain(paths[2], &why, msg_fd ? &kept : NULL);
    if (plain && has_messages)
        *has_messages = true; /* all three plain directories, messages among them */
    for (int i = plain ? 3 : 0; i < 3 && rc == 0; i++) {
        struct stat lst;
        bool there = lstat(paths[i], &lst) == 0;
        if (there && !S_ISDIR(lst.st_mode)) {
            rc = svc_err_set(err, SVC_E_IO,
                             "session %s: %s is a symbolic link or not a directory; refused", sid,
                             names[i]);
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
    char *turns = rc == 0 ? svc_store_session_file(st, sid, "svc_turns.jsonl") : NULL;
    struct stat lst;
    if (turns && lstat(turns, &lst) == 0 && !S_ISREG(lst.st_mode))
        rc = svc_err_set(err, SVC_E_IO,
                         "session %s: svc_turns.jsonl is a symbolic link or not a file; refused",
                         sid);
    free(turns);
    if (rc != 0 && kept >= 0) {
        close(kept);
        kept = -1;
    }
    if (msg_fd)
        *msg_fd = kept;
    return rc;
}

static int write_session_json(const char *path, const char *sid, int sync, json_object *existing,
                              struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *o = existing ? json_object_get(existing) : json_object_new_object();
    if (!existing) {
        svc_json_set_str(o, "session_id", sid);
        svc_json_set_str(o, "session_type", "AGENT");
        svc_json_set_str(o, "created_at", now);
    }
    svc_json_set_str(o, "updated_at", now);
    int rc = svc_json_write_native_sync(path, o, sync, err);
    json_object_put(o);
    return rc;
}

int svc_store_ensure_session(const struct svc_store *st, const char *sid, struct svc_err *err)
{
    return svc_store_ensure_session_seen(st, sid, false, svc_sync_full(st->durable), NULL, err);
}

int svc_store_ensure_session_seen(const struct svc_store *st, const char *sid, bool dirs_seen,
                                  int sync, bool *made, struct svc_err *err)
{
    if (svc_id_check(sid, err) != 0)
        return -1;
    int rc = -1;
    char *mdir = svc_store_messages_dir(st, sid);
    char *sdir = svc_store_session_dir(st, sid);
    char *sfile = svc_store_session_file(st, sid, "session.json");
    struct stat lst;
    if (!dirs_seen && lstat(sdir, &lst) == 0 && !S_ISDIR(lst.st_mode)) {
        svc_err_set(err, SVC_E_IO, "session path is not a directory");
        goto out;
    }
    if (!dirs_seen && lstat(mdir, &lst) != 0) {
        if (svc_mkdirs(mdir, 0755, err) != 0)
            goto out;
        if (made)
            *made = true;
    }
    if (access(sfile, F_OK) != 0) {
        /* a new session: also the empty multi_agents/ Strands creates (SPEC 2.1 layout) */
        char *ma = svc_path_join(sdir, "multi_agents");
        int mrc = svc_mkdirs(ma, 0755, err);
        free(ma);
        if (made)
            *made = true;
        if (mrc != 0 || write_session_json(sfile, sid, sync, NULL, err) != 0)
            goto out;
    }
    rc = 0;
out:
    free(mdir);
    free(sdir);
    free(sfile);
    return rc;
}

int svc_store_touch_session(const struct svc_store *st, const char *sid, struct svc_err *err)
{
    char *sfile = svc_store_session_file(st, sid, "session.json");
    json_object *o = NULL;
    struct svc_err rerr;
    int rc;
    if (svc_json_read_file(sfile, &o, &rerr) != 0 || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL; /* missing or damaged: write it anew */
    }
    rc = write_session_json(sfile, sid, svc_sync_full(st->durable), o, err);
    json_object_put(o);
    free(sfile);
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

int svc_store_read_agent(const struct svc_store *st, const char *sid, json_object **out,
                         struct svc_err *err)
{
    char *dir = svc_store_agent_dir(st, sid);
    char *path = svc_path_join(dir, "agent.json");
    free(dir);
    int rc = svc_json_read_object_file(path, out, err);
    if (rc != 0 && svc_file_is_empty(path))
        rc = svc_err_set(err, SVC_E_NOT_FOUND, "agent.json is empty");
    free(path);
    return rc;
}

int svc_store_write_agent(const struct svc_store *st, const char *sid, json_object *agent,
                          struct svc_err *err)
{
    return svc_store_write_agent_sync(st, sid, agent, svc_sync_full(st->durable), err);
}

int svc_store_write_agent_sync(const struct svc_store *st, const char *sid, json_object *agent,
                               int sync, struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    if (!svc_json_str(agent, "created_at", NULL))
        svc_json_set_str(agent, "created_at", now);
    svc_json_set_str(agent, "updated_at", now);
    char *dir = svc_store_agent_dir(st, sid);
    char *path = svc_path_join(dir, "agent.json");
    free(dir);
    int rc = svc_json_write_native_sync(path, agent, sync, err);
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

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int svc_store_message_ids(const struct svc_store *st, const char *sid, int64_t **ids, size_t *n,
                          struct svc_err *err)
{
    *ids = NULL;
    *n = 0;
    char *dir = svc_store_messages_dir(st, sid);
    /* getdents64 into a stack buffer: opendir would fstat and malloc 32 KiB each time */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
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
            if (strncmp(name, "message_", 8) != 0)
                continue;
            const char *num = name + 8;
            char *end;
            if (*num < '0' || *num > '9')
                continue;
            errno = 0;
            long long v = strtoll(num, &end, 10);
            if (errno || strcmp(end, ".json") != 0)
                continue;
            if (cnt == cap) {
                cap = cap ? cap * 2 : 64;
                int64_t *na = svc_xrealloc(arr, cap * sizeof *na);
                arr = na;
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

static bool message_exists(const struct svc_store *st, const char *sid, int64_t id)
{
    char *path = svc_store_message_path(st, sid, id);
    struct stat sb;
    bool ok = path && lstat(path, &sb) == 0;
    free(path);
    return ok;
}

int svc_store_message_count(const struct svc_store *st, const char *sid, int64_t trusted,
                            int64_t *count, int64_t *next, int64_t **ids, struct svc_err *err)
{
    *ids = NULL;
    /* ids are contiguous when we wrote them all: two stats confirm the count */
    if (trusted >= 0 && !message_exists(st, sid, trusted) &&
        (trusted == 0 || message_exists(st, sid, trusted - 1))) {
        *count = *next = trusted;
        return 0;
    }
    int64_t *arr = NULL;
    size_t n = 0;
    if (svc_store_message_ids(st, sid, &arr, &n, err) != 0)
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

/* A message record read: rc of the read; a record without a message object is damaged. */
static int message_record_checked(int rc, int64_t id, json_object **out, struct svc_err *err)
{
    if (rc == 0 && !svc_json_obj(*out, "message")) {
        json_object_put(*out);
        *out = NULL;
        return svc_err_set(err, SVC_E_IO, "damaged message_%lld.json: no message object",
                           (long long)id);
    }
    return rc;
}

int svc_store_read_message(const struct svc_store *st, const char *sid, int64_t id,
                           json_object **out, struct svc_err *err)
{
    char *path = svc_store_message_path(st, sid, id);
    int rc = svc_json_read_file(path, out, err);
    free(path);
    return message_record_checked(rc, id, out, err);
}

int svc_store_read_message_at(int msg_dirfd, int64_t id, json_object **out, struct stat *st,
                              size_t *bytes, struct svc_err *err)
{
    char name[48];
    snprintf(name, sizeof name, "message_%lld.json", (long long)id);
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = svc_file_read_at(msg_dirfd, name, &buf, &len, st, err);
    if (bytes)
        *bytes = len;
    if (rc == 0) {
        struct svc_err perr;
        rc = svc_json_parse(buf, len, out, &perr);
        if (rc != 0)
            svc_err_set(err, SVC_E_IO, "damaged file %s: %s", name, perr.message);
    }
    free(buf);
    return message_record_checked(rc, id, out, err);
}

int svc_store_write_message(const struct svc_store *st, const char *sid, int64_t id,
                            json_object *message, struct svc_err *err)
{
    return svc_store_write_message_sync(st, sid, id, message, svc_sync_full(st->durable), err);
}

int svc_store_write_message_sync(const struct svc_store *st, const char *sid, int64_t id,
                                 json_object *message, int sync, struct svc_err *err)
{
    size_t bytes;
    return svc_store_write_message_len(st, sid, id, message, sync, &bytes, err);
}

int svc_store_write_message_len(const struct svc_store *st, const char *sid, int64_t id,
                                json_object *message, int sync, size_t *bytes, struct svc_err *err)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *rec = json_object_new_object();
    svc_json_set(rec, "message", svc_json_copy(message));
    svc_json_set_int(rec, "message_id", id);
    svc_json_set(rec, "redact_message", NULL);
    svc_json_set_str(rec, "created_at", now);
    svc_json_set_str(rec, "updated_at", now);
    char *path = svc_store_message_path(st, sid, id);
    char *text = svc_json_dump_native(rec);
    *bytes = strlen(text);
    int rc = svc_file_write_synced(path, text, *bytes, sync | SVC_WRITE_NEW, err); /* a new id */
    free(text);
    free(path);
    json_object_put(rec);
    return rc;
}

json_object *svc_store_effective_message(json_object *rec)
{
    json_object *r = svc_json_obj(rec, "redact_message");
    return r ? r : svc_json_obj(rec, "message");
}
