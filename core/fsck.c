#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirscan.h"
#include "fsio.h"
#include "hostdb.h"
#include "index.h"
#include "jsonx.h"
#include "lock.h"
#include "memory.h"
#include "runs.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "util.h"

#define TEMP_MIN_AGE_S 60

struct fsck {
    const struct svc_config *cfg;
    struct svc_store st;
    bool repair;
    json_object *problems; /* array */
    json_object *busy;     /* array of ids */
    int64_t nproblems, nrepaired, nstale, nchecked;
    const struct svc_fsck_opts *o;
};

__attribute__((format(printf, 7, 8))) static void problem(struct fsck *f, const char *sid,
                                                          const char *rel, long long off,
                                                          const char *kind, bool repaired,
                                                          const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object *p = svc_json_new_obj("session_id", sid, "file", rel, NULL);
    svc_json_set(p, "offset", off >= 0 ? json_object_new_int64(off) : NULL);
    svc_json_set_str(p, "kind", kind);
    svc_json_set_str(p, "message", msg);
    svc_json_set(p, "repaired", json_object_new_boolean(repaired));
    json_object_array_add(f->problems, p);
    f->nproblems++;
    if (repaired)
        f->nrepaired++;
}

/* Where json-c stops parsing buf: the byte offset of the first error. */
static long long parse_stop(const char *buf, size_t len)
{
    json_tokener *t = json_tokener_new();
    json_object *o = json_tokener_parse_ex(t, buf, (int)len);
    long long end = (long long)json_tokener_get_parse_end(t);
    json_object_put(o);
    json_tokener_free(t);
    return end;
}

/* Parse a JSON file: 0 with *out (out may be NULL), 1 when absent, -1 unreadable (reported). */
static int parse_file(struct fsck *f, const char *sid, const char *abs, const char *rel,
                      json_object **out)
{
    if (out)
        *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    struct svc_err err;
    if (svc_file_read(abs, &buf, &len, &err) != 0) {
        if (err.code == SVC_E_NOT_FOUND)
            return 1;
        problem(f, sid, rel, -1, "unreadable", false, "%s", err.message);
        return -1;
    }
    json_object *o = svc_jsonl_object(buf, len);
    if (!o)
        problem(f, sid, rel, parse_stop(buf, len), "unreadable", false,
                "not a JSON object (parsing stops at this byte)");
    free(buf);
    if (out)
        *out = o;
    else
        json_object_put(o);
    return o ? 0 : -1;
}

static bool is_temp(const char *name)
{
    return strstr(name, ".tmp-") != NULL;
}

/* Whether the writer named in a temp file's name (".<name>.tmp-<pid>-<hex>", fsio.c) is no
 * longer a process on this host. */
