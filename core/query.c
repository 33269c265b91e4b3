#include "query.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwatch.h"
#include "feedback.h"
#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "labels.h"
#include "lock.h"
#include "msgcache.h"
#include "openai.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "title.h"
#include "util.h"

/* The checks after svc_sess_open: session present with a safe layout, and (with repair)
 * a stale `running` repaired. Closes *s when they fail. */
static int check_session(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                         bool repair, struct svc_err *err)
{
    if (!svc_sess_exists(s)) {
        svc_sess_close(s);
        return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", sid);
    }
    if (svc_sess_check_layout(s, NULL, err) != 0 || (repair && svc_run_repair(s, err) < 0)) {
        svc_sess_close(s);
        return -1;
    }
    return 0;
}

/* Common entry: sessions on, id valid, session present with a safe layout, and (with
 * repair) a stale `running` repaired. On success *s is an open handle the caller closes. */
static int open_session(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                        bool repair, struct svc_err *err)
{
    *s = (struct svc_sess)SVC_SESS_INIT;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    if (svc_sess_open(cfg, sid, s, err) != 0)
        return -1;
    return check_session(cfg, sid, s, repair, err);
}

/* Sidecar, or one derived from native files; message_count recounted from the files.
 * Caller holds the session lock (shared is enough). */
static int load_summary_locked(struct svc_sess *s, json_object **sc_out, bool *has_sidecar,
                               struct svc_err *err)
{
    struct svc_err rerr;
    json_object *sc = NULL;
    *has_sidecar = true;
    if (svc_sidecar_read(s, &sc, &rerr) != 0) {
        *has_sidecar = false;
        if (svc_sidecar_derive(s, &sc, err) != 0)
            return -1;
    } else {
        int64_t *ids = NULL;
        size_t n = 0;
        if (svc_sess_message_ids(s, &ids, &n, NULL) == 0)
            svc_json_set_int(sc, "message_count", (int64_t)n);
        free(ids);
    }
    *sc_out = sc;
    return 0;
}

int svc_sessions_list(const struct svc_config *cfg, const struct svc_list_query *q,
                      json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    if (q->limit < 1 || q->limit > SVC_LIST_LIMIT_MAX)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "limit",
                            "query parameter 'limit' must be between 1 and %d", SVC_LIST_LIMIT_MAX);
    static const char *statuses[] = {"running", "idle", "error", "cancelled", NULL};
    if (q->status && *q->status) {
        bool ok = false;
        for (int i = 0; statuses[i]; i++)
            ok = ok || strcmp(q->status, statuses[i]) == 0;
        if (!ok)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, "status",
                                "status must be running, idle, error or cancelled");
    }
    if (q->pinned && *q->pinned && strcmp(q->pinned, "true") != 0 &&
        strcmp(q->pinned, "false") != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "pinned", "pinned must be true or false");
    if (q->ntags > SVC_TAGS_MAX)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "tag", "at most %d tag parameters",
                            SVC_TAGS_MAX);
    for (size_t i = 0; i < q->ntags; i++)
        if (!*q->tags[i] || svc_utf8_len(q->tags[i]) > SVC_TAG_LEN_MAX)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, "tag", "a tag is 1..%d characters",
                                SVC_TAG_LEN_MAX);
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    json_object *stale = NULL;
    if (svc_index_list(&st, q, out, &stale, err) != 0)
        return -1;
    if (!stale)
        return 0;
    /* a run died on this page: repair it (SPEC 2.3: the next reader does), then list again */
    for (size_t i = 0; i < json_object_array_length(stale); i++) {
        const char *sid = json_object_get_string(json_object_array_get_idx(stale, i));
        /* nothing to repair: the sidecar has left `running` but the index line never came
         * (its writer was killed in between): take the summary from the files */
        if (svc_session_repair_stale(cfg, sid, NULL) == 0)
            svc_index_resync(&st, sid);
    }
    json_object_put(stale);
    json_object_put(*out);
    return svc_index_list(&st, q, out, NULL, err);
}

