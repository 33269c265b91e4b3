/* http: request parsing and response writing for svc-fcgi. See http.h. */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "labels.h"
#include "layout.h"
#include "util.h"

/* The most we read and throw away after a 413, so the web server sees an orderly close
 * instead of a reset; bodies declared larger than this are not drained. */
#define HTTP_DRAIN_MAX (64LL * 1024 * 1024)

/* ---- io: FastCGI streams, or stdio in plain CGI mode ---- */

static long io_read(struct http_req *r, char *buf, size_t n)
{
    if (n > INT_MAX)
        n = INT_MAX;
    return r->fcgx ? FCGX_GetStr(buf, (int)n, r->fcgx->in) : (long)fread(buf, 1, n, stdin);
}

static int io_write(struct http_req *r, const char *p, size_t n)
{
    if (r->client_gone)
        return -1;
    while (n > 0) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int w = r->fcgx ? FCGX_PutStr(p, chunk, r->fcgx->out)
                        : (int)fwrite(p, 1, (size_t)chunk, stdout);
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
    return (s && *s) ? svc_xstrdup(s) : NULL;
}

/* Whether s is a sane id to echo (X-Request-Id, X-Session-Id): 1..128 of [A-Za-z0-9._-]. */
static bool id_ok(const char *s)
{
    size_t n =
        s ? strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") : 0;
    return n > 0 && n <= SVC_ID_MAX && !s[n];
}

/* The request parameters req_init reads, found in one pass over the environment (first
 * occurrence wins, as FCGX_GetParam and getenv do). */
#define PARAMS(X)                                                                                  \
    X(REQUEST_METHOD), X(REQUEST_URI), X(SCRIPT_NAME), X(PATH_INFO), X(QUERY_STRING),              \
        X(HTTP_AUTHORIZATION), X(CONTENT_TYPE), X(HTTP_X_SESSION_ID), X(HTTP_IDEMPOTENCY_KEY),     \
        X(CONTENT_LENGTH), X(HTTP_X_REQUEST_ID), X(REQUEST_ID), X(SVC_BASE_PATH), X(HTTP_HOST),    \
        X(HTTP_ORIGIN), X(HTTP_SEC_FETCH_SITE), X(REMOTE_ADDR), X(SERVER_ADDR)
#define P_ENUM(name) P_##name
#define P_NAME(name) #name
enum { PARAMS(P_ENUM), P_COUNT };
static const char *const param_names[P_COUNT] = {PARAMS(P_NAME)};
#undef PARAMS

extern char **environ;

static void params_scan(const struct http_req *r, const char *vals[P_COUNT])
{
    for (int i = 0; i < P_COUNT; i++)
        vals[i] = NULL;
    char **envp = r->fcgx ? r->fcgx->envp : environ;
    for (; envp && *envp; envp++) {
        const char *e = *envp;
        /* every name we want starts with C, H, P, Q, R or S (SVC_BASE_PATH too) */
        const char *eq = e[0] && strchr("CHPQRS", e[0]) ? strchr(e, '=') : NULL;
        if (!eq)
            continue;
        size_t n = (size_t)(eq - e);
        for (int i = 0; i < P_COUNT; i++) {
            if (!vals[i] && strncmp(param_names[i], e, n) == 0 && !param_names[i][n]) {
                vals[i] = eq + 1;
                break;
            }
        }
    }
}

/* The routed part of path under base ("" or NULL: none, path itself): path without the
 * prefix when path is base or starts with base + "/", else NULL. A base that is not a sane
 * absolute path (from the web server) routes nothing. Borrowed from path. */
static const char *route_of(const char *path, const char *base)
{
    if (!path || !base || !*base)
        return path;
    size_t n = strlen(base);
    if (base[0] != '/' || base[n - 1] == '/' || strncmp(path, base, n) != 0)
        return NULL;
    if (path[n] == '\0')
        return "/";
    return path[n] == '/' ? path + n : NULL;
}

