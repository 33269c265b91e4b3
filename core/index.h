/* index: the root-level summary index that makes a list page cost the same with 1,000 or
 * 1,000,000 sessions (SPEC 4.3, 11; the journal, its stamp, the database: docs/FORMAT.md).
 * The root's journal (.svc_index.jsonl, journal.h) tells every change; each host reads it
 * into its listing database (listdb.h, st->index_dir), a page at a time, applying only the
 * bytes appended since (another generation: built anew, in the background when large);
 * without one (st->index_dir NULL, or while it is built) each process keeps it in memory.
 * A change of the root directory's mtime compares its names with the index for sessions
 * another program added or removed. A journal that does not match the stamp its last
 * writer left in the root lock file is never answered from: it is rebuilt from the
 * directories under the root lock first. */
#ifndef SVC_INDEX_H
#define SVC_INDEX_H

#include <json-c/json.h>
#include <stdbool.h>

#include "err.h"
#include "store.h"

/* A listing request (SPEC 4.3), parsed by the caller; query.h validates it. */
#define SVC_LIST_LIMIT_DEFAULT 50
#define SVC_LIST_LIMIT_MAX 500

struct svc_list_query {
    int64_t limit; /* 1..SVC_LIST_LIMIT_MAX (svc_sessions_list checks), SVC_LIST_LIMIT_DEFAULT */
    const char *cursor; /* opaque, from next_cursor; NULL for the first page */
    bool include_archived;
    bool archived_only;
    const char *status;      /* NULL or running|idle|error|cancelled */
    const char *q;           /* NULL or a case-insensitive title substring */
    const char *owner;       /* NULL: every session; else only those it owns (core/user.h) */
    const char *pinned;      /* NULL, "true" or "false" */
    const char *const *tags; /* ntags tags the session must all have (labels.h) */
    size_t ntags;
    bool stored_counts; /* message_count as the index holds it, not recounted (a stat a
                         * row): for a caller that reads the files anyway (an export) */
};

/* A page of summaries per q: {"sessions": [...], "next_cursor"}. When stale is not NULL,
 * *stale gets the ids on the page listed as running whose run lock nobody holds (an array,
 * new reference), or NULL when there are none: the caller repairs them and lists again. */
int svc_index_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err);
/* Bring this process's copy of the index up to date and sorted: a pool master calls it
 * before forking workers, so that each new worker starts with the index loaded. */
void svc_index_warm(const struct svc_store *st);
/* At a pool's orderly stop: flush this host's listing database to the disk and mark it so,
 * so that it is used after a reboot instead of built anew (listdb.h svc_listdb_seal). */
void svc_index_seal(const struct svc_store *st);
/* svc fsck: whether the index file is whole (it matches the stamp its last writer left) and
 * holds, for every session directory and no other, the summary its sidecar gives. Returns
 * 0 when it does, 1 when not (why gets one line saying what differs), 2 when there is no
 * index file yet (nothing to distrust: the next listing builds it), -1 on error. Its memory
 * does not grow with the root: the journal goes to a temporary file on disk (summap.h).
 * Writers wait only while the journal is read: the directories are walked without the root
 * lock (progress every 1,000 sessions) and what differs is looked at again under it. */
typedef void svc_index_progress_fn(void *ctx, size_t sessions_done);
int svc_index_verify(const struct svc_store *st, char *why, size_t whysz,
                     svc_index_progress_fn *progress, void *ctx);
/* The number of sessions the index lists (this process's copy, brought up to date), or -1. */
int64_t svc_index_count(const struct svc_store *st);
/* Bring the index up to date and call fn, in no order, for each session it lists that
 * changed in this process's copy since *mark (every one when *mark is 0 or sessions left
 * since), with its updated_at (epoch), message_count and archived; *mark gets the new mark.
 * Returns 1 when fn saw every session, 0 when only the changed ones, -1 on error. How the
 * search index catches up. */
typedef void svc_index_each_fn(void *ctx, const char *sid, double updated, int64_t msgs,
                               bool archived);
int svc_index_each(const struct svc_store *st, uint64_t *mark, svc_index_each_fn *fn, void *ctx);
/* The summary of sid in this process's copy as the last svc_index_each or listing left it
 * (new reference), or NULL when it has none or cannot read it. */
json_object *svc_index_summary(const char *sid);
/* Whether the last svc_index_list of this process was answered from memory because this
 * host's listing database was being built (the answer is as correct, only slower). */
bool svc_index_building(void);
/* Rebuild the index from the directories now, under the root lock. */
int svc_index_rebuild(const struct svc_store *st, struct svc_err *err);
/* Drop the in-process cache (tests, SIGHUP). */
void svc_index_reset(void);

#endif
