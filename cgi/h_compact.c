/* h_compact: POST /api/v1/responses/compact (SPEC 15, OpenAI's responses.compact). The
 * context is the named session's (previous_response_id, conversation or metadata.session_id:
 * what a turn there restores, its Strands summary first), then the request's input (a string
 * or items; a compaction item stands for the context it sealed). All but the newest
 * agent.preserve_recent_messages messages (all but the last user input when fewer) are
 * summarised as section 17's summarizing manager does and sealed (core/compact.h); the answer
 * is {"id", "object": "response.compaction", "created_at", "output": [the compaction item,
 * then the kept messages' items], "usage"}. Nothing is stored. Also the Responses input's
 * pieces of SPEC 15 and 17 (turnin.h): images and files, compaction items, context_management. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "compact.h"
#include "conversation.h"
#include "handlers.h"
#include "jsonx.h"
#include "openai.h"
#include "parts.h"
#include "query.h"
#include "responses.h"
#include "turnin.h"
#include "util.h"

/* ---- the Responses input it adds: images and files, compaction items, context_management ---- */

int resp_media_parts(struct http_req *r, json_object *content, const char *param, json_object **out,
                     struct svc_err *err)
{
    *out = NULL;
    size_t n =
        json_object_is_type(content, json_type_array) ? json_object_array_length(content) : 0;
    bool media = false;
    for (size_t k = 0; k < n && !media; k++) {
        const char *type = svc_json_str(json_object_array_get_idx(content, k), "type", "");
        media = strcmp(type, "input_image") == 0 || strcmp(type, "input_file") == 0;
    }
    if (!media)
        return 0;
    *out = json_object_new_array();
    for (size_t k = 0; k < n; k++) {
        json_object *part = json_object_array_get_idx(content, k), *chat = NULL;
        const char *t = svc_json_str(part, "text", NULL);
        char pp[160];
        snprintf(pp, sizeof pp, "%s[%zu]", param, k);
        if (t) {
            chat = svc_json_new_obj("type", "text", "text", t, NULL);
        } else if (svc_parts_from_responses(part, pp, &chat, err) < 0 ||
                   svc_parts_check(chat, pp, r->cfg->limits.max_image_bytes, err) < 0) {
            json_object_put(chat);
            json_object_put(*out);
            *out = NULL;
            return -1;
        }
        json_object_array_add(*out, chat);
    }
    return 0;
}

int resp_compaction_in(struct http_req *r, json_object *item, size_t i, json_object *msgs,
                       struct svc_err *err)
{
    char p[96];
    json_object *summary = NULL;
    snprintf(p, sizeof p, "input[%zu].encrypted_content", i);
    if (svc_compact_open(r->cfg, svc_json_str(item, "encrypted_content", ""),
                         svc_user_scope(&r->user), p, &summary, err) < 0)
        return -1;
    char *text = svc_native_text(summary);
    json_object_array_add(msgs, svc_json_new_obj("role", "user", "content", text, NULL));
    free(text);
    json_object_put(summary);
    return 0;
}

/* `context_management`: [{"type": "compaction", "compact_threshold": tokens}] (SPEC 15). */
int resp_context_management(json_object *body, int64_t *threshold, struct svc_err *err)
{
    json_object *cm = NULL;
    if (http_field_arr(body, "context_management", NULL, false, &cm, err) < 0)
        return -1;
    for (size_t i = 0; cm && i < json_object_array_length(cm); i++) {
        json_object *e = json_object_array_get_idx(cm, i);
        const char *type = NULL;
        char p[96];
        snprintf(p, sizeof p, "context_management[%zu].type", i);
        if (http_field_str(e, "type", p, true, &type, err) < 0)
            return -1;
        if (strcmp(type, "compaction") != 0)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be compaction", p);
        snprintf(p, sizeof p, "context_management[%zu].compact_threshold", i);
        bool has = false;
        if (http_field_int_opt(e, "compact_threshold", p, &has, threshold, err) < 0)
            return -1;
        if (!has || *threshold < 1)
            return svc_err_setp(err, has ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, p,
                                "'%s' must be a number of tokens of at least 1", p);
    }
    return 0;
}

/* ---- POST /api/v1/responses/compact ---- */

static const char *const fields[] = {"model", "input", "previous_response_id", "conversation",
                                     "metadata"};

/* The session the body names (borrowed from it or from *prev, the stored response) or NULL. */
static int named_session(struct http_req *r, json_object *b, json_object **prev, const char **sid,
                         struct svc_err *err)
{
    const char *prev_id = NULL, *meta_sid = NULL;
    json_object *meta = NULL;
    if (http_field_str(b, "previous_response_id", NULL, false, &prev_id, err) < 0 ||
        http_field_obj(b, "metadata", NULL, false, &meta, err) < 0 ||
        turn_in_sid(meta, "session_id", "metadata.session_id", &meta_sid, err) < 0 ||
        turn_in_conversation(b, sid, err) < 0)
        return -1;
    if (prev_id) {
        if (access_response(r, prev_id, prev, err) < 0)
            return -1;
        *sid = svc_json_str(*prev, "session_id", NULL);
    }
    if (!*sid)
        *sid = meta_sid;
    if (*sid && !prev_id && access_session(r, *sid, err) < 0)
        return -1;
    return 0;
}

