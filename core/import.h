/* import: restore the sessions of an export bundle into the root (SPEC 5, `svc import`;
 * the checks and renames in docs/FORMAT.md, "Import"). The bundle is a directory or a
 * .tar.gz (with or without its top directory). Every member is read and checked against
 * the manifest before anything is written; an unsafe member or a mismatch outside
 * native/session_<id>/ refuses the bundle, one inside fails that session. Each session is
 * then staged inside the root and renamed into place under its locks (an existing id only
 * with overwrite, else skipped): imported wholly or not at all, even if killed.
 * *report: {"export_id", "agent_id", "imported": [ids], "skipped": [{"session_id",
 * "reason"}], "failed": [{"session_id", "reason"}], "note"?} (new reference); the call
 * returns 0 when the bundle was read, even if sessions failed, and -1 when it was refused
 * (nothing written). dry_run verifies and reports without writing anything. */
#ifndef SVC_IMPORT_H
#define SVC_IMPORT_H

#include <json-c/json.h>
#include <stdbool.h>

#include "bundle.h"
#include "config.h"
#include "err.h"

struct svc_import_options {
    bool overwrite;
    bool dry_run;
    /* while the bundle is read (checked, then staged): done and total 0, the bytes read;
     * then the sessions renamed into place of those to import */
    struct svc_export_progress progress;
};

int svc_import(const struct svc_config *cfg, const char *bundle,
               const struct svc_import_options *opt, json_object **report, struct svc_err *err);

#endif