void http_req_init(struct http_req *r, FCGX_Request *fr, const struct svc_config *cfg)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->fcgx = fr;
    r->t0 = svc_time_monotonic();
    r->last_write = r->t0;
    r->content_length = -1;
    svc_buf_init(&r->headers);

    const char *v[P_COUNT];
    params_scan(r, v);

    const char *m = v[P_REQUEST_METHOD];
    r->method = svc_xstrdup(m && *m ? m : "GET");

    /* The raw path: REQUEST_URI up to '?', else SCRIPT_NAME + PATH_INFO (CGI). Raw, so
     * that "%2F" inside a segment stays one segment and is decoded per segment later. */
    const char *uri = v[P_REQUEST_URI];
    if (uri && *uri) {
        const char *qm = strchr(uri, '?');
        r->path = qm ? svc_xstrndup(uri, (size_t)(qm - uri)) : svc_xstrdup(uri);
    } else {
        const char *sn = v[P_SCRIPT_NAME], *pi = v[P_PATH_INFO];
        /* With mod_fcgid/CGI behind a ScriptAlias the API path is PATH_INFO alone. */
        r->path = svc_xstrdup(pi && *pi ? pi : sn && *sn ? sn : "/");
    }
    r->route = route_of(r->path, cfg && cfg->server.base_path[0] ? cfg->server.base_path
                                                                 : v[P_SVC_BASE_PATH]);
    const char *qs = v[P_QUERY_STRING];
    r->query = svc_xstrdup(qs ? qs : "");
    r->authorization = dup_or_null(v[P_HTTP_AUTHORIZATION]);
    r->content_type = dup_or_null(v[P_CONTENT_TYPE]);
    r->x_session_id = dup_or_null(v[P_HTTP_X_SESSION_ID]);
    r->idempotency_key = dup_or_null(v[P_HTTP_IDEMPOTENCY_KEY]);
    r->host = dup_or_null(v[P_HTTP_HOST]);
    r->origin = dup_or_null(v[P_HTTP_ORIGIN]);
    r->fetch_site = dup_or_null(v[P_HTTP_SEC_FETCH_SITE]);
    snprintf(r->remote_addr, sizeof r->remote_addr, "%s", v[P_REMOTE_ADDR] ? v[P_REMOTE_ADDR] : "");
    snprintf(r->server_addr, sizeof r->server_addr, "%s", v[P_SERVER_ADDR] ? v[P_SERVER_ADDR] : "");

    const char *cl = v[P_CONTENT_LENGTH];
    if (cl && *cl) {
        char *end;
        errno = 0;
        long long x = strtoll(cl, &end, 10);
        if (errno == 0 && *end == '\0' && x >= 0)
            r->content_length = x;
    }

    /* The client's own X-Request-Id when sane, else the web server's ($request_id passed
     * as REQUEST_ID, so nginx's access line and ours share it), else a new one. */
    const char *rid = v[P_HTTP_X_REQUEST_ID];
    if (!id_ok(rid))
        rid = v[P_REQUEST_ID];
    if (id_ok(rid))
        snprintf(r->request_id, sizeof r->request_id, "%s", rid);
    else
        svc_random_id("req", r->request_id, sizeof r->request_id); /* "req-<16 hex>" */
}

void http_req_free(struct http_req *r)
{
    char *owned[] = {
        r->method,          r->path, r->query,  r->authorization, r->content_type, r->x_session_id,
        r->idempotency_key, r->host, r->origin, r->fetch_site,    r->body};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
        free(owned[i]);
    for (int i = 0; i < r->nparams; i++) {
        free(r->param_names[i]);
        free(r->param_values[i]);
    }
    for (size_t i = 0; i < r->nq; i++) {
        free(r->q[i].name);
        free(r->q[i].value);
    }
    free(r->q);
    svc_buf_free(&r->headers);
    memset(r, 0, sizeof *r);
}

/* ---- log ---- */

/* Append text to a log line: bytes outside 0x21..0x7e become '?'. */
static char *log_put_clean(char *p, char *end, const char *src)
{
    for (; src && *src && p < end; src++) {
        unsigned char c = (unsigned char)*src;
        *p++ = (c < 0x21 || c >= 0x7f) ? '?' : (char)c;
    }
    return p;
}

