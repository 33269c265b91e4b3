/* http: request parsing and response writing for svc-fcgi. See http.h. */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonx.h"

/* The most we read and throw away after a 413, so the web server sees an orderly close
 * instead of a reset; bodies declared larger than this are not drained. */
#define HTTP_DRAIN_MAX (64LL * 1024 * 1024)

/* ---- io: FastCGI streams, or stdio in plain CGI mode ---- */

static const char *io_getenv(const struct http_req *r, const char *name)
{
    return r->fcgx ? FCGX_GetParam(name, r->fcgx->envp) : getenv(name);
}

static long io_read(struct http_req *r, char *buf, size_t n)
{
    if (n > INT_MAX)
        n = INT_MAX;
    if (r->fcgx)
        return FCGX_GetStr(buf, (int)n, r->fcgx->in);
    size_t got = fread(buf, 1, n, stdin);
    return (long)got;
}

static int io_write(struct http_req *r, const char *p, size_t n)
{
    if (r->client_gone)
        return -1;
    while (n > 0) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int w;
        if (r->fcgx)
            w = FCGX_PutStr(p, chunk, r->fcgx->out);
        else
            w = (int)fwrite(p, 1, (size_t)chunk, stdout);
        if (w != chunk) {
            r->client_gone = true;
            return -1;
        }
        p += chunk;
        n -= (size_t)chunk;
    }
    return 0;
}

static int io_flush(struct http_req *r)
{
    if (r->client_gone)
        return -1;
    int rc = r->fcgx ? FCGX_FFlush(r->fcgx->out) : fflush(stdout);
    if (rc != 0 || (r->fcgx && FCGX_GetError(r->fcgx->out) != 0)) {
        r->client_gone = true;
        return -1;
    }
    return 0;
}

/* ---- init / free ---- */

static char *dup_or_null(const char *s)
{
    return (s && *s) ? strdup(s) : NULL;
}

bool http_id_ok(const char *s)
{
    size_t n = 0;
    if (!s)
        return false;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '-'))
            return false;
        if (n >= HTTP_ID_MAX)
            return false;
    }
    return n > 0;
}

static void req_init(struct http_req *r, FCGX_Request *fr, const struct svc_config *cfg)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->fcgx = fr;
    r->t0 = svc_time_monotonic();
    r->last_write = r->t0;
    r->content_length = -1;
    svc_buf_init(&r->headers);

    const char *m = io_getenv(r, "REQUEST_METHOD");
    r->method = strdup(m && *m ? m : "GET");

    /* The raw path: REQUEST_URI up to '?', else SCRIPT_NAME + PATH_INFO (CGI). Raw, so
     * that "%2F" inside a segment stays one segment and is decoded per segment later. */
    const char *uri = io_getenv(r, "REQUEST_URI");
    if (uri && *uri) {
        const char *qm = strchr(uri, '?');
        r->path = qm ? strndup(uri, (size_t)(qm - uri)) : strdup(uri);
    } else {
        const char *sn = io_getenv(r, "SCRIPT_NAME");
        const char *pi = io_getenv(r, "PATH_INFO");
        struct svc_buf b;
        svc_buf_init(&b);
        /* With mod_fcgid/CGI behind a ScriptAlias the API path is PATH_INFO alone. */
        if (pi && *pi)
            svc_buf_adds(&b, pi);
        else if (sn)
            svc_buf_adds(&b, sn);
        if (b.len == 0)
            svc_buf_adds(&b, "/");
        r->path = svc_buf_steal(&b);
    }
    const char *qs = io_getenv(r, "QUERY_STRING");
    r->query = strdup(qs ? qs : "");
    r->authorization = dup_or_null(io_getenv(r, "HTTP_AUTHORIZATION"));
    r->content_type = dup_or_null(io_getenv(r, "CONTENT_TYPE"));
    r->x_session_id = dup_or_null(io_getenv(r, "HTTP_X_SESSION_ID"));
    r->idempotency_key = dup_or_null(io_getenv(r, "HTTP_IDEMPOTENCY_KEY"));
    r->last_event_id = dup_or_null(io_getenv(r, "HTTP_LAST_EVENT_ID"));

    const char *cl = io_getenv(r, "CONTENT_LENGTH");
    if (cl && *cl) {
        char *end;
        errno = 0;
        long long v = strtoll(cl, &end, 10);
        if (errno == 0 && *end == '\0' && v >= 0)
            r->content_length = v;
    }

    const char *rid = io_getenv(r, "HTTP_X_REQUEST_ID");
    if (http_id_ok(rid))
        snprintf(r->request_id, sizeof r->request_id, "%s", rid);
    else
        svc_random_id("req", r->request_id, sizeof r->request_id);
}

