#include "memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "hostdb.h"
#include "jsonx.h"
#include "lock.h"
#include "log.h"
#include "openai.h"
#include "sidecar.h"
#include "store.h"
#include "user.h"
#include "util.h"

/* How far back the pair is looked for (messages read from the newest). */
#define PAIR_SCAN_MAX 64

char *svc_memory_fold(const char *text, size_t max_cp)
{
    struct svc_buf b;
    svc_buf_init(&b);
    size_t cp = 0, cut_at = 0; /* byte length after max_cp - 1 code points */
    bool space = false;
    for (const char *p = text ? text : ""; *p;) {
        if (strchr(" \t\n\r\f\v", *p)) {
            space = b.len > 0; /* folded, and only ever between two words */
            p++;
            continue;
        }
        if (space) {
            svc_buf_add(&b, " ", 1);
            if (++cp == max_cp - 1)
                cut_at = b.len;
            space = false;
        }
        size_t n = 1;
        while (n < 4 && ((unsigned char)p[n] & 0xC0) == 0x80)
            n++;
        svc_buf_add(&b, p, n);
        if (++cp == max_cp - 1)
            cut_at = b.len;
        p += n;
    }
    if (max_cp > 0 && cp > max_cp) {
        b.len = cut_at;
        b.data[b.len] = '\0';
        svc_buf_adds(&b, "\xE2\x80\xA6"); /* the last code point: … */
    }
    return svc_buf_steal(&b); /* "" when empty */
}

/* The message's text when it is a text message of role (no toolResult); NULL otherwise. */
static char *text_of(json_object *msg, const char *role)
{
    if (strcmp(svc_json_str(msg, "role", ""), role) != 0 || svc_native_has(msg, "toolResult"))
        return NULL;
    char *t = svc_native_text(msg);
    if (!*t) {
        free(t);
        return NULL;
    }
    return t;
}

int svc_memory_pair(json_object *msgs, const int64_t *ids, char **user, char **assistant,
                    int64_t *message_id)
{
    *user = *assistant = NULL;
    size_t n = json_object_array_length(msgs);
    char *a = NULL;
    size_t ai = 0;
    for (size_t i = n; i > 0 && !a; i--)
        if ((a = text_of(json_object_array_get_idx(msgs, i - 1), "assistant")))
            ai = i - 1;
    if (!a)
        return 0;
    char *u = NULL;
    for (size_t i = ai; i > 0 && !u; i--)
        u = text_of(json_object_array_get_idx(msgs, i - 1), "user");
    if (!u) {
        free(a);
        return 0;
    }
    *user = svc_memory_fold(u, SVC_MEMORY_SIDE_MAX);
    *assistant = svc_memory_fold(a, SVC_MEMORY_SIDE_MAX);
    *message_id = ids[ai];
    free(u);
    free(a);
    return 1;
}

/* ---- the memory file ---- */

char *svc_memory_file(const struct svc_config *cfg, const char *agent, char **dir)
{
    *dir = svc_path_join(cfg->memory.root, agent);
    return svc_path_join(*dir, "memory.jsonl");
}

