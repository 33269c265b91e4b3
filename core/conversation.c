#include "conversation.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsio.h"
#include "jsonx.h"
#include "labels.h"
#include "lock.h"
#include "openai.h"
#include "parts.h"
#include "query.h"
#include "responses.h"
#include "session.h"
#include "sidecar.h"
#include "store.h"
#include "title.h"
#include "user.h"
#include "util.h"

/* ---- native messages -> items ---- */

/* A message item: its text, then its images and documents (input_image, input_file). */
static json_object *message_item(const char *sid, int64_t id, json_object *m, const char *text)
{
    const char *role = svc_json_str(m, "role", "user");
    bool assistant = strcmp(role, "assistant") == 0;
    char *iid = NULL;
    svc_xasprintf(&iid, "msg_%s_%lld", sid, (long long)id);
    json_object *it = svc_json_new_obj("type", "message", "id", iid, "status", "completed", "role",
                                       assistant ? "assistant" : "user", NULL);
    json_object *parts = json_object_new_array();
    if (*text) {
        json_object *part =
            svc_json_new_obj("type", assistant ? "output_text" : "input_text", "text", text, NULL);
        if (assistant)
            svc_json_set(part, "annotations", json_object_new_array());
        json_object_array_add(parts, part);
    }
    json_object *c = svc_json_arr(m, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *p = svc_parts_responses(json_object_array_get_idx(c, i));
        if (p)
            json_object_array_add(parts, p);
    }
    svc_json_set(it, "content", parts);
    free(iid);
    return it;
}

/* A toolUse (call) or toolResult (output, its text in text) block as an item. */
static json_object *tool_item(const char *sid, int64_t id, size_t k, json_object *blk,
                              const char *text)
{
    json_object *tu = svc_json_obj(blk, "toolUse"), *tr = svc_json_obj(blk, "toolResult");
    char *iid = NULL;
    svc_xasprintf(&iid, "%s_%s_%lld_%zu", tu ? "fc" : "fco", sid, (long long)id, k);
    json_object *it =
        svc_json_new_obj("type", tu ? "function_call" : "function_call_output", "id", iid,
                         "call_id", svc_json_str(tu ? tu : tr, "toolUseId", ""), NULL);
    if (tu) {
        json_object *input = json_object_object_get(tu, "input");
        char *args = input ? svc_json_dump_compact(input) : NULL;
        svc_json_set_str(it, "name", svc_json_str(tu, "name", ""));
        svc_json_set_str(it, "arguments", args ? args : "{}");
        free(args);
    } else {
        svc_json_set_str(it, "output", text ? text : "");
    }
    svc_json_set_str(it, "status", "completed");
    free(iid);
    return it;
}

void svc_conv_message_items(const char *sid, int64_t id, json_object *m, json_object *out)
{
    if (svc_native_erased(m))
        return;
    char *text = svc_native_text(m);
    char *media = svc_parts_describe(m);
    if (*text || media)
        json_object_array_add(out, message_item(sid, id, m, text));
    free(text);
    free(media);
    json_object *content = svc_json_arr(m, "content");
    json_object *proj = svc_openai_project(m); /* its tool messages carry the results' text */
    size_t n = content ? json_object_array_length(content) : 0, results = 0;
    for (size_t k = 0; k < n; k++) {
        json_object *blk = json_object_array_get_idx(content, k);
        const char *rt = NULL;
        if (svc_json_obj(blk, "toolResult"))
            rt = svc_json_str(json_object_array_get_idx(proj, results++), "content", "");
        else if (!svc_json_obj(blk, "toolUse"))
            continue;
        json_object_array_add(out, tool_item(sid, id, k, blk, rt));
    }
    json_object_put(proj);
}

