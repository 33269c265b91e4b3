#include "hostdb.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

char *svc_hostdb_path(const char *dir, const char *sub, const char *key, size_t klen)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(key, klen, md, &mdlen, EVP_sha256(), NULL);
    char hex[17];
    svc_hex(md, 8, hex);
    char *p = NULL;
    svc_xasprintf(&p, "%s%s%s/%s.sqlite", dir, sub ? "/" : "", sub ? sub : "", hex);
    return p;
}

int svc_hostdb_open(struct svc_hostdb *h, const char *path, bool create, int (*init)(sqlite3 *db),
                    const char *setup)
{
    svc_hostdb_close(h);
    struct stat sb = {0};
    if (path && !create && stat(path, &sb) != 0)
        return -1;
    int flags = SQLITE_OPEN_READWRITE | (create || !path ? SQLITE_OPEN_CREATE : 0);
    /* "": a private temporary file, deleted by SQLite when the connection closes */
    if (sqlite3_open_v2(path ? path : "", &h->db, flags, NULL) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(h->db, 30000);
    if ((init && init(h->db) != 0) || (setup && svc_hostdb_exec(h, setup) != 0) ||
        (path && stat(path, &sb) != 0))
        return -1;
    h->dev = sb.st_dev;
    h->ino = sb.st_ino;
    return 0;
}

int svc_hostdb_temp(struct svc_hostdb *h, const char *schema, int cache_kib, struct svc_err *err)
{
    char *setup = NULL;
    svc_xasprintf(&setup,
                  "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-%d;"
                  " PRAGMA temp_store=FILE; PRAGMA mmap_size=0; %s; BEGIN;",
                  cache_kib, schema);
    int rc = svc_hostdb_open(h, NULL, true, NULL, setup);
    free(setup);
    if (rc != 0) {
        svc_err_set(err, SVC_E_IO, "temporary database: %s", svc_hostdb_errmsg(h));
        svc_hostdb_close(h);
    }
    return rc;
}

bool svc_hostdb_current(const struct svc_hostdb *h, const char *path)
{
    struct stat sb;
    return h->db && stat(path, &sb) == 0 && sb.st_dev == h->dev && sb.st_ino == h->ino;
}

sqlite3_stmt *svc_hostdb_stmt(struct svc_hostdb *h, const char *sql)
{
    for (size_t i = 0; i < SVC_HOSTDB_STMTS; i++) {
        if (h->stmt[i].sql == sql) {
            sqlite3_reset(h->stmt[i].st);
            sqlite3_clear_bindings(h->stmt[i].st);
            return h->stmt[i].st;
        }
        if (!h->stmt[i].sql) {
            sqlite3_stmt *st = NULL;
            if (!h->db || sqlite3_prepare_v3(h->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
                                             NULL) != SQLITE_OK)
                return NULL;
            h->stmt[i].sql = sql;
            h->stmt[i].st = st;
            return st;
        }
    }
    return NULL; /* more statements than slots: a programming error */
}

int svc_hostdb_exec(struct svc_hostdb *h, const char *sql)
{
    return h->db && sqlite3_exec(h->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int vstep(struct svc_hostdb *h, sqlite3_stmt **stp, const char *sql, const char *types,
                 va_list ap)
{
    sqlite3_stmt *st = *stp = svc_hostdb_stmt(h, sql);
    if (!st)
        return SQLITE_ERROR;
    for (int i = 1; types[i - 1]; i++) {
        const void *p = NULL;
        switch (types[i - 1]) {
        case 'i':
            sqlite3_bind_int(st, i, va_arg(ap, int));
            break;
        case 'l':
            sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
            break;
        case 'd':
            sqlite3_bind_double(st, i, va_arg(ap, double));
            break;
        case 's':
            sqlite3_bind_text(st, i, va_arg(ap, const char *), -1, SQLITE_STATIC);
            break;
        case 't':
        case 'b':
            p = va_arg(ap, const void *);
            int n = va_arg(ap, int);
            if (types[i - 1] == 't')
                sqlite3_bind_text(st, i, p, n, SQLITE_STATIC);
            else
                sqlite3_bind_blob(st, i, p, n, SQLITE_STATIC);
            break;
        }
    }
    return sqlite3_step(st);
}

int svc_hostdb_step(struct svc_hostdb *h, sqlite3_stmt **st, const char *sql, const char *types,
                    ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = vstep(h, st, sql, types, ap);
    va_end(ap);
    return rc;
}

int svc_hostdb_run(struct svc_hostdb *h, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st;
    va_list ap;
    va_start(ap, types);
    int rc = vstep(h, &st, sql, types, ap) == SQLITE_DONE ? 0 : -1;
    va_end(ap);
    sqlite3_reset(st);
    return rc;
}

int64_t svc_hostdb_int(struct svc_hostdb *h, const char *sql, int64_t def)
{
    sqlite3_stmt *st = svc_hostdb_stmt(h, sql);
    int64_t v = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL
                    ? sqlite3_column_int64(st, 0)
                    : def;
    sqlite3_reset(st);
    return v;
}

json_object *svc_hostdb_object(struct svc_hostdb *h, const char *sql, const char *key)
{
    sqlite3_stmt *st;
    json_object *o = svc_hostdb_step(h, &st, sql, "s", key) == SQLITE_ROW
                         ? json_tokener_parse((const char *)sqlite3_column_text(st, 0))
                         : NULL;
    sqlite3_reset(st);
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

char *svc_hostdb_meta(struct svc_hostdb *h, const char *k)
{
    sqlite3_stmt *st;
    char *v = NULL;
    if (svc_hostdb_step(h, &st, "SELECT v FROM meta WHERE k = ?1", "s", k) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
        v = svc_xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    return v;
}

int svc_hostdb_meta_set(struct svc_hostdb *h, const char *k, const char *v)
{
    return svc_hostdb_run(h, "INSERT OR REPLACE INTO meta(k, v) VALUES (?1, ?2)", "ss", k, v);
}

bool svc_hostdb_stamped(struct svc_hostdb *h, const char *const *kv, size_t n)
{
    bool fresh = true, ok = true;
    for (size_t i = 0; i < n; i++) {
        char *v = svc_hostdb_meta(h, kv[2 * i]);
        fresh = fresh && !v;
        ok = ok && v && strcmp(v, kv[2 * i + 1]) == 0;
        free(v);
    }
    for (size_t i = 0; fresh && i < n; i++)
        if (svc_hostdb_meta_set(h, kv[2 * i], kv[2 * i + 1]) != 0)
            return false;
    return ok || fresh;
}

const char *svc_hostdb_errmsg(const struct svc_hostdb *h)
{
    return h->db ? sqlite3_errmsg(h->db) : "cannot open";
}

void svc_hostdb_close(struct svc_hostdb *h)
{
    for (size_t i = 0; i < SVC_HOSTDB_STMTS; i++)
        sqlite3_finalize(h->stmt[i].st);
    if (h->db) /* _v2: a statement still open cannot keep the connection (and its memory) */
        sqlite3_close_v2(h->db);
    memset(h, 0, sizeof *h);
}

void svc_hostdb_remove(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char *p = NULL;
        svc_xasprintf(&p, "%s%s", path, suffix[i]);
        unlink(p);
        free(p);
    }
}
