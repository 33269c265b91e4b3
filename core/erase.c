#include "erase.h"

#include "fsio.h"
#include "jsonx.h"
#include "lock.h"
#include "log.h"
#include "memory.h"
#include "responses.h"
#include "runs.h"
#include "store.h"

int svc_session_delete(const struct svc_config *cfg, const char *sid, json_object **out,
                       struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    struct svc_sess s;
    struct svc_lock run = SVC_LOCK_INIT;
    if (svc_sess_open(cfg, sid, &s, err) != 0)
        return -1;
    int rc = -1;
    if (!svc_sess_exists(&s)) {
        svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", sid);
        goto out;
    }
    /* the digests first: recall must never quote a deleted session, so a memory file that
     * cannot be rewritten fails the deletion while nothing has changed */
    if (svc_lock_run_try(s.dir, &run, err) != 0 || svc_sess_lock(&s, true, err) != 0 ||
        svc_memory_forget(cfg, sid, err) != 0 || svc_sess_remove(&s, err) != 0)
        goto out;
    /* its stored responses and run records: lookups by id, removed once the session is gone */
    svc_responses_forget(cfg, sid);
    svc_runs_forget(cfg, sid);
    svc_logf("session %s deleted", sid);
    *out = json_object_new_object();
    svc_json_set_bool(*out, "deleted", true);
    svc_json_set_str(*out, "session_id", sid);
    rc = 0;
out:
    svc_sess_close(&s);
    svc_lock_release(&run);
    return rc == 0 ? 0 : svc_err_unwritable(cfg->sessions.root, err);
}