json_object *svc_conv_object(json_object *summary)
{
    double created = 0;
    svc_time_parse_iso(svc_json_str(summary, "created_at", ""), &created);
    json_object *o = svc_json_new_obj("id", svc_json_str(summary, "session_id", ""), "object",
                                      "conversation", NULL);
    svc_json_set_int(o, "created_at", (int64_t)created);
    json_object *md = svc_json_obj(summary, "metadata");
    svc_json_set(o, "metadata", md ? svc_json_copy(md) : json_object_new_object());
    return o;
}

/* ---- items -> native messages ---- */

/* Whether s is a string holding a NUL, which its C string would cut (stored as "a" for
 * "a\u0000b"). */
static bool nul_in(json_object *s)
{
    return json_object_is_type(s, json_type_string) &&
           strlen(json_object_get_string(s)) != (size_t)json_object_get_string_len(s);
}

/* The text of content (a string or input_text / output_text / text parts), heap; 422 else. */
static char *content_text(json_object *content, const char *p, struct svc_err *err)
{
    if (nul_in(content)) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must not contain NUL", p);
        return NULL;
    }
    if (json_object_is_type(content, json_type_string))
        return svc_xstrdup(json_object_get_string(content));
    if (!json_object_is_type(content, json_type_array)) {
        svc_err_setp(err, content ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, p,
                     "'%s' must be a string or a list of text parts", p);
        return NULL;
    }
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t k = 0; k < json_object_array_length(content); k++) {
        json_object *part = json_object_array_get_idx(content, k);
        const char *type = svc_json_str(part, "type", ""), *t = svc_json_str(part, "text", NULL);
        if (!t || nul_in(json_object_object_get(part, "text")) ||
            (strcmp(type, "input_text") && strcmp(type, "output_text") && strcmp(type, "text"))) {
            svc_buf_free(&b);
            svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                         "'%s[%zu]' must be an input_text or output_text part with a text", p, k);
            return NULL;
        }
        svc_buf_adds(&b, b.len ? "\n" : "");
        svc_buf_adds(&b, t);
    }
    return b.data ? svc_buf_steal(&b) : svc_xstrdup("");
}

/* A string field of item that must be there and not be empty. */
static const char *need_str(json_object *item, const char *key, const char *p, struct svc_err *err)
{
    const char *v = svc_json_str(item, key, NULL);
    if (!v || !*v)
        svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s.%s' must be a non-empty string", p, key);
    return v && *v ? v : NULL;
}

/* A message item: {"role": "user" | "assistant", "content"}. */
static json_object *message_native(json_object *item, const char *p, struct svc_err *err)
{
    const char *role = svc_json_str(item, "role", NULL);
    if (!role || (strcmp(role, "user") && strcmp(role, "assistant"))) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                     "'%s.role' must be user or assistant (a conversation keeps no system "
                     "messages: send instructions with each response)",
                     p);
        return NULL;
    }
    json_object *content = json_object_object_get(item, "content");
    char cp[96];
    snprintf(cp, sizeof cp, "%s.content", p);
    char *text = content_text(content, cp, err);
    if (!text)
        return NULL;
    json_object *m = NULL;
    if (!*text || !svc_utf8_valid(text, strlen(text)))
        svc_err_setp(err, SVC_E_INVALID_FIELD, cp, "'%s' must hold some text", cp);
    else
        m = svc_parts_message(role, svc_parts_text(text));
    free(text);
    return m;
}

/* A function_call (toolUse) or function_call_output (toolResult) item as its block. */
static json_object *tool_block(json_object *item, bool call, const char *p, struct svc_err *err)
{
    const char *id = need_str(item, "call_id", p, err);
    const char *name = id && call ? need_str(item, "name", p, err) : NULL;
    const char *args = svc_json_str(item, "arguments", "{}");
    json_object *v = NULL;
    char op[96], *text = NULL;
    snprintf(op, sizeof op, "%s.output", p);
    if (!id || (call && !name))
        return NULL;
    if (call && (svc_json_parse_python(args, strlen(args), &v, NULL) != 0 ||
                 !json_object_is_type(v, json_type_object))) {
        json_object_put(v);
        svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s.arguments' must be a JSON object", p);
        return NULL;
    }
    if (!call && !(text = content_text(json_object_object_get(item, "output"), op, err)))
        return NULL;
    if (!call) {
        json_object *blk = svc_parts_result(id, "success", text);
        free(text);
        return blk;
    }
    json_object *b = svc_json_new_obj("toolUseId", id, "name", name, NULL);
    svc_json_set(b, "input", v);
    return svc_parts_wrap("toolUse", b);
}

