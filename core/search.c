#include "search.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unictype.h>
#include <unistd.h>
#include <unistr.h>

#include "chain.h"
#include "fold.h"
#include "fsio.h"
#include "hostdb.h"
#include "index.h"
#include "jsonx.h"
#include "log.h"
#include "openai.h"
#include "store.h"
#include "user.h"
#include "util.h"

/* Bump when the tables or the tokenizer change: an index of another schema is rebuilt. */
#define SCHEMA "svc-search-4"
/* A message row's rowid is doc << MID_BITS | message id (a session's rows are one range). */
#define MID_BITS 24
#define TERMS_MAX 32
/* The newest WINDOW matches are ranked, a word's messages counted to DF_MAX (DECISIONS.md). */
#define WINDOW 100
#define DF_MAX 200
#define OFFSET_MAX WINDOW
/* Sessions indexed per transaction while catching up (others may write in between). */
#define BATCH 200

/* What this process knows the index holds per session, to catch up without reading it. */
struct memo {
    char *sid;
    double updated;
    int64_t msgs;
    uint64_t walk; /* the last walk of the listing that named it */
};

static struct {
    struct svc_hostdb h;
    char *path; /* NULL: a temporary index for one request (sessions.cache off) */
    char *root, *agent;
    struct memo *v; /* open addressing, cap a power of two */
    size_t n, cap;
    bool loaded;     /* the memo was read from the file */
    char gen[17];    /* the file's generation then (svc search --rebuild makes a new one) */
    int64_t version; /* PRAGMA data_version when the generation was last looked at */
    struct svc_list_mark mark; /* the listing's (index.h) when the index last caught up with it */
    uint64_t walk;             /* walks of the listing */
    bool removed;              /* db_fail threw a damaged file away: worth one more try */
    char *sees_sid; /* svc_sees's last answer in this query (a page: many rows of a session) */
    bool sees;
} S;

/* ---- the tokenizer: unicode61's words, each folded like a title (fold.h) ---- */

struct fold_tok {
    fts5_tokenizer inner;
    Fts5Tokenizer *inst;
};

struct fold_ctx {
    void *ctx;
    int (*token)(void *, int, const char *, int, int, int);
    const char *text;
};

static int fold_token(void *p, int flags, const char *tok, int ntok, int start, int end)
{
    struct fold_ctx *c = p;
    const char *w = c->text + start;
    size_t n = (size_t)(end - start);
    char small[64];
    bool ascii = n < sizeof small;
    for (size_t i = 0; ascii && i < n; i++)
        ascii = (unsigned char)w[i] < 0x80;
    if (ascii) { /* the common case without an allocation */
        for (size_t i = 0; i < n; i++)
            small[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
        return c->token(c->ctx, flags, small, (int)n, start, end);
    }
    char *raw = svc_xstrndup(w, n);
    char *f = svc_fold(raw);
    int rc = c->token(c->ctx, flags, f, (int)strlen(f), start, end);
    free(f);
    free(raw);
    return rc;
}

static int fold_tokenize(Fts5Tokenizer *t, void *ctx, int flags, const char *text, int ntext,
                         int (*token)(void *, int, const char *, int, int, int))
{
    struct fold_tok *ft = (struct fold_tok *)t;
    struct fold_ctx c = {.ctx = ctx, .token = token, .text = text};
    return ft->inner.xTokenize(ft->inst, &c, flags, text, ntext, fold_token);
}

static int fold_create(void *api_ptr, const char **argv, int argc, Fts5Tokenizer **out)
{
    fts5_api *api = api_ptr;
    struct fold_tok *ft = svc_xcalloc(1, sizeof *ft);
    void *ud = NULL;
    const char *args[] = {"remove_diacritics", "0"};
    int rc = api->xFindTokenizer(api, "unicode61", &ud, &ft->inner);
    if (rc == SQLITE_OK)
        rc = ft->inner.xCreate(ud, args, 2, &ft->inst);
    if (rc != SQLITE_OK) {
        free(ft);
        return rc;
    }
    *out = (Fts5Tokenizer *)ft;
    return SQLITE_OK;
}

static void fold_delete(Fts5Tokenizer *t)
{
    struct fold_tok *ft = (struct fold_tok *)t;
    ft->inner.xDelete(ft->inst);
    free(ft);
}

/* ---- the ranking: bm25 whose word counts stop at DF_MAX (fts5's own reads every match) ---- */

struct rank_data {
    int nphrase;
    double avgdl;
    double *idf;
};

/* A phrase's messages, counted in rowid order up to DF_MAX. */
struct df {
    int64_t n, first, last; /* count, rowids of the first and last counted */
};

static int count_hit(const Fts5ExtensionApi *api, Fts5Context *fts, void *p)
{
    struct df *c = p;
    c->last = api->xRowid(fts);
    if (c->n++ == 0)
        c->first = c->last;
    return c->n >= DF_MAX ? SQLITE_DONE : SQLITE_OK; /* DONE: stop, no error */
}

/* A phrase's messages: counted to DF_MAX, then estimated from the sessions those took. */
static double phrase_hits(const Fts5ExtensionApi *api, Fts5Context *fts, int i, int64_t rows,
                          int *rc)
{
    struct df c = {0};
    *rc = api->xQueryPhrase(fts, i, &c, count_hit);
    if (c.n < DF_MAX)
        return (double)c.n;
    int64_t first = c.first >> MID_BITS, took = (c.last >> MID_BITS) - first + 1;
    int64_t all = svc_hostdb_int(&S.h, "SELECT max(doc) FROM docs", 0) - first + 1;
    double est = all > took ? (double)c.n * (double)all / (double)took : (double)c.n;
    return est < (double)rows ? est : (double)rows;
}

static void rank_data_free(void *p)
{
    struct rank_data *d = p;
    free(d->idf);
    free(d);
}

/* Per query: the mean message length and each phrase's bm25 weight (n estimated past DF_MAX). */
static struct rank_data *rank_data(const Fts5ExtensionApi *api, Fts5Context *fts, int *rc)
{
    struct rank_data *d = api->xGetAuxdata(fts, 0);
    if (d)
        return d;
    sqlite3_int64 rows = 0, tokens = 0;
    *rc = api->xRowCount(fts, &rows);
    if (*rc == SQLITE_OK)
        *rc = api->xColumnTotalSize(fts, 0, &tokens);
    d = svc_xcalloc(1, sizeof *d);
    d->nphrase = api->xPhraseCount(fts);
    d->avgdl = rows > 0 ? (double)tokens / (double)rows : 1;
    d->idf = svc_xcalloc((size_t)d->nphrase + 1, sizeof *d->idf);
    for (int i = 0; *rc == SQLITE_OK && i < d->nphrase; i++) {
        double hits = phrase_hits(api, fts, i, rows, rc);
        double idf = log(((double)rows - hits + 0.5) / (hits + 0.5));
        d->idf[i] = idf > 0.01 ? idf : 0.01; /* fts5's 1e-6 is below the rank's resolution */
    }
    if (*rc == SQLITE_OK)
        *rc = api->xSetAuxdata(fts, d, rank_data_free);
    else
        rank_data_free(d);
    return *rc == SQLITE_OK ? d : NULL;
}

/* svcrank(msgs): -bm25 (k1 1.2, b 0.75); of equal scores the session indexed last first. */
static void svcrank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
                    sqlite3_value **val)
{
    int rc = SQLITE_OK, ninst = 0, len = 0;
    struct rank_data *d = rank_data(api, fts, &rc);
    double freq[TERMS_MAX + 1] = {0}, score = 0;
    if (rc == SQLITE_OK)
        rc = api->xInstCount(fts, &ninst);
    for (int i = 0; rc == SQLITE_OK && i < ninst; i++) {
        int phrase = 0, col = 0, off = 0;
        rc = api->xInst(fts, i, &phrase, &col, &off);
        if (rc == SQLITE_OK && phrase >= 0 && phrase <= TERMS_MAX)
            freq[phrase] += 1;
    }
    if (rc == SQLITE_OK)
        rc = api->xColumnSize(fts, 0, &len);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    double norm = 1.2 * (0.25 + 0.75 * (double)len / d->avgdl);
    for (int i = 0; i < d->nphrase && i <= TERMS_MAX; i++)
        score += d->idf[i] * freq[i] * 2.2 / (freq[i] + norm);
    /* the score to 2^-20, and below that the session number (< 2^22) to order the ties */
    double doc = (double)((api->xRowid(fts) >> MID_BITS) & 0x3fffff);
    sqlite3_result_double(ctx, -(floor(score * 0x1p20 + 0.5) + doc / 0x1p22) / 0x1p20);
}

