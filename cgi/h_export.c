/* h_export: POST /api/v1/chat/sessions/export (SPEC 5). Parses the body, calls
 * core/bundle.h, renders the answer or streams the .tar.gz (download: true). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "handlers.h"
#include "layout.h"
#include "util.h"

/* An array of strings (or one string) at key into a heap array of borrowed strings. */
static int str_list(json_object *body, const char *key, bool one_ok, const char ***out, size_t *n,
                    struct svc_err *err)
{
    json_object *v = NULL;
    *out = NULL;
    *n = 0;
    if (!json_object_object_get_ex(body, key, &v) || !v)
        return 0;
    if (one_ok && json_object_is_type(v, json_type_string)) {
        *out = svc_xmalloc(sizeof **out);
        (*out)[0] = json_object_get_string(v);
        *n = 1;
        return 0;
    }
    bool ok = json_object_is_type(v, json_type_array);
    size_t len = ok ? json_object_array_length(v) : 0;
    for (size_t i = 0; ok && i < len; i++) {
        json_object *e = json_object_array_get_idx(v, i);
        ok = json_object_is_type(e, json_type_string) &&
             (size_t)json_object_get_string_len(e) == strlen(json_object_get_string(e));
    }
    if (!ok)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, key, "'%s' must be an array of strings", key);
    *out = svc_xcalloc(len ? len : 1, sizeof **out);
    for (size_t i = 0; i < len; i++)
        (*out)[i] = json_object_get_string(json_object_array_get_idx(v, i));
    *n = len;
    return 0;
}

/* The fields of the body (SPEC 5); any other is refused: a misspelt filter ("sesion_ids")
 * must not widen the export to every session. */
static const char *const export_fields[] = {
    "session_ids",    "session_id", "include_archived", "status",   "updated_after",
    "updated_before", "output_dir", "format",           "download", "allow_partial"};

static int stream_out(void *ctx, const void *data, size_t len)
{
    return http_stream_write(ctx, data, len);
}

int h_sessions_export(struct http_req *r, struct svc_err *err)
{
    if (!r->cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled on this server");
    json_object *body = NULL, *res = NULL;
    struct svc_export_request req = {0};
    struct svc_export *ex = NULL;
    const char **ids = NULL, *one = NULL, *format = NULL;
    size_t nids = 0;
    int rc = -1;
    if (http_body_json(r, true, &body, err) < 0)
        return -1;
    if (http_known_fields(body, NULL, export_fields, sizeof export_fields / sizeof *export_fields,
                          err) < 0 ||
        str_list(body, "session_ids", false, &ids, &nids, err) < 0 ||
        http_field_str(body, "session_id", NULL, false, &one, err) < 0 ||
        http_field_bool(body, "include_archived", NULL, false, &req.include_archived, err) < 0 ||
        str_list(body, "status", true, &req.statuses, &req.n_statuses, err) < 0 ||
        http_field_str(body, "updated_after", NULL, false, &req.updated_after, err) < 0 ||
        http_field_str(body, "updated_before", NULL, false, &req.updated_before, err) < 0 ||
        http_field_str(body, "output_dir", NULL, false, &req.output_dir, err) < 0 ||
        http_field_str(body, "format", NULL, false, &format, err) < 0 ||
        http_field_bool(body, "download", NULL, false, &req.download, err) < 0 ||
        http_field_bool(body, "allow_partial", NULL, false, &req.allow_partial, err) < 0)
        goto out;
    if (format && strcmp(format, "dir") != 0 && strcmp(format, "tar.gz") != 0) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, "format", "format must be \"dir\" or \"tar.gz\"");
        goto out;
    }
    req.tar = format && strcmp(format, "tar.gz") == 0;
    req.owner = svc_user_scope(&r->user); /* a user exports their own sessions (SPEC 14) */
    /* a download is a .tar.gz sent to the client: nothing is written on the server */
    if (req.download && format && !req.tar) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, "format",
                     "a download is a .tar.gz: leave format out or make it \"tar.gz\"");
        goto out;
    }
    if (req.download && req.output_dir) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, "output_dir",
                     "a download writes nothing on the server: leave output_dir out");
        goto out;
    }
    if (one) { /* session_id and session_ids name one selection together */
        ids = svc_xrealloc(ids, (nids + 1) * sizeof *ids);
        ids[nids++] = one;
    }
    for (size_t i = 0; i + (one != NULL) < nids; i++) /* core would name session_id */
        if (svc_layout_id_check(ids[i], err) < 0) {
            snprintf(err->param, sizeof err->param, "session_ids[%zu]", i);
            goto out;
        }
    req.session_ids = ids;
    req.n_session_ids = nids;
    /* an empty array (str_list refused any other non-null value); null counts as absent */
    if (nids == 0 && json_object_object_get(body, "session_ids")) {
        svc_err_setp(err, SVC_E_INVALID_FIELD, "session_ids",
                     "session_ids is empty; leave it out to export by filters");
        goto out;
    }
    if (req.n_statuses == 0 && json_object_object_get(body, "status")) { /* was: every one */
        svc_err_setp(err, SVC_E_INVALID_FIELD, "status",
                     "status is empty; leave it out to export sessions of every status");
        goto out;
    }
    if (svc_export_prepare(r->cfg, &req, &ex, err) < 0)
        goto out;
    if (req.download) {
        char disp[160];
        snprintf(disp, sizeof disp, "attachment; filename=\"%s.tar.gz\"", svc_export_id(ex));
        http_set_header(r, "Content-Disposition", disp);
        http_set_header(r, "Cache-Control", "no-store");
        if (http_stream_begin(r, "application/gzip") < 0) {
            rc = 0; /* the client is gone: nothing more to say */
            goto out;
        }
        /* a failure now can only cut the stream short: gzip's trailer is then missing,
         * so the client sees a truncated archive, never a complete-looking one */
        rc = svc_export_stream(ex, stream_out, r, NULL, err) == 0 ? 0 : -1;
        goto out;
    }
    if (svc_export_write(ex, NULL, &res, err) < 0)
        goto out;
    http_send_json(r, 200, res);
    rc = 0;
out:
    json_object_put(res);
    svc_export_free(ex);
    free(ids);
    free(req.statuses);
    json_object_put(body);
    return rc;
}