static bool temp_writer_gone(const char *name)
{
    const char *t = strstr(name, ".tmp-");
    char *end;
    long pid = t ? strtol(t + 5, &end, 10) : 0;
    if (!t || pid <= 0 || *end != '-')
        return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* A temp file (not a spare): an orphan when its writer is gone from this host (on a
 * local root only: on a shared one the pid may be another host's live writer), or when
 * older than a minute (a live writer renames within ms; this also covers a writer on
 * another host). */
static void check_temp(struct fsck *f, const char *sid, const char *abs, const char *rel)
{
    struct stat sb;
    const char *base = strrchr(abs, '/');
    if (svc_file_is_spare(base ? base + 1 : abs))
        return; /* a spare (fsio.h SVC_WRITE_SPARE) is kept on purpose, whatever it holds */
    if (lstat(abs, &sb) != 0 || (time(NULL) - sb.st_mtime < TEMP_MIN_AGE_S &&
                                 (f->st.shared || !temp_writer_gone(base ? base + 1 : abs))))
        return;
    bool fixed = f->repair && unlink(abs) == 0;
    problem(f, sid, rel, -1, "orphan_temp", fixed, "temp file left by a writer that died%s",
            fixed ? " (removed)" : "");
}

/* A deletion's renamed directory or a new session's staging root (store.h) in the root:
 * left by a process that died when older than an hour (both live for milliseconds). */
static void check_leftover(struct fsck *f, const char *name)
{
    const char *trash = svc_layout_name(SVC_F_TRASH), *stage = svc_layout_name(SVC_F_STAGE);
    if (strncmp(name, trash, strlen(trash)) != 0 && strncmp(name, stage, strlen(stage)) != 0)
        return;
    char *abs = svc_path_join(f->st.root, name);
    struct stat sb;
    if (lstat(abs, &sb) == 0 && time(NULL) - sb.st_mtime > 3600) {
        bool fixed = f->repair && svc_file_remove_tree(abs) == 0;
        problem(f, NULL, name, -1, "leftover", fixed,
                "left by a deletion or a fork that died; nobody reads it%s",
                fixed ? " (removed)" : "");
    }
    free(abs);
}

static void check_lock_file(struct fsck *f, const char *sid, const char *abs, const char *rel)
{
    struct stat sb;
    if (lstat(abs, &sb) == 0 && !S_ISREG(sb.st_mode))
        problem(f, sid, rel, -1, "bad_lock_file", false,
                "a lock file that is not a regular file (locks cannot be taken)");
}

/* JSONL: every line must decode; a tail without newline is torn. With fix (the caller holds
 * the lock that writers of this file take), bad lines are appended to <file>.corrupt and
 * the file is rewritten without them. Returns how many bad lines were found. */
static int check_lines(struct fsck *f, const char *sid, const char *abs, const char *rel,
                       bool torn_ok, bool fix)
{
    char *buf = NULL;
    size_t len = 0;
    struct svc_err err;
    if (svc_file_read(abs, &buf, &len, &err) != 0) {
        if (err.code != SVC_E_NOT_FOUND)
            problem(f, sid, rel, -1, "unreadable", false, "%s", err.message);
        return 0;
    }
    struct svc_buf good, bad;
    svc_buf_init(&good);
    svc_buf_init(&bad);
    int nbad = 0;
    size_t first = (size_t)f->nproblems;
    for (size_t at = 0; at < len;) {
        char *nl = memchr(buf + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
        if (!nl && torn_ok)
            break; /* a live writer's line in progress */
        json_object *o = nl && n ? svc_jsonl_object(buf + at, n) : NULL;
        bool ok = n == 0 || o;
        json_object_put(o);
        if (ok) {
            svc_buf_add(&good, buf + at, n + (nl ? 1 : 0));
        } else {
            nbad++;
            svc_buf_add(&bad, buf + at, n);
            svc_buf_add(&bad, "\n", 1);
            problem(f, sid, rel, (long long)at, nl ? "bad_line" : "torn_line", false,
                    nl ? "a line that is not a JSON object (%zu bytes)"
                       : "a torn trailing line (%zu bytes, no newline)",
                    n);
        }
        at += n + (nl ? 1 : 0);
    }
    if (nbad > 0 && fix) {
        char *side = NULL;
        svc_xasprintf(&side, "%s.corrupt", abs);
        if (svc_file_append(side, bad.data, bad.len, f->st.durable, &err) == 0 &&
            svc_file_write_atomic(abs, good.data ? good.data : "", good.len, f->st.durable, &err) ==
                0) {
            for (size_t i = first; i < json_object_array_length(f->problems); i++) {
                json_object *p = json_object_array_get_idx(f->problems, i);
                svc_json_set(p, "repaired", json_object_new_boolean(true));
                f->nrepaired++;
            }
        }
        free(side);
    }
    svc_buf_free(&good);
    svc_buf_free(&bad);
    free(buf);
    return nbad;
}

/* One agent directory: agent.json, message files. Returns the number of message files. */
static int64_t check_agent(struct fsck *f, const struct svc_sess *s, const char *adir,
                           const char *arel)
{
    const char *sid = s->sid, *an = svc_layout_name(SVC_F_AGENT);
    char *abs = svc_path_join(adir, an), *rel = svc_path_join(arel, an);
    json_object *agent = NULL;
    if (parse_file(f, sid, abs, rel, &agent) == 1)
        problem(f, sid, rel, -1, "missing_file", false, "%s is missing", an);
    free(abs);
    const char *mn = svc_layout_name(SVC_F_MESSAGES);
    char *mdir = svc_path_join(adir, mn), *mrel = svc_path_join(arel, mn);
    int64_t *ids = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(mdir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *fa = svc_path_join(mdir, de->d_name), *fr = svc_path_join(mrel, de->d_name);
        int64_t id = svc_layout_message_id_of(de->d_name);
        if (is_temp(de->d_name)) {
            check_temp(f, sid, fa, fr);
        } else if (id < 0) {
            problem(f, sid, fr, -1, "stray_file", false, "not a message file (left alone)");
        } else {
            ids = svc_grow(ids, n, &cap, sizeof *ids);
            ids[n++] = id;
            json_object *m = NULL;
            if (parse_file(f, sid, fa, fr, &m) == 0) {
                json_object *v;
                if (!json_object_object_get_ex(m, "message_id", &v) ||
                    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) != id)
                    problem(f, sid, fr, -1, "bad_message_id", false,
                            "message_id inside the file is not %lld", (long long)id);
                if (!svc_json_obj(m, "message"))
                    problem(f, sid, fr, -1, "bad_message", false, "no \"message\" object");
            }
            json_object_put(m);
        }
        free(fa);
        free(fr);
    }
    if (d)
        closedir(d);
    if (n > 1)
        qsort(ids, n, sizeof *ids, svc_cmp_i64);
    for (size_t i = 0; i < n; i++)
        if (ids[i] != (int64_t)i) {
            char *gap = svc_sess_message_path(s, (int64_t)i, SVC_FROM_NAME);
            problem(f, sid, mrel, -1, "message_gap", false,
                    "message ids are not contiguous from 0: %s is missing", gap);
            free(gap);
            break;
        }
    if (agent) {
        int64_t removed = svc_agent_removed_count(agent);
        if (removed < 0 || removed > (int64_t)n)
            problem(f, sid, rel, -1, "removed_count_range", false,
                    "removed_message_count %lld is outside 0..%zu", (long long)removed, n);
    }
    free(rel);
    json_object_put(agent);
    free(ids);
    free(mdir);
    free(mrel);
    return (int64_t)n;
}

/* The entries a session directory may hold besides locks and temp files. */
static const enum svc_file session_files[] = {
    SVC_F_SESSION, SVC_F_SIDECAR, SVC_F_TURNS,        SVC_F_TURNS_CORRUPT,
    SVC_F_MEMORY,  SVC_F_AGENTS,  SVC_F_MULTI_AGENTS, SVC_F_FEEDBACK,
};

/* Recount message_count under the session lock (the caller holds the run lock). */
static bool recount(struct fsck *f, const struct svc_sess *s, int64_t files)
{
    json_object *sc = NULL;
    struct svc_err err;
    bool ok = false;
    if (svc_sidecar_read(s, &sc, &err) == 0) {
        svc_json_set_int(sc, "message_count", files);
        ok = svc_sidecar_write(s, sc, SVC_SYNC_STORE, &err) == 0;
    }
    json_object_put(sc);
    return ok;
}

/* The JSON file `which` of session s checked (parse_file); *o as there (o may be NULL).
 * required: a missing file is a problem. */
static int parse_sess_file(struct fsck *f, const struct svc_sess *s, enum svc_file which,
                           json_object **o, bool required)
{
    char *abs = svc_sess_path(s, which, SVC_FROM_ABS);
    char *rel = svc_sess_path(s, which, SVC_FROM_ROOT);
    int rc = parse_file(f, s->sid, abs, rel, o);
    if (rc == 1 && required)
        problem(f, s->sid, rel, -1, "missing_file", false, "%s is missing", svc_layout_name(which));
    free(abs);
    free(rel);
    return rc;
}

struct multi_ctx {
    struct fsck *f;
    const char *sid;
};

/* A Swarm's or Graph's state file must be JSON (SPEC 17); svc never rewrites it. */
static void check_multi_agent(void *ctx, const char *id, const char *abs, const char *rel)
{
    struct multi_ctx *m = ctx;
    (void)id;
    parse_file(m->f, m->sid, abs, rel, NULL);
}

/* The entries of s's directory (which SVC_F_DIR: lock files, temp files, nothing unknown) or
 * of its agents directory (SVC_F_AGENTS: agent directories with their messages, temp files);
 * returns agent aid's message files (-1: it has no directory). */
static int64_t check_dir(struct fsck *f, const struct svc_sess *s, enum svc_file which,
                         const char *aid)
{
    int64_t count = -1;
    char *dir = svc_sess_path(s, which, SVC_FROM_ABS),
         *rel = svc_sess_path(s, which, SVC_FROM_ROOT);
    const char *apre = svc_layout_name(SVC_F_AGENT_DIR);
    size_t apl = strlen(apre);
    bool top = which == SVC_F_DIR;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *nm = de->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        char *fa = svc_path_join(dir, nm), *fr = svc_path_join(rel, nm);
        bool known = false;
        for (size_t i = 0; top && i < sizeof session_files / sizeof *session_files; i++)
            known = known || strcmp(nm, svc_layout_name(session_files[i])) == 0;
        struct stat sb;
        if (top && svc_layout_is_lock(nm)) {
            check_lock_file(f, s->sid, fa, fr);
        } else if (!top && strncmp(nm, apre, apl) == 0 && svc_layout_id_valid(nm + apl) &&
                   lstat(fa, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            int64_t n = check_agent(f, s, fa, fr);
            if (aid && strcmp(nm + apl, aid) == 0)
                count = n;
        } else if (is_temp(nm)) {
            check_temp(f, s->sid, fa, fr);
        } else if (!known) {
            problem(f, s->sid, fr, -1, "stray_file", false,
                    top ? "not a session file (left alone)"
                        : "not an agent directory (left alone)");
        }
        free(fa);
        free(fr);
    }
    if (d)
        closedir(d);
    free(dir);
    free(rel);
    return count;
}

/* A first run stopped before it stored a message (its `running` sidecar comes first, SPEC
 * 3): session.json or agent.json missing, no message file. A power cut leaves one (ext4
 * commits the directories' names before the files' data); nothing anyone wrote is in it. */
static bool unborn(struct svc_sess *s)
{
    int64_t *ids = NULL;
    size_t n = 0;
    if (svc_sess_message_ids(s, &ids, &n, NULL) != 0)
        return false;
    free(ids);
    char *sj = svc_sess_path(s, SVC_F_SESSION, SVC_FROM_ABS);
    char *aj = svc_sess_path(s, SVC_F_AGENT, SVC_FROM_ABS);
    struct stat sb;
    bool missing = n == 0 && (lstat(sj, &sb) != 0 || lstat(aj, &sb) != 0);
    free(sj);
    free(aj);
    return missing;
}

static void check_session(struct fsck *f, const char *sid)
{
    struct svc_sess s;
    if (svc_sess_open_store(&f->st, sid, &s, NULL) != 0)
        return;
    const char *dir = s.dir;
    char *scr = svc_sess_path(&s, SVC_F_SIDECAR, SVC_FROM_ROOT);
    json_object *sc = NULL;
    struct svc_err err;
    parse_sess_file(f, &s, SVC_F_SIDECAR, &sc, false);
    /* a stale run: repaired as the next reader would (it takes the lock on s) */
    if (sc && strcmp(svc_json_str(sc, "status", ""), "running") == 0 && !svc_lock_run_held(dir)) {
        bool fixed = f->repair && svc_run_repair(&s, &err) == 1;
        if (fixed)
            f->nstale++;
        problem(f, sid, scr, -1, "stale_run", fixed,
                "status running while no process holds the run lock%s",
                fixed ? " (repaired: error/interrupted)" : "");
        if (fixed) {
            json_object_put(sc);
            parse_sess_file(f, &s, SVC_F_SIDECAR, &sc, false);
        }
    }
    /* hold the run lock, then the session lock, as a run does */
    struct svc_lock runl = SVC_LOCK_INIT;
    bool live = f->repair
                    ? svc_lock_run_try(dir, &runl, &err) != 0 || svc_sess_lock(&s, true, &err) != 0
                    : svc_lock_run_held(dir);
    if (live)
        json_object_array_add(f->busy, json_object_new_string(sid));
    bool fix = f->repair && !live;
    if (sc && !live && unborn(&s)) {
        bool fixed = fix && svc_sess_ensure_natives(&s, SVC_SYNC_STORE, &err) == 0;
        problem(f, sid, scr, -1, "unborn_session", fixed,
                "a first run stopped before it stored a message: %s or %s missing, no "
                "message%s",
                svc_layout_name(SVC_F_SESSION), svc_layout_name(SVC_F_AGENT),
                fixed ? " (written fresh, as its next run would)" : "");
        if (!fixed)
            goto done;
    }

    parse_sess_file(f, &s, SVC_F_SESSION, NULL, sc != NULL);

    check_dir(f, &s, SVC_F_DIR, NULL);
    const char *aid = sc ? svc_json_str(sc, "agent_id", f->st.agent_id) : f->st.agent_id;
    int64_t count = check_dir(f, &s, SVC_F_AGENTS, aid);
    svc_sess_multi_agents(&s, check_multi_agent, &(struct multi_ctx){f, sid});

    /* the sidecar's count against the files (a live run changes both); fewer than the files
     * is no problem: another program (Strands) appended messages, and every reader counts
     * past the sidecar's number (store.h, svc_sess_message_count) */
    if (sc && !live) {
        int64_t have = svc_json_int(sc, "message_count", -1);
        int64_t files = count < 0 ? 0 : count;
        if (have > files || have < 0) {
            bool fixed = fix && recount(f, &s, files);
            problem(f, sid, scr, -1, "sidecar_count", fixed,
                    "message_count is %lld, the files hold %lld%s", (long long)have,
                    (long long)files, fixed ? " (recounted)" : "");
        }
    }
    char *tp = svc_sess_path(&s, SVC_F_TURNS, SVC_FROM_ABS);
    char *tr = svc_sess_path(&s, SVC_F_TURNS, SVC_FROM_ROOT);
    check_lines(f, sid, tp, tr, live, fix);
    free(tp);
    free(tr);
    parse_sess_file(f, &s, SVC_F_MEMORY, NULL, false);
    parse_sess_file(f, &s, SVC_F_FEEDBACK, NULL, false);
done:
    svc_sess_unlock(&s);
    svc_lock_release(&runl);
    json_object_put(sc);
    free(scr);
    svc_sess_close(&s);
}

/* <root>/.svc_runs: records, event files, idempotency keys, temp files. */
static void check_runs(struct fsck *f)
{
    char *dir = svc_layout_root_path(f->st.root, SVC_F_RUNS, NULL);
    char *id = NULL;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *nm = de->d_name;
        char *fa = svc_path_join(dir, nm), *fr = svc_path_join(svc_layout_name(SVC_F_RUNS), nm);
        free(id);
        id = NULL;
        if (nm[0] == '.') {
        } else if (is_temp(nm)) {
            check_temp(f, NULL, fa, fr);
        } else if ((id = svc_layout_run_id_of(nm, SVC_RUN_EVENTS))) {
            /* the runner holds <run>.lock while it appends */
            char *lp = svc_layout_run_path(f->st.root, id, SVC_RUN_LOCK);
            int fd = open(lp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            bool idle = fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0;
            check_lines(f, NULL, fa, fr, !idle, f->repair && idle);
            if (fd >= 0)
                close(fd);
            free(lp);
        } else if ((id = svc_layout_run_id_of(nm, SVC_RUN_RECORD)) && svc_file_is_empty(fa)) {
            /* a synchronous run's record is written without a sync (runs.c): a power cut
             * can leave it empty; its session's turn line keeps the run */
            bool fixed = f->repair && unlink(fa) == 0;
            problem(f, NULL, fr, -1, "empty_run_record", fixed,
                    "an empty run record (a power cut before it was written back)%s",
                    fixed ? " (removed)" : "");
        } else if (id) {
            json_object *rec = NULL;
            if (parse_file(f, NULL, fa, fr, &rec) == 0 && strncmp(nm, "idem-", 5) != 0 &&
                strcmp(svc_json_str(rec, "status", ""), "running") == 0) {
                const char *rid = svc_json_str(rec, "run_id", "");
                char *lp = svc_layout_run_path(f->st.root, rid, SVC_RUN_LOCK);
                int fd = svc_run_id_valid(rid) ? open(lp, O_RDWR | O_CLOEXEC) : -1;
                bool dead = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
                if (fd >= 0)
                    close(fd); /* svc_runs_get takes it again to finish the record */
                if (dead) {
                    json_object *fresh = NULL;
                    struct svc_err err;
                    bool fixed = f->repair && svc_runs_get(f->cfg, rid, &fresh, &err) == 0 &&
                                 strcmp(svc_json_str(fresh, "status", ""), "running") != 0;
                    json_object_put(fresh);
                    if (fixed)
                        f->nstale++;
                    problem(f, svc_json_str(rec, "session_id", NULL), fr, -1, "stale_run_record",
                            fixed, "run %s is recorded as running but its runner is gone%s", rid,
                            fixed ? " (finished as error/interrupted)" : "");
                }
                free(lp);
            }
            json_object_put(rec);
        }
        free(fa);
        free(fr);
    }
    if (d)
        closedir(d);
    free(id);
    free(dir);
}

/* <memory.root>/<agent>/memory.jsonl: lines as in svc_turns.jsonl; repaired under the
 * memory lock (<memory.root>/<agent>/.memory.lock) that memory sync appends under. */
static void check_memory(struct fsck *f)
{
    DIR *d = f->cfg->memory.root ? opendir(f->cfg->memory.root) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || !svc_layout_id_valid(de->d_name))
            continue;
        char *ad, *fa = svc_memory_file(f->cfg, de->d_name, &ad), *fr = NULL;
        svc_xasprintf(&fr, "memory/%s/memory.jsonl", de->d_name);
        int fd = f->repair ? svc_memory_lock(ad, LOCK_EX, NULL) : -1;
        check_lines(f, NULL, fa, fr, false, fd >= 0);
        if (fd >= 0)
            close(fd);
        free(ad);
        free(fa);
        free(fr);
    }
    if (d)
        closedir(d);
}

