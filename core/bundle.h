/* bundle: export of sessions as a verifiable bundle (SPEC 5; layout and promises in
 * docs/FORMAT.md, "Export bundles").
 *   svc_export_prepare  validates the request, resolves the selection and the destination;
 *                       writes nothing. Unknown named sessions: SVC_E_SESSION_NOT_FOUND
 *                       listing them; a destination that does not resolve (after links)
 *                       inside an allowed directory: SVC_E_EXPORT_DIR_FORBIDDEN.
 *   svc_export_write    writes the bundle (directory or .tar.gz) under a hidden temporary
 *                       name and renames it into place, never over an existing one;
 *                       *result is the API answer (new reference, with "left_out").
 *   svc_export_stream   writes the .tar.gz to a callback (a download), in flat memory.
 * A damaged file is exported as it is, named under "warnings"; a selected session that
 * cannot be read fails the export (nothing written) unless allow_partial. */
#ifndef SVC_BUNDLE_H
#define SVC_BUNDLE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "err.h"
#include "tar.h"

#define SVC_EXPORT_FORMAT "svc-chat-export"
#define SVC_EXPORT_FORMAT_VERSION 1

struct svc_export_request {
    const char **session_ids; /* named sessions (n_session_ids), or none: the filters apply */
    size_t n_session_ids;
    bool include_archived;
    const char **statuses; /* running|idle|error|cancelled (n_statuses); none: any */
    size_t n_statuses;
    const char *updated_after; /* ISO 8601 or NULL */
    const char *updated_before;
    const char *output_dir;  /* NULL: sessions.export_default_dir */
    bool output_dir_trusted; /* the CLI: --out may name any directory */
    bool tar;                /* format "tar.gz" (download is always tar.gz) */
    bool download;           /* streamed: the destination is neither checked nor used */
    bool allow_partial;      /* a session that cannot be read is left out, not a failure */
    const char *owner;       /* NULL: any session; else only its own (core/user.h), and a
                              * named session of another owner is not found */
    const struct svc_export_progress *selecting; /* NULL, or told after each page of the
                                                  * listing how many sessions the filters
                                                  * looked at (total 0) */
};

/* Called after each session and at the end (done == total). */
struct svc_export_progress {
    void (*fn)(void *ctx, size_t done, size_t total, uint64_t bytes);
    void *ctx;
};

struct svc_export;

int svc_export_prepare(const struct svc_config *cfg, const struct svc_export_request *req,
                       struct svc_export **out, struct svc_err *err);
/* "chat-export-20261122T210000Z-a1b2c3" (borrowed). */
const char *svc_export_id(const struct svc_export *ex);
int svc_export_write(struct svc_export *ex, const struct svc_export_progress *progress,
                     json_object **result, struct svc_err *err);
int svc_export_stream(struct svc_export *ex, svc_tar_out_fn out, void *ctx,
                      const struct svc_export_progress *progress, struct svc_err *err);
void svc_export_free(struct svc_export *ex);

/* An unnamed temporary file in dir ($TMPDIR or /tmp when NULL), gone when closed, even after
 * a crash, open "w+": NULL with err (what names it when the stream cannot be made). */
FILE *svc_export_spool_file(const char *dir, const char *what, struct svc_err *err);

#endif
