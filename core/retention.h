/* retention: the `retention:` block applied (SPEC 13.2). A pass reads every summary from the
 * listing index and decides by its updated_at: delete when delete_after_days have passed, or
 * delete_archived_after_days for an archived one; else archive an unarchived one after
 * archive_after_days. Pinned sessions are kept (keep_pinned); a session a run holds is
 * skipped. With export_before_delete, the sessions to delete go into one tar.gz bundle there
 * first, and a failed export deletes nothing. Deletion is erase.h's. `svc jobs run-due` runs
 * a pass on `schedule`, once across hosts sharing the root: its state (<root>/
 * .svc_retention.json) is read and written under <root>/.svc_retention.lock, never waited for. */
#ifndef SVC_RETENTION_H
#define SVC_RETENTION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <time.h>

#include "config.h"
#include "err.h"

/* Whether any of the three ages is set. */
bool svc_retention_enabled(const struct svc_config *cfg);
/* One pass at now (dry_run: decide, change nothing). *report: {"dry_run", "actions":
 * [{"session_id", "action": archive|delete|skip, "reason"}], "counts": {"archived",
 * "deleted", "skipped"}, "export"?: the export's answer}. -1 with err when the sessions
 * cannot be listed or the export fails. */
int svc_retention_apply(const struct svc_config *cfg, time_t now, bool dry_run,
                        json_object **report, struct svc_err *err);
/* svc jobs run-due's part: {"id": "retention", "result": done|error|not_due|locked,
 * "counts"?, "error"?} (new reference), or NULL when retention is off. */
json_object *svc_retention_run_due(const struct svc_config *cfg, time_t now);
/* GET /api/jobs' row: {"id": "retention", "schedule", "enabled", "next_run_at",
 * "last_run_at", "last_status", "last_counts"}, or NULL when retention is off. */
json_object *svc_retention_job(const struct svc_config *cfg, time_t now);

#endif