/* The sessions named (each must exist): 0, or -1 with err set. */
static int check_named(struct fsck *f, const struct svc_fsck_opts *o, struct svc_err *err)
{
    for (size_t i = 0; i < o->nsessions; i++) {
        if (svc_layout_id_check(o->sessions[i], err) != 0)
            return -1;
        if (!svc_store_session_exists(&f->st, o->sessions[i]))
            return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found",
                               o->sessions[i]);
    }
    for (size_t i = 0; i < o->nsessions; i++) {
        check_session(f, o->sessions[i]);
        f->nchecked++;
        if (o->progress)
            o->progress(o->ctx, i + 1, o->nsessions);
    }
    return 0;
}

/* Every session directory of the root, in id order: the names go through a temporary
 * database, so memory stays flat whatever the root's size. 0, or -1 with err set. */
static int check_all(struct fsck *f, const struct svc_fsck_opts *o, struct svc_err *err)
{
    DIR *d = opendir(f->st.root);
    if (!d)
        return errno == ENOENT ? 0 : svc_err_errno(err, "open the session root");
    struct svc_hostdb ids = {0};
    int rc = svc_hostdb_temp(&ids, "CREATE TABLE ids(id TEXT PRIMARY KEY) WITHOUT ROWID", 256, err);
    size_t total = 0, done = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        const char *sid = svc_layout_session_of(de->d_name);
        if (sid && (rc = svc_hostdb_run(&ids, "INSERT INTO ids VALUES (?1)", "s", sid)) == 0)
            total++;
    }
    closedir(d);
    if (rc != 0 && ids.db)
        svc_err_set(err, SVC_E_IO, "temporary database: %s", svc_hostdb_errmsg(&ids));
    sqlite3_stmt *walk = rc == 0 ? svc_hostdb_stmt(&ids, "SELECT id FROM ids ORDER BY id") : NULL;
    while (walk && sqlite3_step(walk) == SQLITE_ROW) {
        const char *sid = (const char *)sqlite3_column_text(walk, 0);
        if (svc_store_session_exists(&f->st, sid)) {
            check_session(f, sid);
            f->nchecked++;
        }
        if (o->progress)
            o->progress(o->ctx, ++done, total);
    }
    svc_hostdb_close(&ids);
    return rc;
}

