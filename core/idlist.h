/* idlist: a set of ids (no '\n' or '\0' in one, at most SVC_IDLIST_ID_MAX bytes) kept in a
 * temporary file (fileset.h's: $TMPDIR or /tmp, unlinked at once), read back sorted by
 * strcmp and without duplicates, in bounded memory: an external merge sort. Ids gather in
 * a 256 KiB chunk; a full chunk is sorted and written out as a run; svc_idlist_sort merges
 * the runs into one sorted file, reading each run through a 4 KiB buffer.
 *   svc_idlist_new / _add / _free   add in any order (not after _sort)
 *   svc_idlist_sort                 once all are added; 0 or -1 with err
 *   svc_idlist_count                the distinct ids, once sorted
 *   svc_idlist_rewind / _next       read them in order: 1 with *id (borrowed until the next
 *                                   call), 0 at the end, -1 with err */
#ifndef SVC_IDLIST_H
#define SVC_IDLIST_H

#include <stddef.h>

#include "err.h"

#define SVC_IDLIST_ID_MAX 255

struct svc_idlist;

int svc_idlist_new(struct svc_idlist **out, struct svc_err *err);
int svc_idlist_add(struct svc_idlist *l, const char *id, struct svc_err *err);
int svc_idlist_sort(struct svc_idlist *l, struct svc_err *err);
size_t svc_idlist_count(const struct svc_idlist *l);
int svc_idlist_rewind(struct svc_idlist *l, struct svc_err *err);
int svc_idlist_next(struct svc_idlist *l, const char **id, struct svc_err *err);
void svc_idlist_free(struct svc_idlist *l);

#endif
