#include "feedback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsio.h"
#include "jsonx.h"
#include "util.h"

/* A message id as the path gave it: decimal, no sign, no padding. */
static int parse_id(const char *text, int64_t *id, struct svc_err *err)
{
    int64_t v = 0;
    size_t n = text ? strlen(text) : 0;
    bool ok = n > 0 && n <= 18 && !(n > 1 && text[0] == '0');
    for (size_t i = 0; ok && i < n; i++) {
        ok = text[i] >= '0' && text[i] <= '9';
        v = v * 10 + (text[i] - '0');
    }
    if (!ok)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "message_id",
                            "message_id must be a message's number");
    *id = v;
    return 0;
}

static int check_body(bool rating_given, json_object *rating, const char *comment,
                      struct svc_err *err)
{
    if (!rating_given)
        return svc_err_setp(err, SVC_E_MISSING_FIELD, "rating",
                            "rating is required (up, down or null)");
    const char *r =
        json_object_is_type(rating, json_type_string) ? json_object_get_string(rating) : "";
    if (rating && strcmp(r, "up") != 0 && strcmp(r, "down") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "rating", "rating must be up, down or null");
    if (comment && svc_utf8_len(comment) > SVC_FEEDBACK_COMMENT_MAX)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "comment",
                            "comment must be at most %d characters", SVC_FEEDBACK_COMMENT_MAX);
    return 0;
}

/* The message must be there and be the assistant's; the caller holds the lock. */
static int check_message(struct svc_sess *s, int64_t id, struct svc_err *err)
{
    json_object *rec = NULL;
    if (svc_sess_read_message(s, id, &rec, NULL, NULL, err) != 0)
        return err->code != SVC_E_NOT_FOUND
                   ? -1
                   : svc_err_set(err, SVC_E_NOT_FOUND, "session %s has no message %lld", s->sid,
                                 (long long)id);
    const char *role = svc_json_str(svc_store_effective_message(rec), "role", "");
    int rc = strcmp(role, "assistant") == 0
                 ? 0
                 : svc_err_setp(err, SVC_E_INVALID_FIELD, "message_id",
                                "message %lld is a %s message; feedback is for assistant messages",
                                (long long)id, role);
    json_object_put(rec);
    return rc;
}

/* Replace or remove the entry of id in the file, under the exclusive lock. *entry: the new
 * entry (borrowed from doc, which the caller frees) or NULL. */
static int write_entry(struct svc_sess *s, int64_t id, json_object *rating, const char *comment,
                       json_object **doc, json_object **entry, struct svc_err *err)
{
    char *path = svc_sess_path(s, SVC_F_FEEDBACK, SVC_FROM_ABS), key[24], now[SVC_TIME_LEN];
    int rc = -1;
    if (svc_json_read_object_file(path, doc, err) != 0) {
        if (err->code != SVC_E_NOT_FOUND)
            goto out;
        *doc = json_object_new_object();
        svc_json_set_int(*doc, "schema_version", 1);
    }
    json_object *all = svc_json_obj(*doc, "feedback");
    if (!all) {
        all = json_object_new_object();
        svc_json_set(*doc, "feedback", all);
    }
    snprintf(key, sizeof key, "%lld", (long long)id);
    *entry = NULL;
    if (rating || comment) {
        *entry = json_object_new_object();
        svc_json_set(*entry, "rating", rating ? json_object_get(rating) : NULL);
        if (comment)
            svc_json_set_str(*entry, "comment", comment);
        svc_json_set_str(*entry, "updated_at", svc_time_now_iso(now));
        svc_json_set(all, key, *entry);
    } else {
        json_object_object_del(all, key);
    }
    rc = svc_json_write_pretty_sync(path, *doc, svc_store_sync(&s->st, SVC_SYNC_STORE), err);
out:
    free(path);
    return rc;
}

