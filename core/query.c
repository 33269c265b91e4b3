#include "query.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "dirwatch.h"
#include "feedback.h"
#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "labels.h"
#include "lock.h"
#include "msgcache.h"
#include "openai.h"
#include "parts.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "strands.h"
#include "title.h"
#include "user.h"
#include "util.h"

/* The checks after svc_sess_open: session present with a safe layout, and (with repair)
 * a stale `running` repaired. Closes *s when they fail. */
static int check_session(const char *sid, struct svc_sess *s, bool repair, struct svc_err *err)
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

int svc_session_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s, bool repair,
                     struct svc_err *err)
{
    *s = (struct svc_sess)SVC_SESS_INIT;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    return svc_sess_open(cfg, sid, s, err) != 0 ? -1 : check_session(sid, s, repair, err);
}

bool svc_session_status_valid(const char *s)
{
    static const char *const ok[] = {"running", "idle", "error", "cancelled"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strcmp(s, ok[i]) == 0)
            return true;
    return false;
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
    if (q->status && *q->status && !svc_session_status_valid(q->status))
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "status",
                            "status must be running, idle, error or cancelled");
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
    if (cfg->sessions.cache == SVC_CACHE_OFF)
        svc_index_reset(); /* the index file read again, not this process's copy (cache.h) */
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
            svc_sidecar_resync(&st, sid);
    }
    json_object_put(stale);
    json_object_put(*out);
    return svc_index_list(&st, q, out, NULL, err);
}

int svc_sessions_each(const struct svc_config *cfg, const struct svc_list_query *q,
                      int (*fn)(void *ctx, json_object *summary, struct svc_err *err), void *ctx,
                      struct svc_err *err)
{
    struct svc_list_query pq = *q;
    pq.limit = SVC_LIST_LIMIT_MAX;
    pq.cursor = NULL;
    char *cursor = NULL;
    int rc;
    do {
        json_object *page = NULL;
        rc = svc_sessions_list(cfg, &pq, &page, err);
        json_object *rows = svc_json_arr(page, "sessions");
        for (size_t i = 0; rc == 0 && rows && i < json_object_array_length(rows); i++) {
            json_object *el = json_object_array_get_idx(rows, i), *sum = NULL;
            /* a page's rows are the index's text, unparsed (jsonx.h's raw nodes) */
            if (json_object_is_type(el, json_type_string))
                svc_json_parse(json_object_get_string(el), json_object_get_string_len(el), &sum,
                               NULL);
            else
                sum = json_object_get(el);
            if (sum)
                rc = fn(ctx, sum, err);
            json_object_put(sum);
        }
        const char *next = rc == 0 ? svc_json_str(page, "next_cursor", NULL) : NULL;
        free(cursor);
        cursor = next ? svc_xstrdup(next) : NULL;
        pq.cursor = cursor;
        json_object_put(page);
    } while (cursor);
    return rc;
}

/* The detail's caches (cache.h). The memo: the last (sidecar bytes, message count) ->
 * summary, reused when the bytes read under the shared lock and the count are the same.
 * The sessions polled again (one of the last four read, `recent`): served from the memo
 * without the lock or a read while the content watches armed BEFORE that read (dirwatch.h;
 * slot k's keys "fixed:detail<k>:<i>" on the session directory, agents/, agent_<aid>/ and
 * messages/, each opened from the one above without following a link) saw nothing, the
 * session directory's lstat names the watched inode and svc_session.json's (inode, size,
 * mtime, ctime) are those stated before: a write inotify does not report (through a hard
 * link) still shows in the stat. A `running` summary is never served so. */
#define WATCHED 4
static struct {
    struct {
        char *raw;
        size_t len;
        size_t count;
        json_object *summary;
    } memo;
    struct {
        char *msg_dir;        /* the messages path they were armed for (heap); NULL: free */
        json_object *summary; /* a reference; never modified (query.h) */
        int64_t gen[4];
        struct stat dst[4];
        struct stat sidecar; /* svc_session.json as stated before the read */
        uint64_t used;       /* last served or stored, for the least recently used */
    } watched[WATCHED];
    uint64_t clock;
    char *recent[WATCHED]; /* heap */
    unsigned recent_next;
} dt;

static void memo_set(char *raw, size_t len, size_t count, json_object *summary)
{
    free(dt.memo.raw);
    json_object_put(dt.memo.summary);
    dt.memo.raw = raw;
    dt.memo.len = len;
    dt.memo.count = count;
    dt.memo.summary = summary;
}

