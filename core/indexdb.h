/* indexdb: this host's listing database (listdb.h's rows, in a per-host file under
 * st->index_dir, hostdb.h) kept caught up with the root's journal (journal.h): before each
 * answer the bytes appended since it last read are applied, and a change of the root's
 * mtime compares its names with the rows. A database that cannot follow the journal
 * (another generation, a file that does not match its stamp, a line not ours, a missing
 * or damaged file) is built anew through a temporary file renamed into place: streamed
 * from a whole journal (compacting it from the new rows when it is mostly superseded
 * lines), or with the journal rebuilt from the directories into it (dirscan.h). Small
 * builds happen in the call; large ones, and rescans of large roots, in a process the
 * program's spawner starts, while index.h answers from this process's own copy: a
 * temporary database (hostdb.h) made and caught up the same way. Locks: <db>.lock, shared
 * while a process reads the database and exclusive to rename a new one over it;
 * <db>.build and <db>.rescan, held by the process doing that work. */
#ifndef SVC_INDEXDB_H
#define SVC_INDEXDB_H

#include <stdbool.h>

#include "layout.h"
#include "listing.h"
#include "spawn.h"

/* Whether this host's database answers: 0 when open and caught up (listdb.h addresses it, in
 * one read transaction under the shared lock until svc_indexdb_release), 1 while it is
 * built, -1 when it cannot be had. */
int svc_indexdb_ready(const struct svc_store *st);
/* The same of this process's own copy, made from the journal when it has none (rebuild: the
 * journal rebuilt first): 0, or -1 (errno EAGAIN: a brief wait for another's rebuild). */
int svc_indexdb_own(const struct svc_store *st, bool brief, bool rebuild);
void svc_indexdb_own_close(void);
void svc_indexdb_release(void);
/* Build it now, here (rebuild: the journal rebuilt first): 0, or -1 with errno. */
int svc_indexdb_build(const struct svc_store *st, bool rebuild);
/* Close the connection; a build that failed lately is tried again at the next look. */
void svc_indexdb_close(void);
/* At a pool's orderly stop: flush the database to the disk and mark it sealed. */
void svc_indexdb_seal(const struct svc_store *st);
void svc_indexdb_set_spawn(svc_spawn_fn *fn);

#endif