/* The input's messages appended to ctx (ids: -1 each); compaction items opened. */
static int input_messages(struct http_req *r, json_object *input, json_object *ctx,
                          json_object *ids, struct svc_err *err)
{
    if (json_object_is_type(input, json_type_string)) {
        json_object *m = svc_json_new_obj("role", "user", NULL);
        svc_json_set(m, "content", json_object_get(input));
        input = json_object_new_array();
        json_object_array_add(input, m);
    } else {
        json_object_get(input);
    }
    int rc = json_object_is_type(input, json_type_array)
                 ? 0
                 : svc_err_setp(err, SVC_E_INVALID_FIELD, "input",
                                "'input' must be a string or a list of items");
    for (size_t i = 0; rc == 0 && i < json_object_array_length(input); i++) {
        json_object *item = json_object_array_get_idx(input, i), *one = NULL;
        json_object *natives = json_object_new_array();
        bool sealed = strcmp(svc_json_str(item, "type", ""), "compaction") == 0;
        char p[64];
        snprintf(p, sizeof p, sealed ? "input[%zu].encrypted_content" : "input[%zu]", i);
        if (!sealed)
            rc = svc_conv_parse_item(item, p, natives, err);
        else if ((rc = svc_compact_open(r->cfg, svc_json_str(item, "encrypted_content", ""),
                                        svc_user_scope(&r->user), p, &one, err)) == 0)
            json_object_array_add(natives, one);
        for (size_t k = 0; k < json_object_array_length(natives); k++) {
            json_object_array_add(ctx, json_object_get(json_object_array_get_idx(natives, k)));
            json_object_array_add(ids, json_object_new_int64(-1));
        }
        json_object_put(natives);
    }
    json_object_put(input);
    return rc;
}

/* Where the kept messages start: the newest preserve_recent_messages, else all but the last
 * user input; never at a tool result. 0 when nothing would be compacted. */
static size_t split_at(const struct svc_config *cfg, json_object *ctx)
{
    size_t n = json_object_array_length(ctx), keep = (size_t)cfg->agent.preserve_recent_messages;
    size_t at = n > keep ? n - keep : 0;
    for (size_t i = n; at == 0 && i > 0; i--) {
        json_object *m = json_object_array_get_idx(ctx, i - 1);
        if (strcmp(svc_json_str(m, "role", ""), "user") == 0 &&
            strcmp(svc_openai_role(m), "tool") != 0)
            at = i - 1;
    }
    while (at > 0 && at < n &&
           strcmp(svc_openai_role(json_object_array_get_idx(ctx, at)), "tool") == 0)
        at++;
    return at < n ? at : 0;
}

json_object *resp_compaction_item(struct http_req *r, json_object *summary, struct svc_err *err)
{
    char *sealed = NULL, id[48];
    if (svc_compact_seal(r->cfg, summary, r->user.id, &sealed, err) != 0)
        return NULL;
    svc_responses_new_id("cmpi_", id, sizeof id);
    json_object *item =
        svc_json_new_obj("type", "compaction", "id", id, "encrypted_content", sealed, NULL);
    free(sealed);
    return item;
}

static json_object *compaction_object(const char *sid, json_object *ctx, json_object *ids,
                                      size_t at, json_object *item, int64_t p, int64_t c)
{
    char id[48];
    svc_responses_new_id("cmp_", id, sizeof id);
    json_object *o = svc_json_new_obj("id", id, "object", "response.compaction", NULL);
    json_object *out = json_object_new_array(), *u = json_object_new_object();
    json_object_array_add(out, item);
    for (size_t i = at; i < json_object_array_length(ctx); i++) {
        int64_t mid = json_object_get_int64(json_object_array_get_idx(ids, i));
        svc_conv_message_items(mid >= 0 ? sid : "input", mid >= 0 ? mid : (int64_t)i,
                               json_object_array_get_idx(ctx, i), out);
    }
    svc_json_set_int(o, "created_at", (int64_t)svc_time_now());
    svc_json_set(o, "output", out);
    svc_json_set_int(u, "input_tokens", p);
    svc_json_set_int(u, "output_tokens", c);
    svc_json_set_int(u, "total_tokens", p + c);
    svc_json_set(o, "usage", u);
    return o;
}

int h_responses_compact(struct http_req *r, struct svc_err *err)
{
    json_object *b = NULL, *prev = NULL, *input = NULL, *summary = NULL;
    json_object *ctx = json_object_new_array(), *ids = json_object_new_array();
    const char *sid = NULL, *model = NULL;
    int rc = -1;
    if (http_body_json(r, false, &b, err) < 0)
        goto out;
    if (http_known_fields(b, NULL, fields, sizeof fields / sizeof *fields, err) < 0)
        goto out;
    json_object_object_get_ex(b, "input", &input);
    if (http_field_str(b, "model", NULL, false, &model, err) < 0 ||
        named_session(r, b, &prev, &sid, err) < 0 ||
        (sid && svc_compact_window(r->cfg, sid, ctx, ids, err) < 0) ||
        (input && input_messages(r, input, ctx, ids, err) < 0))
        goto out;
    size_t at = split_at(r->cfg, ctx);
    if (at == 0) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, "input",
                     "nothing to compact: the context holds no message before its last input");
        goto out;
    }
    int64_t p = 0, c = 0;
    json_object *item = svc_compact_summary(r->cfg, ctx, at, &summary, &p, &c, err) == 0
                            ? resp_compaction_item(r, summary, err)
                            : NULL;
    if (item)
        rc = http_reply(r, 200, compaction_object(sid, ctx, ids, at, item, p, c));
out:
    json_object_put(summary);
    json_object_put(prev);
    json_object_put(ctx);
    json_object_put(ids);
    json_object_put(b);
    return rc;
}