/* svc_sees(owner, sid): whether owner sees session sid, by its listed summary (SPEC 14). */
static void sql_sees(sqlite3_context *ctx, int n, sqlite3_value **v)
{
    const char *owner = (const char *)sqlite3_value_text(v[0]);
    const char *sid = (const char *)sqlite3_value_text(v[1]);
    if (!owner || !sid) {
        sqlite3_result_int(ctx, 0);
        return;
    }
    if (!S.sees_sid || strcmp(S.sees_sid, sid) != 0) {
        json_object *sum = svc_index_summary(sid);
        free(S.sees_sid);
        S.sees_sid = svc_xstrdup(sid);
        S.sees = sum && svc_user_sees(owner, sum);
        json_object_put(sum);
    }
    sqlite3_result_int(ctx, S.sees);
}

/* ---- the snippet: SNIP_WORDS words around the best cluster of matches, one tokenizing ---- */

#define SNIP_WORDS 16

struct snip {
    int lo, from; /* words kept from lo on; shown from `from` on */
    int words;    /* words seen */
    bool cut;     /* words after the window */
    int start[2 * SNIP_WORDS], end[2 * SNIP_WORDS]; /* bytes of words lo.. */
    unsigned char hit[2 * SNIP_WORDS];              /* which of them matched */
};

/* The window holding the most matches, from two words before the first; SNIP_WORDS words
 * before it are kept too, for a text that ends early. */
static int snip_window(const Fts5ExtensionApi *api, Fts5Context *fts, struct snip *sn)
{
    int ninst = 0, best = -1, rc = api->xInstCount(fts, &ninst);
    for (int i = 0; rc == SQLITE_OK && i < ninst; i++) {
        int ph, col, off, n = 0;
        rc = api->xInst(fts, i, &ph, &col, &off);
        int from = off > 2 ? off - 2 : 0;
        for (int k = 0; rc == SQLITE_OK && k < ninst; k++) {
            int ph2, col2, off2;
            rc = api->xInst(fts, k, &ph2, &col2, &off2);
            n += col2 == 0 && off2 >= from && off2 < from + SNIP_WORDS;
        }
        if (col == 0 && n > best)
            best = n, sn->from = from;
    }
    sn->lo = sn->from > SNIP_WORDS ? sn->from - SNIP_WORDS : 0;
    for (int i = 0; rc == SQLITE_OK && i < ninst; i++) {
        int ph, col, off;
        rc = api->xInst(fts, i, &ph, &col, &off);
        for (int w = off; rc == SQLITE_OK && col == 0 && w < off + api->xPhraseSize(fts, ph); w++)
            if (w >= sn->lo && w < sn->lo + 2 * SNIP_WORDS)
                sn->hit[w - sn->lo] = 1;
    }
    return rc;
}

static int snip_word(void *p, int flags, const char *tok, int ntok, int start, int end)
{
    struct snip *sn = p;
    if (flags & FTS5_TOKEN_COLOCATED)
        return SQLITE_OK;
    int w = sn->words++;
    if (w >= sn->from + SNIP_WORDS) {
        sn->cut = true;
        return SQLITE_DONE; /* stop: the rest is not shown */
    }
    if (w >= sn->lo) {
        sn->start[w - sn->lo] = start;
        sn->end[w - sn->lo] = end;
    }
    return SQLITE_OK;
}

/* The words shown, the text between them as it is, ** around each run of matched words. */
static char *snip_render(const struct snip *sn, const char *text, int n, int *len)
{
    struct svc_buf b;
    svc_buf_init(&b);
    int last = sn->words < sn->from + SNIP_WORDS ? sn->words : sn->from + SNIP_WORDS;
    if (sn->from > 0)
        svc_buf_adds(&b, "…");
    for (int w = sn->from; w < last; w++) {
        int k = w - sn->lo;
        if (w > sn->from)
            svc_buf_add(&b, text + sn->end[k - 1], (size_t)(sn->start[k] - sn->end[k - 1]));
        if (sn->hit[k] && (w == sn->from || !sn->hit[k - 1]))
            svc_buf_adds(&b, "**");
        svc_buf_add(&b, text + sn->start[k], (size_t)(sn->end[k] - sn->start[k]));
        if (sn->hit[k] && (w + 1 == last || !sn->hit[k + 1]))
            svc_buf_adds(&b, "**");
    }
    if (sn->cut)
        svc_buf_adds(&b, "…");
    else if (last > sn->from) /* the text after the last word (a '?') */
        svc_buf_add(&b, text + sn->end[last - 1 - sn->lo],
                    (size_t)(n - sn->end[last - 1 - sn->lo]));
    *len = (int)b.len;
    return svc_buf_steal(&b);
}

