/* runs: asynchronous runs (SPEC 4.2) whose state lives on disk, so any worker, a restarted
 * pool, or another pool on the same root can answer for them.
 *   <root>/.svc_runs/<run_id>.json          the run record (atomic rewrites)
 *   <root>/.svc_runs/<run_id>.events.jsonl  its events, one line each, appended as they happen
 *   <root>/.svc_runs/<run_id>.cancel        present when a cancel was requested
 *   <root>/.svc_runs/idem-<sha256>.json     Idempotency-Key -> run_id, per session
 * A run is found by its id alone (no scan of sessions). Records are kept at least 24 hours;
 * svc_runs_prune removes older finished ones.
 * svc_runs_spawn begins the run in the caller (so busy / archived / bad input are answered
 * at once), then has the program's spawner (spawn.h) start a detached runner (a session of
 * its own, every descriptor but the run's locks closed) that executes it, writes its events
 * and final record, and exits: the run outlives the worker and the client. */
#ifndef SVC_RUNS_H
#define SVC_RUNS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"
#include "session.h"
#include "spawn.h"

/* Valid run id: 1..64 of [A-Za-z0-9._-], not starting with '.'. */
bool svc_run_id_valid(const char *id);

/* Finished records are kept this long (SPEC: at least 24 hours); runners prune older ones. */
#define SVC_RUNS_KEEP_S (7 * 24 * 3600.0)

/* The program's spawner: without one, svc_runs_spawn refuses (SVC_E_INTERNAL). */
void svc_runs_set_spawn(svc_spawn_fn *fn);
/* Start a detached run. *out: {"run_id","session_id","status":"running","model"} (new ref).
 * With idem_key set and a run already recorded for (session, key), *out describes that run,
 * *replayed is true and no new run starts. */
int svc_runs_spawn(const struct svc_config *cfg, const struct svc_run_request *req,
                   const char *idem_key, json_object **out, bool *replayed, struct svc_err *err);

/* The record: {"run_id","session_id","status","event_count","model","content","usage",
 * "error","created_at","finished_at"}. A record left `running` whose runner is gone is
 * reported (and rewritten) as error/interrupted. SVC_E_RUN_NOT_FOUND when unknown. */
int svc_runs_get(const struct svc_config *cfg, const char *run_id, json_object **out,
                 struct svc_err *err);
/* Events from index cursor on (array, new ref); *next (may be NULL) is the index to ask
 * for next time; *finished true when the run has ended and every event up to its end is in
 * the array. */
int svc_runs_events(const struct svc_config *cfg, const char *run_id, long cursor,
                    json_object **out, long *next, bool *finished, struct svc_err *err);
/* Block until the events file grows or timeout_ms passes (inotify; no busy loop; on a
 * shared root at most 250 ms, as inotify cannot hear other hosts).
 * Returns 1 when something changed, 0 on timeout, -1 on error. */
int svc_runs_wait(const struct svc_config *cfg, const char *run_id, int timeout_ms);
/* Ask a running run to stop: SVC_E_RUN_NOT_ACTIVE when it already ended. */
int svc_runs_cancel(const struct svc_config *cfg, const char *run_id, json_object **out,
                    struct svc_err *err);

/* Idempotency for synchronous /api/chat: the stored run record for (session sid, key), or
 * SVC_E_NOT_FOUND. A plain lookup (sid and key not NULL): whether a key applies at all
 * (sessions enabled, an existing session) is svc_idem_sync_decide's rule (idem.h). */
int svc_runs_find_idem(const struct svc_config *cfg, const char *sid, const char *key,
                       json_object **record, struct svc_err *err);
/* Record an ended synchronous run (/api/chat, the Responses API): its record and events,
 * so svc_runs_get and svc_runs_events answer for it; with key, also under (session, key).
 * Written durably (sessions.fsync) only with a key: otherwise the turn line is the durable
 * record of the run and this one is for looking it up. */
int svc_runs_record_sync(const struct svc_config *cfg, struct svc_run *run, const char *key,
                         const char *status, const struct svc_err *failure, struct svc_err *err);

/* A deleted session's run records (and their events, cancel and lock files) and
 * Idempotency-Key files, removed. Returns how many runs were removed. */
int svc_runs_forget(const struct svc_config *cfg, const char *sid);

/* Remove finished records (and idempotency keys) not touched for max_age_s. Runs at most
 * once an hour per root (a stamp file says when); returns how many were removed. */
int svc_runs_prune(const struct svc_config *cfg, double max_age_s);

#endif