static char *log_put(char *p, char *end, const char *src, size_t n)
{
    if (n > (size_t)(end - p))
        n = (size_t)(end - p);
    memcpy(p, src, n);
    return p + n;
}

/* Decimal digits of v, at least min_digits (zero-padded). */
static char *log_put_uint(char *p, char *end, unsigned long long v, int min_digits)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < min_digits && n < (int)sizeof tmp)
        tmp[n++] = '0';
    while (n > 0 && p < end)
        *p++ = tmp[--n];
    return p;
}

/* The timestamp of svc_time_now_iso ("2026-05-16T08:15:30.123456+00:00"); the date and
 * time of day are formatted once a second. */
static char *log_put_time(char *p, char *end)
{
    static time_t last_sec = (time_t)-1;
    static char day[20]; /* "YYYY-MM-DDTHH:MM:SS" */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != last_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
        last_sec = ts.tv_sec;
    }
    p = log_put(p, end, day, sizeof day - 1);
    p = log_put(p, end, ".", 1);
    p = log_put_uint(p, end, (unsigned long long)(ts.tv_nsec / 1000) % 1000000, 6);
    return log_put(p, end, "+00:00", 6);
}

/* One line, one write(2): "<time> svc-fcgi[<pid>]: <method> <path> <status> <bytes>
 * <ms>ms rid=<request id> sid=<session id or ->[ client_gone]". */
void http_log(const struct http_req *r)
{
    char line[1024];
    char *p = line, *end = line + sizeof line - 1; /* room for the newline */
    double ms = (svc_time_monotonic() - r->t0) * 1000.0;
    p = log_put_time(p, end);
    p = log_put(p, end, " svc-fcgi[", 10);
    p = log_put_uint(p, end, (unsigned long long)svc_pid(), 1);
    p = log_put(p, end, "]: ", 3);
    char *lim = end - p > 15 ? p + 15 : end; /* method: at most 15 bytes, as before */
    p = log_put_clean(p, lim, r->method);
    p = log_put(p, end, " ", 1);
    lim = end - p > 299 ? p + 299 : end; /* path: at most 299 bytes */
    p = log_put_clean(p, lim, r->path);
    p = log_put(p, end, " ", 1);
    int status = r->status ? r->status : 500;
    if (status < 0) {
        p = log_put(p, end, "-", 1);
        status = -status;
    }
    p = log_put_uint(p, end, (unsigned)status, 1);
    p = log_put(p, end, " ", 1);
    p = log_put_uint(p, end, (unsigned long long)r->bytes_out, 1);
    p = log_put(p, end, " ", 1);
    /* %.1f of a non-negative duration */
    if (!(ms >= 0) || ms > 1e15)
        ms = 0;
    unsigned long long tenths = (unsigned long long)(ms * 10.0 + 0.5);
    p = log_put_uint(p, end, tenths / 10, 1);
    p = log_put(p, end, ".", 1);
    p = log_put_uint(p, end, tenths % 10, 1);
    p = log_put(p, end, "ms rid=", 7);
    p = log_put(p, end, r->request_id, strlen(r->request_id));
    p = log_put(p, end, " sid=", 5);
    const char *sid = r->session_id[0] ? r->session_id : "-";
    p = log_put(p, end, sid, strlen(sid));
    if (r->client_gone)
        p = log_put(p, end, " client_gone", 12);
    *p++ = '\n';
    svc_write_all(STDERR_FILENO, line, (size_t)(p - line));
}

/* ---- route params and query ---- */

const char *http_env(const struct http_req *r, const char *name)
{
    return r->fcgx ? FCGX_GetParam(name, r->fcgx->envp) : getenv(name);
}

const char *http_param(const struct http_req *r, const char *name)
{
    for (int i = 0; i < r->nparams; i++)
        if (strcmp(r->param_names[i], name) == 0)
            return r->param_values[i];
    return NULL;
}

static int hexval(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
}