/* The summary is a pure function of the sidecar's bytes and the number of message files:
 * parse, set message_count, drop schema_version. The detail endpoint is polled, so each
 * process keeps the last (bytes, count) -> summary it computed and reuses it when both are
 * equal: a request that reads the sidecar and counts the files under the shared lock skips
 * the parse.
 * A session polled again skips the lock and the reads too, while nothing in it changed
 * (issue 7). A worker that reads the detail of a session again (one of the last four it
 * read) watches the session directory, agents/, agents/agent_<aid>/ and messages/
 * (dirwatch.h content watches under fixed keys "fixed:detail<slot>:...": no session id
 * has a ':', and dirwatch keeps room for fixed keys beyond the listing's), each opened
 * from the one above it without following a link, BEFORE the layout check and the read
 * under the lock.
 * A change made after a watch was armed comes in as an event on one of them:
 *  - svc_session.json written in place, renamed over, removed or replaced by a link;
 *    svc_turns.jsonl or agents/ replaced, renamed or removed: an event in the session
 *    directory;
 *  - agent_<aid> or messages/ renamed, removed or replaced: an event in agents/ or in
 *    agent_<aid>/ (and IN_MOVE_SELF or IN_DELETE_SELF on the directory itself);
 *  - a message file added, removed or renamed: an event in messages/;
 *  - the session directory renamed or removed: IN_MOVE_SELF or IN_DELETE_SELF on it; and
 *    another directory under its name without it being moved (a parent of it renamed):
 *    the one lstat of the path the next request makes shows another inode.
 * A lock file opened for writing and closed is no change (every reader opens .svc.lock
 * so, and no lock file holds anything the summary is made of); a lock file created,
 * removed or replaced is. The run lock matters to a `running` summary only, and a
 * `running` summary is never served from the watch: it is read and its run lock checked
 * each time, and a stale one repaired, as before. So while no event came and the lstat
 * names the watched inode, the summary kept with the watches, computed from what was read
 * after they were armed, is what the full read would give now: the answer costs one
 * read(2) of the inotify instance and one lstat. Only on local filesystems
 * (svc_dirwatch_local); without a watch (limits, errors, a session not read lately) every
 * request reads as before. At most four sessions are watched at a time (sixteen kernel
 * watches a worker), the least recently used giving way. One case it cannot see (as the
 * messages page, README): svc_session.json written in place through a hard link in
 * another directory. */
static struct {
    char *raw;
    size_t len;
    size_t count;
    json_object *summary;
} memo;

static void memo_set(char *raw, size_t len, size_t count, json_object *summary)
{
    free(memo.raw);
    json_object_put(memo.summary);
    memo.raw = raw;
    memo.len = len;
    memo.count = count;
    memo.summary = summary;
}

/* The sessions watched (above): a summary and the watches it holds under, all four armed
 * before it was read. Slot k's watches are keys "fixed:detail<k>:..." (dirwatch.h keeps
 * SVC_DIRWATCH_FIXED such keys: four slots of four). */
#define WATCHED 4
static struct {
    char *msg_dir;        /* the messages path they were armed for (heap); NULL: free */
    json_object *summary; /* a reference; never modified (query.h) */
    int64_t gen[4];
    struct stat dst[4];
    uint64_t used; /* last served or stored, for the least recently used */
} watched[WATCHED];
static uint64_t watched_clock;
/* the messages paths of the last details read (heap): a session read again soon is watched */
static char *recent[WATCHED];
static unsigned recent_next;

/* Slot k's watch key of directory i (0 session, 1 agents, 2 agent_<aid>, 3 messages). */
static const char *watch_key(int k, int i, char buf[64])
{
    snprintf(buf, 64, SVC_DIRWATCH_FIXED_PREFIX "detail%d:%d", k, i);
    return buf;
}

static void watched_free(int k)
{
    free(watched[k].msg_dir);
    json_object_put(watched[k].summary);
    watched[k].msg_dir = NULL;
    watched[k].summary = NULL;
}

/* The slot watching msg_dir, or -1. */
static int watched_find(const char *msg_dir)
{
    for (int k = 0; k < WATCHED; k++)
        if (watched[k].msg_dir && strcmp(watched[k].msg_dir, msg_dir) == 0)
            return k;
    return -1;
}

/* Whether msg_dir was read lately; it is remembered as read now. */
static bool read_again(const char *msg_dir)
{
    bool again = false;
    for (int i = 0; i < WATCHED && !again; i++)
        again = recent[i] && strcmp(recent[i], msg_dir) == 0;
    if (!again) {
        free(recent[recent_next]);
        recent[recent_next] = svc_xstrdup(msg_dir);
        recent_next = (recent_next + 1) % WATCHED;
    }
    return again;
}

