#include "idem.h"

#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "query.h"
#include "runs.h"

enum svc_idem_sync svc_idem_sync_decide(const struct svc_config *cfg, const struct svc_user *user,
                                        const char *sid, const char *key, json_object **record)
{
    *record = NULL;
    /* the one place that says when a key applies: a new session or no sessions has none */
    if (!key || !sid || !cfg->sessions.enabled ||
        svc_session_visible(cfg, svc_user_scope(user), sid, true, NULL) != 0)
        return SVC_IDEM_NEW_TURN;
    json_object *rec = NULL;
    if (svc_runs_find_idem(cfg, sid, key, &rec, NULL) == 0 &&
        strcmp(svc_json_str(rec, "status", ""), "done") == 0) {
        *record = rec;
        return SVC_IDEM_REPLAY;
    }
    json_object_put(rec);
    return SVC_IDEM_NEW_TURN;
}

void svc_idem_record_sync(const struct svc_config *cfg, struct svc_run *run, const char *key,
                          const struct svc_err *failure)
{
    if (!cfg->sessions.enabled)
        return;
    const char *status = svc_run_status_of(failure ? failure->code : SVC_OK);
    struct svc_err e;
    if (svc_runs_record_sync(cfg, run, failure ? NULL : key, status, failure, &e) < 0) {
        struct svc_run_answer a;
        svc_run_answer(run, &a);
        svc_logf("run record for %s failed: %s", a.run_id, e.message);
    }
}
