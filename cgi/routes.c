/* routes: the route table (method + path pattern -> handler), matching, auth and the
 * 404 / 405 answers. Patterns are literal segments and {name} segments; a {name} segment
 * matches one non-empty raw segment, percent-decoded per segment (so "a%2Fb" stays one
 * segment and is refused by the id check of core/). Literal routes come before parameter
 * routes that could match the same path, and a path a literal route (no {name}) matches
 * belongs to the literal routes only: GET /api/v1/chat/sessions/export is 405 (Allow:
 * POST), not the detail of a session named "export". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "http.h"
#include "metrics.h"
#include "util.h"

struct route {
    const char *method;
    const char *pattern;
    http_handler fn;
    bool public; /* no bearer token needed */
    bool admin;  /* admins only (SPEC 14): 403 permission_denied for a user */
};

static const struct route routes[] = {
    {"GET", "/api/health", h_health, true, false},
    {"GET", "/api/config", h_config, false, true},
    {"GET", "/api/me", h_me, false, false},
    {"GET", "/api/jobs", h_jobs, false, true},
    {"GET", "/api/extensions", h_extensions, false, false},
    {"GET", "/api/metrics", h_metrics, false, true},

    {"POST", "/api/chat", h_chat, false, false},
    {"POST", "/api/v1/chat/completions", h_chat, false, false},
    {"GET", "/api/chat/sessions/{session_id}/tokens", h_session_tokens, false, false},
    {"POST", "/api/chat/runs", h_runs_create, false, false},
    {"GET", "/api/chat/runs/{run_id}", h_run_get, false, false},
    {"GET", "/api/chat/runs/{run_id}/events", h_run_events, false, false},
    {"POST", "/api/chat/runs/{run_id}/cancel", h_run_cancel, false, false},

    {"GET", "/api/v1/models", h_models_list, false, false},
    {"GET", "/api/v1/models/{model_id}", h_model_get, false, false},
    {"POST", "/api/v1/responses", h_responses_create, false, false},
    {"POST", "/api/responses", h_responses_create, false, false},
    {"POST", "/api/v1/responses/compact", h_responses_compact, false, false},
    {"POST", "/api/responses/compact", h_responses_compact, false, false},
    {"GET", "/api/v1/responses/{response_id}", h_response_get, false, false},
    {"GET", "/api/responses/{response_id}", h_response_get, false, false},
    {"DELETE", "/api/v1/responses/{response_id}", h_response_delete, false, false},
    {"DELETE", "/api/responses/{response_id}", h_response_delete, false, false},
    {"GET", "/api/v1/responses/{response_id}/input_items", h_response_input_items, false, false},
    {"GET", "/api/responses/{response_id}/input_items", h_response_input_items, false, false},
    {"POST", "/api/v1/responses/{response_id}/cancel", h_response_cancel, false, false},
    {"POST", "/api/responses/{response_id}/cancel", h_response_cancel, false, false},

    {"POST", "/api/v1/conversations", h_conversations_create, false, false},
    {"GET", "/api/v1/conversations", h_conversations_list, false, false},
    {"GET", "/api/v1/conversations/{conversation_id}", h_conversation_get, false, false},
    {"POST", "/api/v1/conversations/{conversation_id}", h_conversation_update, false, false},
    {"DELETE", "/api/v1/conversations/{conversation_id}", h_conversation_delete, false, false},
    {"GET", "/api/v1/conversations/{conversation_id}/items", h_conversation_items, false, false},
    {"POST", "/api/v1/conversations/{conversation_id}/items", h_conversation_items_add, false,
     false},
    {"GET", "/api/v1/conversations/{conversation_id}/items/{item_id}", h_conversation_item, false,
     false},
    {"DELETE", "/api/v1/conversations/{conversation_id}/items/{item_id}",
     h_conversation_item_delete, false, false},

    {"GET", "/api/v1/chat/sessions", h_sessions_list, false, false},
    {"POST", "/api/v1/chat/sessions/export", h_sessions_export, false, false},
    {"GET", "/api/v1/chat/sessions/search", h_sessions_search, false, false},
    {"GET", "/api/v1/chat/sessions/{session_id}", h_session_get, false, false},
    {"PATCH", "/api/v1/chat/sessions/{session_id}", h_session_patch, false, false},
    {"GET", "/api/v1/chat/sessions/{session_id}/messages", h_session_messages, false, false},
    {"POST", "/api/v1/chat/sessions/{session_id}/archive", h_session_archive, false, false},
    {"POST", "/api/v1/chat/sessions/{session_id}/unarchive", h_session_unarchive, false, false},
    {"DELETE", "/api/v1/chat/sessions/{session_id}", h_session_delete, false, false},
    {"POST", "/api/v1/chat/sessions/{session_id}/fork", h_session_fork, false, false},
    {"PUT", "/api/v1/chat/sessions/{session_id}/messages/{message_id}/feedback", h_message_feedback,
     false, false},
};
#define NROUTES (sizeof routes / sizeof routes[0])

#define MAX_SEGS 16

struct seg {
    const char *p;
    size_t n;
};

/* Split "/a/b/c" into raw segments; -1 when the path does not start with '/' or is too deep. */
static int split(const char *path, struct seg *segs, int max)
{
    if (!path || path[0] != '/')
        return -1;
    int n = 0;
    const char *p = path + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (n == max)
            return -1;
        segs[n].p = p;
        segs[n].n = len;
        n++;
        if (!slash)
            break;
        p = slash + 1;
    }
    return n;
}

