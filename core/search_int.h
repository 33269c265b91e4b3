/* search_int: what search.c shares with search_chain.c, the two files of the search index
 * (search.h); nobody else includes it.
 *   svc_search_prep        a statement of the open index, prepared once (SQLITE_OK or not)
 *   svc_search_doc_sql     run sql with ?1..?2 a session's message rowids and ?3 its doc
 *   svc_search_fail        err from SQLite's last error (a damaged file is removed)
 *   svc_search_ready       the index open and caught up (until: a monotonic time past which
 *                          the catch-up stops between transactions, 0: none); 0 or -1
 *   svc_search_chain_index the transcript keys of session h (doc) from message id from on
 *                          (search_chain.c), inside the caller's transaction */
#ifndef SVC_SEARCH_INT_H
#define SVC_SEARCH_INT_H

#include <json-c/json.h>
#include <sqlite3.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "store.h"

int svc_search_prep(const char *sql, sqlite3_stmt **st);
int svc_search_doc_sql(const char *sql, int64_t doc);
int svc_search_fail(const char *what, struct svc_err *err);
int svc_search_ready(const struct svc_config *cfg, double until, struct svc_err *err);
int svc_search_chain_index(struct svc_sess *h, int64_t doc, json_object *sum, int64_t msgs,
                           int64_t from);

#endif