void http_req_init_fcgi(struct http_req *r, FCGX_Request *fr, const struct svc_config *cfg)
{
    req_init(r, fr, cfg);
}

void http_req_init_cgi(struct http_req *r, const struct svc_config *cfg)
{
    req_init(r, NULL, cfg);
}

void http_req_free(struct http_req *r)
{
    free(r->method);
    free(r->path);
    free(r->query);
    free(r->authorization);
    free(r->content_type);
    free(r->x_session_id);
    free(r->idempotency_key);
    free(r->last_event_id);
    for (int i = 0; i < r->nparams; i++) {
        free(r->param_names[i]);
        free(r->param_values[i]);
    }
    for (size_t i = 0; i < r->nq; i++) {
        free(r->q[i].name);
        free(r->q[i].value);
    }
    free(r->q);
    free(r->body);
    svc_buf_free(&r->headers);
    memset(r, 0, sizeof *r);
}

/* ---- log ---- */

static void log_clean(char *dst, size_t dstsz, const char *src)
{
    size_t j = 0;
    for (size_t i = 0; src && src[i] && j + 1 < dstsz; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[j++] = (c < 0x21 || c >= 0x7f) ? '?' : (char)c;
    }
    dst[j] = '\0';
}

void http_log(const struct http_req *r)
{
    char method[16], path[300], ts[SVC_TIME_LEN], bytes[32];
    log_clean(method, sizeof method, r->method);
    log_clean(path, sizeof path, r->path);
    snprintf(bytes, sizeof bytes, "%zu", r->bytes_out);
    double ms = (svc_time_monotonic() - r->t0) * 1000.0;
    fprintf(stderr, "%s svc-fcgi[%d]: %s %s %d %s %.1fms rid=%s sid=%s%s\n",
            svc_time_now_iso(ts), (int)getpid(), method, path, r->status ? r->status : 500,
            bytes, ms, r->request_id, r->session_id[0] ? r->session_id : "-",
            r->client_gone ? " client_gone" : "");
}

/* ---- route params and query ---- */

const char *http_param(const struct http_req *r, const char *name)
{
    for (int i = 0; i < r->nparams; i++)
        if (strcmp(r->param_names[i], name) == 0)
            return r->param_values[i];
    return NULL;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *http_pct_decode(const char *s, size_t n, bool plus_space)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n) {
            int hi = hexval((unsigned char)s[i + 1]);
            int lo = hexval((unsigned char)s[i + 2]);
            if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
                out[j++] = (char)(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        out[j++] = (plus_space && s[i] == '+') ? ' ' : s[i];
    }
    out[j] = '\0';
    return out;
}

static void query_parse(struct http_req *r)
{
    if (r->query_parsed)
        return;
    r->query_parsed = true;
    const char *p = r->query;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t nlen = eq ? (size_t)(eq - p) : len;
            struct http_qpair *nq = realloc(r->q, (r->nq + 1) * sizeof *r->q);
            if (!nq)
                return;
            r->q = nq;
            r->q[r->nq].name = http_pct_decode(p, nlen, true);
            r->q[r->nq].value =
                eq ? http_pct_decode(eq + 1, len - nlen - 1, true) : strdup("");
            if (r->q[r->nq].name && r->q[r->nq].value)
                r->nq++;
            else {
                free(r->q[r->nq].name);
                free(r->q[r->nq].value);
            }
        }
        p = amp ? amp + 1 : NULL;
    }
}

static const char *query_get(struct http_req *r, const char *name)
{
    query_parse(r);
    for (size_t i = 0; i < r->nq; i++)
        if (strcmp(r->q[i].name, name) == 0)
            return r->q[i].value[0] ? r->q[i].value : NULL;
    return NULL;
}

int http_query_str(struct http_req *r, const char *name, const char **out, struct svc_err *err)
{
    (void)err;
    *out = query_get(r, name);
    return 0;
}