/* The index check's walk of the directories, on the same bar as the sessions' check. */
static void index_progress(void *ctx, size_t done)
{
    const struct fsck *f = ctx;
    f->o->progress(f->o->ctx, done < (size_t)f->nchecked ? done : (size_t)f->nchecked,
                   (size_t)f->nchecked);
}

/* What belongs to the whole root: run records, memory, temporary files, the index. */
static void check_root(struct fsck *f)
{
    check_runs(f);
    check_memory(f);
    DIR *d = opendir(f->st.root);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        check_leftover(f, de->d_name);
        if (!is_temp(de->d_name))
            continue;
        char *fa = svc_path_join(f->st.root, de->d_name);
        check_temp(f, NULL, fa, de->d_name);
        free(fa);
    }
    if (d)
        closedir(d);
    char *lp = svc_layout_root_path(f->st.root, SVC_F_INDEX_LOCK, NULL);
    check_lock_file(f, NULL, lp, svc_layout_name(SVC_F_INDEX_LOCK));
    free(lp);
    char why[300] = "";
    svc_dirscan_progress_fn *pf = f->o->progress ? index_progress : NULL;
    if (svc_dirscan_verify(&f->st, why, sizeof why, pf, f) == 1) {
        struct svc_err ierr;
        bool fixed = f->repair && svc_index_rebuild(&f->st, &ierr) == 0 &&
                     svc_dirscan_verify(&f->st, why, sizeof why, pf, f) != 1;
        problem(f, NULL, svc_layout_name(SVC_F_INDEX), -1, "index", fixed, "%s%s", why,
                fixed ? " (rebuilt from the directories)" : "");
    }
}