/* Arm slot k's four watches on s's directories, each opened from the one above it without
 * following a link: true, with their generations and fstats, when all four are armed. */
static bool watch_arm(const struct svc_sess *s, int k, int64_t gen[4], struct stat dst[4])
{
    char *agent = svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_NAME);
    const char *names[4] = {s->dir, svc_store_name(SVC_F_AGENTS), agent,
                            svc_store_name(SVC_F_MESSAGES)};
    int fd[4] = {-1, -1, -1, -1};
    bool ok = true;
    for (int i = 0; i < 4 && ok; i++) {
        fd[i] = openat(i ? fd[i - 1] : AT_FDCWD, names[i],
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ok = fd[i] >= 0 && fstat(fd[i], &dst[i]) == 0 && (i > 0 || svc_dirwatch_local(fd[i]));
        char key[64];
        if (ok)
            gen[i] = svc_dirwatch_arm_content_ignoring(watch_key(k, i, key), fd[i], &dst[i],
                                                       i == 0 ? svc_store_lock_names() : NULL);
        ok = ok && gen[i] > 0;
    }
    for (int i = 0; i < 4; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    free(agent);
    return ok;
}

/* The watched summary of s (new reference) while it holds under its watches; else NULL
 * (and the slot is freed when it no longer holds). */
static json_object *watch_fresh(const struct svc_sess *s)
{
    int k = watched_find(s->msg_dir);
    if (k < 0)
        return NULL;
    svc_dirwatch_poll();
    struct stat st;
    bool fresh = lstat(s->dir, &st) == 0;
    for (int i = 0; i < 4 && fresh; i++) {
        char key[64];
        fresh = svc_dirwatch_unchanged(watch_key(k, i, key), i ? &watched[k].dst[i] : &st) ==
                watched[k].gen[i];
    }
    if (!fresh) {
        watched_free(k);
        return NULL;
    }
    watched[k].used = ++watched_clock;
    return json_object_get(watched[k].summary);
}

/* The slot for msg_dir's watches, emptied: its own, a free one, or the least recently used. */
static int watched_slot(const char *msg_dir)
{
    int k = watched_find(msg_dir);
    for (int i = 0; i < WATCHED && k < 0; i++)
        if (!watched[i].msg_dir)
            k = i;
    if (k < 0) {
        k = 0;
        for (int i = 1; i < WATCHED; i++)
            if (watched[i].used < watched[k].used)
                k = i;
    }
    watched_free(k);
    return k;
}

/* load_summary_locked for svc_session_get, through the memo; the result has no
 * schema_version and may be shared with the memo: the caller only reads it. */
static int get_summary_locked(struct svc_sess *s, json_object **sc_out, bool *has_sidecar,
                              struct svc_err *err)
{
    *sc_out = NULL;
    *has_sidecar = true;
    char *path = svc_sess_path(s, SVC_F_SIDECAR, SVC_FROM_ABS);
    char *raw = NULL;
    size_t len = 0;
    struct svc_err rerr;
    int rc = svc_file_read(path, &raw, &len, &rerr);
    free(path);
    /* the count from the files in O(1): the memo's (same bytes) or the sidecar's own,
     * checked by a stat or two; a scan only when another program added a file */
    bool same = rc == 0 && memo.summary && memo.len == len && memcmp(memo.raw, raw, len) == 0;
    json_object *parsed = NULL;
    int64_t trusted = -1, cnt = 0, next = 0;
    if (same)
        trusted = (int64_t)memo.count;
    else if (rc == 0 && svc_json_parse(raw, len, &parsed, NULL) == 0)
        trusted = svc_json_int(parsed, "message_count", -1);
    int64_t *ids = NULL;
    bool counted = rc == 0 && svc_sess_message_count(s, trusted, &cnt, &next, &ids, NULL) == 0;
    free(ids);
    size_t n = (size_t)cnt;
    if (counted && same && memo.count == n) {
        free(raw);
        *sc_out = json_object_get(memo.summary);
        return 0;
    }
    json_object *sc = parsed;
    if (!sc && rc == 0)
        svc_json_parse(raw, len, &sc, NULL);
    if (rc != 0 || !sc || !json_object_is_type(sc, json_type_object)) {
        /* no sidecar, or a damaged one: derive it from the native files */
        json_object_put(sc);
        free(raw);
        *has_sidecar = false;
        if (svc_sidecar_derive(s, &sc, err) != 0)
            return -1;
        json_object_object_del(sc, "schema_version");
        *sc_out = sc;
        return 0;
    }
    if (counted)
        svc_json_set_int(sc, "message_count", (int64_t)n);
    json_object_object_del(sc, "schema_version");
    if (counted)
        memo_set(raw, len, n, json_object_get(sc));
    else
        free(raw);
    *sc_out = sc;
    return 0;
}

int64_t svc_sessions_count(const struct svc_config *cfg)
{
    if (!cfg->sessions.enabled)
        return -1;
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    return svc_index_count(&st);
}

void svc_sessions_warm(const struct svc_config *cfg)
{
    if (!cfg->sessions.enabled)
        return;
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    svc_index_warm(&st);
}

int svc_session_get(const struct svc_config *cfg, const char *sid, json_object **out,
                    struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    struct svc_sess s;
    if (svc_sess_open(cfg, sid, &s, err) != 0)
        return -1;
    /* polled again, nothing changed: the memo's summary under its watches (above) */
    json_object *fresh = watch_fresh(&s);
    if (fresh) {
        svc_sess_close(&s);
        *out = fresh;
        return 0;
    }
    /* a session read lately, read again: arm its watches, before every check */
    int64_t gen[4] = {0};
    struct stat dst[4];
    int k = read_again(s.msg_dir) ? watched_slot(s.msg_dir) : -1;
    bool armed = k >= 0 && watch_arm(&s, k, gen, dst);
    if (check_session(cfg, sid, &s, false, err) != 0) /* repaired below, only when needed */
        return -1;
    json_object *sc = NULL;
    bool has;
    int rc = -1;
    /* one read in the common case; a stale `running` is repaired, then read again */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (svc_sess_lock(&s, false, err) != 0)
            goto out;
        if (get_summary_locked(&s, &sc, &has, err) != 0)
            goto out;
        svc_sess_unlock(&s);
        if (attempt > 0 || !has || strcmp(svc_json_str(sc, "status", ""), "running") != 0 ||
            svc_lock_run_held(s.dir))
            break;
        json_object_put(sc);
        sc = NULL;
        if (svc_run_repair(&s, err) < 0)
            goto out;
    }
    /* the memo's summary read under all four watches, and not `running`: served from the
     * watches until something changes */
    if (armed && sc == memo.summary && strcmp(svc_json_str(sc, "status", ""), "running") != 0) {
        watched[k].msg_dir = svc_xstrdup(s.msg_dir);
        watched[k].summary = json_object_get(sc);
        memcpy(watched[k].gen, gen, sizeof gen);
        memcpy(watched[k].dst, dst, sizeof dst);
        watched[k].used = ++watched_clock;
    }
    *out = sc; /* already the summary (read-only: it may be the memo's) */
    sc = NULL;
    rc = 0;
out:
    svc_sess_close(&s);
    json_object_put(sc);
    return rc;
}

