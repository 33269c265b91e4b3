#include "fork.h"

#include <stdio.h>
#include <stdlib.h>

#include "chain.h"
#include "cmgr.h"
#include "fsio.h"
#include "jsonx.h"
#include "openai.h"
#include "query.h"
#include "search.h"
#include "sidecar.h"
#include "store.h"
#include "title.h"
#include "util.h"

/* What the request names, checked before anything is read: the new id free and valid. */
static int check_request(const struct svc_config *cfg, const struct svc_fork_req *f, char *new_id,
                         size_t sz, struct svc_err *err)
{
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    if (f->title && svc_title_check(f->title, err) != 0)
        return -1;
    if (!f->new_id) {
        svc_random_id("sess", new_id, sz);
        return 0;
    }
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    if (svc_layout_id_check(f->new_id, err) != 0)
        return -1;
    if (svc_store_session_exists(&st, f->new_id))
        return svc_err_setp(err, SVC_E_SESSION_EXISTS, "session_id", "session %s exists",
                            f->new_id);
    snprintf(new_id, sz, "%s", f->new_id);
    return 0;
}

/* The ids to copy (ids <= *last, *last set to the default when not asked); 422 past the end. */
static int pick(const struct svc_fork_req *f, const int64_t *ids, size_t n, int64_t *last,
                size_t *count, struct svc_err *err)
{
    if (n == 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "message_id",
                            "session %s has no messages to fork", f->session_id);
    *last = f->has_message_id ? f->message_id : ids[n - 1];
    if (*last < 0 || *last > ids[n - 1])
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "message_id", "message_id must be 0..%lld",
                            (long long)ids[n - 1]);
    for (*count = 0; *count < n && ids[*count] <= *last; (*count)++)
        ;
    return 0;
}