int http_query_int(struct http_req *r, const char *name, int64_t def, int64_t min, int64_t max,
                   int64_t *out, struct svc_err *err)
{
    const char *v = query_get(r, name);
    *out = def;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || !(isdigit((unsigned char)v[0]) || v[0] == '-'))
        return svc_err_setp(err, SVC_E_INVALID_QUERY, name, "query parameter '%s' must be an integer",
                            name);
    if (x < min || x > max)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, name,
                            "query parameter '%s' must be between %lld and %lld", name,
                            (long long)min, (long long)max);
    *out = x;
    return 0;
}

int http_query_bool(struct http_req *r, const char *name, bool def, bool *out,
                    struct svc_err *err)
{
    const char *v = query_get(r, name);
    *out = def;
    if (!v)
        return 0;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else
        return svc_err_setp(err, SVC_E_INVALID_QUERY, name,
                            "query parameter '%s' must be true, false, 1 or 0", name);
    return 0;
}

/* ---- body ---- */

static void drain(struct http_req *r, int64_t limit)
{
    char buf[16384];
    int64_t total = 0;
    while (total < limit) {
        long n = io_read(r, buf, sizeof buf);
        if (n <= 0)
            break;
        total += n;
    }
}

int http_read_body(struct http_req *r, struct svc_err *err)
{
    if (r->body_read)
        return r->body ? 0 : svc_err_set(err, SVC_E_BODY_TOO_LARGE, "request body too large");
    r->body_read = true;
    int64_t max = r->cfg ? r->cfg->server.max_body_bytes : 1048576;
    if (r->content_length > max) {
        if (r->content_length <= HTTP_DRAIN_MAX)
            drain(r, r->content_length);
        return svc_err_set(err, SVC_E_BODY_TOO_LARGE,
                           "request body is larger than %lld bytes", (long long)max);
    }
    /* Plain CGI: without CONTENT_LENGTH there is no body (stdin may never reach EOF). */
    if (!r->fcgx && r->content_length < 0) {
        r->body = strdup("");
        return r->body ? 0 : svc_err_set(err, SVC_E_NOMEM, "out of memory");
    }
    /* Read until EOF (FastCGI stdin ends with the record; CGI stdin with CONTENT_LENGTH). */
    int64_t want = r->content_length >= 0 ? r->content_length : max + 1;
    size_t cap = (size_t)(want < 65536 ? want : 65536) + 1;
    char *buf = malloc(cap);
    size_t len = 0;
    if (!buf)
        return svc_err_set(err, SVC_E_NOMEM, "out of memory");
    for (;;) {
        if (len + 1 >= cap) {
            size_t ncap = cap * 2;
            if ((int64_t)ncap > max + 2)
                ncap = (size_t)max + 2;
            if (ncap <= cap) {
                free(buf);
                drain(r, HTTP_DRAIN_MAX);
                return svc_err_set(err, SVC_E_BODY_TOO_LARGE,
                                   "request body is larger than %lld bytes", (long long)max);
            }
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return svc_err_set(err, SVC_E_NOMEM, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        size_t room = cap - 1 - len;
        if (r->content_length >= 0 && (int64_t)(len + room) > r->content_length)
            room = (size_t)(r->content_length - (int64_t)len);
        if (room == 0)
            break;
        long n = io_read(r, buf + len, room);
        if (n <= 0)
            break;
        len += (size_t)n;
        if ((int64_t)len > max) {
            free(buf);
            drain(r, HTTP_DRAIN_MAX);
            return svc_err_set(err, SVC_E_BODY_TOO_LARGE, "request body is larger than %lld bytes",
                               (long long)max);
        }
    }
    buf[len] = '\0';
    r->body = buf;
    r->body_len = len;
    return 0;
}

int http_body_json(struct http_req *r, bool empty_ok, json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (http_read_body(r, err) < 0)
        return -1;
    size_t i = 0;
    while (i < r->body_len && isspace((unsigned char)r->body[i]))
        i++;
    if (i == r->body_len) {
        if (empty_ok) {
            *out = json_object_new_object();
            return *out ? 0 : svc_err_set(err, SVC_E_NOMEM, "out of memory");
        }
        return svc_err_set(err, SVC_E_INVALID_JSON, "request body is empty; a JSON object is expected");
    }
    if (memchr(r->body, '\0', r->body_len))
        return svc_err_set(err, SVC_E_INVALID_JSON, "request body contains a NUL byte");
    json_object *o = NULL;
    if (svc_json_parse(r->body, r->body_len, &o, err) < 0)
        return -1;
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return svc_err_set(err, SVC_E_INVALID_JSON, "request body must be a JSON object");
    }
    *out = o;
    return 0;
}

/* ---- typed fields ---- */

static int field_get(json_object *o, const char *key, const char *param, bool required,
                     json_type want, const char *want_name, json_object **out,
                     struct svc_err *err)
{
    json_object *v = NULL;
    *out = NULL;
    const char *pname = param ? param : key;
    if (!o || !json_object_object_get_ex(o, key, &v) || v == NULL) {
        if (required)
            return svc_err_setp(err, SVC_E_MISSING_FIELD, pname, "'%s' is required", pname);
        return 0;
    }
    bool ok = json_object_is_type(v, want);
    if (want == json_type_double)
        ok = json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
    if (!ok)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, pname, "'%s' must be %s", pname, want_name);
    *out = v;
    return 0;
}

