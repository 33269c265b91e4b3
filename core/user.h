/* user: who a request acts for and which sessions it sees (SPEC 14), decided here once.
 * A session is owned when its sidecar says "user_verified": true; its owner is then its
 * "user_id". Sessions without an owner (from before users were configured, written by
 * Strands, or made through server.api_token) belong to admins. A user sees the sessions
 * they own, exactly as if no other existed; an admin sees every session. A bearer token is
 * matched against server.users by SHA-256, in constant time; server.api_token stays an
 * admin; server.user_param takes the user from the web server. */
#ifndef SVC_USER_H
#define SVC_USER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"

struct svc_user {
    const char *id; /* borrowed; NULL: the admin of server.api_token, or auth off */
    bool admin;
};

/* Whether users are configured (server.users or server.user_param). */
bool svc_users_enabled(const struct svc_config *cfg);
/* The caller from the Authorization header and the user_param value (either may be NULL):
 * 0, or 401 missing_token / invalid_token. Without token and users, everyone is the admin. */
int svc_user_authenticate(const struct svc_config *cfg, const char *authorization,
                          const char *param_user, struct svc_user *out, struct svc_err *err);
/* The identity a job runs as: its `user:` (an admin as server.users says, or when ""). */
void svc_user_of_job(const struct svc_config *cfg, const char *user, struct svc_user *out);
/* The owner filter of u's reads: NULL for an admin (every session), else u's id. */
const char *svc_user_scope(const struct svc_user *u);
/* The owner of a summary or sidecar (borrowed), NULL when it has none. */
const char *svc_user_owner(json_object *summary);
/* Whether scope (svc_user_scope) sees the session of this summary; NULL summary: none. */
bool svc_user_sees(const char *scope, json_object *summary);
/* An Idempotency-Key as stored for u (heap), so one user's key never replays another's
 * answer; the key itself for the server.api_token admin. */
char *svc_user_key(const struct svc_user *u, const char *key);
/* Record id as the owner of a new session's sidecar. */
void svc_user_own(json_object *sc, const char *id);

#endif
