/* idtab: a table of session ids (a number, a state and its reason each) kept in unlinked
 * temporary files, in bounded memory (an import's sessions, core/import.c). Events are
 * appended in any order, then folded into one record an id: split by a hash of the id into
 * buckets of about 16,384 (as core/fileset.h), each bucket sorted in memory and written out
 * in id order (one bucket, so the whole table in id order, below 16,384 ids). A record is
 * then found by a binary search of its bucket on disk and written back in place.
 *   svc_idtab_note   an event: num added to the id's; a state other than 0 with its reason
 *                    (the first such event of an id, in the order noted, wins)
 *   svc_idtab_fold   the events into the table, fn called on each record (it may change
 *                    it; non-zero stops the fold and is returned)
 *   svc_idtab_find   one record by id (1, or 0 when absent); svc_idtab_put writes it back
 *   svc_idtab_each   every record in table order, written back when fn changed it */
#ifndef SVC_IDTAB_H
#define SVC_IDTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store.h"

#define SVC_IDTAB_WHY 640

struct svc_idtab;

struct svc_idrec {
    char id[SVC_ID_MAX + 2];
    uint64_t num;
    unsigned char state;
    char why[SVC_IDTAB_WHY]; /* "" when none */
    /* where it lives on disk: set by fold, find and each */
    size_t at;
    uint64_t why_off;
    uint32_t why_len;
};

typedef int (*svc_idtab_fn)(void *ctx, struct svc_idrec *r);

int svc_idtab_new(struct svc_idtab **out, struct svc_err *err);
int svc_idtab_note(struct svc_idtab *t, const char *id, size_t n, uint64_t num, unsigned char state,
                   const char *why, struct svc_err *err);
/* 0; fn's non-zero return; or -1 with err set (a temporary file failed). Once only. */
int svc_idtab_fold(struct svc_idtab *t, svc_idtab_fn fn, void *ctx, struct svc_err *err);
int svc_idtab_find(struct svc_idtab *t, const char *id, size_t n, struct svc_idrec *r,
                   struct svc_err *err);
int svc_idtab_put(struct svc_idtab *t, struct svc_idrec *r, struct svc_err *err);
int svc_idtab_each(struct svc_idtab *t, svc_idtab_fn fn, void *ctx, struct svc_err *err);
/* Set r's state and reason (why may be NULL: none); svc_idtab_put or each writes it. */
void svc_idrec_set(struct svc_idrec *r, unsigned char state, const char *why);
void svc_idtab_free(struct svc_idtab *t);

#endif
