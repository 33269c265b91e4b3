/* http: the per-request HTTP layer of svc-fcgi (SPEC 4.0).
 * - main.c fills one struct http_req per request (http_req_init), calls
 *   http_dispatch() (routes.c), http_finish(), http_log(), then http_req_free(), which frees
 *   all the request allocated. Request values are copies (libfcgi frees its params at the
 *   next accept), valid until then.
 * - A handler (http_handler) returns 0 after it sent a response, or -1 with err filled and
 *   nothing sent: the router renders err as the JSON error object, or as a final
 *   `data: {"error":...}` event once an SSE stream started. Input helpers return 0, or -1
 *   with err set (invalid_query, body_too_large, invalid_json, invalid_field/missing_field).
 * - Responses carry X-Request-Id and docs/API.md's retry hints (a 5xx only after
 *   http_mark_run_began()); bodies and tokens are never logged. A failed write sets
 *   r->client_gone, and later writes are no-ops returning -1. */
#ifndef SVC_HTTP_H
#define SVC_HTTP_H

#include <fcgiapp.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "err.h"
#include "store.h"
#include "user.h"
#include "util.h"

#define HTTP_MAX_PARAMS 4

struct http_qpair {
    char *name;
    char *value;
};

struct http_req {
    const struct svc_config *cfg;
    FCGX_Request *fcgx; /* NULL in plain CGI mode (stdin/stdout/getenv) */

    /* Input, copied at init. */
    char *method;           /* "GET" */
    char *path;             /* raw path from REQUEST_URI, no query: "/api/v1/chat/..." */
    const char *route;      /* the part of path routes match: path after the base path
                             * (server.base_path, else the SVC_BASE_PATH param); NULL when
                             * path lies outside the base path (every route is 404) */
    char *query;            /* raw QUERY_STRING, "" when none */
    char *authorization;    /* HTTP_AUTHORIZATION or NULL */
    char *content_type;     /* or NULL */
    char *x_session_id;     /* HTTP_X_SESSION_ID or NULL */
    char *idempotency_key;  /* HTTP_IDEMPOTENCY_KEY or NULL */
    int64_t content_length; /* -1 when absent or empty */
    char request_id[SVC_ID_MAX + 1];
    struct svc_user user; /* who asks, set by the router's authentication (core/user.h) */
    char user_name[SVC_ID_MAX +
                   1]; /* user.id when the web server named the user (server.user_param) */

    /* What edge.h judges the request by, copied at init: HTTP_HOST, HTTP_ORIGIN and
     * HTTP_SEC_FETCH_SITE (NULL when absent), REMOTE_ADDR and SERVER_ADDR ("" when absent). */
    char *host, *origin, *fetch_site;
    char remote_addr[48], server_addr[48];

    /* Route parameters, percent-decoded ("%00" and bad escapes stay literal). */
    int nparams;
    char *param_names[HTTP_MAX_PARAMS];
    char *param_values[HTTP_MAX_PARAMS];

    /* Query string, parsed on first use. */
    bool query_parsed;
    size_t nq;
    struct http_qpair *q;

    /* Body. */
    bool body_read;
    char *body;
    size_t body_len;

    /* Output state. */
    int status;
    bool headers_sent;
    bool sse;
    bool client_gone;
    bool run_began;
    bool retry_ok;  /* a 4xx a client may retry (session_busy) */
    bool head_only; /* a HEAD request served by its GET route: no body goes out */
    size_t bytes_out;
    struct svc_buf headers;          /* extra response headers, "Name: value\r\n" each */
    char session_id[SVC_ID_MAX + 1]; /* for the log line; "" when none */
    double t0;                       /* monotonic start */
    double last_write;               /* monotonic time of the last write (for pings) */
};

typedef int (*http_handler)(struct http_req *r, struct svc_err *err);

/* Set up a request from an accepted FastCGI request, or (fr NULL) from the CGI environment. */
void http_req_init(struct http_req *r, FCGX_Request *fr, const struct svc_config *cfg);
void http_req_free(struct http_req *r);