int svc_memory_lock(const char *dir, int how, struct svc_err *err)
{
    char *path = svc_path_join(dir, ".memory.lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    free(path);
    if (fd < 0)
        return svc_err_errno(err, "memory lock");
    while (flock(fd, how) != 0) {
        if (errno == EINTR)
            continue;
        svc_err_errno(err, "memory lock");
        close(fd);
        return -1;
    }
    return fd;
}

/* Call fn on the decodable lines of the last SVC_MEMORY_TAIL bytes of fd (size bytes),
 * newest first, until it returns nonzero; with needle, lines that do not contain it are
 * skipped unparsed. *last (when not NULL) gets the file's last byte, '\n' for an empty file
 * (or one that could not be read). */
static void scan_back_fd(int fd, off_t size, const char *needle,
                         int (*fn)(json_object *line, void *ctx), void *ctx, char *last)
{
    if (last)
        *last = '\n';
    size_t limit = size > SVC_MEMORY_TAIL ? SVC_MEMORY_TAIL : (size_t)size;
    /* passes over a growing tail: the last 4 KiB, which usually holds what fn looks for,
     * then 64 KiB, then the whole tail; done_from is the file offset of the oldest line
     * already seen. The buffer grows with the pass: a turn's sync does not allocate and
     * read the whole tail when its session's line is among the last ones. */
    size_t want = limit < 4096 ? limit : 4096;
    off_t done_from = size;
    char *buf = svc_xmalloc(want + 1);
    int stop = 0;
    for (;;) {
        off_t base = size - (off_t)want;
        size_t got = 0;
        while (got < want) {
            ssize_t r = pread(fd, buf + got, want - got, base + (off_t)got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        buf[got] = '\0';
        if (last && done_from == size && got == want && got > 0)
            *last = buf[got - 1];
        /* a tail that does not start at the file's start starts inside a line: skip it */
        size_t first = 0;
        if (base > 0) {
            char *nl = memchr(buf, '\n', got);
            first = nl ? (size_t)(nl - buf) + 1 : got;
        }
        size_t end = done_from == size ? got : (size_t)(done_from - base) - 1;
        if (end > got)
            end = got;
        while (!stop && end > first) {
            size_t start = end;
            while (start > first && buf[start - 1] != '\n')
                start--;
            if (end > start &&
                (!needle || memmem(buf + start, end - start, needle, strlen(needle)))) {
                json_object *o = svc_jsonl_object(buf + start, end - start);
                if (o)
                    stop = fn(o, ctx);
                json_object_put(o);
            }
            end = start > first ? start - 1 : first; /* drop the '\n' */
        }
        if (stop || want >= limit)
            break;
        if (first < got) /* else no whole line was seen: the next pass reads it all again */
            done_from = base + (off_t)first;
        want = want < limit / 16 ? want * 16 : limit;
        buf = svc_xrealloc(buf, want + 1);
    }
    free(buf);
}

struct dup_ctx {
    const char *sid;
    int64_t id;
    bool found;
};

/* Stops at the newest line of this session: is it this pair (or a newer one)? */
static int dup_line(json_object *line, void *vctx)
{
    struct dup_ctx *c = vctx;
    if (strcmp(svc_json_str(line, "session_id", ""), c->sid) != 0)
        return 0;
    c->found = svc_json_int(line, "message_id", -1) >= c->id;
    return 1;
}

/* Append the digest line under the memory lock unless there already (looked for if look_back). */
static int append_digest(const struct svc_config *cfg, const char *dir, const char *file,
                         json_object *line, const char *sid, int64_t id, bool look_back,
                         struct svc_err *err)
{
    struct svc_err lerr;
    int fd = svc_memory_lock(dir, LOCK_EX, &lerr); /* the directory is there, but the first time */
    if (fd < 0 && (svc_mkdirs_durable(dir, 0755, cfg->sessions.fsync, err) != 0 ||
                   (fd = svc_memory_lock(dir, LOCK_EX, err)) < 0))
        return -1;
    /* one descriptor for the look back and the append */
    int mfd = open(file, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat mst;
    if (mfd < 0 || fstat(mfd, &mst) != 0) {
        int rc = svc_err_errno(err, "memory file");
        if (mfd >= 0)
            close(mfd);
        close(fd);
        return rc;
    }
    struct dup_ctx dc = {.sid = sid, .id = id};
    /* only lines naming the session (a checked id: no JSON escapes) are parsed */
    char needle[SVC_ID_MAX + 3]; /* an id, two quotes, NUL */
    snprintf(needle, sizeof needle, "\"%s\"", sid);
    char last = '\n';
    if (look_back)
        scan_back_fd(mfd, mst.st_size, needle, dup_line, &dc, &last);
    else if (mst.st_size > 0 && pread(mfd, &last, 1, mst.st_size - 1) != 1)
        last = '\n';
    int rc = 0;
    if (!dc.found) {
        /* a new (empty) file's directory entry must survive a crash too */
        bool fresh = cfg->sessions.fsync && mst.st_size == 0;
        /* not synced: memory is derived from the (synced) messages after the run's end;
         * see core/run.c's fsync budget. A power cut can lose this digest, never a turn.
         * After a torn last line the digest starts a line of its own. */
        char *text = svc_json_dump_compact(line);
        char *data = NULL;
        svc_xasprintf(&data, "%s%s\n", last != '\n' ? "\n" : "", text);
        rc = svc_fd_append(mfd, file, data, strlen(data), false, err);
        free(data);
        free(text);
        if (rc == 0 && fresh && svc_fsync_dir(dir, NULL) != 0)
            rc = svc_err_errno(err, "fsync memory directory");
    }
    close(mfd);
    close(fd);
    return rc;
}

/* ---- the whole file: export, import, forget (SPEC 19) ---- */

/* The next whole line of f (its length, with its '\n'; -1 at the end or at a torn last line,
 * not written yet) and the session it is a digest of into sid ("" when it is not one). */
static ssize_t next_line(FILE *f, char **line, size_t *cap, char sid[SVC_ID_MAX + 1])
{
    ssize_t n = getline(line, cap, f);
    if (n <= 0 || (*line)[n - 1] != '\n')
        return -1;
    json_object *o = NULL;
    sid[0] = '\0';
    if (svc_json_parse(*line, (size_t)n - 1, &o, NULL) == 0)
        snprintf(sid, SVC_ID_MAX + 1, "%s", svc_json_str(o, "session_id", ""));
    json_object_put(o);
    return n;
}

int svc_memory_each(const struct svc_config *cfg, const char *agent, svc_memory_line_fn *fn,
                    void *ctx, struct svc_err *err)
{
    char *dir, *file = svc_memory_file(cfg, agent, &dir);
    struct svc_err lerr;
    /* a root that cannot be written (an export of a read-only root) is read unlocked: an
     * append is one write, and a torn last line is skipped as not written yet */
    int lk = svc_is_dir(dir) ? svc_memory_lock(dir, LOCK_SH, &lerr) : -1;
    FILE *f = fopen(file, "re");
    int rc = f || errno == ENOENT ? 0 : svc_err_errno(err, "memory file");
    char *line = NULL, sid[SVC_ID_MAX + 1];
    size_t cap = 0;
    ssize_t n;
    while (rc == 0 && f && (n = next_line(f, &line, &cap, sid)) > 0)
        if (sid[0])
            rc = fn(ctx, sid, line, (size_t)n);
    if (f && ferror(f) && rc == 0)
        rc = svc_err_errno(err, "read memory file");
    if (f)
        fclose(f);
    if (lk >= 0)
        close(lk);
    free(line);
    free(file);
    free(dir);
    return rc;
}

/* Copy the lines of from (digest lines of the sessions keep() names, when keep) to out. */
static int copy_lines(FILE *from, FILE *out, bool (*keep)(void *ctx, const char *sid), void *ctx,
                      bool want)
{
    char *line = NULL, sid[SVC_ID_MAX + 1];
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = next_line(from, &line, &cap, sid)) > 0)
        if ((sid[0] && keep(ctx, sid)) == want && fwrite(line, 1, (size_t)n, out) != (size_t)n)
            rc = -1;
    free(line);
    return rc == 0 && !ferror(from) ? 0 : -1;
}

int svc_memory_replace(const struct svc_config *cfg, const char *agent, FILE *add,
                       bool (*ours)(void *ctx, const char *sid), void *ctx, struct svc_err *err)
{
    char *dir, *file = svc_memory_file(cfg, agent, &dir);
    char tmp[4096], tail[64], hex[17];
    svc_random_hex(hex, 16);
    snprintf(tail, sizeof tail, ".tmp-%d-%s", (int)getpid(), hex);
    svc_temp_path(tmp, sizeof tmp, file, tail);
    int rc = 0, lk = -1;
    FILE *old = NULL, *out = NULL;
    if (!svc_is_dir(dir) && !add)
        goto out; /* nothing to forget */
    if ((!svc_is_dir(dir) && svc_mkdirs_durable(dir, 0755, cfg->sessions.fsync, err) != 0) ||
        (lk = svc_memory_lock(dir, LOCK_EX, err)) < 0) {
        rc = -1;
        goto out;
    }
    old = fopen(file, "re");
    if (!old && (errno != ENOENT || !add)) {
        rc = errno == ENOENT ? 0 : svc_err_errno(err, "memory file");
        goto out;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out || (old && copy_lines(old, out, ours, ctx, false) != 0) ||
        (add && copy_lines(add, out, ours, ctx, true) != 0) || fflush(out) != 0 ||
        (cfg->sessions.fsync && fdatasync(fileno(out)) != 0) || rename(tmp, file) != 0) {
        rc = svc_err_errno(err, "rewrite memory file");
        unlink(tmp);
    } else if (cfg->sessions.fsync) {
        rc = svc_fsync_dir(dir, err);
    }
out:
    if (out)
        fclose(out);
    if (old)
        fclose(old);
    if (lk >= 0)
        close(lk);
    free(file);
    free(dir);
    return rc;
}

static bool is_sid(void *ctx, const char *sid)
{
    return strcmp(sid, ctx) == 0;
}

int svc_memory_forget(const struct svc_config *cfg, const char *sid, struct svc_err *err)
{
    return svc_memory_replace(cfg, cfg->sessions.agent_id, NULL, is_sid, (void *)(uintptr_t)sid,
                              err);
}

int svc_memory_relocate(const struct svc_config *cfg, const char *agent, const char *state,
                        struct svc_err *err)
{
    json_object *mem = NULL;
    struct svc_err re;
    if (svc_json_read_object_file(state, &mem, &re) != 0)
        return re.code == SVC_E_NOT_FOUND ? 0 : (*err = re, -1);
    int rc = 0;
    char *dir, *file = svc_memory_file(cfg, agent, &dir);
    const char *was = svc_json_str(mem, "memory_file", NULL);
    if (was && strcmp(was, file) != 0) {
        svc_json_set_str(mem, "memory_file", file);
        /* its data reaches the disk before its rename (an empty file after a power cut) */
        rc = svc_json_write_pretty_sync(state, mem,
                                        svc_sync_spare(SVC_SYNC_NONE, cfg->sessions.fsync), err);
    }
    free(file);
    free(dir);
    json_object_put(mem);
    return rc;
}

/* ---- sync ---- */

/* The newest messages (at most PAIR_SCAN_MAX) as an array with their ids. */
static int read_tail(struct svc_sess *s, json_object **msgs, int64_t **ids_out, struct svc_err *err)
{
    int64_t *ids = NULL;
    size_t n = 0;
    *msgs = NULL;
    *ids_out = NULL;
    if (svc_sess_message_ids(s, &ids, &n, err) != 0)
        return -1;
    size_t from = n > PAIR_SCAN_MAX ? n - PAIR_SCAN_MAX : 0;
    json_object *arr = json_object_new_array();
    for (size_t i = from; i < n; i++) {
        json_object *rec = NULL;
        if (svc_sess_read_message(s, ids[i], &rec, NULL, NULL, err) != 0) {
            json_object_put(arr);
            free(ids);
            return -1;
        }
        json_object_array_add(arr, json_object_get(svc_store_effective_message(rec)));
        json_object_put(rec);
    }
    memmove(ids, ids + from, (n - from) * sizeof *ids);
    *msgs = arr;
    *ids_out = ids;
    return 0;
}

/* The memory_state object of mem; error may be NULL. New reference. */
static json_object *memory_state_of(json_object *mem, const struct svc_err *error)
{
    json_object *ms = json_object_new_object();
    svc_json_set_bool(ms, "enabled", true);
    json_object *last = NULL;
    json_object_object_get_ex(mem, "last_synced_message_id", &last);
    svc_json_set(ms, "last_synced_message_id", json_object_get(last));
    svc_json_set_str(ms, "last_synced_at", svc_json_str(mem, "updated_at", NULL));
    svc_json_set_int(ms, "digests", svc_json_int(mem, "digests", 0));
    svc_json_set_str(ms, "memory_file", svc_json_str(mem, "memory_file", NULL));
    svc_json_set(ms, "error", svc_memory_failure(error, NULL));
    return ms;
}

json_object *svc_memory_failure(const struct svc_err *e, const char *run_id)
{
    if (!e)
        return NULL;
    char now[SVC_TIME_LEN];
    json_object *o = svc_json_new_obj("code", svc_err_name(e->code), "message", e->message, NULL);
    if (run_id)
        svc_json_set_str(o, "run_id", run_id);
    svc_json_set_str(o, "at", svc_time_now_iso(now));
    return o;
}

/* memory_state in the sidecar; error may be NULL. Caller holds the session lock. */
static void record_state(const struct svc_sess *s, json_object *mem, const struct svc_err *error)
{
    json_object *sc = NULL;
    struct svc_err e;
    bool ok = svc_sidecar_read(s, &sc, &e) == 0;
    if (ok)
        svc_json_set(sc, "memory_state", memory_state_of(mem, error));
    /* unsynced, as run.c's end */
    if (!ok || svc_sidecar_write(s, sc, svc_sync_spare(SVC_SYNC_NONE, s->st.durable), &e) != 0)
        svc_logf("session %s: memory state not recorded: %s", s->sid, e.message);
    json_object_put(sc);
}

/* The newest message_id among sid's digests in have (-1 for none). */
static int64_t have_of(struct svc_hostdb *have, const char *sid)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(have, &st, "SELECT m FROM have WHERE sid = ?1", "s", sid);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
    return id;
}

static int have_line(void *ctx, const char *sid, const char *line, size_t n)
{
    json_object *o = NULL;
    int64_t id = svc_json_parse(line, n, &o, NULL) == 0 ? svc_json_int(o, "message_id", -1) : -1;
    json_object_put(o);
    if (id <= have_of(ctx, sid))
        return 0;
    return svc_hostdb_run(ctx, "INSERT OR REPLACE INTO have VALUES (?1, ?2)", "sl", sid, id) == 0
               ? 0
               : 1;
}

struct svc_hostdb *svc_memory_have(const struct svc_config *cfg, struct svc_err *err)
{
    struct svc_hostdb *m = svc_xcalloc(1, sizeof *m);
    if (svc_hostdb_temp(m, "CREATE TABLE have(sid TEXT PRIMARY KEY, m INTEGER) WITHOUT ROWID", 256,
                        err) != 0) {
        free(m);
        return NULL;
    }
    int rc = svc_memory_each(cfg, cfg->sessions.agent_id, have_line, m, err);
    if (rc > 0)
        svc_err_set(err, SVC_E_IO, "memory sync: the temporary map failed: %s",
                    svc_hostdb_errmsg(m));
    if (rc != 0) {
        svc_memory_have_free(m);
        return NULL;
    }
    return m;
}

void svc_memory_have_free(struct svc_hostdb *have)
{
    if (have)
        svc_hostdb_close(have);
    free(have);
}

/* svc_memory.json of a session (path), or a fresh one when missing or unreadable. */
static json_object *read_state(const char *path, const char *sid)
{
    json_object *mem = NULL;
    struct svc_err re;
    if (svc_json_read_object_file(path, &mem, &re) == 0)
        return mem;
    if (re.code != SVC_E_NOT_FOUND)
        svc_logf("session %s: %s unreadable, starting it anew: %s", sid,
                 svc_layout_name(SVC_F_MEMORY), re.message);
    mem = json_object_new_object();
    svc_json_set_int(mem, "schema_version", 1);
    svc_json_set_str(mem, "session_id", sid);
    svc_json_set(mem, "last_synced_message_id", NULL);
    svc_json_set(mem, "memory_file", NULL);
    svc_json_set_int(mem, "digests", 0);
    svc_json_set(mem, "updated_at", NULL);
    return mem;
}

/* The memory file's line for message mid's pair, with the session's owner (sc, else the
 * sidecar on disk): recall keeps to the owner's digests (SPEC 14). */
static json_object *digest_line(struct svc_sess *s, json_object *sc, int64_t mid, const char *now,
                                const char *user, const char *assistant)
{
    json_object *line = svc_json_new_obj("session_id", s->sid, NULL);
    svc_json_set_int(line, "message_id", mid);
    svc_json_set_str(line, "at", now);
    svc_json_set_str(line, "user", user);
    svc_json_set_str(line, "assistant", assistant);
    json_object *own = sc ? json_object_get(sc) : NULL;
    if (!own)
        svc_sidecar_read(s, &own, NULL);
    if (svc_user_owner(own))
        svc_json_set_str(line, "owner", svc_user_owner(own));
    json_object_put(own);
    return line;
}

/* The sync itself; the caller holds the exclusive session lock. in_run: a run's own sync
 * at its end (recent holds what it stored). have: the newest message_id of the session's
 * digests in the memory file, as svc memory sync found it (INT64_MAX: not looked at); a
 * pair synced already but not there is written again. With sc the memory_state goes into sc
 * (a sidecar the caller writes next), else into the sidecar on disk. */
static int sync_locked(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                       const int64_t *recent_ids, bool in_run, int64_t have, json_object *sc,
                       struct svc_err *err)
{
    const char *sid = s->sid;
    struct svc_err e;
    svc_err_clear(&e);
    json_object *mem = NULL, *msgs = NULL, *line = NULL;
    int64_t *ids = NULL;
    char *user = NULL, *assistant = NULL, *dir = NULL, *file = NULL;
    char *mpath = svc_sess_path(s, SVC_F_MEMORY, SVC_FROM_ABS);
    int rc = -1;
    mem = read_state(mpath, sid);
    int64_t mid = -1;
    int pr = recent ? svc_memory_pair(recent, recent_ids, &user, &assistant, &mid) : 0;
    /* A run's own pair has no line in the file yet when the run syncs it at its end: only
     * the run and `svc memory sync` (refused while a run holds the run lock) write the
     * session's lines. So the look back, which costs the bytes appended since this session's
     * last line, is only for a pair read from the files (a sync that died may have written). */
    bool look_back = !(in_run && pr == 1);
    if (pr == 0) { /* the caller's messages hold no pair (or none given): read the files */
        if (read_tail(s, &msgs, &ids, &e) != 0)
            goto out;
        pr = svc_memory_pair(msgs, ids, &user, &assistant, &mid);
    }
    bool lost = have < mid; /* synced, yet its digest is not in the memory file */
    if (pr == 0 || (svc_json_int(mem, "last_synced_message_id", -1) >= mid && !lost)) {
        rc = 0; /* no pair, or this pair is synced already */
        goto out;
    }
    look_back = look_back && !lost;
    file = svc_memory_file(cfg, cfg->sessions.agent_id, &dir);
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    line = digest_line(s, sc, mid, now, user, assistant);
    if (append_digest(cfg, dir, file, line, sid, mid, look_back, &e) != 0) {
        char what[sizeof e.message];
        snprintf(what, sizeof what, "%s", e.message);
        svc_err_set(&e, e.code, "memory file %s: %s", file, what);
        goto out;
    }
    bool again = svc_json_int(mem, "last_synced_message_id", -1) >= mid;
    svc_json_set_int(mem, "last_synced_message_id", mid);
    svc_json_set_str(mem, "memory_file", file);
    svc_json_set_int(mem, "digests", svc_json_int(mem, "digests", 0) + (again ? 0 : 1));
    svc_json_set_str(mem, "updated_at", now);
    /* rebuilt when unreadable; the session lock is held, so its spare may be used */
    rc = svc_json_write_pretty_sync(mpath, mem, svc_sync_spare(SVC_SYNC_NONE, s->st.durable), &e);
out:
    if (rc != 0) {
        svc_logf("session %s: memory sync failed: %s", sid, e.message);
        if (err)
            *err = e;
    }
    if (rc != 0 || line) {
        if (sc)
            svc_json_set(sc, "memory_state", memory_state_of(mem, rc != 0 ? &e : NULL));
        else
            record_state(s, mem, rc != 0 ? &e : NULL);
    }
    json_object_put(mem);
    json_object_put(msgs);
    json_object_put(line);
    free(ids);
    free(user);
    free(assistant);
    free(dir);
    free(file);
    free(mpath);
    return rc;
}

/* Lock the session and sync it. refuse_during_run (svc memory sync): a run holding the run
 * lock is refused as session_busy, checked under the session lock; the run syncs its own
 * pair when it ends, and sync_locked relies on nobody else writing it meanwhile. */
static int sync_session(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                        const int64_t *recent_ids, bool refuse_during_run, int64_t have,
                        struct svc_err *err)
{
    const char *sid = s->sid;
    struct svc_err e;
    int rc = -1;
    if (!cfg->sessions.enabled || cfg->sessions.provider != SVC_PROVIDER_SVC_REPOSITORY ||
        !cfg->sessions.sync_memory)
        return svc_err_set(err, SVC_E_CONFIG,
                           "memory sync needs sessions.enabled, provider svc_repository and "
                           "sync_memory on");
    if (!svc_sess_exists(s))
        return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", sid);
    if (svc_sess_lock(s, true, &e) != 0) {
        svc_logf("session %s: memory sync failed: %s", sid, e.message);
        if (err)
            *err = e;
    } else if (refuse_during_run && svc_lock_run_held(s->dir)) {
        svc_err_set(err, SVC_E_SESSION_BUSY,
                    "session %s has a run in progress; it syncs its newest pair itself when "
                    "it ends: try again after it",
                    sid);
    } else {
        rc = sync_locked(cfg, s, recent, recent_ids, false, have, NULL, err);
    }
    svc_sess_unlock(s);
    return rc;
}

int svc_memory_sync(const struct svc_config *cfg, struct svc_sess *s, struct svc_hostdb *have,
                    struct svc_err *err)
{
    return sync_session(cfg, s, NULL, NULL, true, have ? have_of(have, s->sid) : INT64_MAX, err);
}

int svc_memory_sync_recent(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                           const int64_t *recent_ids, struct svc_err *err)
{
    return sync_session(cfg, s, recent, recent_ids, false, INT64_MAX, err);
}

int svc_memory_sync_run(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                        const int64_t *recent_ids, json_object *sc, struct svc_err *err)
{
    return sync_locked(cfg, s, recent, recent_ids, true, INT64_MAX, sc, err);
}

/* ---- recall ---- */

struct recall_ctx {
    const char *sid;
    const char *owner;
    int want;
    json_object *found; /* newest first */
};

static int recall_line(json_object *line, void *vctx)
{
    struct recall_ctx *c = vctx;
    if (strcmp(svc_json_str(line, "session_id", ""), c->sid) == 0)
        return 0;
    const char *owner = svc_json_str(line, "owner", NULL);
    if (c->owner ? !owner || strcmp(owner, c->owner) != 0 : owner != NULL)
        return 0; /* another user's words never reach this user's model (SPEC 14) */
    if (!svc_json_str(line, "user", NULL) || !svc_json_str(line, "assistant", NULL))
        return 0;
    json_object_array_add(c->found, json_object_get(line));
    return (int)json_object_array_length(c->found) >= c->want;
}

char *svc_memory_system_prompt(const struct svc_config *cfg, const char *sid, const char *owner)
{
    if (cfg->memory.recall <= 0)
        return NULL;
    char *dir, *file = svc_memory_file(cfg, cfg->sessions.agent_id, &dir);
    struct recall_ctx c = {.sid = sid ? sid : "",
                           .owner = owner,
                           .want = cfg->memory.recall,
                           .found = json_object_new_array()};
    char *out = NULL;
    struct svc_err e;
    int fd = -1;
    if (svc_is_dir(dir) && (fd = svc_memory_lock(dir, LOCK_SH, &e)) < 0)
        svc_logf("memory recall: %s", e.message);
    int mf = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (mf >= 0 && fstat(mf, &st) == 0) {
        scan_back_fd(mf, st.st_size, NULL, recall_line, &c, NULL);
    } else if (mf >= 0 || errno != ENOENT) { /* a missing file has no lines */
        svc_err_errno(&e, "memory file");
        svc_logf("memory recall: %s", e.message);
    }
    if (mf >= 0)
        close(mf);
    if (fd >= 0)
        close(fd);
    size_t n = json_object_array_length(c.found);
    if (n == 0)
        goto done;
    struct svc_buf b;
    svc_buf_init(&b);
    const char *base = cfg->model.system_prompt ? cfg->model.system_prompt : "";
    svc_buf_printf(&b, "%s%sNotes from earlier conversations (newest first):", base,
                   *base ? "\n\n" : "");
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(c.found, i);
        svc_buf_printf(&b, "\n- [%s] User: %s | Assistant: %s", svc_json_str(d, "at", ""),
                       svc_json_str(d, "user", ""), svc_json_str(d, "assistant", ""));
    }
    out = svc_buf_steal(&b);
done:
    json_object_put(c.found);
    free(dir);
    free(file);
    return out;
}