/* Whether segs match the pattern; fills r's params when r is not NULL. */
static bool match(const char *pattern, const struct seg *segs, int nsegs, struct http_req *r)
{
    struct seg pat[MAX_SEGS];
    int np = split(pattern, pat, MAX_SEGS);
    if (np != nsegs)
        return false;
    for (int i = 0; i < np; i++) {
        bool param = pat[i].n > 2 && pat[i].p[0] == '{' && pat[i].p[pat[i].n - 1] == '}';
        if (param) {
            if (segs[i].n == 0)
                return false;
        } else if (pat[i].n != segs[i].n || memcmp(pat[i].p, segs[i].p, segs[i].n) != 0) {
            return false;
        }
    }
    if (!r)
        return true;
    for (int i = 0; i < np && r->nparams < HTTP_MAX_PARAMS; i++) {
        if (!(pat[i].n > 2 && pat[i].p[0] == '{'))
            continue;
        char *name = svc_xstrndup(pat[i].p + 1, pat[i].n - 2);
        char *val = http_pct_decode(segs[i].p, segs[i].n, false);
        r->param_names[r->nparams] = name;
        r->param_values[r->nparams] = val;
        r->nparams++;
    }
    return true;
}

/* 0 with r->user filled (core/user.h decides who asks), else -1 with 401. */
static int check_auth(struct http_req *r, struct svc_err *err)
{
    const char *param = r->cfg->server.user_param;
    const char *name = param && *param ? http_env(r, param) : NULL;
    if (svc_user_authenticate(r->cfg, r->authorization, name, &r->user, err) < 0)
        return -1;
    if (r->user.id && r->user.id == name) { /* libfcgi frees its params at the next accept */
        snprintf(r->user_name, sizeof r->user_name, "%s", name);
        r->user.id = r->user_name;
    }
    return 0;
}

_Static_assert(NROUTES < SVC_METRICS_ROUTES, "metrics.h keeps a slot per route and one for none");

const char *http_route_name(int i, const char **method)
{
    if (i < 0 || (size_t)i >= NROUTES)
        return NULL;
    *method = routes[i].method;
    return routes[i].pattern;
}

/* Route and run the request; *route gets the index of the route that served it, or
 * SVC_METRICS_ROUTES - 1 when none did. */
static void dispatch(struct http_req *r, int *route)
{
    struct svc_err err;
    svc_err_clear(&err);
    struct seg segs[MAX_SEGS];
    int nsegs = r->route ? split(r->route, segs, MAX_SEGS) : 0; /* outside base_path: 404 */

    const struct route *hit = NULL;
    bool path_known = false;
    char allow[128] = "";
    /* HEAD is GET without the body (RFC 9110), on every GET route */
    r->head_only = strcmp(r->method, "HEAD") == 0;
    const char *method = r->head_only ? "GET" : r->method;
    bool literal_path = false; /* a literal route matched: the parameter routes after it do not */
    for (size_t i = 0; nsegs > 0 && i < NROUTES; i++) {
        bool literal = !strchr(routes[i].pattern, '{');
        if ((literal_path && !literal) || !match(routes[i].pattern, segs, nsegs, NULL))
            continue;
        literal_path = literal_path || literal;
        path_known = true;
        if (strcmp(routes[i].method, method) == 0) {
            hit = &routes[i];
            break;
        }
        if (!strstr(allow, routes[i].method)) {
            size_t l = strlen(allow);
            snprintf(allow + l, sizeof allow - l, "%s%s", l ? ", " : "", routes[i].method);
        }
    }
    if (strstr(allow, "GET")) {
        size_t l = strlen(allow);
        snprintf(allow + l, sizeof allow - l, ", HEAD");
    }

    if (!(hit && hit->public) && check_auth(r, &err) < 0) {
        http_send_error(r, &err);
        return;
    }
    if (hit && hit->admin && !r->user.admin) {
        svc_err_set(&err, SVC_E_PERMISSION_DENIED, "this endpoint is for admins");
        http_send_error(r, &err);
        return;
    }
    if (!hit) {
        if (path_known) {
            http_set_header(r, "Allow", allow);
            svc_err_set(&err, SVC_E_METHOD_NOT_ALLOWED,
                        "method %s is not allowed here; allowed: %s", r->method, allow);
        } else {
            svc_err_set(&err, SVC_E_NOT_FOUND, "no such endpoint");
        }
        http_send_error(r, &err);
        return;
    }

    /* every route, even one that ignores its body, refuses a body over max_body_bytes
     * before it acts (413, nothing changed) */
    if (r->content_length > 0 && http_read_body(r, &err) < 0) {
        http_send_error(r, &err);
        return;
    }
    match(hit->pattern, segs, nsegs, r);
    *route = (int)(hit - routes);
    int rc = hit->fn(r, &err);
    if (rc < 0) {
        if (err.code == SVC_OK)
            svc_err_set(&err, SVC_E_INTERNAL, "internal error");
        if (!r->headers_sent)
            http_send_error(r, &err);
        else if (r->sse)
            http_sse_error(r, &err);
    } else if (!r->headers_sent) {
        svc_err_set(&err, SVC_E_INTERNAL, "handler sent no response");
        http_send_error(r, &err);
    }
}

void http_dispatch(struct http_req *r)
{
    int route = SVC_METRICS_ROUTES - 1;
    dispatch(r, &route);
    int status = r->status < 0 ? -r->status : r->status;
    svc_metrics_http(route, status ? status : 500, svc_time_monotonic() - r->t0);
}
