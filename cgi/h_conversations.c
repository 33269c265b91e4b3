/* h_conversations: OpenAI's Conversations API on sessions (SPEC 12.2): a conversation is a
 * session and its items are its messages (core/conversation.h). Create, retrieve, update
 * (metadata), delete (the session, as DELETE /api/v1/chat/sessions/{id}), the list of
 * conversations (an svc extension) and the items: list, append, retrieve, delete (a
 * redaction). Another user's conversation is missing to the asker (SPEC 14). Lists are
 * OpenAI's {"object": "list", "data", "first_id", "last_id", "has_more"} paged with limit,
 * after (an id of the previous page) and order. */
#include <stdlib.h>
#include <string.h>

#include "conversation.h"
#include "erase.h"
#include "handlers.h"
#include "jsonx.h"
#include "query.h"

#define LIST_LIMIT_MAX 100

static int send_obj(struct http_req *r, const char *sid, json_object *o)
{
    if (sid)
        http_set_session(r, sid, false);
    http_send_json(r, 200, o);
    json_object_put(o);
    return 0;
}

/* OpenAI's list shape around data (taken). */
static json_object *list_of(json_object *data, bool has_more)
{
    size_t n = json_object_array_length(data);
    json_object *o = json_object_new_object();
    const char *first = n ? svc_json_str(json_object_array_get_idx(data, 0), "id", "") : NULL;
    const char *last = n ? svc_json_str(json_object_array_get_idx(data, n - 1), "id", "") : NULL;
    svc_json_set_str(o, "object", "list");
    svc_json_set(o, "data", data);
    svc_json_set(o, "first_id", first ? json_object_new_string(first) : NULL);
    svc_json_set(o, "last_id", last ? json_object_new_string(last) : NULL);
    svc_json_set_bool(o, "has_more", has_more);
    return o;
}

/* A page of all (ids in "id", oldest first for items, as listed for conversations) after
 * the query's `after`, `limit` long, in the query's `order` (desc: all reversed). */
static int send_page(struct http_req *r, json_object *all, bool all_desc, struct svc_err *err)
{
    int64_t limit = 0;
    const char *after = NULL, *order = NULL;
    if (http_query_int(r, "limit", 20, 1, LIST_LIMIT_MAX, &limit, err) < 0 ||
        http_query_str(r, "after", &after, err) < 0 || http_query_str(r, "order", &order, err) < 0)
        return -1;
    if (order && *order && strcmp(order, "asc") && strcmp(order, "desc"))
        return svc_err_setp(err, SVC_E_INVALID_QUERY, "order", "'order' must be asc or desc");
    bool desc = !(order && strcmp(order, "asc") == 0);
    size_t n = json_object_array_length(all), start = 0;
    bool rev = desc != all_desc;
#define AT(i) json_object_array_get_idx(all, rev ? n - 1 - (i) : (i))
    if (after && *after) {
        while (start < n && strcmp(svc_json_str(AT(start), "id", ""), after) != 0)
            start++;
        if (start == n)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, "after", "'after' names no item here");
        start++;
    }
    json_object *data = json_object_new_array();
    for (size_t i = start; i < n && i < start + (size_t)limit; i++)
        json_object_array_add(data, json_object_get(AT(i)));
#undef AT
    size_t got = json_object_array_length(data);
    return send_obj(r, NULL, list_of(data, start + got < n));
}

int h_conversations_create(struct http_req *r, struct svc_err *err)
{
    json_object *body = NULL, *items = NULL, *metadata = NULL, *natives = NULL, *o = NULL;
    const char *sid = NULL;
    if (http_body_json(r, true, &body, err) < 0)
        return -1;
    int rc = http_field_arr(body, "items", NULL, false, &items, err);
    if (rc == 0)
        rc = http_field_obj(body, "metadata", NULL, false, &metadata, err);
    if (rc == 0)
        rc = http_field_str(body, "session_id", NULL, false, &sid, err);
    if (rc == 0 && items)
        rc = svc_conv_parse_items(items, &natives, err);
    if (rc == 0)
        rc = svc_conv_create(r->cfg, sid, natives, metadata, r->user.id, &o, err);
    json_object_put(natives);
    json_object_put(body);
    if (rc < 0)
        return -1;
    return send_obj(r, svc_json_str(o, "id", NULL), o);
}

/* The conversation object of a session the asker sees. */
static int conv_get(struct http_req *r, const char *sid, json_object **out, struct svc_err *err)
{
    json_object *sum = NULL;
    if (svc_session_get(r->cfg, sid, &sum, err) < 0)
        return -1;
    *out = svc_conv_object(sum);
    json_object_put(sum);
    return 0;
}

