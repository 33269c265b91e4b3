#include "listdb.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "fold.h"
#include "hostdb.h"
#include "jsonx.h"
#include "labels.h"
#include "log.h"
#include "title.h"
#include "user.h"
#include "util.h"

#define SCHEMA "2"
/* A title search whose rarest trigrams are in this many titles walks the rows in order. */
#define FTS_FEW 2000
/* Titles read to judge a trigram (trigram_est); trigrams judged at most (rare_set). */
#define FTS_PROBE 64
#define FTS_PROBES 12
/* A trigram in more than 1 / FTS_COMMON of the titles is left out of a search (rare_set). */
#define FTS_COMMON 16

/* The filters' columns beside the summary; each index serves one filter's pages in listing
 * order (updated_at newest first, then id): O(page) rows a page. Folded titles have a
 * trigram table, rewritten only when a title changes. A process's own copy has the listing
 * order's index alone. */
#define TABLES                                                                                     \
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"                        \
    "CREATE TABLE IF NOT EXISTS s(sid TEXT NOT NULL UNIQUE, updated REAL NOT NULL,"                \
    " status TEXT NOT NULL, archived INT NOT NULL, pinned INT NOT NULL, owner TEXT, tags TEXT,"    \
    " title TEXT NOT NULL, msgs INT NOT NULL, seq INT NOT NULL, summary TEXT NOT NULL);"           \
    "CREATE INDEX IF NOT EXISTS s_u ON s(updated DESC, sid);"                                      \
    "INSERT OR IGNORE INTO meta VALUES ('schema', " SCHEMA "), ('gen', ''), ('ino', 0),"           \
    " ('offset', 0), ('root_mtime', 0), ('seq', 0), ('removed', 0);"
static const char file_tables[] = TABLES
    "CREATE INDEX IF NOT EXISTS s_a ON s(archived, updated DESC, sid);"
    "CREATE INDEX IF NOT EXISTS s_st ON s(status, updated DESC, sid);"
    "CREATE INDEX IF NOT EXISTS s_o ON s(owner, updated DESC, sid) WHERE owner IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS s_p ON s(updated DESC, sid) WHERE pinned;"
    "CREATE INDEX IF NOT EXISTS s_seq ON s(seq);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS t USING fts5(title, content='s', content_rowid='rowid',"
    " tokenize='trigram');"
    "CREATE TRIGGER IF NOT EXISTS s_ai AFTER INSERT ON s BEGIN"
    " INSERT INTO t(rowid, title) VALUES (new.rowid, new.title); END;"
    "CREATE TRIGGER IF NOT EXISTS s_ad AFTER DELETE ON s BEGIN"
    " INSERT INTO t(t, rowid, title) VALUES ('delete', old.rowid, old.title); END;"
    "CREATE TRIGGER IF NOT EXISTS s_au AFTER UPDATE OF title ON s"
    " WHEN old.title IS NOT new.title BEGIN"
    " INSERT INTO t(t, rowid, title) VALUES ('delete', old.rowid, old.title);"
    " INSERT INTO t(rowid, title) VALUES (new.rowid, new.title); END;";

/* The connection, with the pages' statements by their SQL (a combination of filters each). */
struct conn {
    struct svc_hostdb h;
    int64_t seq;  /* the change number inside a transaction, 0 when not read yet */
    bool reading; /* inside svc_listdb_read_begin's transaction */
    bool fts;     /* it has the title trigram table (a file; not a process's own copy) */
    struct {
        char *sql;
        sqlite3_stmt *st;
    } pages[8];
    unsigned pages_next;
};
/* This host's file, this process's own copy, and the one the calls address. */
static struct conn conns[2], *L = &conns[0];

void svc_listdb_select(bool own)
{
    L = &conns[own];
}

char *svc_listdb_path(const char *dir, const char *root)
{
    return svc_hostdb_path(dir, "listing", root, strlen(root));
}

static void pages_clear(bool finalize)
{
    for (size_t i = 0; i < sizeof L->pages / sizeof *L->pages; i++) {
        if (finalize)
            sqlite3_finalize(L->pages[i].st);
        free(L->pages[i].sql);
    }
}