char *http_pct_decode(const char *s, size_t n, bool plus_space)
{
    char *out = svc_xmalloc(n + 1);
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
            r->q = svc_xrealloc(r->q, (r->nq + 1) * sizeof *r->q);
            r->q[r->nq].name = http_pct_decode(p, nlen, true);
            r->q[r->nq].value =
                eq ? http_pct_decode(eq + 1, len - nlen - 1, true) : svc_xstrdup("");
            r->nq++;
        }
        p = amp ? amp + 1 : NULL;
    }
}

/* Given twice is 400 (one would be dropped). */
int http_query_str(struct http_req *r, const char *name, const char **v, struct svc_err *err)
{
    query_parse(r);
    *v = NULL;
    bool seen = false;
    for (size_t i = 0; i < r->nq; i++) {
        if (strcmp(r->q[i].name, name) != 0)
            continue;
        if (seen)
            return svc_err_setp(err, SVC_E_INVALID_QUERY, name,
                                "query parameter '%s' is given more than once", name);
        seen = true;
        *v = r->q[i].value[0] ? r->q[i].value : NULL;
    }
    return 0;
}

int http_session_header(const struct http_req *r, const char **out, struct svc_err *err)
{
    *out = r->x_session_id;
    if (!*out || svc_layout_id_check(*out, err) == 0)
        return 0;
    snprintf(err->param, sizeof err->param, "X-Session-Id");
    return -1;
}

/* Whether name is one of the space-separated words of list (NULL: none); "" is none. */
static bool word_of(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; n && p; p = strchr(p, ' ')) {
        p += *p == ' ';
        if (strncmp(p, name, n) == 0 && (p[n] == ' ' || !p[n]))
            return true;
    }
    return false;
}

int http_query_known(struct http_req *r, const char *known, struct svc_err *err)
{
    query_parse(r);
    for (size_t i = 0; i < r->nq; i++)
        if (!word_of(known, r->q[i].name))
            return svc_err_setp(err, SVC_E_INVALID_QUERY, r->q[i].name,
                                "unknown query parameter '%.64s'", r->q[i].name);
    return 0;
}

void http_query_all(struct http_req *r, const char *name, const char ***out, size_t *n)
{
    query_parse(r);
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < r->nq; i++)
        if (strcmp(r->q[i].name, name) == 0) {
            *out = svc_xrealloc(*out, (*n + 1) * sizeof **out);
            (*out)[(*n)++] = r->q[i].value;
        }
}

int http_query_int(struct http_req *r, const char *name, int64_t def, int64_t min, int64_t max,
                   int64_t *out, struct svc_err *err)
{
    const char *v = NULL;
    *out = def;
    if (http_query_str(r, name, &v, err) < 0)
        return -1;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || !(isdigit((unsigned char)v[0]) || v[0] == '-'))
        return svc_err_setp(err, SVC_E_INVALID_QUERY, name,
                            "query parameter '%s' must be an integer", name);
    if (x < min || x > max)
        return svc_err_setp(err, SVC_E_INVALID_QUERY, name,
                            "query parameter '%s' must be between %lld and %lld", name,
                            (long long)min, (long long)max);
    *out = x;
    return 0;
}