json_object *svc_message_row(json_object *rec, int64_t id)
{
    json_object *m = svc_store_effective_message(rec);
    json_object *row = json_object_new_object();
    svc_json_set_int(row, "message_id", id);
    svc_json_set_str(row, "role", svc_openai_role(m));
    char *text = svc_native_text(m);
    if (!*text) {
        /* a tool-result message: its text is the results' text */
        json_object *proj = svc_openai_project(m);
        json_object *first =
            json_object_array_length(proj) ? json_object_array_get_idx(proj, 0) : NULL;
        const char *c = svc_json_str(first, "content", NULL);
        if (c && strcmp(svc_openai_role(m), "tool") == 0) {
            free(text);
            text = svc_xstrdup(c);
        }
        json_object_put(proj);
    }
    svc_json_set_str(row, "content", text);
    free(text);
    svc_json_set_str(row, "created_at", svc_json_str(rec, "created_at", NULL));
    svc_json_set_str(row, "updated_at", svc_json_str(rec, "updated_at", NULL));
    svc_json_set(row, "raw_native", svc_json_copy(m));
    svc_json_set(row, "openai_messages", svc_openai_project(m));
    return row;
}

int svc_session_messages(const struct svc_config *cfg, const char *sid,
                         const struct svc_messages_query *q, json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (q->limit < 1 || q->limit > SVC_MESSAGES_LIMIT_MAX)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "limit",
                            "query parameter 'limit' must be between 1 and %d",
                            SVC_MESSAGES_LIMIT_MAX);
    if (q->offset < 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "offset",
                            "query parameter 'offset' must be >= 0");
    if (q->order && strcmp(q->order, "asc") != 0 && strcmp(q->order, "desc") != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "order", "order must be asc or desc");
    bool desc = q->order && strcmp(q->order, "desc") == 0;
    struct svc_sess s;
    if (open_session(cfg, sid, &s, true, err) != 0)
        return -1;
    const struct svc_store *st = &s.st;
    int64_t *ids = NULL; /* NULL: ids are 0..n-1 */
    size_t n = 0;
    int rc = -1;
    json_object *res = NULL, *fb = NULL;
    if (svc_sess_lock(&s, false, err) != 0)
        goto out;
    /* a page reads its own files and O(1) metadata: the sidecar's count, checked by a
     * stat or two; a directory scan only when another program added a file */
    json_object *sc = NULL;
    int64_t trusted = -1, cnt = 0, next = 0;
    if (svc_sess_sidecar(&s, &sc, NULL) == 0 && sc)
        trusted = svc_json_int(sc, "message_count", -1);
    if (svc_sess_message_count(&s, trusted, &cnt, &next, &ids, err) != 0)
        goto out;
    n = (size_t)cnt;
    fb = svc_feedback_read(&s);
    res = json_object_new_object();
    svc_json_set_str(res, "session_id", sid);
    svc_json_set_str(res, "agent_id", st->agent_id);
    json_object *list = json_object_new_array();
    svc_json_set(res, "messages", list);
    size_t off = (size_t)q->offset;
    size_t count = 0;
    /* A worker that pages again watches the session's messages directory (dirwatch.h):
     * while nothing in it changed since the rows were last checked, a row cached then is
     * taken without a stat. The watch is armed before this page's checks. */
    static unsigned long pages;
    int64_t gen = 0;
    bool unchanged = false;
    int mfd = off < n && ++pages > 1 ? svc_sess_messages_fd(&s) : -1;
    struct stat dst;
    if (mfd >= 0 && fstat(mfd, &dst) == 0) {
        svc_dirwatch_poll();
        gen = svc_dirwatch_unchanged(sid, &dst);
        unchanged = gen > 0;
        if (!unchanged && svc_dirwatch_local(mfd))
            gen = svc_dirwatch_arm_content(sid, mfd, &dst);
    }
    for (size_t k = off; k < n && count < (size_t)q->limit; k++, count++) {
        size_t pos = desc ? n - 1 - k : k;
        int64_t id = ids ? ids[pos] : (int64_t)pos;
        /* a row rendered before from this very file (msgcache.h): one stat, no read */
        struct stat fst;
        const char *text;
        size_t tlen;
        json_object *rated = svc_feedback_of(fb, id); /* not in the message file: no cache */
        if (!rated && ((unchanged && svc_msgcache_get_seen(sid, gen, id, &text, &tlen)) ||
                       (svc_sess_stat_message(&s, id, &fst) &&
                        svc_msgcache_get(&fst, id, sid, gen, &text, &tlen)))) {
            json_object_array_add(list, svc_json_new_raw_len(text, tlen));
            continue;
        }
        json_object *rec = NULL;
        struct svc_err merr;
        if (svc_sess_read_message(&s, id, &rec, &fst, NULL, &merr) != 0) {
            /* a damaged message file: say so in its row, never fail the page */
            json_object *row = json_object_new_object();
            svc_json_set_int(row, "message_id", id);
            svc_json_set_str(row, "role", "unknown");
            svc_json_set_str(row, "content", "");
            svc_json_set_str(row, "error", merr.message);
            json_object_array_add(list, row);
            continue;
        }
        json_object *row = svc_message_row(rec, id);
        json_object_put(rec);
        if (rated) {
            svc_json_set(row, "feedback", json_object_get(rated));
            json_object_array_add(list, row);
            continue;
        }
        char *rendered = svc_json_dump_compact(row);
        if (svc_msgcache_put(&fst, id, sid, gen, rendered, strlen(rendered))) {
            json_object_put(row);
            row = svc_json_new_raw(rendered);
        }
        free(rendered);
        json_object_array_add(list, row);
    }
    if (off + count < n)
        svc_json_set_int(res, "next_offset", (int64_t)(off + count));
    else
        svc_json_set(res, "next_offset", NULL);
    svc_json_set_int(res, "total", (int64_t)n);
    if (q->include_turns && q->offset == 0) {
        json_object *turns = NULL;
        int skipped = 0;
        if (svc_turns_read(&s, &turns, &skipped, NULL) == 0) {
            svc_json_set(res, "turns", turns);
            if (skipped)
                svc_json_set_int(res, "turns_skipped", skipped);
        }
    }
    *out = res;
    res = NULL;
    rc = 0;