void svc_listdb_close(void)
{
    pages_clear(true);
    svc_hostdb_close(&L->h);
    memset(L, 0, sizeof *L);
}

void svc_listdb_forget(void)
{
    pages_clear(false);
    memset(L, 0, sizeof *L);
}

static int64_t meta_int(const char *k)
{
    char *v = svc_hostdb_meta(&L->h, k);
    int64_t n = v ? strtoll(v, NULL, 10) : -1;
    free(v);
    return n;
}

static int meta_set_int(const char *k, int64_t v)
{
    return svc_hostdb_run(&L->h, "INSERT OR REPLACE INTO meta VALUES (?1, ?2)", "sl", k, v);
}

/* The kernel's boot_id ("" when unreadable; in test builds SVC_TEST_BOOT_ID: TESTING.md). */
static const char *boot_id(void)
{
    static char id[40];
    static bool read;
    if (!read) {
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (f && fgets(id, sizeof id, f))
            id[strcspn(id, "\n")] = '\0';
        if (f)
            fclose(f);
#ifdef SVC_TEST_HOOKS
        const char *t = getenv("SVC_TEST_BOOT_ID");
        if (t)
            snprintf(id, sizeof id, "%s", t);
#endif
        read = true;
    }
    return id;
}

/* The boot mark of a file whose every write reached the disk: it lives through a reboot. */
#define SEALED "sealed"

static int boot_set(const char *v)
{
    return svc_hostdb_run(&L->h, "INSERT OR REPLACE INTO meta VALUES ('boot', ?1)", "s", v);
}

/* Whether the file has this schema and was written in this boot or sealed: it is written
 * without fsync, so one that lived through a crash of the machine may be torn. */
static bool file_ok(void)
{
    char *schema = svc_hostdb_meta(&L->h, "schema"), *boot = svc_hostdb_meta(&L->h, "boot");
    bool ok = schema && strcmp(schema, SCHEMA) == 0 && boot &&
              (strcmp(boot, boot_id()) == 0 || strcmp(boot, SEALED) == 0);
    free(schema);
    free(boot);
    return ok;
}

/* A bounded page cache and no mmap: a worker keeps O(page) of it (SPEC 11). A rollback
 * journal, not WAL: a new database is renamed over the old one, and the old one's WAL file
 * would be taken for the new one's. */
#define PRAGMAS                                                                                    \
    "PRAGMA synchronous=OFF; PRAGMA mmap_size=0; PRAGMA cache_size=-1024;"                         \
    " PRAGMA temp_store=FILE; PRAGMA journal_mode="

int svc_listdb_open(const char *path, bool create)
{
    svc_listdb_close();
    if (!create && access(path, F_OK) != 0)
        return -1;
    /* a new file is written by one process, without a journal; a temporary one keeps its */
    const char *pragmas = create && path ? PRAGMAS "OFF" : PRAGMAS "DELETE";
    if (svc_hostdb_open(&L->h, path, create, NULL, pragmas) != 0 || (!create && !file_ok()) ||
        svc_hostdb_exec(&L->h, path ? file_tables : TABLES) != 0 ||
        (create && boot_set(boot_id()) != 0)) {
        svc_logf("index: the listing database %s cannot be used (%s)", path ? path : "(own)",
                 svc_hostdb_errmsg(&L->h));
        svc_listdb_close();
        return -1;
    }
    L->fts = path != NULL;
    return 0;
}

bool svc_listdb_current(const char *path)
{
    return svc_hostdb_current(&L->h, path);
}

int svc_listdb_read_begin(void)
{
    L->reading = !L->reading && svc_hostdb_run(&L->h, "BEGIN", "") == 0;
    return L->reading ? 0 : -1;
}

void svc_listdb_read_end(void)
{
    if (!L->reading)
        return;
    L->reading = false;
    if (svc_hostdb_run(&L->h, "COMMIT", "") != 0)
        svc_listdb_rollback();
}

/* A write on a sealed file first puts the boot mark back, synced (synchronous=OFF orders
 * nothing), so that a crash cannot leave a torn file marked sealed. */
