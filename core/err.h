/* err: the one error convention of core/.
 * A function that can fail returns 0 on success and -1 on failure, after filling the
 * caller's struct svc_err with a code, an optional parameter name and a one-line message.
 * Each code has one row in a table: its API name ("session_busy"), its API error type
 * and its HTTP status, so the HTTP layer, the CLI and the logs all speak the same names.
 *
 * Out of memory is not an error a caller handles: each program (cgi/main.c, cli/svc.c)
 * installs the handler that svc_x* and jsonx's setters call (svc_oom_set_handler: one line,
 * then abort); other json-c calls are unchecked (json-c asserts on a NULL container, a NULL
 * leaf reads as null).
 * SVC_E_NOMEM is a system call's ENOMEM or a zlib/OpenSSL init failure. */
#ifndef SVC_ERR_H
#define SVC_ERR_H

#include <stdbool.h>

enum svc_errcode {
    SVC_OK = 0,
    SVC_E_INTERNAL,             /* internal_error, 500 */
    SVC_E_NOMEM,                /* internal_error, 500: ENOMEM, zlib/OpenSSL init */
    SVC_E_IO,                   /* io_error, 500: disk errors */
    SVC_E_INVALID_JSON,         /* invalid_json, 400 */
    SVC_E_INVALID_FIELD,        /* invalid_field, 422 (param names the field) */
    SVC_E_MISSING_FIELD,        /* missing_field, 422 */
    SVC_E_INVALID_SESSION_ID,   /* invalid_session_id, 400 */
    SVC_E_INVALID_QUERY,        /* invalid_query, 400: bad query-string parameter */
    SVC_E_CONFIG,               /* config_error, 500 */
    SVC_E_NOT_FOUND,            /* not_found, 404: unknown route or missing file */
    SVC_E_METHOD_NOT_ALLOWED,   /* method_not_allowed, 405 */
    SVC_E_BODY_TOO_LARGE,       /* body_too_large, 413 */
    SVC_E_MISSING_TOKEN,        /* missing_token, 401 */
    SVC_E_INVALID_TOKEN,        /* invalid_token, 401 */
    SVC_E_SESSION_NOT_FOUND,    /* session_not_found, 404 */
    SVC_E_SESSIONS_DISABLED,    /* sessions_disabled, 404 */
    SVC_E_SESSION_BUSY,         /* session_busy, 409 */
    SVC_E_SESSION_ARCHIVED,     /* session_archived, 403 */
    SVC_E_RUN_NOT_FOUND,        /* run_not_found, 404 */
    SVC_E_RUN_NOT_ACTIVE,       /* run_not_active, 409 */
    SVC_E_EXPORT_DIR_FORBIDDEN, /* export_dir_forbidden, 403 */
    SVC_E_UPSTREAM,             /* upstream_error, 502 */
    SVC_E_UPSTREAM_TIMEOUT,     /* upstream_timeout, 504 */
    SVC_E_CANCELLED,            /* cancelled, 499-ish: run cancelled by client or API */
    SVC_E_RUN_TIMEOUT,          /* run_timeout, 504 */
    SVC_E_TOOL_LOOP,            /* tool_loop_limit, 500 */
    SVC_E_INTERRUPTED,          /* interrupted: a run whose process died */
    SVC_E_RESPONSE_NOT_FOUND,   /* response_not_found, 404: Responses API id */
    SVC_E_MODEL_NOT_FOUND,      /* model_not_found, 404: GET /api/v1/models/{id} */
    SVC_E_UNAVAILABLE,          /* service_unavailable, 503: the root cannot take a write */
    SVC_E_PERMISSION_DENIED,    /* permission_denied, 403: an admin endpoint asked by a user */
    SVC_E_SESSION_EXISTS,       /* session_exists, 409: a new session's id is taken */
    SVC_E_CONTEXT_LENGTH,       /* context_length_exceeded, 400: truncation disabled */
    SVC_E_INDEX_BUILDING,       /* index_building, 503: a list while the index is rebuilt */
    SVC_E_UPSTREAM_REFUSED,     /* upstream_refused, 400: the model's 400 or 422 */
    SVC_E_MEDIA_TYPE,           /* unsupported_media_type, 415: a body that is not JSON */
    SVC_E_CROSS_SITE,           /* cross_site_refused, 403: a write from another site */
    SVC_E__MAX
};

struct svc_err {
    enum svc_errcode code;
    char param[64];    /* field or parameter at fault, "" when none */
    char message[512]; /* one line, never a secret */
};

/* Fill err (which may be NULL) and return -1, so callers can `return svc_err_set(...)`. */
int svc_err_set(struct svc_err *err, enum svc_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same with the parameter name set. */
int svc_err_setp(struct svc_err *err, enum svc_errcode code, const char *param, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
/* Set from errno: code SVC_E_IO with "<what>: <strerror>" (SVC_E_NOMEM for ENOMEM).
 * Returns -1. */
int svc_err_errno(struct svc_err *err, const char *what);
void svc_err_clear(struct svc_err *err);

/* s on one line: each '\n' and '\r' (ctrl: each control character) becomes a space. */
void svc_err_oneline(char *s, bool ctrl);
const char *svc_err_name(enum svc_errcode code); /* "session_busy" */
const char *svc_err_type(enum svc_errcode code); /* "conflict_error" */
int svc_err_http_status(enum svc_errcode code);  /* 409 */
enum svc_errcode
svc_err_code(const char *name); /* the code of an API name, SVC_E_INTERNAL if none */

#endif
