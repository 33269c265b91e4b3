/* routes: the route table (method + path pattern -> handler), matching, auth and the
 * 404 / 405 answers. Patterns are literal segments and {name} segments; a {name} segment
 * matches one non-empty raw segment, percent-decoded per segment (so "a%2Fb" stays one
 * segment and is refused by the id check of core/). Literal routes come before parameter
 * routes that could match the same path, and a path a literal route (no {name}) matches
 * belongs to the literal routes only: GET /api/v1/chat/sessions/export is 405 (Allow:
 * POST), not the detail of a session named "export". Each row's access rule (access.h) and
 * its handler's query parameters are checked here, before the handler runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "edge.h"
#include "handlers.h"
#include "http.h"
#include "metrics.h"
#include "responses.h"
#include "util.h"

/* A row names its access rule before its handler: a row written without one does not
 * compile, and one left ACCESS_UNSET (designated initializers) is never served. */
struct route {
    const char *method;
    const char *pattern;
    enum access_rule access; /* who may call it and what it names (access.h) */
    http_handler fn;
};

static const struct route routes[] = {
    {"GET", "/api/health", ACCESS_PUBLIC, h_health},
    {"GET", "/api/config", ACCESS_ADMIN, h_config},
    {"GET", "/api/me", ACCESS_CALLER, h_me},
    {"GET", "/api/jobs", ACCESS_ADMIN, h_jobs},
    {"GET", "/api/extensions", ACCESS_CALLER, h_extensions},
    {"GET", "/api/metrics", ACCESS_ADMIN, h_metrics},
    {"GET", "/api/openapi.json", ACCESS_PUBLIC, h_openapi},

    {"POST", "/api/chat", ACCESS_CALLER, h_chat},
    {"POST", "/api/v1/chat/completions", ACCESS_CALLER, h_chat},
    {"GET", "/api/chat/sessions/{session_id}/tokens", ACCESS_SESSION, h_session_tokens},
    {"POST", "/api/chat/runs", ACCESS_CALLER, h_runs_create},
    {"GET", "/api/chat/runs/{run_id}", ACCESS_RUN, h_run_get},
    {"GET", "/api/chat/runs/{run_id}/events", ACCESS_RUN, h_run_events},
    {"POST", "/api/chat/runs/{run_id}/cancel", ACCESS_RUN, h_run_cancel},

    {"GET", "/api/v1/models", ACCESS_CALLER, h_models_list},
    {"GET", "/api/v1/models/{model_id}", ACCESS_CALLER, h_model_get},
    {"POST", "/api/v1/responses", ACCESS_CALLER, h_responses_create},
    {"POST", "/api/responses", ACCESS_CALLER, h_responses_create},
    {"POST", "/api/v1/responses/compact", ACCESS_CALLER, h_responses_compact},
    {"POST", "/api/responses/compact", ACCESS_CALLER, h_responses_compact},
    {"POST", "/api/v1/responses/input_tokens", ACCESS_CALLER, h_responses_input_tokens},
    {"POST", "/api/responses/input_tokens", ACCESS_CALLER, h_responses_input_tokens},
    {"GET", "/api/v1/responses/{response_id}", ACCESS_RESPONSE, h_response_get},
    {"GET", "/api/responses/{response_id}", ACCESS_RESPONSE, h_response_get},
    {"DELETE", "/api/v1/responses/{response_id}", ACCESS_RESPONSE, h_response_delete},
    {"DELETE", "/api/responses/{response_id}", ACCESS_RESPONSE, h_response_delete},
    {"GET", "/api/v1/responses/{response_id}/input_items", ACCESS_RESPONSE, h_response_input_items},
    {"GET", "/api/responses/{response_id}/input_items", ACCESS_RESPONSE, h_response_input_items},
    {"POST", "/api/v1/responses/{response_id}/cancel", ACCESS_RESPONSE, h_response_cancel},
    {"POST", "/api/responses/{response_id}/cancel", ACCESS_RESPONSE, h_response_cancel},

    {"POST", "/api/v1/conversations", ACCESS_CALLER, h_conversations_create},
    {"GET", "/api/v1/conversations", ACCESS_CALLER, h_conversations_list},
    {"GET", "/api/v1/conversations/{conversation_id}", ACCESS_SESSION, h_conversation_get},
    {"POST", "/api/v1/conversations/{conversation_id}", ACCESS_SESSION, h_conversation_update},
    {"DELETE", "/api/v1/conversations/{conversation_id}", ACCESS_SESSION, h_conversation_delete},
    {"GET", "/api/v1/conversations/{conversation_id}/items", ACCESS_SESSION, h_conversation_items},
    {"POST", "/api/v1/conversations/{conversation_id}/items", ACCESS_SESSION,
     h_conversation_items_add},
    {"GET", "/api/v1/conversations/{conversation_id}/items/{item_id}", ACCESS_SESSION,
     h_conversation_item},
    {"DELETE", "/api/v1/conversations/{conversation_id}/items/{item_id}", ACCESS_SESSION,
     h_conversation_item_delete},

    {"GET", "/api/v1/chat/sessions", ACCESS_CALLER, h_sessions_list},
    {"POST", "/api/v1/chat/sessions/export", ACCESS_CALLER, h_sessions_export},
    {"GET", "/api/v1/chat/sessions/search", ACCESS_CALLER, h_sessions_search},
    {"GET", "/api/v1/chat/sessions/{session_id}", ACCESS_SESSION, h_session_get},
    {"PATCH", "/api/v1/chat/sessions/{session_id}", ACCESS_SESSION, h_session_patch},
    {"GET", "/api/v1/chat/sessions/{session_id}/messages", ACCESS_SESSION, h_session_messages},
    {"POST", "/api/v1/chat/sessions/{session_id}/archive", ACCESS_SESSION, h_session_archive},
    {"POST", "/api/v1/chat/sessions/{session_id}/unarchive", ACCESS_SESSION, h_session_unarchive},
    {"DELETE", "/api/v1/chat/sessions/{session_id}", ACCESS_SESSION, h_session_delete},
    {"POST", "/api/v1/chat/sessions/{session_id}/fork", ACCESS_SESSION, h_session_fork},
    {"PUT", "/api/v1/chat/sessions/{session_id}/messages/{message_id}/feedback", ACCESS_SESSION,
     h_message_feedback},
};
#define NROUTES (sizeof routes / sizeof routes[0])