static int unseal(void)
{
    static const char synced[] =
        "PRAGMA synchronous=FULL; COMMIT; PRAGMA synchronous=OFF; BEGIN IMMEDIATE";
    if (svc_hostdb_int(&L->h, "SELECT v = '" SEALED "' FROM meta WHERE k = 'boot'", 0) != 1)
        return 0;
    return boot_set(boot_id()) == 0 && svc_hostdb_exec(&L->h, synced) == 0 ? 0 : -1;
}

int svc_listdb_begin(void)
{
    svc_listdb_read_end();
    L->seq = 0;
    if (svc_hostdb_exec(&L->h, "BEGIN IMMEDIATE") != 0)
        return -1;
    if (unseal() == 0)
        return 0;
    svc_listdb_rollback();
    return -1;
}

int svc_listdb_seal(const char *path)
{
    if (svc_listdb_open(path, false) != 0)
        return -1;
    int fd = -1;
    int rc = svc_hostdb_exec(&L->h, "PRAGMA synchronous=FULL; BEGIN IMMEDIATE") == 0 &&
                     (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0 && fsync(fd) == 0 &&
                     boot_set(SEALED) == 0 && svc_hostdb_exec(&L->h, "COMMIT") == 0
                 ? 0
                 : -1;
    if (fd >= 0)
        close(fd);
    svc_listdb_rollback();
    svc_listdb_close();
    return rc;
}

int svc_listdb_commit(void)
{
    L->seq = 0;
    return svc_hostdb_exec(&L->h, "COMMIT");
}

void svc_listdb_rollback(void)
{
    L->seq = 0;
    L->reading = false;
    if (L->h.db && !sqlite3_get_autocommit(L->h.db))
        svc_hostdb_exec(&L->h, "ROLLBACK");
}

int svc_listdb_pos_get(struct svc_listdb_pos *p)
{
    sqlite3_stmt *st;
    memset(p, 0, sizeof p[0]);
    p->offset = -1;
    if (svc_hostdb_step(&L->h, &st,
                        "SELECT (SELECT v FROM meta WHERE k = 'gen'), (SELECT v FROM meta WHERE k ="
                        " 'ino'), coalesce((SELECT v FROM meta WHERE k = 'offset'), -1), (SELECT v"
                        " FROM meta WHERE k = 'root_mtime')",
                        "") == SQLITE_ROW) {
        const char *gen = (const char *)sqlite3_column_text(st, 0);
        snprintf(p->gen, sizeof p->gen, "%s", gen ? gen : "");
        p->ino = (uint64_t)sqlite3_column_int64(st, 1);
        p->offset = sqlite3_column_int64(st, 2);
        p->root_mtime = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    return p->offset < 0 ? -1 : 0;
}

int svc_listdb_pos_set(const struct svc_listdb_pos *p)
{
    if (svc_hostdb_run(&L->h, "INSERT OR REPLACE INTO meta VALUES ('gen', ?1)", "s", p->gen) == 0 &&
        meta_set_int("ino", (int64_t)p->ino) == 0 && meta_set_int("offset", p->offset) == 0 &&
        meta_set_int("root_mtime", p->root_mtime) == 0)
        return 0;
    return -1;
}

/* The next change number; a new database starts from the clock (µs), above older marks. */
static int64_t next_seq(void)
{
    int64_t seq = L->seq > 0 ? L->seq : meta_int("seq");
    if (seq <= 0) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        seq = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
        meta_set_int("removed", seq);
        meta_set_int("born", seq); /* which database counted (struct svc_list_mark) */
    }
    meta_set_int("seq", ++seq);
    L->seq = seq;
    return seq;
}

static int put_row(const char *sid, json_object *sum, const char *raw, size_t rawlen)
{
    static const char q[] =
        "INSERT INTO s(sid, updated, status, archived, pinned, owner, tags, title, msgs, seq,"
        " summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT(sid) DO"
        " UPDATE SET updated = ?2, status = ?3, archived = ?4, pinned = ?5, owner = ?6,"
        " tags = ?7, title = ?8, msgs = ?9, seq = ?10, summary = ?11";
    int64_t seq = next_seq();
    double t = 0;
    svc_time_parse_iso(svc_json_str(sum, "updated_at", ""), &t);
    char *title = svc_fold(svc_title_search_text(sum));
    char *tags = svc_labels_tags_joined(svc_json_arr(sum, "tags"));
    char *text = raw ? NULL : svc_json_dump_compact(sum);
    int rc = svc_hostdb_run(&L->h, q, "sdsiisssllt", sid, t, svc_json_str(sum, "status", "idle"),
                            (int)svc_json_bool(sum, "archived", false),
                            (int)svc_json_bool(sum, "pinned", false), svc_user_owner(sum), tags,
                            title ? title : "", svc_json_int(sum, "message_count", -1), seq,
                            raw ? raw : text, raw ? (int)rawlen : -1);
    free(title);
    free(tags);
    free(text);
    return rc;
}

int svc_listdb_put(const char *sid, json_object *summary, const char *text, size_t len)
{
    if (summary)
        return put_row(sid, summary, text, len);
    int rc = svc_hostdb_run(&L->h, "DELETE FROM s WHERE sid = ?1", "s", sid);
    if (rc == 0 && sqlite3_changes(L->h.db) > 0)
        rc = meta_set_int("removed", next_seq());
    return rc;
}

int svc_listdb_has(const char *sid)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&L->h, &st, "SELECT 1 FROM s WHERE sid = ?1", "s", sid);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The page's SQL for q's filters (parameters as svc_listdb_page binds them): the rows walked in
 * listing order until the page is full, or a selective title search's candidates (fts)
 * sorted ('+' keeps the planner off the other indexes). */