/* svcsnip(msgs): SNIP_WORDS words around the matches, matched ones in **, … where cut (fts5's
 * snippet() tokenizes the text twice). */
static void svcsnip(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
                    sqlite3_value **val)
{
    struct snip sn = {0};
    const char *text = NULL;
    int n = 0, rc = api->xColumnText(fts, 0, &text, &n);
    if (rc == SQLITE_OK)
        rc = snip_window(api, fts, &sn);
    if (rc == SQLITE_OK && text)
        rc = api->xTokenize(fts, text, n, &sn, snip_word);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK || !text) {
        if (rc != SQLITE_OK)
            sqlite3_result_error_code(ctx, rc);
        else
            sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
        return;
    }
    if (!sn.cut && sn.words - sn.from < SNIP_WORDS) /* the text ends early: show more before */
        sn.from = sn.words > SNIP_WORDS ? sn.words - SNIP_WORDS : 0;
    if (sn.from < sn.lo)
        sn.from = sn.lo;
    int len = 0;
    char *out = snip_render(&sn, text, n, &len);
    sqlite3_result_text(ctx, out, len, free);
}

/* svcfold, svcrank, svcsnip and svc_sees on a new connection. */
static int register_fts5(sqlite3 *db)
{
    fts5_api *api = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
        sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (!api)
        return -1;
    fts5_tokenizer tok = {fold_create, fold_delete, fold_tokenize};
    if (api->xCreateTokenizer(api, "svcfold", api, &tok, NULL) != SQLITE_OK ||
        api->xCreateFunction(api, "svcrank", NULL, svcrank, NULL) != SQLITE_OK ||
        api->xCreateFunction(api, "svcsnip", NULL, svcsnip, NULL) != SQLITE_OK)
        return -1;
    return sqlite3_create_function(db, "svc_sees", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                   sql_sees, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* ---- the file: where it lives, its stamp, opening or rebuilding it ---- */

#define TABLES                                                                                     \
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);"                                 \
    "CREATE TABLE IF NOT EXISTS docs(doc INTEGER PRIMARY KEY, sid TEXT UNIQUE NOT NULL,"           \
    " updated REAL, nmsgs INTEGER, next_id INTEGER, title TEXT, updated_at TEXT, seen REAL,"       \
    " archived INTEGER, created_at TEXT, chain_n INTEGER, ran INTEGER, chain_key BLOB);"           \
    "CREATE TABLE IF NOT EXISTS chain(key INTEGER NOT NULL, doc INTEGER NOT NULL,"                 \
    " pos INTEGER NOT NULL, mid INTEGER NOT NULL);"                                                \
    "CREATE INDEX IF NOT EXISTS chain_key ON chain(key);"                                          \
    "CREATE INDEX IF NOT EXISTS chain_doc ON chain(doc);"                                          \
    "CREATE VIRTUAL TABLE IF NOT EXISTS msgs USING fts5(body, role UNINDEXED,"                     \
    " tokenize='svcfold');"

static void memo_clear(void)
{
    for (size_t i = 0; i < S.cap; i++)
        free(S.v[i].sid);
    free(S.v);
    S.v = NULL;
    S.n = S.cap = 0;
}

static size_t memo_hash(const char *sid)
{
    size_t h = 5381;
    for (const char *p = sid; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return h & (S.cap - 1);
}

static struct memo *memo_slot(const char *sid)
{
    for (size_t i = memo_hash(sid);; i = (i + 1) & (S.cap - 1))
        if (!S.v[i].sid || strcmp(S.v[i].sid, sid) == 0)
            return &S.v[i];
}

static struct memo *memo_find(const char *sid)
{
    if (!S.cap)
        return NULL;
    struct memo *m = memo_slot(sid);
    return m->sid ? m : NULL;
}

static void memo_put(const char *sid, double updated, int64_t msgs)
{
    if (2 * (S.n + 1) > S.cap) {
        struct memo *old = S.v;
        size_t oldcap = S.cap;
        S.cap = S.cap ? S.cap * 2 : 1024;
        S.v = svc_xcalloc(S.cap, sizeof *S.v);
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].sid)
                *memo_slot(old[i].sid) = old[i];
        free(old);
    }
    struct memo *m = memo_slot(sid);
    if (!m->sid) {
        m->sid = svc_xstrdup(sid);
        S.n++;
    }
    m->updated = updated;
    m->msgs = msgs;
}

/* Linear probing's deletion: the entries after it in its run are put again (one may have
 * been displaced by it). */
static void memo_del(const char *sid)
{
    struct memo *m = memo_find(sid);
    if (!m)
        return;
    free(m->sid);
    m->sid = NULL;
    S.n--;
    for (size_t j = ((size_t)(m - S.v) + 1) & (S.cap - 1); S.v[j].sid; j = (j + 1) & (S.cap - 1)) {
        struct memo e = S.v[j];
        S.v[j].sid = NULL;
        *memo_slot(e.sid) = e;
    }
}

static void db_close(void)
{
    svc_hostdb_close(&S.h);
    memo_clear();
    S.loaded = false;
    S.mark = (struct svc_list_mark){0};
}

/* Read every docs row into the memo at first and at a new generation: 0, -1, or 1 when the
 * file is stamped for another schema. */
