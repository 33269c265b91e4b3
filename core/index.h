/* index: the session listing, one owner (SPEC 4.3, 11; the journal, its stamp, the
 * database: docs/FORMAT.md), that makes a list page cost the same with 1,000 or 1,000,000
 * sessions. The root's journal (journal.h) tells every change; a dispatcher here answers
 * each call from this host's listing database (indexdb.h: st->index_dir, caught up with
 * the bytes appended since before each answer; built anew from another generation, in
 * the background when large) or, without one or while it is built, from this process's
 * own copy (a temporary database made and kept the same way). A page's rows from either
 * are checked here (a message file beyond the stored count recounted, a `running` session
 * without a live run reported stale) and the cursor made. */
#ifndef SVC_INDEX_H
#define SVC_INDEX_H

#include <json-c/json.h>
#include <stdbool.h>

#include "err.h"
#include "listing.h"
#include "spawn.h"
#include "store.h"

/* A page of summaries per q: {"sessions": [...], "next_cursor"}. When stale is not NULL,
 * *stale gets the ids on the page listed as running whose run lock nobody holds (an array,
 * new reference), or NULL when there are none: the caller repairs them and lists again. */
int svc_index_list(const struct svc_store *st, const struct svc_list_query *q, json_object **out,
                   json_object **stale, struct svc_err *err);
/* Bring the index up to date before a pool forks its workers: this host's database built
 * and closed (a connection is no process's but one's). */
void svc_index_warm(const struct svc_store *st);
/* The program's spawner (spawn.h). */
void svc_index_set_spawn(svc_spawn_fn *fn);
/* At a pool's orderly stop: seal this host's listing database (listdb.h svc_listdb_seal). */
void svc_index_seal(const struct svc_store *st);
/* The number of sessions the index lists (this process's copy, brought up to date), or -1. */
int64_t svc_index_count(const struct svc_store *st);
/* Bring the index up to date and call fn for each session changed since *mark (svc_listdb_each),
 * with its updated_at (epoch), message_count and archived: 1 when fn saw every session, 0
 * when only the changed ones, -1; *mark gets the new mark. How search catches up. */
int svc_index_each(const struct svc_store *st, struct svc_list_mark *mark, svc_index_each_fn *fn,
                   void *ctx);
/* The summary of sid in this process's copy as the last svc_index_each or listing left it
 * (new reference), or NULL when it has none or cannot read it. */
json_object *svc_index_summary(const char *sid);
/* Whether the last svc_index_list was answered from this process's copy during a build. */
bool svc_index_building(void);
/* Rebuild the index (and this host's database) from the directories now. */
int svc_index_rebuild(const struct svc_store *st, struct svc_err *err);
/* Drop the in-process cache (tests, SIGHUP). */
void svc_index_reset(void);

#endif