static void page_sql(struct svc_buf *b, const struct svc_list_query *q, const char *qlc, bool after,
                     bool fts)
{
    const char *x = fts ? "+" : "";
    svc_buf_adds(b, "SELECT sid, summary, status, msgs, updated FROM s WHERE 1");
    if (q->archived_only)
        svc_buf_printf(b, " AND %sarchived = 1", x);
    else if (!q->include_archived)
        svc_buf_printf(b, " AND %sarchived = 0", x);
    if (q->status && *q->status)
        svc_buf_printf(b, " AND %sstatus = ?1", x);
    if (q->owner)
        svc_buf_printf(b, " AND %sowner = ?2", x);
    if (q->pinned && *q->pinned)
        svc_buf_printf(b, strcmp(q->pinned, "true") == 0 ? " AND %spinned" : " AND NOT %spinned",
                       x);
    if (qlc)
        svc_buf_adds(b, " AND instr(title, ?3) > 0");
    if (fts) /* the trigram table's candidates (fts_candidates) */
        svc_buf_adds(b, " AND rowid IN (SELECT value FROM json_each(?4))");
    for (size_t i = 0; i < q->ntags; i++)
        svc_buf_printf(b, " AND instr(tags, ?%zu) > 0", 10 + i);
    if (after)
        svc_buf_printf(b, " AND (%supdated < ?5 OR (%supdated = ?5 AND sid > ?6))", x, x);
    svc_buf_printf(b, " ORDER BY %supdated DESC, sid LIMIT ?7", x);
}

/* w (n bytes) as an FTS5 string: quoted, a '"' doubled. */
static void fts_quote(struct svc_buf *b, const char *w, size_t n)
{
    svc_buf_adds(b, "\"");
    for (size_t i = 0; i < n; i++)
        svc_buf_printf(b, w[i] == '"' ? "\"\"" : "%c", w[i]);
    svc_buf_adds(b, "\"");
}

/* A title search's bounds (in test builds SVC_TEST_FTS_FEW=<n>: TESTING.md), the titles and
 * the page's rows. */
struct fts_lim {
    int64_t few, probe, rows, limit;
    double common; /* a trigram in this many titles or more is common */
};

static struct fts_lim fts_lim(int limit)
{
    struct fts_lim l = {FTS_FEW, FTS_PROBE, svc_hostdb_int(&L->h, "SELECT max(rowid) FROM s", 0),
                        limit, 0};
    l.common = (double)l.rows / FTS_COMMON;
#ifdef SVC_TEST_HOOKS
    const char *v = getenv("SVC_TEST_FTS_FEW");
    if (v && atoi(v) >= 2) {
        l.few = atoi(v);
        l.probe = l.few / 2;
        l.common = (double)l.few;
    }
#endif
    return l;
}

