/* hostdb: the SQLite databases svc derives on this host, and the temporary ones it spills
 * to: the only code that opens SQLite (docs/CACHES.md). A per-host file is derived state
 * (never on the session root: SQLite over NFS or FUSE is unsafe): the listing database
 * (listdb.h, indexdb.h) and the message search index (search.h) under search.index_dir.
 * The rule for all of them: a file that cannot be opened, is damaged, or whose stamp (its
 * meta rows: schema and what it is derived from) is not the one asked is never answered
 * from: its owner builds it anew. With sessions.cache off their owners use a temporary
 * database instead, built for the one request (cache.h). A temporary database (path
 * NULL) is a private file SQLite deletes when it is closed, with a bounded page cache and
 * one transaction never committed: how a pass that must hold a keyed set of every session
 * (an export's ids, an import's files and sessions, fsck's ids and map of the journal) stays
 * in a few MB of memory at any size.
 * To add a table to a per-host file (another derived index, say transcript hash ->
 * session): add its CREATE to the owner's setup SQL and bump the owner's schema stamp (a
 * file of the old schema is then built anew); its statements are literals passed to
 * svc_hostdb_stmt, prepared once per connection. A new per-host file is a new owner with
 * its own name under search.index_dir (svc_hostdb_path), setup and stamp. */
#ifndef SVC_HOSTDB_H
#define SVC_HOSTDB_H

#include <json-c/json.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define SVC_HOSTDB_STMTS 40

/* One connection and its statements (a literal's address is its key). */
struct svc_hostdb {
    sqlite3 *db;
    dev_t dev; /* the file opened (svc_hostdb_current) */
    ino_t ino;
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } stmt[SVC_HOSTDB_STMTS];
};

/* <dir>/<sub>/<16 hex digits of the SHA-256 of key (klen bytes)>.sqlite (heap; sub may be
 * NULL). */
char *svc_hostdb_path(const char *dir, const char *sub, const char *key, size_t klen);
/* Open path (NULL: a temporary database), create it when missing if create, run init (the
 * owner's functions, may be NULL) and setup (pragmas and schema): 0, or -1 (closed; the
 * reason logged by the owner from svc_hostdb_errmsg). The owner makes its directory. */
int svc_hostdb_open(struct svc_hostdb *h, const char *path, bool create, int (*init)(sqlite3 *db),
                    const char *setup);
/* A temporary database with schema, keeping at most cache_kib KiB of its pages in memory
 * (what stays in memory whatever the number of sessions; the rest is read back from its
 * file): 0, or -1 with err. */
int svc_hostdb_temp(struct svc_hostdb *h, const char *schema, int cache_kib, struct svc_err *err);
/* Whether h is open on the file now at path. */
bool svc_hostdb_current(const struct svc_hostdb *h, const char *path);
/* sql, prepared once per connection, reset and unbound for reuse; NULL on error. The
 * caller resets it when done (a statement left stepping holds a read transaction). */
sqlite3_stmt *svc_hostdb_stmt(struct svc_hostdb *h, const char *sql);
int svc_hostdb_exec(struct svc_hostdb *h, const char *sql);
/* Run svc_hostdb_stmt(sql) with ?1, ?2... bound from the arguments, one a letter of types:
 * i int, l int64_t, d double, s text (const char *; NULL binds null), t text and b blob
 * (const void *, int bytes; -1: to the NUL), - none (left unbound): 0 when it ran to its
 * end, else -1. */
int svc_hostdb_run(struct svc_hostdb *h, const char *sql, const char *types, ...);
/* The same, stepped once: SQLITE_ROW (*st on the row), SQLITE_DONE or an error; the caller
 * resets *st (NULL when sql cannot be prepared). */
int svc_hostdb_step(struct svc_hostdb *h, sqlite3_stmt **st, const char *sql, const char *types,
                    ...);
/* The first column of sql's first row as an integer (def when none or on error). */
int64_t svc_hostdb_int(struct svc_hostdb *h, const char *sql, int64_t def);
/* The first column of sql's first row (?1 bound to key) parsed as a JSON object (new
 * reference), or NULL when there is none or it is not one. */
json_object *svc_hostdb_object(struct svc_hostdb *h, const char *sql, const char *key);
/* The stamp: the meta table (k TEXT PRIMARY KEY, v) holds each of the n pairs kv[2i],
 * kv[2i+1]; a file that has none of them (fresh) gets them written. */
bool svc_hostdb_stamped(struct svc_hostdb *h, const char *const *kv, size_t n);
/* meta's value of k (heap), or NULL; set it. */
char *svc_hostdb_meta(struct svc_hostdb *h, const char *k);
int svc_hostdb_meta_set(struct svc_hostdb *h, const char *k, const char *v);
const char *svc_hostdb_errmsg(const struct svc_hostdb *h);
void svc_hostdb_close(struct svc_hostdb *h);
/* Remove a database file and its journals. */
void svc_hostdb_remove(const char *path);

#endif