/* Add a tool block: to the previous message when it holds blocks of the same kind (calls
 * answered together go in one message, as Strands stores them), else as a new message. */
static void add_tool(json_object *out, json_object *blk, bool call)
{
    size_t n = json_object_array_length(out);
    json_object *last = n ? json_object_array_get_idx(out, n - 1) : NULL;
    json_object *c = svc_json_arr(last, "content");
    json_object *first = c ? json_object_array_get_idx(c, 0) : NULL;
    if (first && svc_json_obj(first, call ? "toolUse" : "toolResult")) {
        json_object_array_add(c, blk);
        return;
    }
    json_object_array_add(out, svc_parts_message(call ? "assistant" : "user", blk));
}

int svc_conv_parse_item(json_object *item, const char *p, json_object *msgs, struct svc_err *err)
{
    const char *type = svc_json_str(item, "type", "message");
    bool call = strcmp(type, "function_call") == 0;
    json_object *m = NULL, *tv = json_object_object_get(item, "type");
    if (!json_object_is_type(item, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be an object", p);
    char tp[80];
    snprintf(tp, sizeof tp, "%s.type", p);
    if (tv && !json_object_is_type(tv, json_type_string)) /* not taken for a message */
        return svc_err_setp(err, SVC_E_INVALID_FIELD, tp, "'%s' must be a string", tp);
    if (strcmp(type, "message") == 0) {
        if (!(m = message_native(item, p, err)))
            return -1;
        json_object_array_add(msgs, m);
        return 0;
    }
    if (!call && strcmp(type, "function_call_output") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s.type' must be message, function_call or function_call_output", p);
    if (!(m = tool_block(item, call, p, err)))
        return -1;
    add_tool(msgs, m, call);
    return 0;
}

int svc_conv_parse_items(json_object *items, const char *param, json_object **out,
                         struct svc_err *err)
{
    *out = NULL;
    if (!json_object_is_type(items, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must be a list of items", param);
    json_object *msgs = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        char p[64];
        snprintf(p, sizeof p, "%.32s[%zu]", param, i);
        if (svc_conv_parse_item(json_object_array_get_idx(items, i), p, msgs, err) != 0) {
            json_object_put(msgs);
            return -1;
        }
    }
    *out = msgs;
    return 0;
}

/* ---- the session's files ---- */

/* How a file is written: synced as sessions.fsync says. */
static int file_sync(const struct svc_sess *s)
{
    return s->st.durable ? SVC_SYNC_FILE : SVC_SYNC_NONE;
}

static int write_messages(struct svc_sess *s, json_object *natives, int64_t from,
                          struct svc_err *err)
{
    size_t n = natives ? json_object_array_length(natives) : 0;
    for (size_t i = 0; i < n; i++)
        if (svc_sess_write_message(s, from + (int64_t)i, json_object_array_get_idx(natives, i),
                                   file_sync(s), NULL, err) != 0)
            return -1;
    return 0;
}

/* A sidecar without a title gets one from the first user text of natives. */
static void derive_title(json_object *sc, json_object *natives)
{
    size_t n = natives ? json_object_array_length(natives) : 0;
    for (size_t i = 0; i < n && !*svc_json_str(sc, "title", ""); i++) {
        json_object *m = json_object_array_get_idx(natives, i);
        char *t = svc_native_text(m);
        if (*t && strcmp(svc_json_str(m, "role", ""), "user") == 0)
            svc_title_derive(sc, t);
        free(t);
    }
}

/* The new session's sidecar (new reference): its title from the first user text. */
static json_object *new_sidecar(const struct svc_config *cfg, const char *sid, const char *aid,
                                json_object *natives, json_object *metadata, const char *owner)
{
    json_object *sc = svc_sidecar_new(sid, aid, cfg->model.name);
    size_t n = natives ? json_object_array_length(natives) : 0;
    derive_title(sc, natives);
    svc_json_set_int(sc, "message_count", (int64_t)n);
    if (metadata)
        svc_json_set(sc, "metadata", svc_json_copy(metadata));
    if (owner)
        svc_user_own(sc, owner);
    return sc;
}

/* The id of the new session in id: sid checked and free, or conv_<32 hex>. */
static int new_id(const struct svc_store *st, const char *sid, char *id, size_t sz,
                  struct svc_err *err)
{
    if (!sid) {
        svc_responses_new_id("conv_", id, sz);
        return 0;
    }
    if (svc_layout_id_check(sid, err) != 0)
        return -1;
    if (strcmp(sid, "export") == 0) /* as core/run.c: the export route's path */
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id 'export' is reserved (the path of the export route); "
                            "choose another");
    if (svc_store_session_exists(st, sid))
        return svc_err_setp(err, SVC_E_SESSION_EXISTS, "session_id", "session %s exists", sid);
    snprintf(id, sz, "%s", sid);
    return 0;
}

int svc_conv_create(const struct svc_config *cfg, const char *sid, json_object *natives,
                    json_object *metadata, const char *owner, json_object **out,
                    struct svc_err *err)
{
    *out = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    char id[SVC_ID_MAX + 1];
    if ((metadata && svc_labels_check_metadata(metadata, err) != 0) ||
        new_id(&st, sid, id, sizeof id, err) != 0)
        return -1;
    struct svc_sess dst = SVC_SESS_INIT;
    json_object *sc = new_sidecar(cfg, id, st.agent_id, natives, metadata, owner);
    json_object *agent = svc_store_new_agent(&st);
    json_object *sum = svc_sidecar_summary(sc);
    struct svc_store stg;
    char *stage = svc_store_stage(&st, &stg, err);
    int rc = -1;
    if (stage && svc_sess_open_store(&stg, id, &dst, err) == 0 &&
        svc_sess_ensure(&dst, false, file_sync(&dst), NULL, err) == 0 &&
        write_messages(&dst, natives, 0, err) == 0 &&
        svc_sess_write_agent(&dst, agent, file_sync(&dst), err) == 0 &&
        svc_sidecar_write(&dst, sc, file_sync(&dst), err) == 0 &&
        svc_sess_publish(&dst, &st, sum, err) == 0) {
        *out = svc_conv_object(sum);
        rc = 0;
    }
    json_object_put(sum);
    if (rc != 0 && stage)
        svc_file_remove_tree(stage);
    svc_sess_close(&dst);
    json_object_put(sc);
    json_object_put(agent);
    free(stage);
    return rc == 0 ? 0 : svc_err_unwritable(cfg->sessions.root, err);
}

/* Take the run lock and then the exclusive lock of an existing session, a stale run
 * repaired first (holding the run lock, the repair would take the run for a live one). */
static int lock_for_write(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                          struct svc_lock *run_lock, struct svc_err *err)
{
    if (svc_session_open(cfg, sid, s, true, err) != 0 ||
        svc_lock_run_try(s->dir, run_lock, err) != 0 || svc_sess_lock(s, true, err) != 0)
        return -1;
    json_object *sc = NULL;
    if (svc_sidecar_get(s, &sc, err) != 0)
        return -1;
    if (sc && svc_json_bool(sc, "archived", false))
        return svc_err_set(err, SVC_E_SESSION_ARCHIVED, "session %s is archived", sid);
    return 0;
}

/* After a write (added: the natives, or NULL): the sidecar's count, title and updated_at,
 * and the index row. */
static int touch(struct svc_sess *s, json_object *added, struct svc_err *err)
{
    json_object *sc = NULL;
    if (svc_sidecar_get(s, &sc, err) != 0)
        return -1;
    if (!sc) { /* a session Strands wrote: the listing derives it from the files */
        svc_sidecar_resync(&s->st, s->sid);
        return 0;
    }
    char now[SVC_TIME_LEN];
    int64_t k = added ? (int64_t)json_object_array_length(added) : 0;
    svc_json_set_int(sc, "message_count", svc_json_int(sc, "message_count", 0) + k);
    derive_title(sc, added);
    svc_json_set_str(sc, "updated_at", svc_time_now_iso(now));
    if (svc_sidecar_write(s, sc, SVC_SYNC_STORE, err) != 0)
        return -1;
    svc_sess_forget_sidecar(s);
    return 0;
}

int svc_conv_append(const struct svc_config *cfg, const char *sid, json_object *natives,
                    json_object **out, struct svc_err *err)
{
    *out = NULL;
    struct svc_sess s = SVC_SESS_INIT;
    struct svc_lock run_lock = SVC_LOCK_INIT;
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = -1;
    if (lock_for_write(cfg, sid, &s, &run_lock, err) != 0 ||
        svc_sess_message_ids(&s, &ids, &n, err) != 0 ||
        (n == 0 && svc_sess_ensure_natives(&s, SVC_SYNC_STORE, err) != 0))
        goto out;
    int64_t next = n ? ids[n - 1] + 1 : 0;
    if (write_messages(&s, natives, next, err) != 0 ||
        (s.st.durable && svc_fsync_dir(s.msg_dir, err) != 0) || touch(&s, natives, err) != 0)
        goto out;
    *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(natives); i++)
        svc_conv_message_items(sid, next + (int64_t)i, json_object_array_get_idx(natives, i), *out);
    rc = 0;
out:
    free(ids);
    svc_sess_close(&s);
    svc_lock_release(&run_lock);
    return rc;
}

int svc_conv_items(const struct svc_config *cfg, const char *sid, json_object **out,
                   struct svc_err *err)
{
    *out = NULL;
    struct svc_sess s = SVC_SESS_INIT;
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = -1;
    if (svc_session_open(cfg, sid, &s, false, err) != 0 || svc_sess_lock(&s, false, err) != 0 ||
        svc_sess_message_ids(&s, &ids, &n, err) != 0)
        goto out;
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *rec = NULL;
        if (svc_sess_read_message(&s, ids[i], &rec, NULL, NULL, err) != 0) {
            json_object_put(items);
            goto out;
        }
        svc_conv_message_items(sid, ids[i], svc_store_effective_message(rec), items);
        json_object_put(rec);
    }
    *out = items;
    rc = 0;
out:
    free(ids);
    svc_sess_close(&s);
    return rc;
}

/* The message id of an item id of this session (msg_<sid>_<n>, fc_/fco_<sid>_<n>_<k>), or -1. */
static int64_t item_message(const char *sid, const char *item_id)
{
    static const char *const pre[] = {"msg_", "fc_", "fco_"};
    size_t sl = strlen(sid);
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
        size_t pl = strlen(pre[i]);
        if (strncmp(item_id, pre[i], pl) || strncmp(item_id + pl, sid, sl) ||
            item_id[pl + sl] != '_')
            continue;
        const char *num = item_id + pl + sl + 1;
        char *end = NULL;
        errno = 0;
        long long id = strtoll(num, &end, 10);
        if (end != num && *num >= '0' && *num <= '9' && errno == 0 && (*end == '\0' || *end == '_'))
            return id;
    }
    return -1;
}