int http_field_str(json_object *o, const char *key, const char *param, bool required,
                   const char **out, struct svc_err *err)
{
    json_object *v;
    *out = NULL;
    if (field_get(o, key, param, required, json_type_string, "a string", &v, err) < 0)
        return -1;
    if (v) {
        const char *s = json_object_get_string(v);
        if ((size_t)json_object_get_string_len(v) != strlen(s))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, param ? param : key,
                                "'%s' must not contain NUL characters", param ? param : key);
        *out = s;
    }
    return 0;
}

int http_field_bool(json_object *o, const char *key, const char *param, bool def, bool *out,
                    struct svc_err *err)
{
    json_object *v;
    *out = def;
    if (field_get(o, key, param, false, json_type_boolean, "a boolean", &v, err) < 0)
        return -1;
    if (v)
        *out = json_object_get_boolean(v);
    return 0;
}

int http_field_int(json_object *o, const char *key, const char *param, int64_t def,
                   int64_t min, int64_t max, int64_t *out, struct svc_err *err)
{
    json_object *v;
    const char *pname = param ? param : key;
    *out = def;
    if (field_get(o, key, param, false, json_type_int, "an integer", &v, err) < 0)
        return -1;
    if (v) {
        int64_t x = json_object_get_int64(v);
        if (x < min || x > max)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, pname,
                                "'%s' must be between %lld and %lld", pname, (long long)min,
                                (long long)max);
        *out = x;
    }
    return 0;
}

int http_field_obj(json_object *o, const char *key, const char *param, bool required,
                   json_object **out, struct svc_err *err)
{
    return field_get(o, key, param, required, json_type_object, "an object", out, err);
}

int http_field_arr(json_object *o, const char *key, const char *param, bool required,
                   json_object **out, struct svc_err *err)
{
    return field_get(o, key, param, required, json_type_array, "an array", out, err);
}

/* ---- output ---- */

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
    }
}