/* Slot k's watch key of directory i (0 session, 1 agents, 2 agent_<aid>, 3 messages). */
static const char *watch_key(int k, int i, char buf[64])
{
    snprintf(buf, 64, SVC_DIRWATCH_FIXED_PREFIX "detail%d:%d", k, i);
    return buf;
}

static void watched_free(int k)
{
    free(dt.watched[k].msg_dir);
    json_object_put(dt.watched[k].summary);
    dt.watched[k].msg_dir = NULL;
    dt.watched[k].summary = NULL;
}

/* The slot watching msg_dir, or -1. */
static int watched_find(const char *msg_dir)
{
    for (int k = 0; k < WATCHED; k++)
        if (dt.watched[k].msg_dir && strcmp(dt.watched[k].msg_dir, msg_dir) == 0)
            return k;
    return -1;
}

/* Whether msg_dir was read lately; it is remembered as read now. */
static bool read_again(const char *msg_dir)
{
    bool again = false;
    for (int i = 0; i < WATCHED && !again; i++)
        again = dt.recent[i] && strcmp(dt.recent[i], msg_dir) == 0;
    if (!again) {
        free(dt.recent[dt.recent_next]);
        dt.recent[dt.recent_next] = svc_xstrdup(msg_dir);
        dt.recent_next = (dt.recent_next + 1) % WATCHED;
    }
    return again;
}

/* Arm slot k's four watches on s's directories, each opened from the one above it without
 * following a link: true, with their generations and fstats, when all four are armed. */
static bool watch_arm(const struct svc_sess *s, int k, int64_t gen[4], struct stat dst[4])
{
    char *agent = svc_sess_path(s, SVC_F_AGENT_DIR, SVC_FROM_NAME);
    const char *names[4] = {s->dir, svc_layout_name(SVC_F_AGENTS), agent,
                            svc_layout_name(SVC_F_MESSAGES)};
    int fd[4] = {-1, -1, -1, -1};
    bool ok = true;
    for (int i = 0; i < 4 && ok; i++) {
        fd[i] = openat(i ? fd[i - 1] : AT_FDCWD, names[i],
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ok = fd[i] >= 0 && fstat(fd[i], &dst[i]) == 0 && (i > 0 || svc_cache_local(fd[i]));
        char key[64];
        if (ok)
            gen[i] = svc_dirwatch_arm_content_ignoring(watch_key(k, i, key), fd[i], &dst[i],
                                                       i == 0 ? svc_layout_lock_names() : NULL);
        ok = ok && gen[i] > 0;
    }
    for (int i = 0; i < 4; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    free(agent);
    return ok;
}

/* lstat of s's svc_session.json: true when it is there. */
static bool sidecar_stat(const struct svc_sess *s, struct stat *st)
{
    char *path = svc_sess_path(s, SVC_F_SIDECAR, SVC_FROM_ABS);
    bool ok = lstat(path, st) == 0;
    free(path);
    return ok;
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
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
        fresh = svc_dirwatch_unchanged(watch_key(k, i, key), i ? &dt.watched[k].dst[i] : &st) ==
                dt.watched[k].gen[i];
    }
    struct stat sc;
    fresh = fresh && sidecar_stat(s, &sc) && same_stat(&sc, &dt.watched[k].sidecar);
    if (!fresh) {
        watched_free(k);
        return NULL;
    }
    dt.watched[k].used = ++dt.clock;
    return json_object_get(dt.watched[k].summary);
}

/* The slot for msg_dir's watches, emptied: its own, a free one, or the least recently used. */
static int watched_slot(const char *msg_dir)
{
    int k = watched_find(msg_dir);
    for (int i = 0; i < WATCHED && k < 0; i++)
        if (!dt.watched[i].msg_dir)
            k = i;
    if (k < 0) {
        k = 0;
        for (int i = 1; i < WATCHED; i++)
            if (dt.watched[i].used < dt.watched[k].used)
                k = i;
    }
    watched_free(k);
    return k;
}

/* The sidecar, or one derived from the native files (*has_sidecar false), message_count
 * counted from the files; the caller holds the session lock (shared is enough). As a
 * summary (svc_session_get) without schema_version, and through the memo when cache: then
 * it may be shared with the memo and the caller only reads it. */
static int get_summary_locked(struct svc_sess *s, bool summary, bool cache, json_object **sc_out,
                              bool *has_sidecar, struct svc_err *err)
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
    bool same = cache && rc == 0 && dt.memo.summary && dt.memo.len == len &&
                memcmp(dt.memo.raw, raw, len) == 0;
    json_object *parsed = NULL;
    int64_t trusted = -1, cnt = 0, next = 0;
    if (same)
        trusted = (int64_t)dt.memo.count;
    else if (rc == 0 && svc_json_parse(raw, len, &parsed, NULL) == 0)
        trusted = svc_json_int(parsed, "message_count", -1);
    int64_t *ids = NULL;
    bool counted = rc == 0 && svc_sess_message_count(s, trusted, &cnt, &next, &ids, NULL) == 0;
    free(ids);
    size_t n = (size_t)cnt;
    if (counted && same && dt.memo.count == n) {
        free(raw);
        *sc_out = json_object_get(dt.memo.summary);
        return 0;
    }
    json_object *sc = parsed;
    if (!sc && rc == 0)
        svc_json_parse(raw, len, &sc, NULL);
    *has_sidecar = rc == 0 && sc && json_object_is_type(sc, json_type_object);
    if (!*has_sidecar) { /* no sidecar, or a damaged one: derive it from the native files */
        json_object_put(sc);
        if (svc_sidecar_derive(s, &sc, err) != 0) {
            free(raw);
            return -1;
        }
    } else if (counted) {
        svc_json_set_int(sc, "message_count", (int64_t)n);
    }
    if (summary)
        json_object_object_del(sc, "schema_version");
    if (*has_sidecar && counted && cache)
        memo_set(raw, len, n, json_object_get(sc));
    else
        free(raw);
    *sc_out = sc;
    return 0;
}

