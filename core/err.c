#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    const char *type;
    int status;
} err_table[SVC_E__MAX] = {
    [SVC_OK] = {"ok", "", 200},
    [SVC_E_INTERNAL] = {"internal_error", "server_error", 500},
    [SVC_E_NOMEM] = {"internal_error", "server_error", 500},
    [SVC_E_IO] = {"io_error", "server_error", 500},
    [SVC_E_INVALID_JSON] = {"invalid_json", "invalid_request_error", 400},
    [SVC_E_INVALID_FIELD] = {"invalid_field", "invalid_request_error", 422},
    [SVC_E_MISSING_FIELD] = {"missing_field", "invalid_request_error", 422},
    [SVC_E_INVALID_SESSION_ID] = {"invalid_session_id", "invalid_request_error", 400},
    [SVC_E_INVALID_QUERY] = {"invalid_query", "invalid_request_error", 400},
    [SVC_E_CONFIG] = {"config_error", "server_error", 500},
    [SVC_E_NOT_FOUND] = {"not_found", "not_found_error", 404},
    [SVC_E_METHOD_NOT_ALLOWED] = {"method_not_allowed", "invalid_request_error", 405},
    [SVC_E_BODY_TOO_LARGE] = {"body_too_large", "invalid_request_error", 413},
    [SVC_E_MISSING_TOKEN] = {"missing_token", "authentication_error", 401},
    [SVC_E_INVALID_TOKEN] = {"invalid_token", "authentication_error", 401},
    [SVC_E_SESSION_NOT_FOUND] = {"session_not_found", "not_found_error", 404},
    [SVC_E_SESSIONS_DISABLED] = {"sessions_disabled", "not_found_error", 404},
    [SVC_E_SESSION_BUSY] = {"session_busy", "conflict_error", 409},
    [SVC_E_SESSION_ARCHIVED] = {"session_archived", "permission_error", 403},
    [SVC_E_RUN_NOT_FOUND] = {"run_not_found", "not_found_error", 404},
    [SVC_E_RUN_NOT_ACTIVE] = {"run_not_active", "conflict_error", 409},
    [SVC_E_EXPORT_DIR_FORBIDDEN] = {"export_dir_forbidden", "permission_error", 403},
    [SVC_E_UPSTREAM] = {"upstream_error", "upstream_error", 502},
    [SVC_E_UPSTREAM_TIMEOUT] = {"upstream_timeout", "upstream_error", 504},
    [SVC_E_CANCELLED] = {"cancelled", "server_error", 499},
    [SVC_E_RUN_TIMEOUT] = {"run_timeout", "server_error", 504},
    [SVC_E_TOOL_LOOP] = {"tool_loop_limit", "server_error", 500},
    [SVC_E_INTERRUPTED] = {"interrupted", "server_error", 500},
    [SVC_E_RESPONSE_NOT_FOUND] = {"response_not_found", "not_found_error", 404},
    [SVC_E_MODEL_NOT_FOUND] = {"model_not_found", "not_found_error", 404},
    [SVC_E_UNAVAILABLE] = {"service_unavailable", "server_error", 503},
    [SVC_E_PERMISSION_DENIED] = {"permission_denied", "permission_error", 403},
    [SVC_E_SESSION_EXISTS] = {"session_exists", "conflict_error", 409},
    [SVC_E_CONTEXT_LENGTH] = {"context_length_exceeded", "invalid_request_error", 400},
    [SVC_E_INDEX_BUILDING] = {"index_building", "server_error", 503},
    [SVC_E_UPSTREAM_REFUSED] = {"upstream_refused", "invalid_request_error", 400},
    [SVC_E_MEDIA_TYPE] = {"unsupported_media_type", "invalid_request_error", 415},
    [SVC_E_CROSS_SITE] = {"cross_site_refused", "permission_error", 403},
};

/* Cut a UTF-8 sequence a truncation left incomplete at the end of s (JSON must be UTF-8). */
static void trim_partial_utf8(char *s)
{
    size_t i = strlen(s), cont = 0;
    while (i > 0 && cont < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        cont++;
    }
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (lead >= 0xC0 && cont + 1 < len)
        s[i - 1] = '\0';
}

__attribute__((format(printf, 4, 0))) static int
err_vset(struct svc_err *err, enum svc_errcode code, const char *param, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    err->code = code;
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    trim_partial_utf8(err->param);
    trim_partial_utf8(err->message);
    svc_err_oneline(err->message, false);
    return -1;
}

void svc_err_oneline(char *s, bool ctrl)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || (ctrl && (unsigned char)*s < 0x20))
            *s = ' ';
}

int svc_err_set(struct svc_err *err, enum svc_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int svc_err_setp(struct svc_err *err, enum svc_errcode code, const char *param, const char *fmt,
                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, param, fmt, ap);
    va_end(ap);
    return -1;
}

int svc_err_errno(struct svc_err *err, const char *what)
{
    int e = errno;
    if (e == ENOMEM)
        return svc_err_set(err, SVC_E_NOMEM, "%s: out of memory", what);
    return svc_err_set(err, SVC_E_IO, "%s: %s", what, strerror(e));
}

void svc_err_clear(struct svc_err *err)
{
    if (err)
        *err = (struct svc_err){SVC_OK, "", ""};
}

/* The row of code; an unknown code reads as SVC_E_INTERNAL (every row is filled). */
#define ROW(code) err_table[(code) >= 0 && (code) < SVC_E__MAX ? (code) : SVC_E_INTERNAL]

const char *svc_err_name(enum svc_errcode code)
{
    return ROW(code).name;
}

const char *svc_err_type(enum svc_errcode code)
{
    return ROW(code).type;
}

int svc_err_http_status(enum svc_errcode code)
{
    return ROW(code).status;
}

enum svc_errcode svc_err_code(const char *name)
{
    for (int c = SVC_E_INTERNAL; c < SVC_E__MAX; c++)
        if (strcmp(err_table[c].name, name) == 0)
            return (enum svc_errcode)c;
    return SVC_E_INTERNAL;
}
