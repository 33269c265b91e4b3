/* h_sessions: the dashboard session API (SPEC 4.3): parse the query or body, call
 * core/query.h (search: core/search.h), render. Export (SPEC 5) is h_export.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "jsonx.h"
#include "query.h"
#include "search.h"

/* Send *o (consumed) with status 200, recording the session id for the log. */
static int send_result(struct http_req *r, const char *sid, json_object *o)
{
    http_set_session(r, sid, false);
    http_send_json(r, 200, o);
    json_object_put(o);
    return 0;
}

int h_sessions_list(struct http_req *r, struct svc_err *err)
{
    struct svc_list_query q;
    memset(&q, 0, sizeof q);
    /* types only: core/query.c decides the ranges and values */
    if (http_query_int(r, "limit", SVC_LIST_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit, err) <
            0 ||
        http_query_str(r, "cursor", &q.cursor, err) < 0 ||
        http_query_bool(r, "include_archived", false, &q.include_archived, err) < 0 ||
        http_query_bool(r, "archived_only", false, &q.archived_only, err) < 0 ||
        http_query_str(r, "status", &q.status, err) < 0 || http_query_str(r, "q", &q.q, err) < 0)
        return -1;
    json_object *o = NULL;
    if (svc_sessions_list(r->cfg, &q, &o, err) < 0)
        return -1;
    return send_result(r, NULL, o);
}

int h_sessions_search(struct http_req *r, struct svc_err *err)
{
    struct svc_search_query q;
    memset(&q, 0, sizeof q);
    /* types only: core/search.c decides the ranges and values */
    if (http_query_str(r, "q", &q.q, err) < 0 ||
        http_query_int(r, "limit", SVC_SEARCH_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit, err) <
            0 ||
        http_query_str(r, "cursor", &q.cursor, err) < 0 ||
        http_query_bool(r, "include_archived", false, &q.include_archived, err) < 0 ||
        http_query_str(r, "role", &q.role, err) < 0)
        return -1;
    json_object *o = NULL;
    if (svc_search(r->cfg, &q, &o, err) < 0)
        return -1;
    return send_result(r, NULL, o);
}

/* The detail endpoint is polled, and svc_session_get answers from its memo while the
 * session is unchanged: the text of the last summary sent is kept with a reference to that
 * summary (so no other object can take its address; it is never modified, query.h) and
 * sent again while the same summary comes back. */
static struct {
    json_object *o; /* a reference */
    char *text;     /* its compact JSON (heap) */
} last_get;

int h_session_get(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *o = NULL;
    http_set_session(r, sid, false);
    if (svc_session_get(r->cfg, sid, &o, err) < 0)
        return -1;
    if (o != last_get.o) {
        json_object_put(last_get.o);
        free(last_get.text);
        last_get.o = json_object_get(o);
        last_get.text = svc_json_dump_compact(o);
    }
    json_object_put(o);
    return send_result(r, sid, svc_json_new_raw(last_get.text));
}

int h_session_messages(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    struct svc_messages_query q;
    memset(&q, 0, sizeof q);
    http_set_session(r, sid, false);
    /* types only: core/query.c decides the ranges and values */
    if (http_query_int(r, "limit", SVC_MESSAGES_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit,
                       err) < 0 ||
        http_query_int(r, "offset", 0, INT64_MIN, INT64_MAX, &q.offset, err) < 0 ||
        http_query_str(r, "order", &q.order, err) < 0 ||
        http_query_bool(r, "include_turns", false, &q.include_turns, err) < 0)
        return -1;
    json_object *o = NULL;
    if (svc_session_messages(r->cfg, sid, &q, &o, err) < 0)
        return -1;
    return send_result(r, sid, o);
}

static int set_archived(struct http_req *r, bool archived, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *o = NULL;
    http_set_session(r, sid, false);
    if (svc_session_set_archived(r->cfg, sid, archived, &o, err) < 0)
        return -1;
    return send_result(r, sid, o);
}

int h_session_archive(struct http_req *r, struct svc_err *err)
{
    return set_archived(r, true, err);
}

int h_session_unarchive(struct http_req *r, struct svc_err *err)
{
    return set_archived(r, false, err);
}

int h_session_patch(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *body = NULL, *o = NULL;
    const char *title = NULL;
    http_set_session(r, sid, false);
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    int rc = http_field_str(body, "title", NULL, true, &title, err);
    if (rc == 0) /* its length and characters are core/query.c's to judge */
        rc = svc_session_rename(r->cfg, sid, title, &o, err);
    json_object_put(body);
    if (rc < 0)
        return -1;
    return send_result(r, sid, o);
}