static int copy_messages(struct svc_sess *src, struct svc_sess *dst, const int64_t *ids,
                         size_t count, struct svc_err *err)
{
    for (size_t i = 0; i < count; i++) {
        json_object *rec = NULL;
        int rc = svc_sess_read_message(src, ids[i], &rec, NULL, NULL, err);
        if (rc == 0)
            rc = svc_sess_write_message(dst, ids[i], svc_store_effective_message(rec),
                                        SVC_SYNC_STORE_FILE, NULL, err);
        json_object_put(rec);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* A fresh agent.json with the source's state, and its window start when the copy reaches it. */
static int write_agent(struct svc_sess *src, struct svc_sess *dst, size_t count,
                       struct svc_err *err)
{
    json_object *old = NULL, *a = svc_store_new_agent(&dst->st);
    if (svc_sess_read_agent(src, &old, NULL) == 0) {
        json_object *state = svc_json_obj(old, "state");
        if (state)
            svc_json_set(a, "state", svc_json_copy(state));
        /* the source's manager (SPEC 17), its summary while the copy reaches past it */
        json_object *cm = svc_json_obj(old, "conversation_manager_state");
        int64_t removed = svc_agent_removed_count(old);
        if (cm)
            svc_json_set(a, "conversation_manager_state", svc_json_copy(cm));
        if (cm && removed >= (int64_t)count && svc_cm_summary(old))
            svc_json_set(svc_json_obj(a, "conversation_manager_state"), "summary_message", NULL);
        svc_agent_set_counts(a, removed < (int64_t)count ? removed : 0, 0);
    }
    int rc = svc_sess_write_agent(dst, a, SVC_SYNC_STORE_FILE, err);
    json_object_put(old);
    json_object_put(a);
    return rc;
}

/* The new sidecar (new reference): the source's title, model, owner (SPEC 14), channel, locale. */
static json_object *new_sidecar(const struct svc_fork_req *f, json_object *from, const char *sid,
                                const char *agent_id, int64_t last, size_t count)
{
    json_object *sc = svc_sidecar_new(sid, agent_id, svc_json_str(from, "model", NULL));
    static const char *const kept[] = {"user_id", "user_verified", "channel",
                                       "locale",  "title",         "title_source"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(from, kept[i], &v) && v)
            svc_json_set(sc, kept[i], svc_json_copy(v));
    }
    if (f->title) {
        svc_json_set_str(sc, "title", f->title);
        json_object_object_del(sc, "title_source");
    }
    svc_json_set_int(sc, "message_count", (int64_t)count);
    json_object *ff = json_object_new_object();
    svc_json_set_str(ff, "session_id", f->session_id);
    svc_json_set_int(ff, "message_id", last);
    svc_json_set(sc, "forked_from", ff);
    return sc;
}

/* Build the copy under a staging root, from the source locked shared. *sc: its sidecar. */
static int build(struct svc_sess *src, struct svc_sess *dst, const struct svc_fork_req *f,
                 json_object **sc, struct svc_err *err)
{
    int64_t *ids = NULL, last = 0;
    size_t n = 0, count = 0;
    json_object *from = NULL;
    int rc = -1;
    if (svc_sess_lock(src, false, err) != 0 || svc_sess_message_ids(src, &ids, &n, err) != 0 ||
        pick(f, ids, n, &last, &count, err) != 0)
        goto out;
    if (svc_sidecar_get(src, &from, NULL) == 0 && from)
        from = json_object_get(from);
    else if (svc_sidecar_derive(src, &from, err) != 0)
        goto out;
    *sc = new_sidecar(f, from, dst->sid, dst->st.agent_id, last, count);
    /* each file's data synced when durable, the directories by svc_sess_publish */
    if (svc_sess_ensure(dst, false, SVC_SYNC_STORE_FILE, NULL, err) == 0 &&
        copy_messages(src, dst, ids, count, err) == 0 && write_agent(src, dst, count, err) == 0 &&
        svc_sess_copy_multi_agents(src, dst, SVC_SYNC_STORE_FILE, err) == 0 &&
        svc_sidecar_write(dst, *sc, SVC_SYNC_STORE_FILE, err) == 0)
        rc = 0;
out:
    svc_sess_unlock(src);
    json_object_put(from);
    free(ids);
    return rc;
}

int svc_session_fork(const struct svc_config *cfg, const struct svc_fork_req *f, json_object **out,
                     struct svc_err *err)
{
    *out = NULL;
    char new_id[SVC_ID_MAX + 1];
    struct svc_sess src, dst = SVC_SESS_INIT;
    if (check_request(cfg, f, new_id, sizeof new_id, err) != 0 ||
        svc_session_open(cfg, f->session_id, &src, false, err) != 0)
        return svc_err_unwritable(cfg->sessions.root, err);
    json_object *sc = NULL, *sum = NULL;
    struct svc_store stg;
    int rc = -1;
    char *stage = svc_store_stage(&src.st, &stg, err);
    if (stage && svc_sess_open_store(&stg, new_id, &dst, err) == 0 &&
        build(&src, &dst, f, &sc, err) == 0) {
        sum = svc_sidecar_summary(sc);
        rc = svc_sess_publish(&dst, &src.st, sum, err);
    }
    if (rc == 0)
        *out = sum;
    else
        json_object_put(sum);
    if (rc != 0 && stage)
        svc_file_remove_tree(stage);
    svc_sess_close(&dst);
    svc_sess_close(&src);
    json_object_put(sc);
    free(stage);
    return rc == 0 ? 0 : svc_err_unwritable(cfg->sessions.root, err);
}

int svc_session_continued(const struct svc_config *cfg, const char *owner, json_object *hist,
                          char **sid, size_t *used, int64_t *count, struct svc_err *err)
{
    size_t n = hist ? json_object_array_length(hist) : 0, m = 0;
    int64_t *ids = svc_xcalloc(n + 1, sizeof *ids);
    size_t *at = svc_xcalloc(n + 1, sizeof *at); /* hist messages held by ids[0..k] */
    unsigned char key[32];
    svc_chain_seed(owner, key);
    for (size_t i = 0; i < n; i++) {
        json_object *nm = svc_openai_to_native(json_object_array_get_idx(hist, i));
        if (svc_chain_step(key, nm)) {
            ids[m] = svc_chain_id(key);
            at[m++] = i + 1;
        }
        json_object_put(nm);
    }
    *sid = NULL;
    *used = 0;
    *count = 0;
    struct svc_chain_hit hit;
    int rc = m ? svc_search_chain_find(cfg, ids, m, &hit, err) : 0;
    if (rc == 1 && hit.pos == hit.total)
        *count = hit.msgs;
    if (rc == 1 && hit.pos < hit.total) { /* its transcript goes on: the turn runs in a fork */
        struct svc_fork_req f = {
            .session_id = hit.sid, .has_message_id = true, .message_id = hit.mid};
        json_object *sum = NULL;
        rc = svc_session_fork(cfg, &f, &sum, err) == 0 ? 1 : -1;
        if (rc == 1)
            snprintf(hit.sid, sizeof hit.sid, "%s", svc_json_str(sum, "session_id", ""));
        json_object_put(sum);
    }
    if (rc == 1) {
        *sid = svc_xstrdup(hit.sid);
        *used = at[hit.pos - 1];
    }
    free(ids);
    free(at);
    return rc < 0 ? -1 : 0;
}