static int memo_load(void)
{
    int64_t v = svc_hostdb_int(&S.h, "PRAGMA data_version", -1);
    if (S.loaded && v == S.version)
        return 0;
    S.version = v;
    char *schema = svc_hostdb_meta(&S.h, "schema");
    bool ours = schema && strcmp(schema, SCHEMA) == 0;
    free(schema);
    if (!ours)
        return 1;
    char *gen = svc_hostdb_meta(&S.h, "generation");
    bool same = S.loaded && strcmp(gen ? gen : "", S.gen) == 0;
    snprintf(S.gen, sizeof S.gen, "%s", gen ? gen : "");
    free(gen);
    if (same)
        return 0;
    memo_clear();
    S.mark = (struct svc_list_mark){0};
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&S.h, &st, "SELECT sid, updated, nmsgs FROM docs", "");
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st))
        memo_put((const char *)sqlite3_column_text(st, 0), sqlite3_column_double(st, 1),
                 sqlite3_column_int64(st, 2));
    sqlite3_reset(st);
    S.loaded = rc == SQLITE_DONE;
    return S.loaded ? 0 : -1;
}

/* Open the file (or a temporary index) and check its stamp (schema, root, agent): 0, 1 when
 * it must be thrown away, -1 when unusable. */
static int db_try_open(void)
{
    static const char setup[] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                                " PRAGMA mmap_size=268435456; BEGIN IMMEDIATE;" TABLES;
    const char *const kv[] = {"schema", SCHEMA, "root", S.root, "agent", S.agent};
    int rc = svc_hostdb_open(&S.h, S.path, true, register_fts5, setup);
    int code = S.h.db ? sqlite3_errcode(S.h.db) : SQLITE_CANTOPEN;
    bool ok = rc == 0 && svc_hostdb_stamped(&S.h, kv, 3);
    if (svc_hostdb_exec(&S.h, "COMMIT") != 0)
        ok = false;
    if (ok)
        return 0;
    if (code == SQLITE_CANTOPEN)
        return S.path && access(S.path, F_OK) == 0 ? 1 : -1;
    return code == SQLITE_BUSY || code == SQLITE_LOCKED ? -1 : 1;
}

/* The index of cfg's root open in S.h (rebuilt when damaged); caches off: a temporary one. */
static int db_open(const struct svc_config *cfg, struct svc_err *err)
{
    bool temp = cfg->sessions.cache == SVC_CACHE_OFF;
    if (!temp && S.path && strcmp(S.root, cfg->sessions.root) == 0 &&
        strcmp(S.agent, cfg->sessions.agent_id) == 0 && svc_hostdb_current(&S.h, S.path))
        return 0;
    db_close();
    free(S.path);
    free(S.root);
    free(S.agent);
    S.root = svc_xstrdup(cfg->sessions.root);
    S.agent = svc_xstrdup(cfg->sessions.agent_id);
    char *key = NULL; /* root NUL agent */
    int klen = svc_xasprintf(&key, "%s%c%s", S.root, '\0', S.agent);
    S.path = temp ? NULL : svc_hostdb_path(cfg->search.index_dir, NULL, key, (size_t)klen);
    free(key);
    if (!temp && svc_mkdirs(cfg->search.index_dir, 0700, err) != 0)
        return -1;
    bool local = true;
    if (!temp)
        svc_fs_kind(cfg->search.index_dir, &local);
    if (!local)
        svc_logf("search: %s is on a network filesystem, where SQLite is unsafe: set "
                 "search.index_dir to a local directory",
                 cfg->search.index_dir);
    int rc = db_try_open();
    if (rc == 1) {
        svc_logf("search: the index %s is damaged or another's: rebuilt", S.path);
        db_close();
        svc_hostdb_remove(S.path);
        rc = db_try_open();
    }
    if (rc != 0) {
        svc_err_set(err, SVC_E_IO, "search index %s: %s", S.path ? S.path : "(temporary)",
                    svc_hostdb_errmsg(&S.h));
        db_close();
        return -1;
    }
    return 0;
}

/* The file thrown away (a derived file), worth one more try. */
static void db_discard(void)
{
    db_close();
    svc_hostdb_remove(S.path);
    S.removed = true;
}

static int db_fail(const char *what, struct svc_err *err)
{
    int code = S.h.db ? sqlite3_errcode(S.h.db) : SQLITE_CANTOPEN;
    svc_err_set(err, SVC_E_IO, "search index: %s: %s", what, svc_hostdb_errmsg(&S.h));
    /* anything that says its bytes are wrong is cause to build it anew */
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_IOERR ||
        code == SQLITE_PROTOCOL) {
        svc_logf("search: the index %s is damaged: removed, the next query rebuilds it", S.path);
        db_discard();
    }
    return -1;
}

/* ---- indexing: a session's new messages, or all of them anew ---- */

/* The text a message gives search and its role (heap, "" when none). */
static char *message_text(json_object *rec, const char **role)
{
    json_object *m = svc_store_effective_message(rec);
    *role = svc_openai_role(m);
    char *text = svc_native_text(m);
    if (*text || strcmp(*role, "tool") != 0)
        return text;
    free(text);
    json_object *proj = svc_openai_project(m);
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t i = 0; i < json_object_array_length(proj); i++) {
        const char *c = svc_json_str(json_object_array_get_idx(proj, i), "content", NULL);
        if (c && *c) {
            if (b.len)
                svc_buf_adds(&b, "\n");
            svc_buf_adds(&b, c);
        }
    }
    json_object_put(proj);
    return svc_buf_steal(&b);
}

/* Run sql with ?1..?2 the rowids of doc's messages and ?3 doc (a statement uses some). */
static int run_doc(const char *sql, int64_t doc)
{
    return svc_hostdb_run(&S.h, sql, "lll", doc << MID_BITS,
                          (doc << MID_BITS) | ((INT64_C(1) << MID_BITS) - 1), doc);
}

