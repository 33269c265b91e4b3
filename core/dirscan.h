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

/* Where a rebuild puts what it reads (summary NULL: gone); rows gives them back in order. */
struct svc_dirscan_sink {
    int (*put)(void *ctx, const char *sid, json_object *summary);
    svc_journal_rows_fn *rows;
    void *ctx;
};
/* With j's root lock held (none: nothing written): every session into sink, then a new
 * journal from its rows (*written; failed: the stamp withdrawn); *mtime: the root's before
 * the walk. 0; -1 when the root cannot be read; 1 when another's rebuild was waited for
 * (may_wait: its journal is there to read); 2 when a brief wait for it ran out. */
int svc_dirscan_rebuild(const struct svc_store *st, struct svc_journal *j,
                        const struct svc_dirscan_sink *sink, bool may_wait, bool brief,
                        struct timespec *mtime, bool *written);
/* Whether the last rebuild could not be kept (a root that cannot be written). */
bool svc_dirscan_unkept(void);

/* svc fsck: whether the journal matches its stamp and holds each session directory's
 * summary and no other: 0, 1 (why says what differs), 2 when there is none yet, -1. Its
 * memory does not grow with the root (hostdb.h); writers wait only for the journal's read. */
typedef void svc_dirscan_progress_fn(void *ctx, size_t sessions_done);
int svc_dirscan_verify(const struct svc_store *st, char *why, size_t whysz,
                       svc_dirscan_progress_fn *progress, void *ctx);

#endif