/* Route, authenticate and run the handler (routes.c). Always sends a response. */
void http_dispatch(struct http_req *r);
/* Method and pattern of route i of the table, NULL past its end (the metrics' labels). */
const char *http_route_name(int i, const char **method);
/* The route table, one line a route: "METHOD PATTERN", then " public" (no token needed) or
 * " admin" (admins only) (svc-fcgi --routes; t/83-openapi.t compares docs/openapi.yaml). */
void http_routes_print(FILE *f);
/* Send what is buffered and end the response (FastCGI: close stdout/stderr, so the data
 * and the end-request record leave in one write; CGI: flush stdout). A failed write marks
 * the client gone. Called once after http_dispatch, before http_log. */
void http_finish(struct http_req *r);
/* One line on stderr: method, path, status, bytes, duration, request id, session id. */
void http_log(const struct http_req *r);

/* ---- input ---- */
/* A FastCGI parameter (CGI: environment variable) by name, NULL when absent. Borrowed. */
const char *http_env(const struct http_req *r, const char *name);
/* A route parameter by name ("session_id"), NULL when the route has none. */
const char *http_param(const struct http_req *r, const char *name);
/* 0 when every query parameter is one of known (space-separated; NULL: none), else 400
 * invalid_query naming the first other one. */
int http_query_known(struct http_req *r, const char *known, struct svc_err *err);
/* The X-Session-Id header (NULL when absent): 400 invalid_session_id naming it when it is no
 * session id. */
int http_session_header(const struct http_req *r, const char **out, struct svc_err *err);
/* Decoded query value; *out NULL when absent or empty. */
int http_query_str(struct http_req *r, const char *name, const char **out, struct svc_err *err);
/* Every value of a repeatable parameter, in order (empty ones too): *out a heap array the
 * caller frees, of strings borrowed from r; *n 0 (and *out NULL) when absent. */
void http_query_all(struct http_req *r, const char *name, const char ***out, size_t *n);
/* Integer in [min, max]; def when absent or empty; else 400 invalid_query (param = name). */
int http_query_int(struct http_req *r, const char *name, int64_t def, int64_t min, int64_t max,
                   int64_t *out, struct svc_err *err);
/* true/false/1/0; def when absent or empty; else 400 invalid_query. */
int http_query_bool(struct http_req *r, const char *name, bool def, bool *out, struct svc_err *err);
/* The first key of object o that is none of the n names of known, NULL when none. */
const char *http_unknown_key(json_object *o, const char *const *known, size_t n);
/* 0 when object o (the body, or its member at: "tools[0]") has only the n fields of known
 * (or is no object), else 422 invalid_field naming the first other one ("tools[0].x"): a
 * misspelt field is refused, never ignored. */
int http_known_fields(json_object *o, const char *at, const char *const *known, size_t n,
                      struct svc_err *err);
/* Read the body once, at most server.max_body_bytes (else 413 body_too_large, the rest is
 * drained without being kept). r->body is NUL-terminated; r->body_len excludes the NUL. */
int http_read_body(struct http_req *r, struct svc_err *err);
/* Read the body and parse it as a JSON object (400 invalid_json) whose lists are within
 * their limits (tools 128; messages, input, items, session_ids 10,000; tags and metadata
 * labels.h's), else 422 invalid_field naming the list, before any handler reads it. *out
 * is a new reference. An empty body is an empty object when
 * empty_ok, else invalid_json. */
int http_body_json(struct http_req *r, bool empty_ok, json_object **out, struct svc_err *err);

/* Typed fields of a JSON object (borrowed results). Absent or null: *out is the default
 * (NULL for str/obj/arr) and, when required, 422 missing_field. Wrong type: 422
 * invalid_field. param is the name reported ("metadata.session_id"); NULL means key. */
int http_field_str(json_object *o, const char *key, const char *param, bool required,
                   const char **out, struct svc_err *err);
int http_field_bool(json_object *o, const char *key, const char *param, bool def, bool *out,
                    struct svc_err *err);
/* Optional number / integer: *set tells whether it was given (null counts as absent);
 * its range is core's to judge. */
int http_field_number_opt(json_object *o, const char *key, const char *param, bool *set,
                          double *out, struct svc_err *err);