/* A session's docs row: 1 with its fields, 0 when none, -1 on error. */
static int doc_row(const char *sid, int64_t *doc, double *updated, int64_t *msgs, int64_t *next)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(
        &S.h, &st, "SELECT doc, updated, nmsgs, next_id FROM docs WHERE sid = ?1", "s", sid);
    if (rc == SQLITE_ROW) {
        *doc = sqlite3_column_int64(st, 0);
        *updated = sqlite3_column_double(st, 1);
        *msgs = sqlite3_column_int64(st, 2);
        *next = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

static int drop_session(const char *sid)
{
    int64_t doc, msgs, next;
    double updated;
    int found = doc_row(sid, &doc, &updated, &msgs, &next);
    if (found <= 0)
        return found;
    if (run_doc("DELETE FROM msgs WHERE rowid BETWEEN ?1 AND ?2", doc) != 0 ||
        run_doc("DELETE FROM chain WHERE doc = ?3", doc) != 0)
        return -1;
    return run_doc("DELETE FROM docs WHERE doc = ?3", doc);
}

static double mtime_of(const struct stat *st)
{
    return (double)st->st_mtim.tv_sec + (double)st->st_mtim.tv_nsec / 1e9;
}

/* Read message id of h: with text, its text indexed anew (its row gone; *seen gets its mtime
 * when later); with key, its transcript key stored as row ++*pos (chain.h). */
static int add_file(struct svc_sess *h, int64_t doc, int64_t id, bool text, unsigned char *key,
                    int64_t *pos, double *seen)
{
    json_object *rec = NULL;
    struct stat sb;
    struct svc_err e = {0};
    if (svc_sess_read_message(h, id, &rec, &sb, NULL, &e) != 0) {
        if (text && e.code != SVC_E_NOT_FOUND)
            svc_logf("search: session %s message %lld left out: %s", h->sid, (long long)id,
                     e.message);
        return 0;
    }
    int rc = 0;
    if (text) {
        if (mtime_of(&sb) > *seen)
            *seen = mtime_of(&sb);
        const char *role = "user";
        char *body = message_text(rec, &role);
        if (*body)
            rc = svc_hostdb_run(&S.h, "INSERT INTO msgs(rowid, body, role) VALUES (?1, ?2, ?3)",
                                "lss", doc << MID_BITS | id, body, role);
        free(body);
    }
    if (rc == 0 && key && svc_chain_step(key, svc_store_effective_message(rec)))
        rc = svc_hostdb_run(&S.h, "INSERT INTO chain(key, doc, pos, mid) VALUES (?1, ?2, ?3, ?4)",
                            "llll", svc_chain_id(key), doc, ++*pos, id);
    json_object_put(rec);
    return rc;
}

/* A session that grew may have had a message edited too: those below `from` written after
 * *seen are indexed anew, the others not read. */
static int recheck_messages(struct svc_sess *h, int64_t doc, int64_t from, double *seen)
{
    double was = *seen;
    int rc = 0;
    for (int64_t id = 0; id < from && id < (INT64_C(1) << MID_BITS) && rc == 0; id++) {
        struct stat sb;
        bool there = svc_sess_stat_message(h, id, &sb);
        if (there && mtime_of(&sb) <= was)
            continue;
        rc = svc_hostdb_run(&S.h, "DELETE FROM msgs WHERE rowid = ?1", "l", doc << MID_BITS | id);
        if (rc == 0 && there)
            rc = add_file(h, doc, id, true, NULL, NULL, seen);
    }
    return rc;
}

static int doc_write(const char *sid, int64_t doc, double updated, int64_t msgs, int64_t next,
                     double seen, json_object *sum)
{
    const char *sql = doc > 0 ? "UPDATE docs SET sid = ?2, updated = ?3, nmsgs = ?4, next_id = ?5,"
                                " title = ?6, updated_at = ?7, archived = ?8, created_at = ?9,"
                                " seen = ?10 WHERE doc = ?1"
                              : "INSERT INTO docs(sid, updated, nmsgs, next_id, title, updated_at,"
                                " archived, created_at, seen) VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                                " ?9, ?10)";
    return svc_hostdb_run(&S.h, sql, "lsdllssisd", doc, sid, updated, msgs, next,
                          svc_json_str(sum, "title", ""), svc_json_str(sum, "updated_at", ""),
                          (int)svc_json_bool(sum, "archived", false),
                          svc_json_str(sum, "created_at", ""), seen);
}

/* Whether row doc is of this session (one made again has another created_at); *seen: the
 * newest mtime its files had when read. */
static bool same_session(int64_t doc, json_object *sum, double *seen)
{
    sqlite3_stmt *st;
    bool same = false;
    if (svc_hostdb_step(&S.h, &st, "SELECT created_at, seen FROM docs WHERE doc = ?1", "l", doc) ==
        SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        *seen = sqlite3_column_double(st, 1);
        same = c && strcmp(c, svc_json_str(sum, "created_at", "")) == 0;
    }
    sqlite3_reset(st);
    return same;
}

/* doc's transcript keys so far (of the messages before *from) into key and *pos, else (from
 * 0, or none kept) all anew: *from and *pos 0, key seeded, its rows gone. */
static int chain_start(int64_t doc, json_object *sum, int64_t *from, int64_t *pos,
                       unsigned char key[32])
{
    sqlite3_stmt *st = NULL;
    bool have = *from > 0 &&
                svc_hostdb_step(&S.h, &st, "SELECT chain_key, chain_n FROM docs WHERE doc = ?1",
                                "l", doc) == SQLITE_ROW &&
                sqlite3_column_bytes(st, 0) == 32;
    *pos = have ? sqlite3_column_int64(st, 1) : 0;
    if (have)
        memcpy(key, sqlite3_column_blob(st, 0), 32);
    sqlite3_reset(st);
    if (have)
        return 0;
    *from = 0;
    svc_chain_seed(svc_user_owner(sum), key);
    return run_doc("DELETE FROM chain WHERE doc = ?3", doc);
}

/* Index h's messages from id `from` on and its transcript keys from chain_from (<= from) on,
 * each file read once (msgs: the listing's count); *next gets the largest id + 1, *seen the
 * newest mtime read. */
static int add_messages(struct svc_sess *h, int64_t doc, json_object *sum, int64_t from,
                        int64_t chain_from, int64_t msgs, int64_t *next, double *seen)
{
    unsigned char key[32];
    int64_t count = 0, pos = 0, *ids = NULL;
    struct svc_err e = {0};
    if (chain_start(doc, sum, &chain_from, &pos, key) != 0)
        return -1;
    if (svc_sess_message_count(h, msgs, &count, next, &ids, &e) != 0)
        count = 0; /* no messages directory: nothing to index, no keys */
    int rc = 0;
    for (int64_t k = ids ? 0 : chain_from; k < count && rc == 0; k++) {
        int64_t id = ids ? ids[k] : k;
        if (id >= chain_from)
            rc = add_file(h, doc, id, id >= from && id < (INT64_C(1) << MID_BITS), key, &pos, seen);
    }
    free(ids);
    if (rc == 0)
        rc = svc_hostdb_run(&S.h,
                            "UPDATE docs SET chain_n = ?2, ran = ?3, chain_key = ?4 WHERE doc = ?1",
                            "llib", doc, pos, svc_json_int(sum, "run_count", 0) > 0, key, 32);
    return rc;
}