int http_query_bool(struct http_req *r, const char *name, bool def, bool *out, struct svc_err *err)
{
    const char *v = NULL;
    *out = def;
    if (http_query_str(r, name, &v, err) < 0)
        return -1;
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

const char *http_unknown_key(json_object *o, const char *const *known, size_t n)
{
    json_object_object_foreach(o, key, val)
    {
        size_t i = 0;
        (void)val;
        while (i < n && strcmp(key, known[i]) != 0)
            i++;
        if (i == n)
            return key;
    }
    return NULL;
}

int http_known_fields(json_object *o, const char *at, const char *const *known, size_t n,
                      struct svc_err *err)
{
    const char *key =
        json_object_is_type(o, json_type_object) ? http_unknown_key(o, known, n) : NULL;
    if (!key)
        return 0;
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        svc_buf_adds(&b, i ? ", " : "");
        svc_buf_adds(&b, known[i]);
    }
    char p[sizeof err->param + 1];
    int len = snprintf(p, sizeof p, "%s%s%s", at ? at : "", at ? "." : "", key);
    /* named only when it fits the error's param whole: a cut name would be another */
    bool nameable = len >= 0 && (size_t)len < sizeof err->param;
    svc_err_setp(err, SVC_E_INVALID_FIELD, nameable ? p : NULL,
                 "unknown field '%.64s' (fields: %s)", nameable ? p : key, b.data);
    svc_buf_free(&b);
    return -1;
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
        return svc_err_set(err, SVC_E_BODY_TOO_LARGE, "request body is larger than %lld bytes",
                           (long long)max);
    }
    /* Plain CGI: without CONTENT_LENGTH there is no body (stdin may never reach EOF). */
    if (!r->fcgx && r->content_length < 0) {
        r->body = svc_xstrdup("");
        return 0;
    }
    /* Read until EOF (FastCGI stdin ends with the record; CGI stdin with CONTENT_LENGTH), at
     * most max + 1 bytes: one more than max is too large. */
    int64_t left = r->content_length >= 0 ? r->content_length : max + 1;
    struct svc_buf b;
    svc_buf_init(&b);
    char chunk[16384];
    for (;;) {
        size_t want = left < (int64_t)sizeof chunk ? (size_t)left : sizeof chunk;
        long n = want ? io_read(r, chunk, want) : 0;
        if (n <= 0)
            break;
        svc_buf_add(&b, chunk, (size_t)n);
        left -= n;
    }
    if ((int64_t)b.len > max) {
        svc_buf_free(&b);
        drain(r, HTTP_DRAIN_MAX);
        return svc_err_set(err, SVC_E_BODY_TOO_LARGE, "request body is larger than %lld bytes",
                           (long long)max);
    }
    r->body_len = b.len;
    r->body = svc_buf_steal(&b);
    return 0;
}

#define BODY_TOOLS_MAX 128
#define BODY_ITEMS_MAX 10000 /* messages, input items, conversation items, session ids */

/* The lists a body may carry, each with its limit (an object's: its keys). */
static const struct {
    const char *field;
    json_type type;
    size_t max;
} limits[] = {
    {"tools", json_type_array, BODY_TOOLS_MAX},
    {"messages", json_type_array, BODY_ITEMS_MAX},
    {"input", json_type_array, BODY_ITEMS_MAX},
    {"items", json_type_array, BODY_ITEMS_MAX},
    {"session_ids", json_type_array, BODY_ITEMS_MAX},
    {"tags", json_type_array, SVC_TAGS_MAX},
    {"metadata", json_type_object, SVC_METADATA_KEYS_MAX},
};

static int body_lists(json_object *body, struct svc_err *err)
{
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(body, limits[i].field, &v) ||
            !json_object_is_type(v, limits[i].type))
            continue; /* absent, or the wrong type: the handler names that */
        size_t n = limits[i].type == json_type_array ? json_object_array_length(v)
                                                     : (size_t)json_object_object_length(v);
        if (n > limits[i].max)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, limits[i].field,
                                "'%s' has %zu %s; at most %zu are taken", limits[i].field, n,
                                limits[i].type == json_type_array ? "items" : "keys",
                                limits[i].max);
    }
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
            return 0;
        }
        return svc_err_set(err, SVC_E_INVALID_JSON,
                           "request body is empty; a JSON object is expected");
    }
    if (memchr(r->body, '\0', r->body_len))
        return svc_err_set(err, SVC_E_INVALID_JSON, "request body contains a NUL byte");
    json_object *o = NULL;
    if (svc_json_parse_python(r->body, r->body_len, &o, err) < 0)
        return -1;
    int rc = json_object_is_type(o, json_type_object)
                 ? body_lists(o, err)
                 : svc_err_set(err, SVC_E_INVALID_JSON, "request body must be a JSON object");
    if (rc < 0)
        json_object_put(o);
    else
        *out = o;
    return rc;
}

/* ---- typed fields ---- */

static int field_get(json_object *o, const char *key, const char *param, bool required,
                     json_type want, const char *want_name, json_object **out, struct svc_err *err)
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
    if (v && (size_t)json_object_get_string_len(v) != strlen(json_object_get_string(v)))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param ? param : key,
                            "'%s' must not contain NUL characters", param ? param : key);
    *out = v ? json_object_get_string(v) : NULL;
    return 0;
}