void http_set_header(struct http_req *r, const char *name, const char *value)
{
    if (r->headers_sent || strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return;
    svc_buf_printf(&r->headers, "%s: %s\r\n", name, value);
}

void http_set_session(struct http_req *r, const char *sid, bool hdr)
{
    if (!sid)
        return;
    log_clean(r->session_id, sizeof r->session_id, sid);
    if (hdr && http_id_ok(sid))
        http_set_header(r, "X-Session-Id", sid);
}

void http_mark_run_began(struct http_req *r)
{
    r->run_began = true;
}

/* Write the status line and headers; content_length < 0 means none. */
static int send_headers(struct http_req *r, int status, const char *ctype, long long clen)
{
    if (r->headers_sent)
        return -1;
    r->status = status;
    r->headers_sent = true;
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_printf(&b, "Status: %d %s\r\n", status, status_text(status));
    svc_buf_printf(&b, "Content-Type: %s\r\n", ctype);
    if (clen >= 0)
        svc_buf_printf(&b, "Content-Length: %lld\r\n", clen);
    svc_buf_printf(&b, "X-Request-Id: %s\r\n", r->request_id);
    if (status >= 500 && r->run_began)
        svc_buf_adds(&b, "x-should-retry: false\r\n");
    if (r->headers.len)
        svc_buf_add(&b, r->headers.data, r->headers.len);
    svc_buf_adds(&b, "\r\n");
    int rc = b.oom ? -1 : io_write(r, b.data, b.len);
    svc_buf_free(&b);
    return rc;
}

static int send_body(struct http_req *r, const char *p, size_t n)
{
    if (io_write(r, p, n) < 0)
        return -1;
    r->bytes_out += n;
    r->last_write = svc_time_monotonic();
    return 0;
}

int http_send_json(struct http_req *r, int status, json_object *body)
{
    char *s = svc_json_dump_compact(body);
    if (!s) {
        static const char oom[] =
            "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,"
            "\"code\":\"internal_error\"}}\n";
        if (send_headers(r, 500, "application/json; charset=utf-8", (long long)strlen(oom)) < 0)
            return -1;
        return send_body(r, oom, strlen(oom));
    }
    size_t n = strlen(s);
    int rc = send_headers(r, status, "application/json; charset=utf-8", (long long)n + 1);
    if (rc == 0)
        rc = send_body(r, s, n);
    if (rc == 0)
        rc = send_body(r, "\n", 1);
    free(s);
    if (rc == 0)
        io_flush(r);
    return rc;
}

static json_object *error_object(const char *message, const char *type, const char *param,
                                 const char *code)
{
    json_object *e = json_object_new_object();
    json_object *inner = json_object_new_object();
    svc_json_set_str(inner, "message", message);
    svc_json_set_str(inner, "type", type);
    svc_json_set_str(inner, "param", (param && *param) ? param : NULL);
    svc_json_set_str(inner, "code", code);
    json_object_object_add(e, "error", inner);
    return e;
}

json_object *http_error_object(const struct svc_err *err)
{
    enum svc_errcode code = err ? err->code : SVC_E_INTERNAL;
    if (code == SVC_OK)
        code = SVC_E_INTERNAL;
    const char *msg = (err && err->message[0]) ? err->message : svc_err_name(code);
    return error_object(msg, svc_err_type(code), err ? err->param : NULL, svc_err_name(code));
}

int http_send_error_raw(struct http_req *r, int status, const char *code, const char *type,
                        const char *param, const char *message)
{
    json_object *e = error_object(message, type, param, code);
    int rc = http_send_json(r, status, e);
    json_object_put(e);
    return rc;
}

int http_send_error(struct http_req *r, const struct svc_err *err)
{
    enum svc_errcode code = err ? err->code : SVC_E_INTERNAL;
    if (code == SVC_OK)
        code = SVC_E_INTERNAL;
    if (r->sse && r->headers_sent)
        return http_sse_error(r, err);
    if (code == SVC_E_SESSION_BUSY)
        http_set_header(r, "Retry-After", "1");
    json_object *e = http_error_object(err);
    int rc = http_send_json(r, svc_err_http_status(code), e);
    json_object_put(e);
    return rc;
}

/* ---- SSE ---- */

int http_sse_begin(struct http_req *r)
{
    http_set_header(r, "Cache-Control", "no-cache");
    http_set_header(r, "X-Accel-Buffering", "no");
    r->sse = true;
    if (send_headers(r, 200, "text/event-stream; charset=utf-8", -1) < 0)
        return -1;
    r->last_write = svc_time_monotonic();
    return io_flush(r);
}

int http_sse_data(struct http_req *r, const char *text)
{
    if (send_body(r, "data: ", 6) < 0 || send_body(r, text, strlen(text)) < 0 ||
        send_body(r, "\n\n", 2) < 0)
        return -1;
    return io_flush(r);
}

int http_sse_json(struct http_req *r, json_object *o)
{
    char *s = svc_json_dump_compact(o);
    if (!s)
        return -1;
    int rc = http_sse_data(r, s);
    free(s);
    return rc;
}

int http_sse_ping(struct http_req *r)
{
    if (send_body(r, ": ping\n\n", 8) < 0)
        return -1;
    return io_flush(r);
}

int http_sse_error(struct http_req *r, const struct svc_err *err)
{
    json_object *e = http_error_object(err);
    int rc = http_sse_json(r, e);
    json_object_put(e);
    return rc;
}