/* Bring one session's rows to what the listing says, in a transaction: new messages when the
 * count grew, else all of them anew. */
static int index_session(const struct svc_config *cfg, const char *sid, double updated,
                         int64_t msgs)
{
    int64_t doc = 0, had = 0, from = 0, next = 0;
    double was = 0;
    int found = doc_row(sid, &doc, &was, &had, &from);
    if (found < 0)
        return -1;
    if (found && was == updated && had == msgs)
        return 0; /* another process did it */
    struct svc_err e = {0};
    struct svc_sess h = SVC_SESS_INIT;
    json_object *sum = svc_index_summary(sid);
    if (!sum || svc_sess_open(cfg, sid, &h, &e) != 0 || !svc_sess_exists(&h)) {
        json_object_put(sum);
        svc_sess_close(&h);
        return drop_session(sid) < 0 ? -1 : 0;
    }
    int rc = 0;
    double seen = 0;
    if (found && (msgs <= had || !same_session(doc, sum, &seen))) {
        rc = run_doc("DELETE FROM msgs WHERE rowid BETWEEN ?1 AND ?2", doc);
        from = 0;
    }
    int64_t chain_from = from;
    /* a new session's docs row first: its doc number names the message rows */
    if (rc == 0 && !found &&
        (doc_write(sid, 0, 0, -1, 0, 0, sum) != 0 || doc_row(sid, &doc, &was, &had, &from) != 1))
        rc = -1;
    next = from;
    if (rc == 0) {
        svc_sess_lock(&h, false, &e); /* best effort: files are replaced whole */
        double before = seen;
        rc = recheck_messages(&h, doc, from, &seen);
        if (seen != before)
            chain_from = 0; /* an earlier message changed: every key after it did */
        if (rc == 0)
            rc = add_messages(&h, doc, sum, from, chain_from, msgs, &next, &seen);
    }
    if (rc == 0)
        rc = doc_write(sid, doc, updated, msgs, next, seen, sum);
    svc_sess_close(&h);
    json_object_put(sum);
    return rc;
}

/* db_fail with SQLite's message, then the transaction rolled back (when still open). */
static int rollback(const char *what, struct svc_err *err)
{
    db_fail(what, err);
    svc_hostdb_exec(&S.h, "ROLLBACK");
    return -1;
}

/* ---- catching up from the listing index ---- */

/* A session the listing changed (msgs -1: gone). */
struct change {
    char *sid;
    double updated;
    int64_t msgs;
};

struct changed {
    struct change *v;
    size_t n, cap;
};

static void note_listed(void *ctx, const char *sid, double updated, int64_t msgs, bool archived)
{
    struct changed *c = ctx;
    (void)archived; /* archiving changes updated_at */
    struct memo *m = memo_find(sid);
    if (m) {
        m->walk = S.walk;
        if (m->updated == updated && m->msgs == msgs)
            return;
    }
    c->v = svc_grow(c->v, c->n, &c->cap, sizeof *c->v);
    c->v[c->n++] = (struct change){svc_xstrdup(sid), updated, msgs};
}

/* The sessions the memo has and the listing no longer does: into c with msgs -1. */
static void note_gone(struct changed *c)
{
    for (size_t i = 0; i < S.cap; i++)
        if (S.v[i].sid && S.v[i].walk != S.walk)
            note_listed(c, S.v[i].sid, 0, -1, false);
}

static void changed_free(struct changed *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].sid);
    free(c->v);
}

