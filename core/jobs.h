/* jobs: scheduled jobs (SPEC 9), run by `svc jobs run-due` from cron or a systemd timer
 * once a minute, each through the run lifecycle (core/session.h) on its session_id with its
 * input (channel "job").
 *   $SVC_HOME/jobs/state.json   {"schema_version": 1, "jobs": {"<id>": {"last_due_at",
 *                               "next_run_at", "last_run_at", "last_status", "last_run_id",
 *                               "last_error"}}}; rewritten atomically under jobs/.state.lock
 *   $SVC_HOME/jobs/<id>.lock    held (flock, never waited for) while the job is handled
 * A job is due when its first scheduled minute after last_due_at (for a job never seen: the
 * minute before now) is not after now. A due job runs once and last_due_at becomes now: the
 * minutes it missed are caught up by that one run, not one run each. Another invocation
 * holding the job's lock makes this one leave the job alone; the state is read after the
 * lock is taken, so two racing invocations run a due job exactly once. A busy session
 * (another run holds it) records last_status "skipped" and leaves last_due_at, so the next
 * minute tries again. Statuses: done, error, cancelled, skipped. Times are UTC.
 * Test hook, compiled only into test builds (make TEST_HOOKS=1, which `make test` and
 * `make asan` use): SVC_TEST_JOBS_NOW (ISO 8601) replaces the clock of svc_jobs_now. */
#ifndef SVC_JOBS_H
#define SVC_JOBS_H

#include <json-c/json.h>
#include <time.h>

#include "config.h"
#include "err.h"

time_t svc_jobs_now(void);
/* Every configured job as GET /api/jobs and `svc jobs list` show it: [{id, schedule,
 * session_id, enabled, next_run_at, last_run_at, last_status, last_run_id}] (new reference).
 * next_run_at is the next minute the job will run (in the past when it is overdue: the next
 * run-due runs it); null when disabled. A missing or damaged state file reads as empty. */
json_object *svc_jobs_list(const struct svc_config *cfg, time_t now);
/* Handle every enabled job that is due at now. *report: {"jobs": [{id, result, run_id?,
 * error?}]} with result done | error | cancelled | skipped | not_due | locked | disabled.
 * Returns -1 with err only when the jobs directory or state cannot be used; a failed run
 * is a result, not an error. */
int svc_jobs_run_due(const struct svc_config *cfg, time_t now, json_object **report,
                     struct svc_err *err);

#endif
