/* import: restore the sessions of an export bundle into the root (SPEC 5, `svc import`;
 * the checks and renames in docs/FORMAT.md, "Import"). The bundle is a directory or a
 * .tar.gz (with or without its top directory). Every member is read and checked against
 * the manifest before anything is written; an unsafe member or a mismatch outside
 * native/session_<id>/ refuses the bundle, one inside fails that session. Each session is
 * then staged inside the root and renamed into place under its locks (an existing id only
 * with overwrite, else skipped): imported wholly or not at all, even if killed. Memory stays
 * flat whatever the bundle's size: files and sessions are kept in a temporary database
 * (hostdb.h). Returns 0 with *report when the bundle was read, even if sessions failed; -1
 * when it was refused (nothing written) or a temporary file failed (sessions placed are
 * whole). The report holds counts; svc_import_each reads its skipped or failed sessions
 * back from disk, in id order. */
#ifndef SVC_IMPORT_H
#define SVC_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "bundle.h"
#include "config.h"
#include "err.h"
#include "store.h"

struct svc_import_options {
    bool overwrite;
    bool dry_run;
    /* while the bundle is read (checked, then staged): done and total 0, the bytes read;
     * then the sessions renamed into place of those to import */
    struct svc_export_progress progress;
};

struct svc_hostdb;

enum svc_import_outcome { SVC_IMPORT_IMPORTED, SVC_IMPORT_SKIPPED, SVC_IMPORT_FAILED };

struct svc_import_report {
    char *export_id; /* the manifest's, NULL when it has none */
    char agent_id[SVC_ID_MAX + 2];
    char *note; /* a bundle of another agent: where its messages go; else NULL */
    size_t imported, skipped, failed;
    struct svc_hostdb *tab; /* the sessions and their outcome (a temporary database) */
};

typedef void (*svc_import_each_fn)(void *ctx, const char *session_id, const char *reason);

int svc_import(const struct svc_config *cfg, const char *bundle,
               const struct svc_import_options *opt, struct svc_import_report *report,
               struct svc_err *err);
/* fn on each session of that outcome (its reason; "" for one imported). 0, or -1. */
int svc_import_each(struct svc_import_report *r, enum svc_import_outcome which,
                    svc_import_each_fn fn, void *ctx, struct svc_err *err);
void svc_import_report_free(struct svc_import_report *r);
/* For an import into st's root (this one's and chatgpt.h's): the root made, its import lock
 * taken (*lockfd), what killed imports left cleaned up, and a new staging directory made in
 * it (*staging, heap; none when staging is NULL) with *stg, st with it as its root. 0, or -1
 * with err. */
int svc_import_staging(const struct svc_store *st, int *lockfd, char **staging,
                       struct svc_store *stg, struct svc_err *err);

#endif
