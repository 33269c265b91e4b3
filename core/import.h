/* import: restore the sessions of an export bundle into the root (SPEC 5, `svc import`).
 * The bundle is a directory or a .tar.gz (with or without its top directory). First, before
 * anything is written, every member is read: unsafe members (absolute paths, `..`, links,
 * devices) refuse the whole bundle, the manifest must be an svc-chat-export of a version we
 * know, and every file's size and SHA-256 must match the manifest, which must list every
 * file. A mismatch under native/session_<id>/ fails that session (named with the file);
 * one anywhere else refuses the bundle. Then, holding <root>/.svc_import.lock, each session
 * is written into a hidden staging directory inside the root (<root>/.svc_import-<hex>/,
 * checked against the manifest again as it is written) and renamed into place under the
 * session's locks: a new id with rename(RENAME_NOREPLACE), an existing one (only with
 * overwrite; otherwise it is skipped) swapped atomically with RENAME_EXCHANGE after taking
 * its session and run locks (a run in progress fails it). A session is imported wholly or
 * not at all, even if the process is killed; a later import removes staging left behind.
 * The listing index is told of each session at once. A bundle of another agent_id keeps its
 * messages under agents/agent_<that id>/ (as exported) and the report says so in "note".
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
    struct svc_export_progress progress; /* sessions renamed into place / to import */
};

int svc_import(const struct svc_config *cfg, const char *bundle,
               const struct svc_import_options *opt, json_object **report, struct svc_err *err);

#endif
