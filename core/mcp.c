#include "mcp.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "extension.h"
#include "httpc.h"
#include "jsonx.h"
#include "log.h"
#include "util.h"

#define MCP_REVISION "2025-06-18"
#define MCP_MAX_PAGES 100
#define MCP_MAX_LINE (16L * 1024 * 1024)
#define MCP_STDERR_LINE 300

enum mcp_state { MCP_NOT_STARTED, MCP_READY, MCP_FAILED };
static const char *const state_names[] = {"not started", "ready", "failed"};

struct svc_mcp_conn {
    char *name;
    const struct svc_mcp_server *srv; /* configured, or NULL: a request's own */
    bool stdio;                       /* else Streamable HTTP */
    const char *url;                  /* HTTP: where */
    char *own_url;                    /* a request's own server: url, owned */
    json_object *headers;             /* a request's own server: {name: value}, owned */
    int timeout_s;
    enum mcp_state state;
    char last_error[512];
    double failed_at;
    pid_t pid; /* stdio */
    int fd[3];
    struct svc_buf out, err;
    CURL *h; /* HTTP */
    char *session;
    char version[16];
    json_object *tools; /* listed and filtered, or NULL */
    bool stale;         /* list_changed since */
    bool answered;      /* the last request was answered (maybe with an error) */
    int64_t next_id;
};

static struct {
    const struct svc_config *cfg; /* the table's configuration */
    const struct svc_mcp_server *servers;
    size_t n;
    int owner;                  /* the process the table belongs to */
    struct svc_mcp_conn *conns; /* one per server */
} S;

/* What a message exchange waits for: the answer to id, or its failure in err. */
struct wait {
    struct svc_mcp_conn *c;
    int64_t id;
    json_object *res;
    bool got;
    struct svc_err *err;
    int (*should_cancel)(void *ctx);
    void *ctx;
    double deadline, last_poll;
    bool cancelled;
};

static int conn_send(struct svc_mcp_conn *c, json_object *msg, struct svc_err *err);

/* ---- messages ---- */

static json_object *rpc_new(const char *method, json_object *params, int64_t id)
{
    json_object *m = svc_json_new_obj("jsonrpc", "2.0", NULL);
    if (id > 0)
        svc_json_set_int(m, "id", id);
    svc_json_set_str(m, "method", method);
    if (params)
        svc_json_set(m, "params", params);
    return m;
}

/* A server's request: ping answered, anything else refused. */
static void answer_request(struct svc_mcp_conn *c, json_object *msg, const char *method)
{
    json_object *reply = svc_json_new_obj("jsonrpc", "2.0", NULL);
    svc_json_set(reply, "id", json_object_get(json_object_object_get(msg, "id")));
    if (strcmp(method, "ping") == 0)
        svc_json_set(reply, "result", json_object_new_object());
    else
        svc_json_set(reply, "error",
                     json_tokener_parse("{\"code\": -32601, \"message\": "
                                        "\"svc does not offer this method\"}"));
    conn_send(c, reply, NULL);
    json_object_put(reply);
}

/* One message from the server. Returns 1 when it answers w->id (w->res or w->err set). */
static int on_message(struct wait *w, json_object *msg)
{
    const char *method = svc_json_str(msg, "method", NULL);
    json_object *idv = NULL, *e = NULL;
    bool has_id = json_object_object_get_ex(msg, "id", &idv) && idv;
    if (method) {
        if (has_id)
            answer_request(w->c, msg, method);
        else if (strcmp(method, "notifications/tools/list_changed") == 0)
            w->c->stale = true;
        return 0;
    }
    if (!has_id || !json_object_is_type(idv, json_type_int) || json_object_get_int64(idv) != w->id)
        return 0; /* the answer to a request given up on */
    w->got = true;
    w->c->answered = true;
    if (json_object_object_get_ex(msg, "error", &e) && e) {
        svc_err_set(w->err, SVC_E_UPSTREAM, "%s answered error %lld: %.300s", w->c->name,
                    (long long)svc_json_int(e, "code", 0), svc_json_str(e, "message", ""));
        return 1;
    }
    json_object *r = svc_json_obj(msg, "result");
    w->res = json_object_get(r);
    if (!r)
        svc_err_set(w->err, SVC_E_UPSTREAM, "%s answered without a result", w->c->name);
    return 1;
}

