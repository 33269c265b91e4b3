/* fileset: two lists of files (path, bytes, SHA-256) kept in temporary files ($TMPDIR, or
 * /tmp; unlinked at once) and matched by path in bounded memory: both are split by a hash
 * of the path into up to 256 buckets of about 16,384 records, each bucket then sorted in
 * memory (an import's read bundle against its manifest, core/import.c).
 *   svc_fileset_new / _add / _free   append records; nothing is kept in memory
 *   svc_fileset_join                 calls fn once per path of either list, with that
 *                                    path's records of each (n 0 when absent), in no
 *                                    particular order; fn returning non-zero stops it;
 *                                    both lists are used up (emptied) */
#ifndef SVC_FILESET_H
#define SVC_FILESET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

struct svc_fileset;

struct svc_fileset_rec {
    char *path; /* owned by the set */
    uint64_t bytes;
    char sha[65]; /* lower-case hex */
};

typedef int (*svc_fileset_fn)(void *ctx, const char *path, const struct svc_fileset_rec *a,
                              size_t na, const struct svc_fileset_rec *b, size_t nb);

int svc_fileset_new(struct svc_fileset **out, struct svc_err *err);
int svc_fileset_add(struct svc_fileset *f, const char *path, uint64_t bytes, const char *sha,
                    struct svc_err *err);
size_t svc_fileset_count(const struct svc_fileset *f);
/* 0; fn's non-zero return; or -1 with err set (a temporary file failed). */
int svc_fileset_join(struct svc_fileset *a, struct svc_fileset *b, svc_fileset_fn fn, void *ctx,
                     struct svc_err *err);
void svc_fileset_free(struct svc_fileset *f);
/* How many buckets for total records: about 16,384 each, within the open files (two a
 * bucket; core/idtab.c splits the same way). */
size_t svc_fileset_buckets(size_t total);
/* A temporary file of the same place, already unlinked (nothing left even if killed). */
FILE *svc_fileset_tmpfile(struct svc_err *err);

#endif