int http_field_bool(json_object *o, const char *key, const char *param, bool def, bool *out,
                    struct svc_err *err)
{
    json_object *v;
    int rc = field_get(o, key, param, false, json_type_boolean, "a boolean", &v, err);
    *out = v ? json_object_get_boolean(v) : def;
    return rc;
}

int http_field_number_opt(json_object *o, const char *key, const char *param, bool *set,
                          double *out, struct svc_err *err)
{
    json_object *v;
    int rc = field_get(o, key, param, false, json_type_double, "a number", &v, err);
    *set = v != NULL;
    if (v)
        *out = json_object_get_double(v);
    return rc;
}

int http_field_int_opt(json_object *o, const char *key, const char *param, bool *set, int64_t *out,
                       struct svc_err *err)
{
    json_object *v;
    int rc = field_get(o, key, param, false, json_type_int, "an integer", &v, err);
    *set = v != NULL;
    if (v)
        *out = json_object_get_int64(v);
    return rc;
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

/* The reason phrase of a status svc sends. */
static const char *status_text(int status)
{
    static const char *const lines[] = {"200 OK",
                                        "201 Created",
                                        "202 Accepted",
                                        "400 Bad Request",
                                        "401 Unauthorized",
                                        "403 Forbidden",
                                        "404 Not Found",
                                        "405 Method Not Allowed",
                                        "409 Conflict",
                                        "413 Payload Too Large",
                                        "415 Unsupported Media Type",
                                        "422 Unprocessable Entity",
                                        "429 Too Many Requests",
                                        "499 Client Closed Request",
                                        "500 Internal Server Error",
                                        "502 Bad Gateway",
                                        "503 Service Unavailable",
                                        "504 Gateway Timeout"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (atoi(lines[i]) == status)
            return lines[i] + 4;
    return "Unknown";
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
    *log_put_clean(r->session_id, r->session_id + sizeof r->session_id - 1, sid) = '\0';
    if (hdr && id_ok(sid))
        http_set_header(r, "X-Session-Id", sid);
}

void http_mark_run_began(struct http_req *r)
{
    r->run_began = true;
}

static int io_puts(struct http_req *r, const char *s)
{
    return io_write(r, s, strlen(s));
}

static int io_uint(struct http_req *r, unsigned long long v)
{
    char num[24];
    return io_write(r, num, (size_t)(log_put_uint(num, num + sizeof num, v, 1) - num));
}

/* Write the status line and headers; content_length < 0 means none. Straight into the
 * output stream (buffered by libfcgi / stdio): no formatting, no allocation. */
static int send_headers(struct http_req *r, int status, const char *ctype, long long clen)
{
    if (r->headers_sent)
        return -1;
    r->status = status;
    r->headers_sent = true;
    int rc = 0;
    rc |= io_write(r, "Status: ", 8);
    rc |= io_uint(r, (unsigned)status);
    rc |= io_write(r, " ", 1);
    rc |= io_puts(r, status_text(status));
    rc |= io_write(r, "\r\nContent-Type: ", 16);
    rc |= io_puts(r, ctype);
    if (clen >= 0) {
        rc |= io_write(r, "\r\nContent-Length: ", 18);
        rc |= io_uint(r, (unsigned long long)clen);
    }
    rc |= io_write(r, "\r\nX-Request-Id: ", 16);
    rc |= io_puts(r, r->request_id);
    rc |= io_write(r, "\r\n", 2);
    /* a retry cannot succeed: stock clients retry 408, 409, 429 and 5xx by default */
    bool final4xx = status >= 400 && status < 500 && status != 408 && status != 429 && !r->retry_ok;
    if (final4xx || (status >= 500 && r->run_began))
        rc |= io_write(r, "x-should-retry: false\r\n", 23);
    if (r->headers.len)
        rc |= io_write(r, r->headers.data, r->headers.len);
    rc |= io_write(r, "\r\n", 2);
    return rc ? -1 : 0;
}

static int send_body(struct http_req *r, const char *p, size_t n)
{
    if (r->head_only)
        return 0; /* HEAD: the headers (Content-Length included) and no body */
    if (io_write(r, p, n) < 0)
        return -1;
    r->bytes_out += n;
    r->last_write = svc_time_monotonic();
    return 0;
}

int http_send_json(struct http_req *r, int status, json_object *body)
{
    char *s = svc_json_dump_compact(body);
    size_t n = strlen(s);
    int rc = send_headers(r, status, "application/json; charset=utf-8", (long long)n + 1);
    if (rc == 0)
        rc = send_body(r, s, n);
    if (rc == 0)
        rc = send_body(r, "\n", 1);
    free(s);
    /* no flush: http_finish sends the response with the end of the request in one write */
    return rc;
}

int http_reply(struct http_req *r, int status, json_object *body)
{
    http_send_json(r, status, body);
    json_object_put(body);
    return 0;
}

json_object *http_list(json_object *data, bool has_more)
{
    size_t n = json_object_array_length(data);
    json_object *o = svc_json_new_obj("object", "list", NULL);
    svc_json_set(o, "data", data);
    svc_json_set_str(o, "first_id",
                     n ? svc_json_str(json_object_array_get_idx(data, 0), "id", NULL) : NULL);
    svc_json_set_str(o, "last_id",
                     n ? svc_json_str(json_object_array_get_idx(data, n - 1), "id", NULL) : NULL);
    svc_json_set_bool(o, "has_more", has_more);
    return o;
}

int http_send_page(struct http_req *r, json_object *all, bool all_desc, struct svc_err *err)
{
    int64_t limit = 0;
    const char *after = NULL, *order = NULL;
    int rc = -1;
    if (http_query_int(r, "limit", 20, 1, 100, &limit, err) < 0 ||
        http_query_str(r, "after", &after, err) < 0 || http_query_str(r, "order", &order, err) < 0)
        goto out;
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        svc_err_setp(err, SVC_E_INVALID_QUERY, "order", "'order' must be asc or desc");
        goto out;
    }
    bool rev = !(order && strcmp(order, "asc") == 0) != all_desc;
    size_t n = json_object_array_length(all), start = 0;
#define AT(i) json_object_array_get_idx(all, rev ? n - 1 - (i) : (i))
    while (after && start < n && strcmp(svc_json_str(AT(start), "id", ""), after) != 0)
        start++;
    if (after && start++ == n) {
        svc_err_setp(err, SVC_E_INVALID_QUERY, "after", "no item here has the id '%.64s'", after);
        goto out;
    }
    json_object *data = json_object_new_array();
    for (size_t i = start; i < n && i < start + (size_t)limit; i++)
        json_object_array_add(data, json_object_get(AT(i)));
#undef AT
    rc = http_reply(r, 200, http_list(data, start + json_object_array_length(data) < n));
out:
    json_object_put(all);
    return rc;
}

int http_send_text(struct http_req *r, int status, const char *ctype, const char *body, size_t n)
{
    int rc = send_headers(r, status, ctype, (long long)n);
    if (rc == 0)
        rc = send_body(r, body, n);
    return rc;
}

void http_finish(struct http_req *r)
{
    if (!r->fcgx) {
        if (fflush(stdout) != 0)
            r->client_gone = true;
        return;
    }
    /* FCGX_Finish_r's order: stderr first, so the end-request record goes out with the
     * last stdout data. Closing twice is a no-op, so FCGX_Finish_r stays correct. */
    FCGX_FClose(r->fcgx->err);
    if (FCGX_FClose(r->fcgx->out) != 0 && r->headers_sent)
        r->client_gone = true;
    /* Once the input has ended (the empty stdin record every web server sends with the
     * request, normally already buffered: no system call), nothing more can arrive: detached,
     * the connection closes at once and FCGX_Finish_r skips libfcgi's shutdown, poll and read
     * (they only keep unread input, a 413's above HTTP_DRAIN_MAX, from resetting the peer). A
     * web server that never sends it holds the worker until it closes the connection. */
    FCGX_Stream *in = r->fcgx->in;
    if (FCGX_HasSeenEOF(in) || FCGX_GetChar(in) == EOF)
        FCGX_Detach(r->fcgx);
}

json_object *http_error_object(const struct svc_err *err)
{
    enum svc_errcode code = err && err->code != SVC_OK ? err->code : SVC_E_INTERNAL;
    json_object *e = json_object_new_object();
    svc_json_set(e, "error",
                 svc_json_new_obj(
                     "message", err && err->message[0] ? err->message : svc_err_name(code), "type",
                     svc_err_type(code), "param", err && err->param[0] ? err->param : NULL, "code",
                     svc_err_name(code), NULL));
    return e;
}

int http_send_error(struct http_req *r, const struct svc_err *err)
{
    enum svc_errcode code = err && err->code != SVC_OK ? err->code : SVC_E_INTERNAL;
    /* the headers go nowhere once a stream's were sent: its error is a final event */
    if (code == SVC_E_SESSION_BUSY) {
        http_set_header(r, "Retry-After", "1");
        http_set_header(r, "x-should-retry", "true");
        r->retry_ok = true;
    }
    if (code == SVC_E_UNAVAILABLE) /* nothing was stored: a retry is safe once writable */
        http_set_header(r, "x-should-retry", "true");
    if (code == SVC_E_INDEX_BUILDING) {
        http_set_header(r, "Retry-After", "10");
        http_set_header(r, "x-should-retry", "true");
        http_set_header(r, "X-Svc-Index", "building");
    }
    if (code == SVC_E_MISSING_TOKEN || code == SVC_E_INVALID_TOKEN)
        http_set_header(r, "WWW-Authenticate", "Bearer");
    json_object *e = http_error_object(err);
    int rc = r->sse && r->headers_sent ? http_sse_json(r, e)
                                       : http_send_json(r, svc_err_http_status(code), e);
    json_object_put(e);
    return rc;
}

/* ---- SSE ---- */

int http_sse_begin(struct http_req *r)
{
    http_set_header(r, "Cache-Control", "no-cache");
    r->sse = true;
    return http_stream_begin(r, "text/event-stream; charset=utf-8");
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
    int rc = http_sse_data(r, s);
    free(s);
    return rc;
}

int http_sse_event(struct http_req *r, const char *name, json_object *o)
{
    if (strpbrk(name, "\r\n"))
        return -1;
    if (send_body(r, "event: ", 7) < 0 || send_body(r, name, strlen(name)) < 0 ||
        send_body(r, "\n", 1) < 0)
        return -1;
    return http_sse_json(r, o);
}

int http_sse_ping(struct http_req *r)
{
    if (send_body(r, ": ping\n\n", 8) < 0)
        return -1;
    return io_flush(r);
}

/* ---- binary downloads ---- */

int http_stream_begin(struct http_req *r, const char *ctype)
{
    http_set_header(r, "X-Accel-Buffering", "no");
    if (send_headers(r, 200, ctype, -1) < 0)
        return -1;
    r->last_write = svc_time_monotonic();
    return r->head_only ? -1 : io_flush(r); /* HEAD: the headers are the whole answer */
}

int http_stream_write(struct http_req *r, const void *p, size_t n)
{
    return send_body(r, p, n);
}

/* ---- a run's sink on a stream ---- */

double http_ping_after(void)
{
    const char *e = getenv("SVC_PING_INTERVAL_S");
    double v = e ? strtod(e, NULL) : 0;
    return (v >= 1 && v <= 15) ? v : HTTP_PING_AFTER_S;
}

int http_sink_gone(void *ctx)
{
    const struct http_req *r = *(struct http_req **)ctx;
    return r->client_gone ? 1 : 0;
}

int http_sink_idle(void *ctx)
{
    struct http_req *r = *(struct http_req **)ctx;
    if (r->client_gone)
        return 1;
    if (svc_time_monotonic() - r->last_write >= http_ping_after())
        return http_sse_ping(r) < 0 ? 1 : 0;
    return 0;
}