/* Redact message rec (id) of s to nothing, as Strands' redact_message does. */
static int redact(struct svc_sess *s, json_object *rec, int64_t id, struct svc_err *err)
{
    json_object *m = svc_json_obj(rec, "message");
    svc_json_set(rec, "redact_message",
                 svc_parts_message(svc_json_str(m, "role", "user"), svc_parts_text("")));
    char now[SVC_TIME_LEN];
    svc_json_set_str(rec, "updated_at", svc_time_now_iso(now));
    char *path = svc_sess_message_path(s, id, SVC_FROM_ABS);
    int rc = svc_json_write_native_sync(path, rec, svc_store_sync(&s->st, SVC_SYNC_STORE), err);
    free(path);
    return rc == 0 ? touch(s, NULL, err) : -1;
}

/* The item of that id among message id's items (new reference), or NULL. */
static json_object *find_item(const char *sid, int64_t id, json_object *m, const char *item_id)
{
    json_object *items = json_object_new_array(), *hit = NULL;
    svc_conv_message_items(sid, id, m, items);
    for (size_t i = 0; !hit && i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        if (strcmp(svc_json_str(it, "id", ""), item_id) == 0)
            hit = json_object_get(it);
    }
    json_object_put(items);
    return hit;
}

int svc_conv_item(const struct svc_config *cfg, const char *sid, const char *item_id,
                  bool redact_it, json_object **out, struct svc_err *err)
{
    *out = NULL;
    struct svc_sess s = SVC_SESS_INIT;
    struct svc_lock run_lock = SVC_LOCK_INIT;
    json_object *rec = NULL;
    int64_t id = item_message(sid, item_id);
    int rc = -1;
    if (redact_it ? lock_for_write(cfg, sid, &s, &run_lock, err) != 0
                  : (svc_session_open(cfg, sid, &s, false, err) != 0 ||
                     svc_sess_lock(&s, false, err) != 0))
        goto out;
    struct svc_err rerr;
    if (id >= 0 && svc_sess_read_message(&s, id, &rec, NULL, NULL, &rerr) != 0 &&
        rerr.code != SVC_E_NOT_FOUND) {
        *err = rerr;
        goto out;
    }
    *out = rec ? find_item(sid, id, svc_store_effective_message(rec), item_id) : NULL;
    if (!*out) {
        svc_err_setp(err, SVC_E_NOT_FOUND, "item_id", "item %s not found in conversation %s",
                     item_id, sid);
        goto out;
    }
    rc = redact_it ? redact(&s, rec, id, err) : 0;
out:
    if (rc != 0) {
        json_object_put(*out);
        *out = NULL;
    }
    json_object_put(rec);
    svc_sess_close(&s);
    svc_lock_release(&run_lock);
    return rc;
}