/* The query parameters each handler reads, space-separated; any other is 400 invalid_query,
 * and a handler not listed reads none. */
#define PAGE_Q "limit after order" /* http_send_page's */
static const struct {
    http_handler fn;
    const char *names;
} queries[] = {
    {h_run_events, "cursor"},
    {h_response_get, "stream starting_after"},
    {h_response_input_items, PAGE_Q},
    {h_conversations_list, PAGE_Q},
    {h_conversation_items, PAGE_Q},
    {h_sessions_list, "limit cursor include_archived archived_only status q user pinned tag"},
    {h_sessions_search, "q limit cursor include_archived role"},
    {h_session_messages, "limit offset order include_turns include"},
};

static const char *query_of(http_handler fn)
{
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++)
        if (queries[i].fn == fn)
            return queries[i].names;
    return NULL;
}

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
    for (int n = 0; n < max; n++) {
        segs[n] = (struct seg){path + 1, strcspn(path + 1, "/")};
        path += segs[n].n + 1;
        if (!*path)
            return n + 1;
    }
    return -1;
}

/* Whether segs match the pattern; fills r's params when r is not NULL. strict: a
 * {response_id} segment must have a response id's shape (SPEC 15: a path under /responses/
 * that is neither a route nor a response id is 404, not 405). */
