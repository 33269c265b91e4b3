/* h_sessions: the dashboard session API (SPEC 4.3): parse the query or body, call
 * core/query.h (search: core/search.h), render. Export (SPEC 5) is h_export.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "erase.h"
#include "feedback.h"
#include "fork.h"
#include "handlers.h"
#include "index.h"
#include "jsonx.h"
#include "query.h"
#include "search.h"

int h_sessions_list(struct http_req *r, struct svc_err *err)
{
    struct svc_list_query q = {0};
    /* types only: core/query.c decides the ranges and values */
    if (http_query_int(r, "limit", SVC_LIST_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit, err) <
            0 ||
        http_query_str(r, "cursor", &q.cursor, err) < 0 ||
        http_query_bool(r, "include_archived", false, &q.include_archived, err) < 0 ||
        http_query_bool(r, "archived_only", false, &q.archived_only, err) < 0 ||
        http_query_str(r, "status", &q.status, err) < 0 || http_query_str(r, "q", &q.q, err) < 0 ||
        http_query_str(r, "user", &q.owner, err) < 0 ||
        http_query_str(r, "pinned", &q.pinned, err) < 0)
        return -1;
    if (!r->user.admin) /* a user lists their own sessions, whatever they ask (SPEC 14) */
        q.owner = svc_user_scope(&r->user);
    const char **tags = NULL;
    http_query_all(r, "tag", &tags, &q.ntags);
    q.tags = tags;
    json_object *o = NULL;
    int rc = svc_sessions_list(r->cfg, &q, &o, err);
    free(tags);
    if (rc < 0)
        return -1;
    if (svc_index_building()) /* answered from memory meanwhile (docs/API.md) */
        http_set_header(r, "X-Svc-Index", "building");
    return http_reply(r, 200, o);
}

int h_sessions_search(struct http_req *r, struct svc_err *err)
{
    struct svc_search_query q = {0};
    /* types only: core/search.c decides the ranges and values */
    if (http_query_str(r, "q", &q.q, err) < 0 ||
        http_query_int(r, "limit", SVC_SEARCH_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit, err) <
            0 ||
        http_query_str(r, "cursor", &q.cursor, err) < 0 ||
        http_query_bool(r, "include_archived", false, &q.include_archived, err) < 0 ||
        http_query_str(r, "role", &q.role, err) < 0)
        return -1;
    q.owner = svc_user_scope(&r->user);
    json_object *o = NULL;
    return svc_search(r->cfg, &q, &o, err) < 0 ? -1 : http_reply(r, 200, o);
}

/* The detail endpoint is polled, and svc_session_get answers from its memo while the
 * session is unchanged: the text of the last summary sent is kept with a reference to that
 * summary (so no other object can take its address; it is never modified, query.h) and
 * sent again while the same summary comes back (core/cache.h). */
static struct {
    json_object *o; /* a reference */
    char *text;     /* its compact JSON (heap) */
} last_get;

int h_session_get(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *o = NULL;
    if (svc_session_get(r->cfg, sid, &o, err) < 0)
        return -1;
    json_object *full = svc_session_with_strands(r->cfg, sid, json_object_get(o));
    if (full != o) { /* SPEC 17: with what Strands keeps, read-only */
        json_object_put(o);
        return http_reply(r, 200, full);
    }
    json_object_put(full);
    if (!svc_cache_on(r->cfg, -1))
        return http_reply(r, 200, o);
    if (o != last_get.o) {
        json_object_put(last_get.o);
        free(last_get.text);
        last_get.o = json_object_get(o);
        last_get.text = svc_json_dump_compact(o);
    }
    json_object_put(o);
    return http_reply(r, 200, svc_json_new_raw(last_get.text));
}

int h_session_messages(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    struct svc_messages_query q = {0};
    const char *include = NULL;
    /* types only: core/query.c decides the ranges and values */
    if (http_query_int(r, "limit", SVC_MESSAGES_LIMIT_DEFAULT, INT64_MIN, INT64_MAX, &q.limit,
                       err) < 0 ||
        http_query_int(r, "offset", 0, INT64_MIN, INT64_MAX, &q.offset, err) < 0 ||
        http_query_str(r, "order", &q.order, err) < 0 ||
        http_query_bool(r, "include_turns", false, &q.include_turns, err) < 0 ||
        http_query_str(r, "include", &include, err) < 0)
        return -1;
    if (include && strcmp(include, "bytes") != 0)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "include",
                            "query parameter 'include' may only be 'bytes'");
    q.include_bytes = include != NULL;
    json_object *o = NULL;
    return svc_session_messages(r->cfg, sid, &q, &o, err) < 0 ? -1 : http_reply(r, 200, o);
}

static int set_archived(struct http_req *r, bool archived, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *o = NULL;
    return svc_session_set_archived(r->cfg, sid, archived, &o, err) < 0 ? -1
                                                                        : http_reply(r, 200, o);
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
    struct svc_session_edit e = {0};
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    e.set_pinned = json_object_object_get(body, "pinned") != NULL;
    static const char *const fields[] = {"title", "pinned", "tags", "metadata"};
    /* types only: lengths, characters and limits are core's to judge */
    bool bad = http_known_fields(body, NULL, fields, 4, err) < 0 ||
               http_field_str(body, "title", NULL, false, &e.title, err) < 0 ||
               http_field_bool(body, "pinned", NULL, false, &e.pinned, err) < 0 ||
               http_field_arr(body, "tags", NULL, false, &e.tags, err) < 0 ||
               http_field_obj(body, "metadata", NULL, false, &e.metadata, err) < 0 ||
               svc_session_edit(r->cfg, sid, &e, &o, err) < 0;
    json_object_put(body);
    return bad ? -1 : http_reply(r, 200, o);
}

int h_session_delete(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *o = NULL;
    return svc_session_delete(r->cfg, sid, &o, err) < 0 ? -1 : http_reply(r, 200, o);
}

int h_session_fork(struct http_req *r, struct svc_err *err)
{
    struct svc_fork_req f = {.session_id = http_param(r, "session_id")};
    json_object *body = NULL, *o = NULL;
    if (http_body_json(r, true, &body, err) < 0)
        return -1;
    static const char *const fields[] = {"message_id", "session_id", "title"};
    /* types only: the range, the id and the title are core's to judge */
    bool bad =
        http_known_fields(body, NULL, fields, 3, err) < 0 ||
        http_field_int_opt(body, "message_id", NULL, &f.has_message_id, &f.message_id, err) < 0 ||
        http_field_str(body, "session_id", NULL, false, &f.new_id, err) < 0 ||
        http_field_str(body, "title", NULL, false, &f.title, err) < 0 ||
        svc_session_fork(r->cfg, &f, &o, err) < 0;
    json_object_put(body);
    return bad ? -1 : http_reply(r, 201, o);
}

int h_message_feedback(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "session_id");
    json_object *body = NULL, *o = NULL, *rating = NULL;
    const char *comment = NULL;
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    /* types only: the rating's values and the comment's length are core's to judge */
    bool given = json_object_object_get_ex(body, "rating", &rating);
    static const char *const fields[] = {"rating", "comment"};
    bool bad = http_known_fields(body, NULL, fields, 2, err) < 0 ||
               http_field_str(body, "comment", NULL, false, &comment, err) < 0 ||
               svc_feedback_set(r->cfg, sid, http_param(r, "message_id"), given, rating, comment,
                                &o, err) < 0;
    json_object_put(body);
    return bad ? -1 : http_reply(r, 200, o);
}