/* Newest first (by updated). */
static int newest_first(const void *a, const void *b)
{
    double x = ((const struct change *)a)->updated, y = ((const struct change *)b)->updated;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Apply the changes, BATCH a transaction, newest first: 0, -1, or 1 when until (monotonic,
 * 0: none) passed between two transactions (the rest waits). */
static int apply_changes(const struct svc_config *cfg, struct changed *c, double until,
                         struct svc_err *err)
{
    qsort(c->v, c->n, sizeof *c->v, newest_first);
    int rc = 0;
    for (size_t i = 0; i < c->n && rc == 0; i += BATCH) {
        if (until > 0 && i > 0 && svc_time_monotonic() > until) {
            rc = 1;
            break;
        }
        if (svc_hostdb_exec(&S.h, "BEGIN IMMEDIATE") != 0) {
            rc = db_fail("begin", err);
            break;
        }
        for (size_t k = i; k < c->n && k < i + BATCH && rc == 0; k++) {
            const struct change *x = &c->v[k];
            if ((x->msgs < 0 ? drop_session(x->sid)
                             : index_session(cfg, x->sid, x->updated, x->msgs)) < 0)
                rc = rollback("index a session", err);
        }
        if (rc == 0 && svc_hostdb_exec(&S.h, "COMMIT") != 0)
            rc = rollback("commit", err);
        for (size_t k = i; rc == 0 && k < c->n && k < i + BATCH; k++) {
            const struct change *x = &c->v[k];
            if (x->msgs >= 0)
                memo_put(x->sid, x->updated, x->msgs);
            else
                memo_del(x->sid);
        }
    }
    return rc;
}

/* Compare with the memo what the listing says changed since the last time. */
static int catch_up(const struct svc_config *cfg, double until, struct svc_err *err)
{
    int stale = memo_load();
    if (stale == 1) {
        svc_logf("search: the index %s is damaged or another's: rebuilt", S.path);
        db_discard();
        return svc_err_set(err, SVC_E_IO, "search index %s: another schema", S.path);
    }
    if (stale != 0)
        return db_fail("read the sessions indexed", err);
    struct svc_list_mark mark = S.mark;
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    struct changed c = {0};
    S.walk++;
    int whole = svc_index_each(&st, &mark, note_listed, &c);
    if (whole < 0) {
        changed_free(&c);
        return svc_err_errno(err, "list sessions");
    }
    if (whole) /* the listing named every session: those it did not are gone */
        note_gone(&c);
    int rc = c.n ? apply_changes(cfg, &c, until, err) : 0;
    changed_free(&c);
    if (rc == 1) /* out of time: the next walk finds the rest (the memo skips what was done) */
        return 0;
    S.mark = rc == 0 ? mark : (struct svc_list_mark){0};
    if (rc != 0)
        S.loaded = false; /* the memo may say more than was kept */
    return rc;
}

/* ---- the query: q parsed into quoted FTS5 terms, a page of matches ---- */

static bool has_word(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s, *end = p + n;
    while (p < end) {
        ucs4_t c;
        int len = u8_mbtouc(&c, p, (size_t)(end - p));
        if (uc_is_alnum(c))
            return true;
        p += len > 0 ? len : 1;
    }
    return false;
}

/* Add one term: a word or a phrase, quoted (a '"' in it doubled), with '*' when a prefix. */
static void add_term(struct svc_buf *b, const char *s, size_t n, bool prefix, int *terms)
{
    if (!has_word(s, n))
        return; /* nothing FTS5 would index: punctuation alone */
    if (b->len)
        svc_buf_adds(b, " ");
    svc_buf_adds(b, "\"");
    for (size_t i = 0; i < n; i++)
        svc_buf_add(b, s[i] == '"' ? "\"\"" : &s[i], s[i] == '"' ? 2 : 1);
    svc_buf_adds(b, prefix ? "\"*" : "\"");
    (*terms)++;
}

/* q as an FTS5 expression: words (AND), "phrases", word* prefixes; heap, or NULL with err. */
static char *match_of(const char *q, struct svc_err *err)
{
    size_t n = q ? strlen(q) : 0;
    if (n == 0 || n > SVC_SEARCH_Q_MAX || !svc_utf8_valid(q, n)) {
        svc_err_setp(err, SVC_E_INVALID_QUERY, "q",
                     "query parameter 'q' must be 1..%d bytes of UTF-8 text", SVC_SEARCH_Q_MAX);
        return NULL;
    }
    struct svc_buf b;
    svc_buf_init(&b);
    int terms = 0;
    static const char ws[] = " \t\n\r";
    for (const char *p = q + strspn(q, ws); *p; p += strspn(p, ws)) {
        const char *start = p, *end;
        if (*p == '"') {
            start = ++p;
            end = p += strcspn(p, "\"");
            if (*p)
                p++;
        } else {
            end = p += strcspn(p, " \t\n\r\"");
        }
        bool prefix = false;
        if (*start != '"' && end > start && (end[-1] == '*' || *p == '*')) {
            prefix = true;
            while (end > start && end[-1] == '*')
                end--;
            while (*p == '*')
                p++;
        }
        add_term(&b, start, (size_t)(end - start), prefix, &terms);
    }
    if (terms == 0 || terms > TERMS_MAX) {
        svc_buf_free(&b);
        svc_err_setp(err, SVC_E_INVALID_QUERY, "q",
                     terms ? "query parameter 'q' has more than %d terms"
                           : "query parameter 'q' has no word to search for",
                     TERMS_MAX);
        return NULL;
    }
    return svc_buf_steal(&b);
}

static int check_query(const struct svc_search_query *q, int64_t *offset, struct svc_err *err)
{
    if (q->limit < 1 || q->limit > SVC_SEARCH_LIMIT_MAX)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "limit",
                            "query parameter 'limit' must be between 1 and %d",
                            SVC_SEARCH_LIMIT_MAX);
    static const char *const roles[] = {"user", "assistant", "tool"};
    bool role_ok = !q->role || !*q->role;
    for (size_t i = 0; !role_ok && i < sizeof roles / sizeof *roles; i++)
        role_ok = strcmp(q->role, roles[i]) == 0;
    if (!role_ok)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "role",
                            "query parameter 'role' must be user, assistant or tool");
    *offset = 0;
    if (q->cursor && *q->cursor) {
        char *end = NULL;
        errno = 0;
        long long o = strtoll(q->cursor + 1, &end, 10);
        if (q->cursor[0] != 'o' || errno || *end || end == q->cursor + 1 || o < 1 || o > OFFSET_MAX)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, "cursor", "cursor is not valid");
        *offset = o;
    }
    return 0;
}

static json_object *result_row(sqlite3_stmt *st)
{
    json_object *r = json_object_new_object();
    svc_json_set_str(r, "session_id", (const char *)sqlite3_column_text(st, 0));
    svc_json_set_str(r, "title", (const char *)sqlite3_column_text(st, 1));
    svc_json_set_str(r, "updated_at", (const char *)sqlite3_column_text(st, 2));
    svc_json_set_int(r, "message_id", sqlite3_column_int64(st, 3));
    svc_json_set_str(r, "role", (const char *)sqlite3_column_text(st, 4));
    svc_json_set_str(r, "snippet", (const char *)sqlite3_column_text(st, 5));
    return r;
}

/* Whether sid's directory is there (one removed in the listing's blind spot, a root mtime
 * within a clock tick, is not answered); the last answer is kept for the page. */
static bool session_there(const struct svc_store *store, const char *sid, char **last, bool *was)
{
    if (*last && strcmp(*last, sid) == 0)
        return *was;
    free(*last);
    *last = svc_xstrdup(sid);
    return *was = svc_store_session_exists(store, sid);
}

/* The rowid of the n-th newest match of match (and role), 0 when fewer match; -1 on error. */
static int64_t nth_newest(const char *match, const char *role, int64_t n)
{
    static const char *const sql[2] = {
        "SELECT rowid FROM msgs WHERE msgs MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
        "SELECT rowid FROM msgs WHERE msgs MATCH ?1 AND role = ?3 ORDER BY rowid DESC"
        " LIMIT 1 OFFSET ?2"};
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&S.h, &st, sql[role != NULL], "sls", match, n - 1, role);
    int64_t r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    return r;
}

/* The page's statement stepped once: the matches from the WINDOW-th newest on, best first. */
static int page_stmt(const char *match, const struct svc_search_query *q, int64_t offset,
                     sqlite3_stmt **st)
{
    /* one pass: fts5 sorts by svcrank itself and makes the snippets of the rows read only */
#define SQL(role)                                                                                  \
    "SELECT d.sid, d.title, d.updated_at, m.rowid & ?6, m.role,"                                   \
    " svcsnip(msgs) FROM msgs m JOIN docs d ON d.doc = (m.rowid >> ?7)"                            \
    " WHERE msgs MATCH ?1 AND rank MATCH 'svcrank()' AND m.rowid >= ?8" role                       \
    " AND (?2 OR d.archived = 0) AND (?9 IS NULL OR svc_sees(?9, d.sid))"                          \
    " ORDER BY rank LIMIT ?4 OFFSET ?5"
    static const char *const sql[2] = {SQL(""), SQL(" AND m.role = ?3")};
#undef SQL
    const char *role = q->role && *q->role ? q->role : NULL;
    int64_t from = nth_newest(match, role, WINDOW);
    *st = NULL;
    if (from < 0)
        return SQLITE_ERROR;
    return svc_hostdb_step(&S.h, st, sql[role != NULL], "sislllils", match, q->include_archived,
                           role, q->limit + 1, offset, (INT64_C(1) << MID_BITS) - 1, MID_BITS, from,
                           q->owner);
}

