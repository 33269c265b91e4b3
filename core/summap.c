#include "summap.h"

#include <sqlite3.h>
#include <stdlib.h>

#include "util.h"

/* The page cache a map may keep, in KiB (SQLite's negative cache_size): what stays in
 * memory whatever the number of sessions; the rest is read back from the file. */
#define SUMMAP_CACHE_KIB 4096

struct svc_summap {
    sqlite3 *db;
    sqlite3_stmt *put, *del, *get, *count;
};

static int prep(struct svc_summap *m, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v2(m->db, sql, -1, st, NULL) == SQLITE_OK ? 0 : -1;
}

struct svc_summap *svc_summap_open(void)
{
    struct svc_summap *m = svc_xcalloc(1, sizeof *m);
    /* "": a private temporary file, deleted by SQLite when the connection closes; one
     * transaction over the map's life, never committed (nothing needs to survive it). A
     * rowid table: summaries land in insertion order on full pages, only the small sid
     * index is split at random (keyed by sid, the rows took 2.5 times the journal's size) */
    int rc = sqlite3_open_v2("", &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    char *pragmas = NULL;
    svc_xasprintf(&pragmas,
                  "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-%d;"
                  " PRAGMA temp_store=FILE; PRAGMA mmap_size=0;"
                  " CREATE TABLE m(sid TEXT PRIMARY KEY, summary TEXT NOT NULL);"
                  " BEGIN;",
                  SUMMAP_CACHE_KIB);
    if (rc != SQLITE_OK || sqlite3_exec(m->db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        prep(m, "INSERT OR REPLACE INTO m VALUES (?1, ?2)", &m->put) != 0 ||
        prep(m, "DELETE FROM m WHERE sid = ?1", &m->del) != 0 ||
        prep(m, "SELECT summary FROM m WHERE sid = ?1", &m->get) != 0 ||
        prep(m, "SELECT count(*) FROM m", &m->count) != 0) {
        svc_summap_close(m);
        m = NULL;
    }
    free(pragmas);
    return m;
}

int svc_summap_put(struct svc_summap *m, const char *sid, const char *text, size_t len)
{
    sqlite3_stmt *st = text ? m->put : m->del;
    sqlite3_bind_text(st, 1, sid, -1, SQLITE_STATIC);
    if (text)
        sqlite3_bind_text(st, 2, text, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

json_object *svc_summap_get(struct svc_summap *m, const char *sid)
{
    sqlite3_bind_text(m->get, 1, sid, -1, SQLITE_STATIC);
    json_object *o = NULL;
    if (sqlite3_step(m->get) == SQLITE_ROW)
        o = json_tokener_parse((const char *)sqlite3_column_text(m->get, 0));
    sqlite3_reset(m->get);
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

int64_t svc_summap_count(struct svc_summap *m)
{
    int64_t n = sqlite3_step(m->count) == SQLITE_ROW ? sqlite3_column_int64(m->count, 0) : -1;
    sqlite3_reset(m->count);
    return n;
}

int svc_summap_each(struct svc_summap *m, void (*fn)(void *ctx, const char *sid), void *ctx)
{
    sqlite3_stmt *st = NULL;
    if (prep(m, "SELECT sid FROM m", &st) != 0)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

void svc_summap_close(struct svc_summap *m)
{
    if (!m)
        return;
    sqlite3_finalize(m->put);
    sqlite3_finalize(m->del);
    sqlite3_finalize(m->get);
    sqlite3_finalize(m->count);
    sqlite3_close_v2(m->db); /* rolls the open transaction back and removes the file */
    free(m);
}