int http_field_int_opt(json_object *o, const char *key, const char *param, bool *set, int64_t *out,
                       struct svc_err *err);
int http_field_obj(json_object *o, const char *key, const char *param, bool required,
                   json_object **out, struct svc_err *err);
int http_field_arr(json_object *o, const char *key, const char *param, bool required,
                   json_object **out, struct svc_err *err);

/* ---- output ---- */
/* Add a response header (before anything is sent). Values must not contain CR/LF. */
void http_set_header(struct http_req *r, const char *name, const char *value);
/* Remember the session id for the log line and (when hdr) send X-Session-Id. */
void http_set_session(struct http_req *r, const char *sid, bool hdr);
/* From now on a 5xx carries x-should-retry: false. */
void http_mark_run_began(struct http_req *r);
/* Send a complete JSON response (body borrowed). Returns 0, -1 when the client is gone.
 * Buffered: it leaves with http_finish (SSE helpers flush at once). */
int http_send_json(struct http_req *r, int status, json_object *body);
/* The same with body consumed (released once sent); returns 0: a handler's last call. */
int http_reply(struct http_req *r, int status, json_object *body);
/* OpenAI's list {"object": "list", "data", "first_id", "last_id", "has_more"} around data
 * (taken; its objects carry an "id"). */
json_object *http_list(json_object *data, bool has_more);
/* A page of all (taken; newest first when all_desc) as an OpenAI list, sent with 200: the
 * query's limit (1..100, 20), order (asc or desc, the default) and after (the id that ends
 * the previous page; none with it is 400 invalid_query). 0, or -1 with err and nothing sent. */
int http_send_page(struct http_req *r, json_object *all, bool all_desc, struct svc_err *err);
/* The same for a text body of content type ctype. */
int http_send_text(struct http_req *r, int status, const char *ctype, const char *body, size_t n);
/* {"error":{"message","type","param","code"}} with the code's HTTP status; once an SSE
 * stream began, that object as its final `data:` event (the stream should end after it). */
int http_send_error(struct http_req *r, const struct svc_err *err);
/* New reference: the error object for err. */
json_object *http_error_object(const struct svc_err *err);

/* ---- server-sent events ---- */
/* Status 200, text/event-stream, no-cache, X-Accel-Buffering: no; headers flushed. */
int http_sse_begin(struct http_req *r);
/* `data: <compact json>\n\n` + flush. -1 when the client is gone. */
int http_sse_json(struct http_req *r, json_object *o);
/* `data: <text>\n\n` + flush (for "[DONE]"). */
int http_sse_data(struct http_req *r, const char *text);
/* `event: <name>\ndata: <compact json>\n\n` + flush (the Responses API names its events). */
int http_sse_event(struct http_req *r, const char *name, json_object *o);
/* `: ping\n\n` + flush. */
int http_sse_ping(struct http_req *r);
/* A stream pings when it was silent this long (SPEC: at least every 15 s): HTTP_PING_AFTER_S,
 * or SVC_PING_INTERVAL_S (1..15) for tests. */
#define HTTP_PING_AFTER_S 10.0
double http_ping_after(void);
/* A run sink's should_cancel and on_idle (core/session.h) for a stream: ctx points to a
 * struct whose first member is its struct http_req *. Both answer 1 (stop) once the client
 * is gone; http_sink_idle pings after http_ping_after() seconds of silence. */
int http_sink_gone(void *ctx);
int http_sink_idle(void *ctx);

/* ---- binary downloads ---- */
/* Status 200 with ctype, no Content-Length, X-Accel-Buffering: no (nginx passes the body on
 * as it comes instead of spooling it); the headers are flushed. */
int http_stream_begin(struct http_req *r, const char *ctype);
/* Body bytes as they are produced (libfcgi packs them in records of up to 8 KB); -1 when
 * the client is gone. */
int http_stream_write(struct http_req *r, const void *p, size_t n);

/* Percent-decode n bytes of s into a heap string (never NULL); plus_space turns '+'
 * into ' '. "%00" and malformed escapes stay literal, so no NUL ever enters a value. */
char *http_pct_decode(const char *s, size_t n, bool plus_space);

#endif