static int run_query(const struct svc_store *store, const char *match,
                     const struct svc_search_query *q, int64_t offset, json_object **out,
                     struct svc_err *err)
{
    sqlite3_stmt *st;
    free(S.sees_sid); /* one owner a query */
    S.sees_sid = NULL;
    int rc = page_stmt(match, q, offset, &st);
    json_object *results = json_object_new_array();
    int64_t got = 0; /* rows consumed */
    bool more = false, was = false;
    char *last = NULL;
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        if (got == q->limit) {
            more = true;
            break;
        }
        got++;
        if (session_there(store, (const char *)sqlite3_column_text(st, 0), &last, &was))
            json_object_array_add(results, result_row(st));
    }
    free(last);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        json_object_put(results);
        return db_fail("search", err);
    }
    *out = json_object_new_object();
    svc_json_set(*out, "results", results);
    char cur[32];
    snprintf(cur, sizeof cur, "o%lld", (long long)(offset + got));
    svc_json_set_str(*out, "next_cursor", more && offset + got <= OFFSET_MAX ? cur : NULL);
    return 0;
}

/* The index open and caught up (until: as apply_changes'), then with match its page of
 * matches; tried once more when a damaged file was thrown away: 0 or -1. */
static int search_ready(const struct svc_config *cfg, double until, const struct svc_store *st,
                        const char *match, const struct svc_search_query *q, int64_t offset,
                        json_object **out, struct svc_err *err)
{
    S.removed = false;
    for (int tries = 0; tries < 2 && (tries == 0 || S.removed); tries++) {
        S.removed = false;
        if (db_open(cfg, err) == 0 && catch_up(cfg, until, err) == 0 &&
            (!match || run_query(st, match, q, offset, out, err) == 0))
            return 0;
    }
    return -1;
}

int svc_search(const struct svc_config *cfg, const struct svc_search_query *q, json_object **out,
               struct svc_err *err)
{
    *out = NULL;
    int64_t offset = 0;
    char *match = check_query(q, &offset, err) == 0 ? match_of(q->q, err) : NULL;
    if (!match)
        return -1;
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    int rc = cfg->sessions.enabled ? search_ready(cfg, 0, &st, match, q, offset, out, err)
                                   : svc_err_set(err, SVC_E_SESSIONS_DISABLED,
                                                 "sessions are disabled on this server");
    if (!S.path)
        db_close(); /* a temporary index serves one request */
    free(match);
    return rc;
}

int svc_search_rebuild(const struct svc_config *cfg, int64_t *sessions, int64_t *messages,
                       struct svc_err *err)
{
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    if (db_open(cfg, err) != 0)
        return -1;
    char gen[17];
    svc_random_hex(gen, 16);
    if (svc_hostdb_exec(&S.h, "BEGIN IMMEDIATE; DELETE FROM msgs; DELETE FROM docs") != 0 ||
        svc_hostdb_meta_set(&S.h, "generation", gen) != 0 || svc_hostdb_exec(&S.h, "COMMIT") != 0)
        return rollback("empty the index", err);
    S.loaded = false; /* every process reads the empty memo anew */
    if (catch_up(cfg, 0, err) != 0)
        return -1;
    /* one segment: what a query reads is then one b-tree per term */
    if (svc_hostdb_exec(&S.h, "INSERT INTO msgs(msgs) VALUES ('optimize')") != 0)
        return db_fail("optimize", err);
    if (sessions)
        *sessions = svc_hostdb_int(&S.h, "SELECT count(*) FROM docs", -1);
    if (messages)
        *messages = svc_hostdb_int(&S.h, "SELECT count(*) FROM msgs", -1);
    if (!S.path)
        db_close();
    return 0;
}

/* ---- the transcript keys of chain.h: a row a message, the last key on the docs row ---- */

/* How long a transcript lookup catches up (newest first); the rest waits. */
#define CHAIN_BUDGET_S 0.25

/* The unarchived session with a row keyed key: a tip before a fork point, one that ran turns
 * before one of items only (Conversations API), then the newest. 1 with *hit, 0, -1. */
static int chain_at(int64_t key, struct svc_chain_hit *hit)
{
    sqlite3_stmt *st;
    int rc = svc_hostdb_step(&S.h, &st,
                             "SELECT d.sid, c.pos, c.mid, d.chain_n, d.nmsgs FROM chain c JOIN docs"
                             " d ON d.doc = c.doc WHERE c.key = ?1 AND NOT d.archived ORDER BY"
                             " c.pos = d.chain_n DESC, d.ran DESC, d.updated DESC LIMIT 1",
                             "l", key);
    if (rc == SQLITE_ROW) {
        snprintf(hit->sid, sizeof hit->sid, "%s", (const char *)sqlite3_column_text(st, 0));
        hit->pos = sqlite3_column_int64(st, 1);
        hit->mid = sqlite3_column_int64(st, 2);
        hit->total = sqlite3_column_int64(st, 3);
        hit->msgs = sqlite3_column_int64(st, 4);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int svc_search_chain_find(const struct svc_config *cfg, const int64_t *ids, size_t n,
                          struct svc_chain_hit *hit, struct svc_err *err)
{
    int rc =
        search_ready(cfg, svc_time_monotonic() + CHAIN_BUDGET_S, NULL, NULL, NULL, 0, NULL, err);
    /* a key found at k means the same session holds k - 1 too: the longest, by bisection */
    size_t lo = 0, hi = n; /* found for lo (0: nothing), not known above */
    struct svc_chain_hit h;
    while (rc == 0 && lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        int f = chain_at(ids[mid - 1], &h);
        if (f < 0)
            rc = db_fail("look up a transcript", err);
        else if (f == 1) {
            lo = mid;
            *hit = h;
        } else {
            hi = mid - 1;
        }
    }
    if (!S.path)
        db_close(); /* a temporary index serves one request */
    return rc < 0 ? -1 : lo > 0;
}
