/* dirscan: the session directories read for the listing: the root's names, the rebuild of
 * the journal from every session's summary, and svc fsck's check of the journal against
 * them. Writers never wait for a read of every session: the directories are walked with
 * the root lock let go, and what changed meanwhile is read again under it.
 *   svc_dirscan_names    the root's session ids, sorted by strcmp
 *   svc_dirscan_rebuild  every session's summary into a sink (a memory copy, or a listing
 *                        database being built), then the journal written anew from it
 *   svc_dirscan_unkept   whether the last rebuild could not be kept
 *   svc_dirscan_verify   svc fsck: the journal against the directories */
#ifndef SVC_DIRSCAN_H
#define SVC_DIRSCAN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "journal.h"
#include "layout.h"

/* 0 with the heap array *v of n heap ids (a missing root: none), or -1. */
int svc_dirscan_names(const struct svc_store *st, char ***v, size_t *n);
void svc_dirscan_names_free(char **v, size_t n);

/* Where a rebuild puts what it reads: put(sid, summary) (NULL: sid is gone), in any order;
 * rows gives them back in listing order for the journal. */
struct svc_dirscan_sink {
    int (*put)(void *ctx, const char *sid, json_object *summary);
    svc_journal_rows_fn *rows;
    void *ctx;
};
/* With j's root lock held (j->lock -1: none; then nothing is written): every session into
 * sink, then a new generation of the journal from its rows (on a failed write the stamp is
 * withdrawn: *written false). *mtime: the root's mtime before the walk. 0; -1 when the
 * root cannot be read; 1 when another process's rebuild was waited for instead (its
 * journal is there to read; may_wait); 2 when a brief wait for it ran out. */
int svc_dirscan_rebuild(const struct svc_store *st, struct svc_journal *j,
                        const struct svc_dirscan_sink *sink, bool may_wait, bool brief,
                        struct timespec *mtime, bool *written);
/* Whether the last rebuild could not be kept (a root that cannot be written: said once per
 * process in the log instead of at each listing). */
bool svc_dirscan_unkept(void);

/* svc fsck: whether the journal is whole (it matches its stamp) and holds, for every
 * session directory and no other, the summary its sidecar gives. 0 when it does, 1 when
 * not (why: one line saying what differs), 2 when there is no journal yet (the next
 * listing builds it), -1 on error. Its memory does not grow with the root (the journal
 * goes to a temporary database, hostdb.h); writers wait only while the journal is read. */
typedef void svc_dirscan_progress_fn(void *ctx, size_t sessions_done);
int svc_dirscan_verify(const struct svc_store *st, char *why, size_t whysz,
                       svc_dirscan_progress_fn *progress, void *ctx);

#endif