static bool match(const char *pattern, const struct seg *segs, int nsegs, struct http_req *r,
                  bool strict)
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
            if (strict && pat[i].n == 13 && memcmp(pat[i].p, "{response_id}", 13) == 0) {
                char id[SVC_RESPONSE_ID_LEN];
                if (segs[i].n >= sizeof id)
                    return false;
                snprintf(id, sizeof id, "%.*s", (int)segs[i].n, segs[i].p);
                if (!svc_responses_id_valid(id))
                    return false;
            }
        } else if (pat[i].n != segs[i].n || memcmp(pat[i].p, segs[i].p, segs[i].n) != 0) {
            return false;
        }
    }
    if (!r)
        return true;
    for (int i = 0; i < np && r->nparams < HTTP_MAX_PARAMS; i++) {
        if (!(pat[i].n > 2 && pat[i].p[0] == '{'))
            continue;
        r->param_names[r->nparams] = svc_xstrndup(pat[i].p + 1, pat[i].n - 2);
        r->param_values[r->nparams++] = http_pct_decode(segs[i].p, segs[i].n, false);
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

void http_routes_print(FILE *f)
{
    for (size_t i = 0; i < NROUTES; i++)
        fprintf(f, "%s %s%s\n", routes[i].method, routes[i].pattern,
                routes[i].access == ACCESS_PUBLIC  ? " public"
                : routes[i].access == ACCESS_ADMIN ? " admin"
                                                   : "");
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
        if ((literal_path && !literal) || !match(routes[i].pattern, segs, nsegs, NULL, false))
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
    /* a path known only through a {response_id} that is none: no route's (404, not 405) */
    bool strictly = hit != NULL;
    for (size_t i = 0; !strictly && path_known && i < NROUTES; i++)
        strictly = match(routes[i].pattern, segs, nsegs, NULL, true);
    path_known = path_known && strictly;
    if (strstr(allow, "GET")) {
        size_t l = strlen(allow);
        snprintf(allow + l, sizeof allow - l, ", HEAD");
    }

    if (!(hit && hit->access == ACCESS_PUBLIC) && check_auth(r, &err) < 0)
        goto fail;
    if (!hit && path_known) {
        http_set_header(r, "Allow", allow);
        svc_err_set(&err, SVC_E_METHOD_NOT_ALLOWED, "method %s is not allowed here; allowed: %s",
                    r->method, allow);
    } else if (!hit) {
        svc_err_set(&err, SVC_E_NOT_FOUND, "no such endpoint: %s %.200s", r->method,
                    r->route ? r->route : "");
    }
    if (!hit || edge_check(r, &err) < 0) /* 415, 403 cross_site_refused (edge.h) */
        goto fail;
    /* what the route names, checked once here (access.h); then every route, even one that
     * ignores its body, refuses a body over max_body_bytes before it acts (413) */
    match(hit->pattern, segs, nsegs, r, false);
    *route = (int)(hit - routes);
    if (access_check(r, hit->access, &err) < 0 ||
        http_query_known(r, query_of(hit->fn), &err) < 0 ||
        (r->content_length > 0 && http_read_body(r, &err) < 0))
        goto fail;
    if (hit->fn(r, &err) < 0) {
        if (err.code == SVC_OK)
            svc_err_set(&err, SVC_E_INTERNAL, "internal error");
        if (!r->headers_sent || r->sse) /* once an SSE stream began: its final error event */
            http_send_error(r, &err);
        return;
    }
    if (r->headers_sent)
        return;
    svc_err_set(&err, SVC_E_INTERNAL, "handler sent no response");
fail:
    http_send_error(r, &err);
}

void http_dispatch(struct http_req *r)
{
    int route = SVC_METRICS_ROUTES - 1;
    dispatch(r, &route);
    int status = r->status < 0 ? -r->status : r->status;
    svc_metrics_http(route, status ? status : 500, svc_time_monotonic() - r->t0);
}
