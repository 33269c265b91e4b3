/* idem: what a repeated Idempotency-Key means (SPEC 4.1, 4.2), decided here once; the HTTP
 * layer only reads the header and renders the decision. Keys are per session (runs.c stores
 * sha256(session id, key) -> run id under .svc_runs/).
 *  - POST /api/chat: a key that names a completed (`done`) run replays that run's answer and
 *    starts nothing; a key that names a failed, cancelled or still-running run, or nothing,
 *    starts a new turn. Only a completed run is recorded under its key, so a failed turn may
 *    be retried with the same key.
 *  - POST /api/chat/runs: a key already seen returns the same run whatever its state; the
 *    key is stored before the runner starts (svc_runs_spawn applies this).
 *  - A key never replays a session the asker may not see (SPEC 14): its turn goes on to the
 *    run's begin, which answers it as missing.
 *  - The Responses API records its runs without a key. */
#ifndef SVC_IDEM_H
#define SVC_IDEM_H

#include <json-c/json.h>

#include "config.h"
#include "err.h"
#include "session.h"

enum svc_idem_sync {
    SVC_IDEM_NEW_TURN, /* run the turn */
    SVC_IDEM_REPLAY,   /* answer again from *record, start nothing */
};

/* The decision for a synchronous turn on session sid (NULL: a new session) with key (NULL:
 * no header), asked by user (user.h): a session user may not see is never replayed (its
 * turn then answers it as missing, as the run's begin does). With SVC_IDEM_REPLAY, *record is the
 * stored run record (new ref, the fields of svc_runs_get); otherwise *record is NULL. Never fails:
 * a key that cannot be looked up is treated as unseen. */
enum svc_idem_sync svc_idem_sync_decide(const struct svc_config *cfg, const struct svc_user *user,
                                        const char *sid, const char *key, json_object **record);

/* Record an ended synchronous run (failure NULL: it completed) so GET /api/chat/runs/{id}
 * answers for it: status `done`, `cancelled` (cancelled or timed out) or `error`, and under
 * key only when it completed. Does nothing with sessions disabled; a failure is logged,
 * never returned (the answer is already decided). */
void svc_idem_record_sync(const struct svc_config *cfg, struct svc_run *run, const char *key,
                          const struct svc_err *failure);

#endif