int svc_conv_find_item(const struct svc_config *cfg, const char *scope, const char *item_id,
                       json_object **out, struct svc_err *err)
{
    *out = NULL;
    const char *us = strchr(item_id, '_'), *end = item_id + strlen(item_id);
    int parts = strncmp(item_id, "msg_", 4) == 0 ? 1 : 2; /* fc_ and fco_: _<n>_<k> */
    for (int k = 0; us && k < parts && end > us; k++)
        while (--end > us && *end != '_')
            ;
    if (!us || end <= us + 1 || (size_t)(end - us - 1) > SVC_ID_MAX)
        return svc_err_set(err, SVC_E_NOT_FOUND, "item %.64s not found", item_id);
    char sid[SVC_ID_MAX + 1];
    snprintf(sid, sizeof sid, "%.*s", (int)(end - us - 1), us + 1);
    if (!svc_layout_id_valid(sid) || svc_session_visible(cfg, scope, sid, false, err) != 0)
        return svc_err_set(err, SVC_E_NOT_FOUND, "item %.64s not found", item_id);
    return svc_conv_item(cfg, sid, item_id, false, out, err);
}

int svc_conv_items_seen(const struct svc_config *cfg, const char *scope, const char *sid,
                        json_object **out, struct svc_err *err)
{
    *out = NULL;
    struct svc_err e;
    if (svc_session_visible(cfg, scope, sid, true, err) != 0)
        return -1;
    if (svc_conv_items(cfg, sid, out, &e) != 0 && e.code != SVC_E_SESSION_NOT_FOUND) {
        *err = e;
        return -1;
    }
    return 0;
}
