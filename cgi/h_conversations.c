/* h_conversations: OpenAI's Conversations API on sessions (SPEC 12.2): a conversation is a
 * session and its items are its messages (core/conversation.h). Create, retrieve, update
 * (metadata), delete (the session, as DELETE /api/v1/chat/sessions/{id}), the list of
 * conversations (an svc extension) and the items: list, append, retrieve, delete (a
 * redaction). Another user's conversation is missing to the asker (SPEC 14). Lists are
 * OpenAI's {"object": "list", "data", "first_id", "last_id", "has_more"} paged with limit,
 * after (an id of the previous page) and order. */

#include "conversation.h"
#include "erase.h"
#include "handlers.h"
#include "jsonx.h"
#include "query.h"

static int send_obj(struct http_req *r, const char *sid, json_object *o)
{
    if (sid)
        http_set_session(r, sid, false);
    return http_reply(r, 200, o);
}

int h_conversations_create(struct http_req *r, struct svc_err *err)
{
    json_object *body = NULL, *items = NULL, *metadata = NULL, *natives = NULL, *o = NULL;
    const char *sid = NULL;
    if (http_body_json(r, true, &body, err) < 0)
        return -1;
    static const char *const fields[] = {"items", "metadata", "session_id"};
    bool bad = http_known_fields(body, NULL, fields, 3, err) < 0 ||
               http_field_arr(body, "items", NULL, false, &items, err) < 0 ||
               http_field_obj(body, "metadata", NULL, false, &metadata, err) < 0 ||
               http_field_str(body, "session_id", NULL, false, &sid, err) < 0 ||
               (items && svc_conv_parse_items(items, "items", &natives, err) < 0) ||
               svc_conv_create(r->cfg, sid, natives, metadata, r->user.id, &o, err) < 0;
    json_object_put(natives);
    json_object_put(body);
    return bad ? -1 : send_obj(r, svc_json_str(o, "id", NULL), o);
}

/* Answer with the conversation object of session summary sum (taken). */
static int send_conv(struct http_req *r, const char *sid, json_object *sum)
{
    json_object *o = svc_conv_object(sum);
    json_object_put(sum);
    return send_obj(r, sid, o);
}

int h_conversation_get(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *sum = NULL;
    return svc_session_get(r->cfg, sid, &sum, err) < 0 ? -1 : send_conv(r, sid, sum);
}

int h_conversation_update(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    struct svc_session_edit e = {0};
    json_object *body = NULL, *sum = NULL;
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    static const char *const fields[] = {"metadata"};
    bool bad = http_known_fields(body, NULL, fields, 1, err) < 0 ||
               http_field_obj(body, "metadata", NULL, true, &e.metadata, err) < 0 ||
               svc_session_edit(r->cfg, sid, &e, &sum, err) < 0;
    json_object_put(body);
    return bad ? -1 : send_conv(r, sid, sum);
}

int h_conversation_delete(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *o = NULL;
    if (svc_session_delete(r->cfg, sid, &o, err) < 0)
        return -1;
    json_object_put(o);
    o = svc_json_new_obj("id", sid, "object", "conversation.deleted", NULL);
    svc_json_set_bool(o, "deleted", true);
    return send_obj(r, sid, o);
}

static int add_conversation(void *all, json_object *sum, struct svc_err *err)
{
    json_object_array_add(all, svc_conv_object(sum));
    return 0;
}

int h_conversations_list(struct http_req *r, struct svc_err *err)
{
    /* every session the asker sees, as conversation objects, newest first */
    struct svc_list_query q = {.owner = svc_user_scope(&r->user)};
    json_object *all = json_object_new_array();
    if (svc_sessions_each(r->cfg, &q, add_conversation, all, err) < 0) {
        json_object_put(all);
        return -1;
    }
    return http_send_page(r, all, true, err);
}

int h_conversation_items(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *all = NULL;
    return svc_conv_items(r->cfg, sid, &all, err) < 0 ? -1 : http_send_page(r, all, false, err);
}

int h_conversation_items_add(struct http_req *r, struct svc_err *err)
{
    const char *sid = http_param(r, "conversation_id");
    json_object *body = NULL, *items = NULL, *natives = NULL, *added = NULL;
    if (http_body_json(r, false, &body, err) < 0)
        return -1;
    static const char *const fields[] = {"items"};
    bool bad = http_known_fields(body, NULL, fields, 1, err) < 0 ||
               http_field_arr(body, "items", NULL, true, &items, err) < 0 ||
               svc_conv_parse_items(items, "items", &natives, err) < 0 ||
               (json_object_array_length(natives) == 0 &&
                svc_err_setp(err, SVC_E_INVALID_FIELD, "items", "'items' must not be empty") < 0) ||
               svc_conv_append(r->cfg, sid, natives, &added, err) < 0;
    json_object_put(natives);
    json_object_put(body);
    return bad ? -1 : send_obj(r, sid, http_list(added, false));
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
    json_object *item = NULL, *sum = NULL;
    if (svc_conv_item(r->cfg, sid, http_param(r, "item_id"), true, &item, err) < 0)
        return -1;
    json_object_put(item);
    return svc_session_get(r->cfg, sid, &sum, err) < 0 ? -1 : send_conv(r, sid, sum);
}