int svc_fsck(const struct svc_config *cfg, const struct svc_fsck_opts *o, json_object **report,
             struct svc_err *err)
{
    *report = NULL;
    struct fsck f = {.cfg = cfg, .repair = o->repair, .o = o};
    svc_store_from_config(cfg, &f.st);
    f.problems = json_object_new_array();
    f.busy = json_object_new_array();
    if (o->nsessions ? check_named(&f, o, err) != 0 : check_all(&f, o, err) != 0) {
        json_object_put(f.problems);
        json_object_put(f.busy);
        return -1;
    }
    if (o->nsessions == 0)
        check_root(&f);
    json_object *r = svc_json_new_obj("root", f.st.root, NULL);
    svc_json_set(r, "repair", json_object_new_boolean(f.repair));
    svc_json_set_int(r, "sessions_checked", f.nchecked);
    svc_json_set(r, "busy", f.busy);
    svc_json_set(r, "problems", f.problems);
    json_object *c = json_object_new_object();
    svc_json_set_int(c, "problems", f.nproblems);
    svc_json_set_int(c, "repaired", f.nrepaired);
    svc_json_set_int(c, "left", f.nproblems - f.nrepaired);
    svc_json_set_int(c, "stale_runs_repaired", f.nstale);
    svc_json_set(r, "counts", c);
    *report = r;
    return 0;
}
