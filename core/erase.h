/* erase: deleting a session and everything derived from it (SPEC 13.1). Under the run lock
 * (never waited for: a live run is SVC_E_SESSION_BUSY) and the exclusive session lock, its
 * memory digests go, then the directory leaves the root's namespace in one rename
 * (store.h), then its index row, stored responses and run records. One log line each. */
#ifndef SVC_ERASE_H
#define SVC_ERASE_H

#include <json-c/json.h>

#include "config.h"
#include "err.h"

/* {"deleted": true, "session_id"} in *out (new reference). SVC_E_INVALID_SESSION_ID,
 * SVC_E_SESSIONS_DISABLED, SVC_E_SESSION_NOT_FOUND, SVC_E_SESSION_BUSY; nothing changes
 * when it fails. */
int svc_session_delete(const struct svc_config *cfg, const char *sid, json_object **out,
                       struct svc_err *err);

#endif
