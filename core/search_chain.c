/* search_chain: the transcript keys of chain.h in the search index (search_int.h): one row
 * a message (key, doc, pos, mid), the session's last key, count and whether it ran turns on
 * its docs row; the lookup (search.h svc_search_chain_find). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "jsonx.h"
#include "search.h"
#include "search_int.h"
#include "store.h"
#include "user.h"
#include "util.h"

/* A transcript lookup catches up for at most this long, newest sessions first; what is left
 * waits for the next lookup or search. */
#define CHAIN_BUDGET_S 0.25

/* The session's transcript keys (chain.h), one row a message: those of its messages from
 * id from on after the keys it has (from 0, or none kept: all of them anew). */
int svc_search_chain_index(struct svc_sess *h, int64_t doc, json_object *sum, int64_t msgs,
                           int64_t from)
{
    int64_t count = 0, next = 0, *ids = NULL, pos = 0;
    struct svc_err e = {0};
    sqlite3_stmt *st = NULL;
    unsigned char key[32];
    /* from a session's keys so far (those of the messages before from), else all anew */
    if (from > 0 &&
        svc_search_prep("SELECT chain_key, chain_n FROM docs WHERE doc = ?1", &st) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, doc);
        bool have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 32;
        if (have) {
            memcpy(key, sqlite3_column_blob(st, 0), 32);
            pos = sqlite3_column_int64(st, 1);
        }
        sqlite3_reset(st);
        from = have ? from : 0;
    }
    if (from <= 0) {
        from = pos = 0;
        svc_chain_seed(svc_user_owner(sum), key);
        if (svc_search_doc_sql("DELETE FROM chain WHERE doc = ?3", doc) != 0)
            return -1;
    }
    int rc = 0;
    if (svc_sess_message_count(h, msgs, &count, &next, &ids, &e) != 0)
        count = 0; /* no messages directory: no keys */
    for (int64_t k = 0; k < count && rc == 0; k++) {
        int64_t id = ids ? ids[k] : k;
        json_object *rec = NULL;
        if (id < from || svc_sess_read_message(h, id, &rec, NULL, NULL, &e) != 0)
            continue;
        if (svc_chain_step(key, svc_store_effective_message(rec)) &&
            svc_search_prep("INSERT INTO chain(key, doc, pos, mid) VALUES (?1, ?2, ?3, ?4)", &st) ==
                SQLITE_OK) {
            sqlite3_bind_int64(st, 1, svc_chain_id(key));
            sqlite3_bind_int64(st, 2, doc);
            sqlite3_bind_int64(st, 3, ++pos);
            sqlite3_bind_int64(st, 4, id);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
            sqlite3_reset(st);
        }
        json_object_put(rec);
    }
    free(ids);
    if (rc == 0 &&
        svc_search_prep("UPDATE docs SET chain_n = ?2, ran = ?3, chain_key = ?4 WHERE doc = ?1",
                        &st) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, doc);
        sqlite3_bind_int64(st, 2, pos);
        sqlite3_bind_int(st, 3, svc_json_int(sum, "run_count", 0) > 0);
        sqlite3_bind_blob(st, 4, key, 32, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st);
    }
    return rc;
}

/* The session not archived with a row keyed key: a session's tip (pos its chain_n) before a
 * fork point, one that ran turns before one that only holds items (a client's own store,
 * kept by the Conversations API), then the newest. 1 with *hit, 0 none, -1 error. */
static int chain_at(int64_t key, struct svc_chain_hit *hit)
{
    sqlite3_stmt *st = NULL;
    if (svc_search_prep(
            "SELECT d.sid, c.pos, c.mid, d.chain_n, d.nmsgs FROM chain c JOIN docs d"
            " ON d.doc = c.doc"
            " WHERE c.key = ?1 AND NOT d.archived ORDER BY c.pos = d.chain_n DESC, d.ran DESC,"
            " d.updated DESC LIMIT 1",
            &st) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, key);
    int rc = sqlite3_step(st), found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    if (found == 1) {
        snprintf(hit->sid, sizeof hit->sid, "%s", (const char *)sqlite3_column_text(st, 0));
        hit->pos = sqlite3_column_int64(st, 1);
        hit->mid = sqlite3_column_int64(st, 2);
        hit->total = sqlite3_column_int64(st, 3);
        hit->msgs = sqlite3_column_int64(st, 4);
    }
    sqlite3_reset(st);
    return found;
}

int svc_search_chain_find(const struct svc_config *cfg, const int64_t *ids, size_t n,
                          struct svc_chain_hit *hit, struct svc_err *err)
{
    int rc = svc_search_ready(cfg, svc_time_monotonic() + CHAIN_BUDGET_S, err);
    /* a key found at k means the same session holds k - 1 too: the longest, by bisection */
    size_t lo = 0, hi = n; /* found for lo (0: nothing), not known above */
    struct svc_chain_hit h;
    while (rc == 0 && lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        int f = chain_at(ids[mid - 1], &h);
        if (f < 0)
            return svc_search_fail("look up a transcript", err);
        if (f == 1) {
            lo = mid;
            *hit = h;
        } else {
            hi = mid - 1;
        }
    }
    return rc < 0 ? -1 : lo > 0;
}
