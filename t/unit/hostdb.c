/* hostdb: a temporary database holds a keyed set larger than its page cache and gives it
 * back in key order (what an export's ids and an import's files and sessions rely on); a
 * statement is prepared once per connection, bound and stepped by svc_hostdb_step/run; a file's
 * stamp is written when fresh, kept when it matches and refused when it names another schema; the
 * path is a hash of its key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostdb.h"
#include "tap.h"

static void temp_set(void)
{
    struct svc_hostdb h = {0};
    struct svc_err err;
    is_int(svc_hostdb_temp(&h, "CREATE TABLE ids(id TEXT PRIMARY KEY) WITHOUT ROWID", 64, &err), 0,
           "a temporary database");
    char id[64];
    int ok_all = 1;
    for (int i = 40000; i > 0; i--) { /* about 1.5 MB of rows against a 64 KiB cache */
        sqlite3_stmt *st = svc_hostdb_stmt(&h, "INSERT OR IGNORE INTO ids VALUES (?1)");
        snprintf(id, sizeof id, "session-%08d-%s", i % 30000, "padding-padding");
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        ok_all &= st && sqlite3_step(st) == SQLITE_DONE;
    }
    ok(ok_all, "40000 ids added, one statement prepared once");
    is_int(svc_hostdb_int(&h, "SELECT count(*) FROM ids", -1), 30000, "repeated ids kept once");
    sqlite3_stmt *st = svc_hostdb_stmt(&h, "SELECT id FROM ids ORDER BY id");
    int n = 0, sorted = 1;
    char last[64] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        sorted &= strcmp(last, v) < 0;
        snprintf(last, sizeof last, "%s", v);
        n++;
    }
    is_int(n, 30000, "all read back");
    ok(sorted, "in key order");
    is_int(svc_hostdb_step(&h, &st, "SELECT id FROM ids WHERE id > ?1 ORDER BY id", "s",
                           "session-00029998-padding-padding"),
           SQLITE_ROW, "step: a row, the text bound");
    is_str((const char *)sqlite3_column_text(st, 0), "session-00029999-padding-padding",
           "step: the row is readable");
    sqlite3_reset(st);
    is_int(svc_hostdb_step(&h, &st, "SELECT id FROM ids WHERE id > ?1 ORDER BY id", "s", "z"),
           SQLITE_DONE, "step: no row");
    sqlite3_reset(st);
    is_int(svc_hostdb_step(&h, &st, "SELECT nothing FROM nowhere", ""), SQLITE_ERROR,
           "step: a statement that cannot be prepared");
    ok(!st, "and no statement");
    is_int(svc_hostdb_run(&h, "INSERT INTO ids VALUES (?1)", "s", "x"), 0, "run: done");
    is_int(svc_hostdb_run(&h, "INSERT INTO ids VALUES (?1)", "s", "x"), -1,
           "run: a constraint failed");
    svc_hostdb_close(&h);
    ok(!h.db, "closed");
}

static void stamp(void)
{
    char dir[] = "/tmp/svc-hostdb-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char *p = svc_hostdb_path(dir, NULL, "root\0agent", 10);
    char *q = svc_hostdb_path(dir, NULL, "root\0agenT", 10);
    ok(strncmp(p, dir, strlen(dir)) == 0 && strlen(p) == strlen(dir) + 1 + 16 + 7,
       "path: <dir>/<16 hex>.sqlite (%s)", p);
    ok(strcmp(p, q) != 0, "another key, another path");
    static const char setup[] = "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v)";
    const char *const kv[] = {"schema", "s1", "root", "/r"};
    const char *const other[] = {"schema", "s2", "root", "/r"};
    struct svc_hostdb h = {0};
    is_int(svc_hostdb_open(&h, p, false, NULL, setup), -1, "a missing file is not made");
    is_int(svc_hostdb_open(&h, p, true, NULL, setup), 0, "made when asked");
    ok(svc_hostdb_stamped(&h, kv, 2), "a fresh file takes the stamp");
    ok(svc_hostdb_current(&h, p), "the file at the path is the one open");
    svc_hostdb_close(&h);
    is_int(svc_hostdb_open(&h, p, false, NULL, setup), 0, "opened again");
    ok(svc_hostdb_stamped(&h, kv, 2), "its stamp holds");
    ok(!svc_hostdb_stamped(&h, other, 2), "another schema's is refused");
    char *v = svc_hostdb_meta(&h, "schema");
    is_str(v, "s1", "and left as it was");
    free(v);
    svc_hostdb_close(&h);
    svc_hostdb_remove(p);
    ok(access(p, F_OK) != 0, "removed");
    free(p);
    free(q);
    tap_rm_rf(dir);
}

int main(void)
{
    temp_set();
    stamp();
    return done_testing();
}