/* Whether m titles are better sorted than walked: fewer than few and than a walk would read. */
static bool fts_few(double m, struct fts_lim l)
{
    return m < (double)l.few && m * m < (double)l.limit * (double)l.rows;
}

/* The rowids of the titles matching FTS5 query m as a JSON array when fts_few, else NULL. */
static char *fts_rowids(const char *m, struct fts_lim l)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&L->h, &st, "SELECT rowid FROM t WHERE t MATCH ?1 LIMIT ?2", "sl", m,
                             l.few);
    int64_t *v = svc_xcalloc((size_t)l.few + 1, sizeof *v), n = 0;
    for (; rc == SQLITE_ROW && n < l.few; rc = sqlite3_step(st))
        v[n++] = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    char *json = NULL;
    if (rc == SQLITE_DONE && fts_few((double)n, l)) {
        struct svc_buf b;
        svc_buf_init(&b);
        svc_buf_adds(&b, "[");
        for (int64_t i = 0; i < n; i++)
            svc_buf_printf(&b, i ? ",%lld" : "%lld", (long long)v[i]);
        svc_buf_adds(&b, "]");
        json = svc_buf_steal(&b);
    }
    free(v);
    return json;
}

/* One of q's trigrams (p, n bytes) and about how many titles hold it. */
struct trigram {
    const char *p;
    size_t n;
    double est;
};

/* t's estimate out of rows titles: exact below probe, else from how close its first probe
 * titles' rowids lie (one read, not a count to few). */
static void trigram_est(struct trigram *t, int64_t rows, int64_t probe)
{
    sqlite3_stmt *st;
    struct svc_buf b;
    svc_buf_init(&b);
    fts_quote(&b, t->p, t->n);
    t->est = (double)rows;
    if (svc_hostdb_step(&L->h, &st,
                        "SELECT count(*), min(r), max(r) FROM"
                        " (SELECT rowid AS r FROM t WHERE t MATCH ?1 LIMIT ?2)",
                        "sl", b.data, probe) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0);
        int64_t span = sqlite3_column_int64(st, 2) - sqlite3_column_int64(st, 1) + 1;
        t->est = c < probe ? (double)c : (double)probe * (double)rows / (double)span;
    }
    sqlite3_reset(st);
    svc_buf_free(&b);
}

/* The end of the trigram starting at p (three code points), NULL when p has fewer. */
static const char *trigram_end(const char *p)
{
    for (int k = 0; k < 3; k++) {
        if (!*p)
            return NULL;
        for (p++; (*p & 0xC0) == 0x80; p++)
            ;
    }
    return p;
}

/* The trigrams of q judged so far (at most FTS_PROBES) and which of them a search asks for. */
struct trigram_set {
    struct trigram t[FTS_PROBES];
    bool keep[FTS_PROBES];
    int n, kept;
    double expect; /* titles expected to hold every kept one, as if independent */
};

/* Judge q's trigram at p once, kept unless common; whether the set is done (the kept ones
 * expected together in under one title, or one in none). */
static bool judge(struct trigram_set *s, const char *p, struct fts_lim l)
{
    struct trigram t = {p, (size_t)(trigram_end(p) - p), 0};
    for (int k = 0; k < s->n; k++)
        if (s->t[k].n == t.n && memcmp(s->t[k].p, t.p, t.n) == 0)
            return false;
    trigram_est(&t, l.rows, l.probe);
    int k = s->n++;
    s->t[k] = t;
    if (t.est < l.common) {
        s->keep[k] = true;
        s->kept++;
        s->expect *= t.est / (double)(l.rows > 0 ? l.rows : 1);
    }
    return t.est < 1 || (s->kept > 0 && s->expect < 1) || s->n == FTS_PROBES;
}