out:
    json_object_put(res);
    json_object_put(fb);
    svc_sess_close(&s);
    free(ids);
    return rc;
}

/* Read-modify-write of the sidecar under the exclusive lock. A session without a sidecar
 * (written by Strands) gets one derived from its native files. */
static int update_sidecar(const struct svc_config *cfg, const char *sid,
                          void (*mutate)(json_object *sc, const void *arg), const void *arg,
                          json_object **summary, struct svc_err *err)
{
    struct svc_sess s;
    if (open_session(cfg, sid, &s, true, err) != 0)
        return -1;
    json_object *sc = NULL;
    bool has;
    int rc = -1;
    if (svc_sess_lock(&s, true, err) != 0)
        goto out;
    if (load_summary_locked(&s, &sc, &has, err) != 0)
        goto out;
    if (!has)
        svc_json_set_int(sc, "schema_version", 1);
    mutate(sc, arg);
    if (svc_sidecar_write(&s, sc, SVC_SYNC_STORE, err) != 0)
        goto out;
    json_object *sum = svc_sidecar_summary(sc);
    svc_index_update(&s.st, sid, sum);
    if (summary)
        *summary = sum;
    else
        json_object_put(sum);
    rc = 0;
out:
    svc_sess_close(&s);
    json_object_put(sc);
    return rc == 0 ? 0 : svc_err_unwritable(cfg->sessions.root, err);
}

