/* jobs: scheduled jobs (SPEC 9), run by `svc jobs run-due` from cron or a systemd timer
 * once a minute, each through the run lifecycle (core/session.h) on its session_id with its
 * input (channel "job"). State and lock files, and when a job is due: docs/FORMAT.md
 * ("Jobs"). A due job runs once however many minutes it missed. The job's lock (never
 * waited for) is taken before its state is read, so two racing invocations run a due job
 * exactly once; a busy session records "skipped" and is tried the next minute. Statuses:
 * done, error, cancelled, skipped. Times are UTC. Test hook (test builds only, make
 * TEST_HOOKS=1): SVC_TEST_JOBS_NOW (ISO 8601) replaces the clock of svc_jobs_now. */
#ifndef SVC_JOBS_H
#define SVC_JOBS_H

#include <json-c/json.h>
#include <time.h>

#include "config.h"
#include "err.h"

time_t svc_jobs_now(void);
/* Every configured job as GET /api/jobs and `svc jobs list` show it: [{id, schedule,
 * session_id, enabled, next_run_at, last_run_at, last_status, last_run_id}], then the
 * retention job's row when retention is on (retention.h) (new reference).
 * next_run_at is the next minute the job will run (in the past when it is overdue: the next
 * run-due runs it); null when disabled. A missing or damaged state file reads as empty. */
json_object *svc_jobs_list(const struct svc_config *cfg, time_t now);
/* Handle every enabled job that is due at now, then retention (retention.h). *report:
 * {"jobs": [{id, result, run_id?, error?}]} with result done | error | cancelled | skipped |
 * not_due | locked | disabled.
 * Returns -1 with err only when the jobs directory or state cannot be used; a failed run
 * is a result, not an error. */
int svc_jobs_run_due(const struct svc_config *cfg, time_t now, json_object **report,
                     struct svc_err *err);

#endif