/* With no trigram of q uncommon, its two rarest: their titles counted then decide. */
static void keep_two_rarest(struct trigram_set *s)
{
    for (int pass = 0; pass < 2 && s->kept < s->n; pass++) {
        int r = -1;
        for (int k = 0; k < s->n; k++)
            if (!s->keep[k] && (r < 0 || s->t[k].est < s->t[r].est))
                r = k;
        s->keep[r] = true;
        s->kept++;
    }
}

/* The trigrams of q a search asks for: every third from the last back (they cover q; a
 * query's end is often its telling part: "session 47"), then when not yet telling the ones
 * between. Common ones are left out unless none is uncommon (keep_two_rarest). */
static void rare_set(const char *qlc, struct fts_lim l, struct trigram_set *s)
{
    const char **at = svc_xcalloc(strlen(qlc) + 1, sizeof *at); /* where each trigram starts */
    size_t n = 0;
    for (const char *p = qlc; trigram_end(p); n++) {
        at[n] = p;
        for (p++; (*p & 0xC0) == 0x80; p++) /* the next code point */
            ;
    }
    s->expect = (double)l.rows;
    bool done = false;
    for (size_t i = n; i > 0 && !done; i = i > 3 ? i - 3 : i > 1 ? 1 : 0)
        done = judge(s, at[i - 1], l);
    for (size_t i = n; i > 0 && !done && s->kept > 0; i--)
        if ((n - i) % 3 != 0)
            done = judge(s, at[i - 1], l);
    if (s->kept == 0 && s->n > 0)
        keep_two_rarest(s);
    free(at);
}

/* The titles holding every trigram rare_set keeps, as fts_rowids' array when few, else NULL.
 * The page's instr() keeps only the titles holding q: the choice changes the speed only. */
static char *fts_candidates(const char *qlc, int limit)
{
    struct fts_lim l = fts_lim(limit);
    struct trigram_set s = {.n = 0};
    rare_set(qlc, l, &s);
    if (s.kept == 0)
        return NULL;
    struct svc_buf b;
    svc_buf_init(&b);
    for (int k = 0; k < s.n; k++)
        if (s.keep[k]) {
            if (b.len)
                svc_buf_adds(&b, " ");
            fts_quote(&b, s.t[k].p, s.t[k].n);
        }
    char *rowids = fts_rowids(b.data, l);
    svc_buf_free(&b);
    return rowids;
}

/* The statement of a page's SQL (consumed), prepared once while it is asked for. */
static sqlite3_stmt *page_stmt(struct svc_buf *sql)
{
    for (size_t i = 0; i < sizeof L->pages / sizeof *L->pages; i++)
        if (L->pages[i].sql && strcmp(L->pages[i].sql, sql->data) == 0) {
            svc_buf_free(sql);
            return L->pages[i].st;
        }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(L->h.db, sql->data, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) !=
        SQLITE_OK) {
        svc_buf_free(sql);
        return NULL;
    }
    unsigned k = L->pages_next++ % (sizeof L->pages / sizeof *L->pages);
    sqlite3_finalize(L->pages[k].st);
    free(L->pages[k].sql);
    L->pages[k].sql = svc_buf_steal(sql);
    L->pages[k].st = st;
    return st;
}