int svc_feedback_set(const struct svc_config *cfg, const char *sid, const char *message_id,
                     bool rating_given, json_object *rating, const char *comment, json_object **out,
                     struct svc_err *err)
{
    *out = NULL;
    int64_t id = 0;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    struct svc_sess s;
    if (svc_sess_open(cfg, sid, &s, err) != 0 || parse_id(message_id, &id, err) != 0 ||
        check_body(rating_given, rating, comment, err) != 0) {
        svc_sess_close(&s);
        return -1;
    }
    json_object *doc = NULL, *entry = NULL;
    int rc = -1;
    if (!svc_sess_exists(&s))
        svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", sid);
    else if (svc_sess_check_layout(&s, NULL, err) == 0 && svc_sess_lock(&s, true, err) == 0 &&
             check_message(&s, id, err) == 0 &&
             write_entry(&s, id, rating, comment, &doc, &entry, err) == 0)
        rc = 0;
    if (rc == 0) {
        *out = svc_json_new_obj("session_id", sid, NULL);
        svc_json_set_int(*out, "message_id", id);
        svc_json_set(*out, "feedback", entry ? json_object_get(entry) : NULL);
    }
    svc_sess_close(&s);
    json_object_put(doc);
    return rc == 0 ? 0 : svc_err_unwritable(cfg->sessions.root, err);
}

json_object *svc_feedback_parse(const char *data, size_t len)
{
    json_object *doc = NULL, *all = NULL;
    if (data && svc_json_parse(data, len, &doc, NULL) == 0 &&
        (all = svc_json_obj(doc, "feedback")) && json_object_object_length(all) > 0)
        json_object_get(all);
    else
        all = NULL;
    json_object_put(doc);
    return all;
}

json_object *svc_feedback_read(const struct svc_sess *s)
{
    char *path = svc_sess_path(s, SVC_F_FEEDBACK, SVC_FROM_ABS), *data = NULL;
    size_t len = 0;
    json_object *all =
        svc_file_read(path, &data, &len, NULL) == 0 ? svc_feedback_parse(data, len) : NULL;
    free(data);
    free(path);
    return all;
}

json_object *svc_feedback_of(json_object *entries, int64_t id)
{
    if (!entries)
        return NULL; /* no feedback file: the common case, once per row of a page */
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)id);
    return svc_json_obj(entries, key);
}

/* ---- preference pairs ---- */

struct svc_feedback_pairs {
    json_object *groups; /* compact input -> {"input", "up": [outputs], "down": [outputs]} */
};

struct svc_feedback_pairs *svc_feedback_pairs_new(void)
{
    struct svc_feedback_pairs *p = svc_xcalloc(1, sizeof *p);
    p->groups = json_object_new_object();
    return p;
}

void svc_feedback_pairs_add(struct svc_feedback_pairs *p, const char *rating, json_object *input,
                            json_object *output)
{
    bool up = strcmp(rating, "up") == 0;
    if (!up && strcmp(rating, "down") != 0)
        return;
    char *key = svc_json_dump_compact(input);
    json_object *g = svc_json_obj(p->groups, key);
    if (!g) {
        g = json_object_new_object();
        svc_json_set(g, "input", svc_json_copy(input));
        svc_json_set(g, "up", json_object_new_array());
        svc_json_set(g, "down", json_object_new_array());
        svc_json_set(p->groups, key, g);
    }
    json_object_array_add(svc_json_arr(g, up ? "up" : "down"), svc_json_copy(output));
    free(key);
}

char *svc_feedback_pairs_jsonl(struct svc_feedback_pairs *p)
{
    struct svc_buf b;
    svc_buf_init(&b);
    json_object_object_foreach(p->groups, key, g)
    {
        (void)key;
        json_object *ups = svc_json_arr(g, "up"), *downs = svc_json_arr(g, "down");
        for (size_t i = 0; i < json_object_array_length(ups); i++)
            for (size_t k = 0; k < json_object_array_length(downs); k++) {
                json_object *line = json_object_new_object(), *in = json_object_new_object();
                svc_json_set(in, "messages", json_object_get(svc_json_arr(g, "input")));
                svc_json_set(line, "input", in);
                svc_json_set(line, "preferred_output",
                             json_object_get(json_object_array_get_idx(ups, i)));
                svc_json_set(line, "non_preferred_output",
                             json_object_get(json_object_array_get_idx(downs, k)));
                char *t = svc_json_dump_compact(line);
                svc_buf_printf(&b, "%s\n", t);
                free(t);
                json_object_put(line);
            }
    }
    return svc_buf_steal(&b);
}

void svc_feedback_pairs_free(struct svc_feedback_pairs *p)
{
    if (!p)
        return;
    json_object_put(p->groups);
    free(p);
}
