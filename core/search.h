/* search: full-text search over message text (SPEC 13.3), SQLite FTS5 through libsqlite3.
 * The index is derived and per host: <search.index_dir>/<hash of root and agent>.sqlite,
 * never on the session root (SQLite over NFS or FUSE is unsafe). Before each query it
 * catches up from the listing index (index.h): a session whose message_count grew gets its
 * new messages indexed (and its earlier files written since read), one whose updated_at
 * changed otherwise is indexed anew (a rename, a redaction), one no longer listed dropped.
 * A file that is missing, damaged or stamped for another root, agent or schema is rebuilt.
 * Words are folded as titles are (fold.h); q's words, "phrases" and prefix* are quoted,
 * never passed as FTS syntax. The newest 100 matches are ranked (bm25). */
#ifndef SVC_SEARCH_H
#define SVC_SEARCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "store.h"

#define SVC_SEARCH_Q_MAX 1024 /* bytes */
#define SVC_SEARCH_LIMIT_DEFAULT 20
#define SVC_SEARCH_LIMIT_MAX 100

struct svc_search_query {
    const char *q;      /* 1..SVC_SEARCH_Q_MAX bytes holding a word */
    int64_t limit;      /* 1..SVC_SEARCH_LIMIT_MAX */
    const char *cursor; /* next_cursor of the page before, or NULL */
    bool include_archived;
    const char *role;  /* NULL or user|assistant|tool */
    const char *owner; /* NULL: every session; else only those this scope sees (user.h) */
};

/* {"results": [{"session_id", "title", "updated_at", "message_id", "role", "snippet"}],
 * "next_cursor"}, best matches first; bad q, limit, cursor or role: SVC_E_INVALID_QUERY. */
int svc_search(const struct svc_config *cfg, const struct svc_search_query *q, json_object **out,
               struct svc_err *err);
/* Throw the index away and build it from the sessions now; *sessions, *messages (may be
 * NULL) get what it holds. */
int svc_search_rebuild(const struct svc_config *cfg, int64_t *sessions, int64_t *messages,
                       struct svc_err *err);

/* The unarchived session holding the longest prefix of transcript keys ids[0..n) (chain.h),
 * the index caught up first for at most 0.25 s: 1 with *hit (pos: how many of ids it holds,
 * mid: its message there, total: its keyed messages), 0 when none, -1 with err. */
struct svc_chain_hit {
    char sid[SVC_ID_MAX + 1];
    int64_t pos, mid, total;
    int64_t msgs; /* the session's message count when it was indexed */
};
int svc_search_chain_find(const struct svc_config *cfg, const int64_t *ids, size_t n,
                          struct svc_chain_hit *hit, struct svc_err *err);

#endif