int h_conversation_get(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *o = NULL;
    return conv_get(r, sid, &o, err) < 0 ? -1 : send_obj(r, sid, o);
}

int h_conversation_update(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    struct svc_session_edit e = {0};
    json_object *body = NULL, *sum = NULL;
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    int rc = http_field_obj(body, "metadata", NULL, true, &e.metadata, err);
    if (rc == 0)
        rc = svc_session_edit(r->cfg, sid, &e, &sum, err);
    json_object_put(body);
    if (rc < 0)
        return -1;
    json_object *o = svc_conv_object(sum);
    json_object_put(sum);
    return send_obj(r, sid, o);
}

int h_conversation_delete(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *o = NULL;
    if (svc_session_delete(r->cfg, sid, &o, err) < 0)
        return -1;
    json_object_put(o);
    o = json_object_new_object();
    svc_json_set_str(o, "id", sid);
    svc_json_set_str(o, "object", "conversation.deleted");
    svc_json_set_bool(o, "deleted", true);
    return send_obj(r, sid, o);
}

/* Every session the asker sees, as conversation objects, newest first. */
static int all_conversations(struct http_req *r, json_object **out, struct svc_err *err)
{
    struct svc_list_query q;
    memset(&q, 0, sizeof q);
    q.limit = SVC_LIST_LIMIT_MAX;
    q.owner = svc_user_scope(&r->user);
    json_object *all = json_object_new_array();
    char *cursor = NULL;
    do {
        json_object *page = NULL;
        q.cursor = cursor;
        if (svc_sessions_list(r->cfg, &q, &page, err) < 0) {
            free(cursor);
            json_object_put(all);
            return -1;
        }
        json_object *ss = svc_json_arr(page, "sessions");
        for (size_t i = 0; ss && i < json_object_array_length(ss); i++) {
            json_object *el = json_object_array_get_idx(ss, i), *sum = NULL;
            /* a page's rows are the index's text, unparsed (jsonx.h's raw nodes) */
            if (json_object_is_type(el, json_type_string))
                svc_json_parse(json_object_get_string(el), json_object_get_string_len(el), &sum,
                               NULL);
            else
                sum = json_object_get(el);
            if (sum)
                json_object_array_add(all, svc_conv_object(sum));
            json_object_put(sum);
        }
        const char *next = svc_json_str(page, "next_cursor", NULL);
        free(cursor);
        cursor = next ? svc_xstrdup(next) : NULL;
        json_object_put(page);
    } while (cursor);
    *out = all;
    return 0;
}

int h_conversations_list(struct http_req *r, struct svc_err *err)
{
    json_object *all = NULL;
    if (all_conversations(r, &all, err) < 0)
        return -1;
    int rc = send_page(r, all, true, err);
    json_object_put(all);
    return rc;
}

int h_conversation_items(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *all = NULL;
    http_set_session(r, sid, false);
    if (svc_conv_items(r->cfg, sid, &all, err) < 0)
        return -1;
    int rc = send_page(r, all, false, err);
    json_object_put(all);
    return rc;
}

int h_conversation_items_add(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *body = NULL, *items = NULL, *natives = NULL, *added = NULL;
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    int rc = http_field_arr(body, "items", NULL, true, &items, err);
    if (rc == 0)
        rc = svc_conv_parse_items(items, &natives, err);
    if (rc == 0 && json_object_array_length(natives) == 0)
        rc = svc_err_setp(err, SVC_E_INVALID_FIELD, "items", "'items' must not be empty");
    if (rc == 0)
        rc = svc_conv_append(r->cfg, sid, natives, &added, err);
    json_object_put(natives);
    json_object_put(body);
    if (rc < 0)
        return -1;
    json_object *o = list_of(added, false);
    return send_obj(r, sid, o);
}

int h_conversation_item(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *o = NULL;
    if (svc_conv_item(r->cfg, sid, http_param(r, "item_id"), false, &o, err) < 0)
        return -1;
    return send_obj(r, sid, o);
}

/* OpenAI answers an item's deletion with the conversation. */
int h_conversation_item_delete(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *item = NULL, *o = NULL;
    if (svc_conv_item(r->cfg, sid, http_param(r, "item_id"), true, &item, err) < 0)
        return -1;
    json_object_put(item);
    return conv_get(r, sid, &o, err) < 0 ? -1 : send_obj(r, sid, o);
}
