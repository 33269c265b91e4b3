#include "access.h"

#include "jsonx.h"
#include "query.h"
#include "responses.h"
#include "runs.h"

/* Whether the session o names ("session_id") is hidden from r's caller. */
static bool hidden(struct http_req *r, json_object *o)
{
    const char *scope = svc_user_scope(&r->user);
    return scope &&
           svc_session_visible(r->cfg, scope, svc_json_str(o, "session_id", ""), false, NULL) != 0;
}

int access_response(struct http_req *r, const char *id, json_object **out, struct svc_err *err)
{
    if (svc_responses_get(r->cfg, id, out, err) < 0)
        return -1;
    if (!hidden(r, *out))
        return 0;
    json_object_put(*out);
    *out = NULL;
    return svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response %s not found", id);
}

int access_session(struct http_req *r, const char *sid, struct svc_err *err)
{
    return svc_session_visible(r->cfg, svc_user_scope(&r->user), sid, false, err);
}

/* A run or response of id when r's caller sees its session: an admin sees every one, and
 * the handler answers for a missing one as it reads it. */
static int stored_seen(struct http_req *r, enum access_rule a, const char *id, struct svc_err *err)
{
    json_object *o = NULL;
    if (!svc_user_scope(&r->user))
        return 0;
    int rc =
        a == ACCESS_RESPONSE ? access_response(r, id, &o, err) : svc_runs_get(r->cfg, id, &o, err);
    if (rc == 0 && a == ACCESS_RUN && hidden(r, o))
        rc = svc_err_set(err, SVC_E_RUN_NOT_FOUND, "run %s not found", id);
    json_object_put(o);
    return rc < 0 ? -1 : 0;
}

int access_check(struct http_req *r, enum access_rule a, struct svc_err *err)
{
    const char *id = r->nparams > 0 ? r->param_values[0] : NULL;
    switch (a) {
    case ACCESS_PUBLIC:
    case ACCESS_CALLER:
        return 0;
    case ACCESS_ADMIN:
        return r->user.admin
                   ? 0
                   : svc_err_set(err, SVC_E_PERMISSION_DENIED, "this endpoint is for admins");
    case ACCESS_SESSION:
        if (!id)
            break;
        http_set_session(r, id, false);
        return access_session(r, id, err);
    case ACCESS_RUN:
    case ACCESS_RESPONSE:
        if (!id)
            break;
        return stored_seen(r, a, id, err);
    case ACCESS_UNSET:
        break;
    }
    return svc_err_set(err, SVC_E_INTERNAL, "this route names no access rule: not served");
}