/* A JSON line from the server (SSE data, a stdio line): -1 with w->err if not JSON-RPC. */
static int on_text(struct wait *w, const char *s, size_t n)
{
    json_object *msg = NULL;
    if (svc_json_parse(s, n, &msg, NULL) != 0 || !json_object_is_type(msg, json_type_object)) {
        json_object_put(msg);
        w->got = true;
        return svc_err_set(w->err, SVC_E_UPSTREAM, "%s wrote something that is not JSON-RPC: %.*s",
                           w->c->name, (int)(n < 80 ? n : 80), s);
    }
    int rc = on_message(w, msg);
    json_object_put(msg);
    return rc;
}

/* Cancelled (should_cancel polled every 50 ms): sets w->err and returns -1. */
static int wait_cancelled(struct wait *w)
{
    double now = svc_time_monotonic();
    if (!w->should_cancel || now - w->last_poll < 0.05)
        return 0;
    w->last_poll = now;
    if (!w->should_cancel(w->ctx))
        return 0;
    w->cancelled = true;
    return svc_err_set(w->err, SVC_E_CANCELLED, "%s: the run was cancelled", w->c->name);
}

/* ---- stdio ---- */

/* Reap the server (blocking: after SIGKILL to its group, whatever it started goes too, or
 * only when it exited); an end of its own is logged. Whether it was reaped. */