int svc_listdb_page(const struct svc_list_page *p, struct svc_list_row **rows, int *n)
{
    const struct svc_list_query *q = p->q;
    const char *qlc = p->qlc, *csid = p->csid;
    int limit = p->limit;
    *rows = NULL;
    *n = 0;
    if (!L->h.db || q->ntags > SVC_TAGS_MAX)
        return -1;
    char *rowids = L->fts && qlc && svc_utf8_len(qlc) >= 3 ? fts_candidates(qlc, limit) : NULL;
    struct svc_buf sql;
    svc_buf_init(&sql);
    page_sql(&sql, q, qlc, csid != NULL, rowids != NULL);
    sqlite3_stmt *st = page_stmt(&sql);
    if (!st) {
        free(rowids);
        return -1;
    }
    int rc;
    char needles[SVC_TAGS_MAX][SVC_TAG_LEN_MAX * 4 + 3];
    sqlite3_bind_text(st, 1, q->status, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, q->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, qlc, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, rowids, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, p->cu);
    sqlite3_bind_text(st, 6, csid, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, limit);
    for (size_t i = 0; i < q->ntags; i++) {
        snprintf(needles[i], sizeof needles[i], "\x1f%s\x1f", q->tags[i]);
        sqlite3_bind_text(st, (int)(10 + i), needles[i], -1, SQLITE_STATIC);
    }
    struct svc_list_row *v = svc_xcalloc((size_t)limit + 1, sizeof *v);
    int k = 0;
    while (k < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        v[k].sid = svc_xstrdup((const char *)sqlite3_column_text(st, 0));
        v[k].summary = svc_json_new_raw_len((const char *)sqlite3_column_text(st, 1),
                                            (size_t)sqlite3_column_bytes(st, 1));
        const char *status = (const char *)sqlite3_column_text(st, 2);
        strncpy(v[k].status, status ? status : "", sizeof v[k].status - 1); /* calloc'd */
        v[k].msgs = sqlite3_column_int64(st, 3);
        v[k].updated = sqlite3_column_double(st, 4);
        k++;
    }
    bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    free(rowids);
    *rows = v;
    *n = k;
    return ok ? 0 : -1;
}

json_object *svc_listdb_summary(const char *sid)
{
    return svc_hostdb_object(&L->h, "SELECT summary FROM s WHERE sid = ?1", sid);
}

int64_t svc_listdb_count(void)
{
    return svc_hostdb_int(&L->h, "SELECT count(*) FROM s", -1);
}

int svc_listdb_rows(svc_journal_emit_fn *fn, void *ctx)
{
    sqlite3_stmt *st;
    int frc = 0, rc = svc_hostdb_step(&L->h, &st,
                                      "SELECT sid, summary FROM s ORDER BY updated DESC, sid", "");
    for (; rc == SQLITE_ROW && frc == 0; rc = sqlite3_step(st))
        frc = fn(ctx, (const char *)sqlite3_column_text(st, 0),
                 (const char *)sqlite3_column_text(st, 1));
    sqlite3_reset(st);
    return frc != 0 ? frc : rc == SQLITE_DONE ? 0 : -1;
}

int svc_listdb_optimize(void)
{
    return svc_hostdb_exec(&L->h, "INSERT INTO t(t) VALUES ('optimize')");
}

int svc_listdb_each(struct svc_list_mark *mark, svc_index_each_fn *fn, void *ctx)
{
    int64_t seq = meta_int("seq"), removed = meta_int("removed"), born = meta_int("born");
    if (seq < 0 || removed < 0)
        return -1;
    if (mark->copy == (uint64_t)born && mark->seq == (uint64_t)seq && seq > 0)
        return 0;
    bool whole =
        mark->copy != (uint64_t)born || (uint64_t)removed > mark->seq || mark->seq > (uint64_t)seq;
    sqlite3_stmt *st;
    int rc =
        svc_hostdb_step(&L->h, &st, "SELECT sid, updated, msgs, archived FROM s WHERE seq > ?1",
                        "l", whole ? 0 : (int64_t)mark->seq);
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st))
        fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_double(st, 1),
           sqlite3_column_int64(st, 2), sqlite3_column_int(st, 3) != 0);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    *mark = (struct svc_list_mark){(uint64_t)born, (uint64_t)(seq > 0 ? seq : 1)};
    return whole ? 1 : 0;
}

int svc_listdb_diff_names(char *const *names, size_t n,
                          void (*fn)(void *ctx, const char *sid, bool gone), void *ctx)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&L->h, &st, "SELECT sid FROM s ORDER BY sid", "");
    size_t i = 0;
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        const char *row = (const char *)sqlite3_column_text(st, 0);
        int c = -1;
        while (i < n && (c = strcmp(names[i], row)) < 0)
            fn(ctx, names[i++], false);
        if (c == 0)
            i++;
        else
            fn(ctx, row, true);
    }
    sqlite3_reset(st);
    while (rc == SQLITE_DONE && i < n)
        fn(ctx, names[i++], false);
    return rc == SQLITE_DONE ? 0 : -1;
}