static void multi_agent_view(void *ctx, const char *id, const char *abs, const char *rel)
{
    json_object *state = NULL;
    if (svc_json_read_object_file(abs, &state, NULL) == 0)
        json_object_array_add(ctx, svc_strands_multi_agent(state));
    json_object_put(state);
}

static json_object *session_strands(const struct svc_config *cfg, const char *sid)
{
    struct svc_sess s;
    json_object *agent = NULL, *out = json_object_new_object(), *multi = json_object_new_array();
    if (svc_sess_open(cfg, sid, &s, NULL) == 0) {
        svc_sess_read_agent(&s, &agent, NULL); /* one file, replaced whole: no lock */
        svc_sess_multi_agents(&s, multi_agent_view, multi);
    }
    svc_sess_close(&s);
    json_object *intr = svc_strands_interrupts(agent);
    if (intr)
        svc_json_set(out, "interrupts", intr);
    if (json_object_array_length(multi))
        /* the detail's key is the directory's name (SPEC 17), which store.h spells */
        svc_json_set(out, svc_layout_name(SVC_F_MULTI_AGENTS), json_object_get(multi));
    json_object_put(multi);
    json_object_put(agent);
    if (json_object_object_length(out) == 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

json_object *svc_session_with_strands(const struct svc_config *cfg, const char *sid,
                                      json_object *summary)
{
    json_object *extra = session_strands(cfg, sid);
    if (!extra)
        return summary;
    json_object *c = svc_json_copy(summary);
    svc_json_merge(c, extra);
    json_object_put(extra);
    json_object_put(summary);
    return c;
}

int64_t svc_sessions_count(const struct svc_config *cfg)
{
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    return cfg->sessions.enabled ? svc_index_count(&st) : -1;
}

void svc_sessions_warm(const struct svc_config *cfg)
{
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    if (cfg->sessions.enabled)
        svc_index_warm(&st);
}

void svc_sessions_seal(const struct svc_config *cfg)
{
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    if (cfg->sessions.enabled)
        svc_index_seal(&st);
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
    bool cache = svc_cache_on(cfg, -1);
    json_object *fresh = cache ? watch_fresh(&s) : NULL;
    if (fresh) {
        svc_sess_close(&s);
        *out = fresh;
        return 0;
    }
    /* a session read lately, read again: arm its watches, before every check */
    int64_t gen[4] = {0};
    struct stat dst[4], sst;
    int k = cache && read_again(s.msg_dir) ? watched_slot(s.msg_dir) : -1;
    bool armed = k >= 0 && watch_arm(&s, k, gen, dst) && sidecar_stat(&s, &sst);
    if (check_session(sid, &s, false, err) != 0) /* repaired below, only when needed */
        return -1;
    json_object *sc = NULL;
    bool has;
    int rc = -1;
    /* one read in the common case; a stale `running` is repaired, then read again */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (svc_sess_lock(&s, false, err) != 0)
            goto out;
        if (get_summary_locked(&s, true, cache, &sc, &has, err) != 0)
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
    if (armed && sc == dt.memo.summary && strcmp(svc_json_str(sc, "status", ""), "running") != 0) {
        dt.watched[k].msg_dir = svc_xstrdup(s.msg_dir);
        dt.watched[k].summary = json_object_get(sc);
        memcpy(dt.watched[k].gen, gen, sizeof gen);
        memcpy(dt.watched[k].dst, dst, sizeof dst);
        dt.watched[k].sidecar = sst;
        dt.watched[k].used = ++dt.clock;
    }
    *out = sc; /* already the summary (read-only: it may be the memo's) */
    sc = NULL;
    rc = 0;
out:
    svc_sess_close(&s);
    json_object_put(sc);
    return rc;
}

/* The session API's parts of a message (SPEC 17, parts.h), new reference. */
static json_object *message_parts(json_object *m, bool bytes)
{
    json_object *parts = json_object_new_array(), *c = svc_json_arr(m, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++)
        json_object_array_add(parts, svc_parts_view(json_object_array_get_idx(c, i), bytes));
    return parts;
}

json_object *svc_message_row(json_object *rec, int64_t id)
{
    json_object *m = svc_store_effective_message(rec);
    json_object *row = json_object_new_object(), *proj = svc_openai_project(m);
    const char *role = svc_openai_role(m);
    svc_json_set_int(row, "message_id", id);
    svc_json_set_str(row, "role", role);
    char *text = svc_native_text(m);
    /* a tool-result message: its text is the first result's text */
    const char *first = svc_json_str(json_object_array_get_idx(proj, 0), "content", NULL);
    svc_json_set_str(row, "content", !*text && first && strcmp(role, "tool") == 0 ? first : text);
    free(text);
    svc_json_set_str(row, "created_at", svc_json_str(rec, "created_at", NULL));
    svc_json_set_str(row, "updated_at", svc_json_str(rec, "updated_at", NULL));
    svc_json_set(row, "parts", message_parts(m, false));
    svc_json_set(row, "raw_native", svc_json_copy(m));
    svc_json_set(row, "openai_messages", proj);
    return row;
}

static int messages_query_check(const struct svc_messages_query *q, struct svc_err *err)
{
    if (q->limit < 1 || q->limit > SVC_MESSAGES_LIMIT_MAX)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "limit",
                            "query parameter 'limit' must be between 1 and %d",
                            SVC_MESSAGES_LIMIT_MAX);
    if (q->offset < 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "offset",
                            "query parameter 'offset' must be >= 0");
    if (q->order && strcmp(q->order, "asc") != 0 && strcmp(q->order, "desc") != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "order", "order must be asc or desc");
    return 0;
}

/* The row of message id (new reference): from the row cache when this very file was
 * rendered before (msgcache.h: no stat while the directory's watch saw nothing, else one
 * stat; no read), else read, rendered and kept. mc NULL: no cache. A damaged file is a row
 * saying so, never a failed page; a rated one is never cached (its feedback is not in the
 * message file). */
static json_object *message_row_of(struct svc_sess *s, int64_t id, json_object *fb,
                                   const struct svc_msgcache_dir *mc, bool bytes)
{
    struct stat fst;
    const char *text;
    size_t tlen;
    json_object *rated = svc_feedback_of(fb, id);
    if (!rated && mc &&
        (svc_msgcache_get(mc, id, NULL, &text, &tlen) ||
         (svc_sess_stat_message(s, id, &fst) && svc_msgcache_get(mc, id, &fst, &text, &tlen))))
        return svc_json_new_raw_len(text, tlen);
    json_object *rec = NULL;
    struct svc_err merr;
    if (svc_sess_read_message(s, id, &rec, &fst, NULL, &merr) != 0) {
        json_object *row = json_object_new_object();
        svc_json_set_int(row, "message_id", id);
        svc_json_set_str(row, "role", "unknown");
        svc_json_set_str(row, "content", "");
        svc_json_set_str(row, "error", merr.message);
        return row;
    }
    json_object *row = svc_message_row(rec, id);
    if (bytes) /* images and documents with their data (never cached) */
        svc_json_set(row, "parts", message_parts(svc_store_effective_message(rec), true));
    json_object_put(rec);
    if (rated)
        svc_json_set(row, "feedback", json_object_get(rated));
    if (rated || bytes)
        return row;
    char *rendered = svc_json_dump_compact(row);
    if (mc && svc_msgcache_put(mc, id, &fst, rendered, strlen(rendered))) {
        json_object_put(row);
        row = svc_json_new_raw(rendered);
    }
    free(rendered);
    return row;
}

int svc_session_messages(const struct svc_config *cfg, const char *sid,
                         const struct svc_messages_query *q, json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (messages_query_check(q, err) != 0)
        return -1;
    bool desc = q->order && strcmp(q->order, "desc") == 0;
    struct svc_sess s;
    if (svc_session_open(cfg, sid, &s, true, err) != 0)
        return -1;
    int64_t *ids = NULL; /* NULL: ids are 0..n-1 */
    int rc = -1;
    json_object *res = NULL, *fb = NULL;
    if (svc_sess_lock(&s, false, err) != 0)
        goto out;
    /* a page reads its own files and O(1) metadata: the sidecar's count, checked by a
     * stat or two; a directory scan only when another program added a file */
    json_object *sc = NULL;
    int64_t trusted = -1, cnt = 0, next = 0;
    if (svc_sidecar_get(&s, &sc, NULL) == 0 && sc)
        trusted = svc_json_int(sc, "message_count", -1);
    if (svc_sess_message_count(&s, trusted, &cnt, &next, &ids, err) != 0)
        goto out;
    size_t n = (size_t)cnt, off = (size_t)q->offset, count = 0;
    fb = svc_feedback_read(&s);
    res = json_object_new_object();
    svc_json_set_str(res, "session_id", sid);
    svc_json_set_str(res, "agent_id", s.st.agent_id);
    json_object *list = json_object_new_array();
    svc_json_set(res, "messages", list);
    /* the directory's watch is armed before any row is checked (msgcache.h) */
    struct svc_msgcache_dir mc;
    int mfd = svc_cache_on(cfg, -1) ? svc_sess_messages_fd(&s) : -1;
    bool cache = mfd >= 0 && svc_msgcache_begin(sid, mfd, svc_cache_local(mfd), &mc);
    for (size_t k = off; k < n && count < (size_t)q->limit; k++, count++) {
        size_t pos = desc ? n - 1 - k : k;
        json_object_array_add(list, message_row_of(&s, ids ? ids[pos] : (int64_t)pos, fb,
                                                   cache && !q->include_bytes ? &mc : NULL,
                                                   q->include_bytes));
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
    if (svc_session_open(cfg, sid, &s, true, err) != 0)
        return -1;
    json_object *sc = NULL;
    bool has;
    int rc = -1;
    if (svc_sess_lock(&s, true, err) != 0)
        goto out;
    if (get_summary_locked(&s, false, false, &sc, &has, err) != 0)
        goto out;
    if (!has)
        svc_json_set_int(sc, "schema_version", 1);
    mutate(sc, arg);
    if (svc_sidecar_write(&s, sc, SVC_SYNC_STORE, err) != 0)
        goto out;
    if (summary)
        *summary = svc_sidecar_summary(sc);
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
    *out = json_object_new_object();
    svc_json_set_bool(*out, "archived", archived);
    svc_json_set_str(*out, "session_id", sid);
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
    *out = json_object_new_object();
    svc_json_set_str(*out, "session_id", sid);
    svc_json_merge(*out, svc_json_obj(sum, "token_state"));
    json_object_put(sum);
    return 0;
}

int svc_session_visible(const struct svc_config *cfg, const char *scope, const char *sid,
                        bool missing_ok, struct svc_err *err)
{
    if (!scope || (missing_ok && !cfg->sessions.enabled))
        return 0; /* stateless turns name no stored session */
    json_object *o = NULL;
    struct svc_err e;
    svc_err_clear(&e);
    int rc = svc_session_get(cfg, sid, &o, &e);
    if (rc != 0 && missing_ok && e.code == SVC_E_SESSION_NOT_FOUND)
        return 0;
    if (rc == 0 && !svc_user_sees(scope, o))
        rc = svc_err_set(&e, SVC_E_SESSION_NOT_FOUND, "session %s not found", sid);
    json_object_put(o);
    if (rc != 0 && err)
        *err = e;
    return rc;
}