static void mutate_archived(json_object *sc, const void *arg)
{
    bool archived = *(const bool *)arg;
    if (svc_json_bool(sc, "archived", false) == archived)
        return; /* idempotent: keep archived_at */
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    svc_json_set_bool(sc, "archived", archived);
    svc_json_set_str(sc, "archived_at", archived ? now : NULL);
    svc_json_set_str(sc, "updated_at", now);
}

int svc_session_set_archived(const struct svc_config *cfg, const char *sid, bool archived,
                             json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (update_sidecar(cfg, sid, mutate_archived, &archived, NULL, err) != 0)
        return -1;
    json_object *res = json_object_new_object();
    svc_json_set_bool(res, "archived", archived);
    svc_json_set_str(res, "session_id", sid);
    *out = res;
    return 0;
}

static void mutate_edit(json_object *sc, const void *arg)
{
    const struct svc_session_edit *e = arg;
    char now[SVC_TIME_LEN];
    if (e->title) {
        svc_json_set_str(sc, "title", e->title);
        json_object_object_del(sc, "title_source"); /* a renamed title is searched as it is */
    }
    if (e->set_pinned)
        svc_json_set_bool(sc, "pinned", e->pinned);
    if (e->tags)
        svc_json_set(sc, "tags", svc_labels_tags_set(e->tags));
    if (e->metadata)
        svc_json_set(sc, "metadata", svc_json_copy(e->metadata));
    svc_json_set_str(sc, "updated_at", svc_time_now_iso(now));
}

int svc_session_edit(const struct svc_config *cfg, const char *sid,
                     const struct svc_session_edit *e, json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (!e->title && !e->set_pinned && !e->tags && !e->metadata)
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "title",
                            "title is required (or pinned, tags, metadata)");
    if ((e->title && svc_title_check(e->title, err) != 0) ||
        (e->tags && svc_labels_check_tags(e->tags, err) != 0) ||
        (e->metadata && svc_labels_check_metadata(e->metadata, err) != 0))
        return -1;
    return update_sidecar(cfg, sid, mutate_edit, e, out, err);
}

int svc_session_tokens(const struct svc_config *cfg, const char *sid, json_object **out,
                       struct svc_err *err)
{
    *out = NULL;
    json_object *sum = NULL;
    if (svc_session_get(cfg, sid, &sum, err) != 0)
        return -1;
    json_object *res = json_object_new_object();
    svc_json_set_str(res, "session_id", sid);
    svc_json_merge(res, svc_json_obj(sum, "token_state"));
    json_object_put(sum);
    *out = res;
    return 0;
}