static bool stdio_reap(struct svc_mcp_conn *c, bool kill_it)
{
    int status = 0;
    if (c->pid <= 0)
        return true;
    if (kill_it)
        kill(-c->pid, SIGKILL);
    pid_t r;
    while ((r = waitpid(c->pid, &status, kill_it ? 0 : WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return false;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        svc_logf("mcp %s: server %d %s %d", c->name, (int)c->pid,
                 WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    kill(-c->pid, SIGKILL);
    c->pid = -1;
    for (int i = 0; i < 3; i++)
        if (c->fd[i] >= 0) {
            close(c->fd[i]);
            c->fd[i] = -1;
        }
    svc_buf_free(&c->out);
    svc_buf_free(&c->err);
    return true;
}

/* Whether name is the variable of one of svc's own secrets (the model's key, the API
 * token, a user's token): env_pass never hands those on. */
static bool own_secret(const char *name)
{
    const struct svc_config *cfg = S.cfg;
    bool own =
        strcmp(name, cfg->model.api_key_env) == 0 || strcmp(name, cfg->server.api_token_env) == 0;
    for (size_t i = 0; !own && i < cfg->server.nusers; i++)
        own = strcmp(name, cfg->server.users[i].token_env) == 0;
    return own;
}

static int stdio_start(struct svc_mcp_conn *c, struct svc_err *err)
{
    const struct svc_mcp_server *s = c->srv;
    size_t n = 0, k = 0;
    while (s->env_pass && s->env_pass[n])
        n++;
    char **items = svc_xcalloc(n + (size_t)json_object_object_length(s->env) + 5, sizeof *items);
    items[k++] = svc_xstrdup(getenv("PATH") ? "PATH" : "PATH=/usr/local/bin:/usr/bin:/bin");
    items[k++] = svc_xstrdup("HOME");
    items[k++] = svc_xstrdup("LANG");
    for (size_t i = 0; i < n; i++) {
        if (own_secret(s->env_pass[i]))
            svc_logf("mcp %s: env_pass %s is svc's own secret: not passed", c->name,
                     s->env_pass[i]);
        else
            items[k++] = svc_xstrdup(s->env_pass[i]);
    }
    json_object_object_foreach(s->env, key, val)
        svc_xasprintf(&items[k++], "%s=%s", key, json_object_get_string(val));
    struct svc_err e;
    c->pid = svc_ext_spawn(s->command, items, c->fd, &e);
    for (size_t i = 0; i < k; i++)
        free(items[i]);
    free(items);
    if (c->pid < 0)
        return svc_err_set(err, SVC_E_UPSTREAM, "%s: %s", c->name, e.message);
    svc_logf("mcp %s: started %s as process %d", c->name, s->command[0], (int)c->pid);
    return 0;
}

static void stderr_line(void *ctx, const char *s, size_t n, size_t off)
{
    struct svc_mcp_conn *c = ctx;
    svc_logf("mcp %s: %.*s", c->name, (int)(n < MCP_STDERR_LINE ? n : MCP_STDERR_LINE), s);
}

static void stdout_line(void *ctx, const char *s, size_t n, size_t off)
{
    struct wait *w = ctx;
    if (!w->got) /* lines after the answer: for the next request (nothing is pending) */
        on_text(w, s, n);
}

/* The whole lines of buf (jsonx.h's reader) to each; the rest stays. */
static void stdio_lines(struct svc_buf *buf, void (*each)(void *, const char *, size_t, size_t),
                        void *ctx)
{
    size_t used = svc_jsonl_lines(buf->data, buf->len, each, ctx);
    memmove(buf->data, buf->data + used, buf->len - used);
    buf->len -= used;
}

/* Until the answer to w->id: stdout lines handled, stderr lines logged. */
static int stdio_wait(struct svc_mcp_conn *c, struct wait *w)
{
    for (;;) {
        if (c->out.len > 0)
            stdio_lines(&c->out, stdout_line, w);
        if (w->got)
            return w->res ? 0 : -1;
        if (c->err.len > 0)
            stdio_lines(&c->err, stderr_line, c);
        if (wait_cancelled(w) != 0)
            return -1;
        if (svc_time_monotonic() >= w->deadline)
            return svc_err_set(w->err, SVC_E_UPSTREAM_TIMEOUT, "%s did not answer within %d s",
                               c->name, c->timeout_s);
        struct pollfd pf[2] = {{.fd = c->fd[1], .events = POLLIN},
                               {.fd = c->fd[2], .events = POLLIN}};
        int pr = poll(pf, c->fd[2] >= 0 ? 2 : 1, 50);
        if (pr < 0 && errno != EINTR)
            return svc_err_set(w->err, SVC_E_UPSTREAM, "%s: poll: %s", c->name, strerror(errno));
        if (pr > 0 && pf[1].revents)
            svc_ext_drain(&c->fd[2], &c->err, SIZE_MAX, NULL);
        if (pr > 0 && pf[0].revents)
            svc_ext_drain(&c->fd[1], &c->out, SIZE_MAX, NULL);
        if (c->fd[1] < 0 && !(c->out.len && memchr(c->out.data, '\n', c->out.len)))
            return svc_err_set(w->err, SVC_E_UPSTREAM,
                               "%s: the server closed its output (it died?)", c->name);
        if ((long)c->out.len > MCP_MAX_LINE)
            return svc_err_set(w->err, SVC_E_UPSTREAM, "%s: a message is too large", c->name);
    }
}

static int stdio_send(struct svc_mcp_conn *c, const char *line, struct svc_err *err)
{
    size_t len = strlen(line), off = 0;
    double deadline = svc_time_monotonic() + c->timeout_s;
    while (off < len) {
        ssize_t w = svc_ext_write(c->fd[0], line + off, len - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return svc_err_set(err, SVC_E_UPSTREAM, "%s: cannot write to the server: %s", c->name,
                               strerror(errno));
        if (svc_time_monotonic() >= deadline)
            return svc_err_set(err, SVC_E_UPSTREAM_TIMEOUT, "%s does not read its input", c->name);
        struct pollfd pf = {.fd = c->fd[0], .events = POLLOUT};
        poll(&pf, 1, 50);
    }
    return 0;
}

/* ---- Streamable HTTP ---- */

struct post {
    struct wait *w;
    struct svc_sse sse;
    struct svc_buf body;
    int mode; /* 0 unknown, 1 JSON, 2 SSE */
    long status;
};

static size_t post_header(char *buf, size_t size, size_t nmemb, void *ud)
{
    struct post *p = ud;
    size_t n = size * nmemb;
    if (n > 15 && strncasecmp(buf, "mcp-session-id:", 15) == 0) {
        const char *v = buf + 15;
        size_t l = n - 15;
        while (l > 0 && (*v == ' ' || *v == '\t'))
            v++, l--;
        while (l > 0 && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' '))
            l--;
        free(p->w->c->session);
        p->w->c->session = svc_xstrndup(v, l);
    }
    return n;
}

static int post_event(void *ctx, const char *data, size_t len)
{
    struct wait *w = ctx;
    return on_text(w, data, len) != 0 ? -1 : w->got ? 1 : 0;
}

static size_t post_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct post *p = ud;
    size_t n = size * nmemb;
    if (p->mode == 0) {
        char *ct = NULL;
        curl_easy_getinfo(p->w->c->h, CURLINFO_RESPONSE_CODE, &p->status);
        curl_easy_getinfo(p->w->c->h, CURLINFO_CONTENT_TYPE, &ct);
        p->mode = p->status < 300 && ct && strcasestr(ct, "event-stream") ? 2 : 1;
    }
    if (p->mode == 2) /* stop reading once the answer came: the stream may stay open */
        return svc_sse_feed(&p->sse, ptr, n) == 0 && !p->sse.done ? n : 0;
    if ((long)(p->body.len + n) > MCP_MAX_LINE)
        return 0;
    svc_buf_add(&p->body, ptr, n);
    return n;
}

static int post_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow)
{
    struct post *p = ud;
    return wait_cancelled(p->w) != 0;
}

/* h with "name: value" added (the line wiped: a value may be a secret). */
static struct curl_slist *add_header(struct curl_slist *h, const char *name, const char *value)
{
    char *line = NULL;
    svc_xasprintf(&line, "%s: %s", name, value);
    h = curl_slist_append(h, line);
    memset(line, 0, strlen(line));
    free(line);
    return h;
}

/* The headers of a message: ours, then the server's own (configured ones from variables). */
static struct curl_slist *post_headers(struct svc_mcp_conn *c)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    h = curl_slist_append(h, "Expect:");
    if (c->session)
        h = add_header(h, "Mcp-Session-Id", c->session);
    if (c->version[0])
        h = add_header(h, "MCP-Protocol-Version", c->version);
    json_object *m = c->srv ? c->srv->headers_env : c->headers;
    json_object_object_foreach(m, k, v)
    {
        const char *val = c->srv ? getenv(json_object_get_string(v)) : json_object_get_string(v);
        if (val)
            h = add_header(h, k, val);
    }
    return h;
}

/* One POST of msg (body NULL: the DELETE that ends the session), its answer handled until
 * w->id is answered (w->id 0: a notification or a reply, nothing awaited). */
static int http_post(struct svc_mcp_conn *c, const char *body, struct wait *w)
{
    struct post p = {.w = w};
    svc_sse_init(&p.sse, post_event, w);
    CURL *h = svc_httpc_init(w->err) == 0 ? curl_easy_init() : NULL, *saved = c->h;
    if (!h)
        return svc_err_set(w->err, SVC_E_INTERNAL, "libcurl could not create a handle");
    struct curl_slist *hdrs = post_headers(c);
    char errbuf[CURL_ERROR_SIZE] = "";
    c->h = h;
    svc_httpc_setopts(h, c->url, hdrs, body, c->timeout_s, post_body, post_header, post_progress,
                      &p);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &p.status);
    int rc = 0;
    if (p.mode == 2 && cc == CURLE_OK)
        svc_sse_end(&p.sse);
    if (p.mode == 1 && p.status < 300 && p.body.len > 0 && w->id > 0 && !w->got)
        on_text(w, p.body.data, p.body.len);
    if (w->got)
        rc = w->res ? 0 : -1;
    else if (w->cancelled)
        rc = -1;
    else if (cc == CURLE_OPERATION_TIMEDOUT)
        rc = svc_err_set(w->err, SVC_E_UPSTREAM_TIMEOUT, "%s did not answer within %d s", c->name,
                         c->timeout_s);
    else if (cc != CURLE_OK)
        rc = svc_err_set(w->err, SVC_E_UPSTREAM, "%s: %s", c->name,
                         cc == CURLE_WRITE_ERROR ? "its answer is too large"
                         : errbuf[0]             ? errbuf
                                                 : curl_easy_strerror(cc));
    else if (p.status >= 300)
        rc = svc_err_set(w->err, SVC_E_UPSTREAM, "%s answered HTTP %ld%s%.200s", c->name, p.status,
                         p.body.len ? ": " : "", p.body.len ? p.body.data : "");
    else if (w->id > 0)
        rc = svc_err_set(w->err, SVC_E_UPSTREAM, "%s sent no answer", c->name);
    if (p.status == 404 && c->session && w->id > 0) { /* the session ended on its side */
        free(c->session);
        c->session = NULL;
        c->state = MCP_NOT_STARTED;
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    c->h = saved;
    svc_sse_free(&p.sse);
    svc_buf_free(&p.body);
    return rc;
}

/* ---- both ---- */

/* Send msg; with w->id, handle what comes until its answer. 0, or -1 with w->err. */
static int conn_write(struct svc_mcp_conn *c, json_object *msg, struct wait *w)
{
    char *s = svc_json_dump_compact(msg), *line = NULL;
    int rc;
    if (c->stdio) {
        svc_xasprintf(&line, "%s\n", s);
        rc = stdio_send(c, line, w->err);
        if (rc == 0 && w->id > 0)
            rc = stdio_wait(c, w);
    } else {
        rc = http_post(c, s, w);
    }
    free(line);
    free(s);
    return rc;
}

/* Send a message that awaits nothing (a notification, a reply); err may be NULL. */
static int conn_send(struct svc_mcp_conn *c, json_object *msg, struct svc_err *err)
{
    struct wait w = {.c = c, .err = err, .deadline = svc_time_monotonic() + 1e9};
    return conn_write(c, msg, &w);
}

/* A request: 0 with *res (a new reference), or -1 with err. */
static int conn_rpc(struct svc_mcp_conn *c, const char *method, json_object *params,
                    int (*should_cancel)(void *ctx), void *ctx, json_object **res,
                    struct svc_err *err)
{
    double now = svc_time_monotonic();
    struct wait w = {.c = c,
                     .id = ++c->next_id,
                     .err = err,
                     .should_cancel = should_cancel,
                     .ctx = ctx,
                     .deadline = now + c->timeout_s,
                     .last_poll = now};
    c->answered = false;
    json_object *msg = rpc_new(method, params, w.id);
    int rc = conn_write(c, msg, &w);
    json_object_put(msg);
    if (rc == 0) {
        *res = w.res;
        return 0;
    }
    json_object_put(w.res);
    if (w.cancelled && c->stdio) { /* tell it; its late answer is skipped */
        json_object *p = json_object_new_object();
        svc_json_set_int(p, "requestId", w.id);
        msg = rpc_new("notifications/cancelled", p, 0);
        conn_send(c, msg, NULL);
        json_object_put(msg);
    }
    return -1;
}

static void conn_forget(struct svc_mcp_conn *c)
{
    free(c->session);
    c->session = NULL;
    c->version[0] = '\0';
    json_object_put(c->tools);
    c->tools = NULL;
    c->state = MCP_NOT_STARTED;
}

static void conn_stop(struct svc_mcp_conn *c)
{
    if (c->stdio) {
        stdio_reap(c, true);
    } else if (c->session) { /* end the session politely, a second at most */
        int t = c->timeout_s;
        c->timeout_s = 1;
        struct wait w = {.c = c, .deadline = svc_time_monotonic() + 1}; /* no err: ignored */
        http_post(c, NULL, &w);
        c->timeout_s = t;
    }
    conn_forget(c);
}

/* Record why the server cannot be used: -1. */
static int conn_fail(struct svc_mcp_conn *c, const struct svc_err *err)
{
    snprintf(c->last_error, sizeof c->last_error, "%s", err->message);
    svc_logf("mcp: %s", c->last_error);
    conn_stop(c);
    c->state = MCP_FAILED;
    c->failed_at = svc_time_monotonic();
    return -1;
}

/* Start (stdio) and initialize. */
static int conn_start(struct svc_mcp_conn *c, struct svc_err *err)
{
    if (c->stdio && stdio_start(c, err) != 0)
        return -1;
    json_object *res = NULL,
                *p = json_tokener_parse(
                    "{\"protocolVersion\": \"" MCP_REVISION "\", \"capabilities\": {}, "
                    "\"clientInfo\": {\"name\": \"svc\", \"version\": \"" SVC_VERSION "\"}}");
    if (conn_rpc(c, "initialize", p, NULL, NULL, &res, err) != 0)
        return -1;
    static const char *const known[] = {"2025-11-25", MCP_REVISION, "2025-03-26", "2024-11-05"};
    const char *v = svc_json_str(res, "protocolVersion", "");
    bool spoken = false;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        spoken = spoken || strcmp(v, known[i]) == 0;
    int rc = spoken ? 0
                    : svc_err_set(err, SVC_E_UPSTREAM,
                                  "%s speaks MCP revision '%.32s', which svc does not", c->name, v);
    snprintf(c->version, sizeof c->version, "%s", v);
    json_object_put(res);
    json_object *note = rpc_new("notifications/initialized", NULL, 0);
    if (rc == 0)
        rc = conn_send(c, note, err);
    json_object_put(note);
    if (rc == 0)
        c->state = MCP_READY;
    return rc;
}

/* Whether list (NULL-terminated; NULL or empty: everything) admits s (NULL: nothing). */
static bool admits(char *const *list, const char *s)
{
    if (!list || !list[0])
        return true;
    for (; s && *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

/* tools/list, every page. */
static int conn_list(struct svc_mcp_conn *c, struct svc_err *err)
{
    json_object *all = json_object_new_array();
    char *cursor = NULL;
    int rc = 0;
    c->stale = false;
    for (int page = 0; rc == 0 && page < MCP_MAX_PAGES; page++) {
        json_object *p = json_object_new_object(), *res = NULL;
        if (cursor)
            svc_json_set_str(p, "cursor", cursor);
        free(cursor);
        cursor = NULL;
        if ((rc = conn_rpc(c, "tools/list", p, NULL, NULL, &res, err)) != 0)
            break;
        json_object *tools = svc_json_arr(res, "tools");
        for (size_t i = 0; tools && i < json_object_array_length(tools); i++) {
            json_object *t = json_object_array_get_idx(tools, i);
            const char *name = svc_json_str(t, "name", NULL);
            if (name && admits(c->srv ? c->srv->allowed_tools : NULL, name))
                json_object_array_add(all, json_object_get(t));
        }
        const char *next = svc_json_str(res, "nextCursor", NULL);
        cursor = next && *next ? svc_xstrdup(next) : NULL;
        json_object_put(res);
        if (!cursor)
            break;
    }
    free(cursor);
    json_object_put(c->tools);
    c->tools = rc == 0 ? all : (json_object_put(all), NULL);
    return rc;
}

/* The table, for cfg and this process. One left by a parent before a fork is forgotten:
 * its descriptors may be closed and reused here, its servers are not ours to stop. */
static void table_for(const struct svc_config *cfg)
{
    if (S.conns && S.owner == svc_pid() && S.cfg == cfg && S.servers == cfg->mcp_servers &&
        S.n == cfg->nmcp_servers)
        return;
    svc_mcp_stop_all(); /* and forgets the table */
    S.conns = svc_xcalloc(cfg->nmcp_servers + 1, sizeof *S.conns);
    S.cfg = cfg;
    S.servers = cfg->mcp_servers;
    S.n = cfg->nmcp_servers;
    S.owner = svc_pid();
    for (size_t i = 0; i < S.n; i++) {
        struct svc_mcp_conn *c = &S.conns[i];
        c->srv = &cfg->mcp_servers[i];
        c->stdio = c->srv->command != NULL;
        c->name = c->srv->name;
        c->url = c->srv->url;
        c->timeout_s = c->srv->timeout_s;
        c->pid = -1;
        c->fd[0] = c->fd[1] = c->fd[2] = -1;
    }
}

/* Started, initialized and listed, or -1 with err (the state says why). */
static int conn_ready(struct svc_mcp_conn *c, struct svc_err *err)
{
    if (c->stdio && c->pid > 0 && stdio_reap(c, false))
        conn_stop(c); /* died since: started again below */
    if (c->state == MCP_FAILED && svc_time_monotonic() - c->failed_at < SVC_MCP_RETRY_S)
        return svc_err_set(err, SVC_E_UPSTREAM, "%s", c->last_error);
    if (c->state != MCP_READY && (conn_start(c, err) != 0 || conn_list(c, err) != 0))
        return conn_fail(c, err);
    if ((!c->tools || c->stale) && conn_list(c, err) != 0)
        return conn_fail(c, err);
    c->last_error[0] = '\0';
    return 0;
}

/* ---- results ---- */

/* An MCP content item as a Strands toolResult content block, and its text in t. */
static json_object *result_block(json_object *item, struct svc_buf *t)
{
    const char *type = svc_json_str(item, "type", "");
    json_object *b = json_object_new_object();
    const char *data = svc_json_str(item, "data", NULL), *mime = svc_json_str(item, "mimeType", "");
    if (strcmp(type, "image") == 0 && data && strncmp(mime, "image/", 6) == 0) {
        json_object *img = json_object_new_object(), *src = json_object_new_object(),
                    *bytes = json_object_new_object();
        svc_json_set_str(img, "format", strcmp(mime + 6, "jpg") == 0 ? "jpeg" : mime + 6);
        svc_json_set_bool(bytes, "__bytes_encoded__", true);
        svc_json_set_str(bytes, "data", data);
        svc_json_set(src, "bytes", bytes);
        svc_json_set(img, "source", src);
        svc_json_set(b, "image", img);
        svc_buf_printf(t, "[image: %s, %zu bytes]", mime, strlen(data) / 4 * 3);
        return b;
    }
    json_object *res = svc_json_obj(item, "resource");
    const char *text = svc_json_str(item, "text", svc_json_str(res, "text", NULL));
    char *made = NULL;
    if (!text)
        svc_xasprintf(&made, "[%s%s%s]", type, res || svc_json_str(item, "uri", NULL) ? ": " : "",
                      svc_json_str(res ? res : item, "uri", ""));
    svc_json_set_str(b, "text", text ? text : made);
    svc_buf_adds(t, text ? text : made);
    free(made);
    return b;
}

/* A tools/call result into out: blocks, text (capped as an extension's), status. */
static void call_result(json_object *res, struct svc_tool_result *out)
{
    struct svc_buf t;
    svc_buf_init(&t);
    out->blocks = json_object_new_array();
    json_object *content = svc_json_arr(res, "content");
    for (size_t i = 0; content && i < json_object_array_length(content); i++) {
        if (t.len)
            svc_buf_adds(&t, "\n");
        json_object_array_add(out->blocks, result_block(json_object_array_get_idx(content, i), &t));
    }
    /* structuredContent is kept beside the content, as Strands' MCP client keeps it */
    json_object *sc = json_object_object_get(res, "structuredContent");
    if (sc) {
        out->structured = svc_json_copy(sc);
        if (json_object_array_length(out->blocks) == 0) { /* then it is all the model gets */
            json_object *b = json_object_new_object();
            svc_json_set(b, "json", svc_json_copy(sc));
            json_object_array_add(out->blocks, b);
            char *s = svc_json_dump_compact(sc);
            svc_buf_adds(&t, s);
            free(s);
        }
    }
    out->truncated = svc_ext_cap(&t);
    out->content = svc_buf_steal(&t);
    out->ok = !svc_json_bool(res, "isError", false);
}

/* ---- the API ---- */

bool svc_mcp_usable(const struct svc_mcp_server *s, const char *user)
{
    return s->enabled && admits(s->users, user);
}

/* scheme, host, port and path of url, lower-cased where case does not matter; -1 when it is
 * not an http(s) URL or carries user info. */
static int url_parts(const char *url, char parts[4][512])
{
    CURLU *u = curl_url();
    static const CURLUPart which[4] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT,
                                       CURLUPART_PATH};
    char *user = NULL;
    int rc = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                     curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_NO_USER
                 ? 0
                 : -1;
    for (int i = 0; rc == 0 && i < 4; i++) {
        char *v = NULL;
        if (curl_url_get(u, which[i], &v, i == 2 ? CURLU_DEFAULT_PORT : 0) != CURLUE_OK)
            rc = -1;
        else
            snprintf(parts[i], 512, "%s", v);
        curl_free(v);
        for (char *p = parts[i]; rc == 0 && i < 2 && *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    if (rc == 0 && strcmp(parts[0], "http") != 0 && strcmp(parts[0], "https") != 0)
        rc = -1;
    curl_free(user);
    curl_url_cleanup(u);
    return rc;
}

bool svc_mcp_url_allowed(char *const *allow, const char *url)
{
    char want[4][512], a[4][512];
    if (url_parts(url, want) != 0)
        return false;
    for (; allow && *allow; allow++)
        if (url_parts(*allow, a) == 0 && strcmp(a[0], want[0]) == 0 && strcmp(a[1], want[1]) == 0 &&
            strcmp(a[2], want[2]) == 0 && strncmp(want[3], a[3], strlen(a[3])) == 0)
            return true;
    return false;
}

struct svc_mcp_conn *svc_mcp_configured(const struct svc_config *cfg, const char *name)
{
    table_for(cfg);
    for (size_t i = 0; i < cfg->nmcp_servers; i++)
        if (strcmp(cfg->mcp_servers[i].name, name) == 0)
            return &S.conns[i];
    return NULL;
}

struct svc_mcp_conn *svc_mcp_remote_open(const char *label, const char *url, json_object *headers,
                                         int timeout_s)
{
    struct svc_mcp_conn *c = svc_xcalloc(1, sizeof *c);
    c->name = svc_xstrdup(label);
    c->url = c->own_url = svc_xstrdup(url);
    c->headers = headers ? svc_json_copy(headers) : json_object_new_object();
    c->timeout_s = timeout_s;
    c->pid = -1;
    c->fd[0] = c->fd[1] = c->fd[2] = -1;
    return c;
}

void svc_mcp_remote_close(struct svc_mcp_conn *c)
{
    if (!c)
        return;
    conn_stop(c);
    free(c->name);
    free(c->own_url);
    json_object_put(c->headers);
    free(c);
}

int svc_mcp_list(struct svc_mcp_conn *c, json_object **tools, struct svc_err *err)
{
    *tools = conn_ready(c, err) == 0 ? c->tools : NULL; /* ready: listed */
    return *tools ? 0 : -1;
}

void svc_mcp_call(struct svc_mcp_conn *c, const char *tool, json_object *args,
                  int (*should_cancel)(void *ctx), void *ctx, struct svc_tool_result *out)
{
    double t0 = svc_time_monotonic();
    struct svc_err err;
    json_object *res = NULL;
    memset(out, 0, sizeof *out);
    svc_err_clear(&err);
    int rc = conn_ready(c, &err);
    if (rc == 0) {
        json_object *p = svc_json_new_obj("name", tool, NULL);
        svc_json_set(p, "arguments", args ? svc_json_copy(args) : json_object_new_object());
        json_object *again = json_object_get(p);
        rc = conn_rpc(c, "tools/call", p, should_cancel, ctx, &res, &err);
        if (rc != 0 && !c->stdio && c->state == MCP_NOT_STARTED && conn_ready(c, &err) == 0)
            rc = conn_rpc(c, "tools/call", again, should_cancel, ctx, &res, &err);
        else
            json_object_put(again);
        /* a server that timed out, died or broke the protocol starts afresh at the next use */
        if (rc != 0 && !c->answered && err.code != SVC_E_CANCELLED) {
            snprintf(c->last_error, sizeof c->last_error, "%s", err.message);
            svc_logf("mcp: %s", err.message);
            conn_stop(c);
        }
    }
    if (rc == 0)
        call_result(res, out);
    else
        out->content = svc_xstrdup(err.message); /* ok stays false */
    json_object_put(res);
    out->latency_ms = (long)((svc_time_monotonic() - t0) * 1000);
}

json_object *svc_mcp_status(struct svc_mcp_conn *c, bool start)
{
    struct svc_err err;
    if (start)
        conn_ready(c, &err);
    else if (c->stdio && c->pid > 0 && stdio_reap(c, false))
        conn_stop(c);
    json_object *o = json_object_new_object(), *tools = json_object_new_array();
    svc_json_set_str(o, "name", c->name);
    svc_json_set_str(o, "transport", c->stdio ? "stdio" : "streamable_http");
    svc_json_set_str(o, "state", state_names[c->state]);
    for (size_t i = 0; c->tools && i < json_object_array_length(c->tools); i++) {
        json_object *t = json_object_array_get_idx(c->tools, i), *row = json_object_new_object();
        svc_json_set_str(row, "name", svc_json_str(t, "name", ""));
        svc_json_set_str(row, "description", svc_json_str(t, "description", ""));
        json_object_array_add(tools, row);
    }
    svc_json_set(o, "tools", tools);
    svc_json_set_str(o, "last_error", c->last_error[0] ? c->last_error : NULL);
    return o;
}

void svc_mcp_stop_all(void)
{
    for (size_t i = 0; S.conns && S.owner == svc_pid() && i < S.n; i++)
        conn_stop(&S.conns[i]);
    for (size_t i = 0; S.conns && i < S.n; i++)
        conn_forget(&S.conns[i]);
    free(S.conns);
    S.conns = NULL;
}
