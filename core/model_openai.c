#include "model_openai.h"

#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpc.h"
#include "jsonx.h"
#include "openai.h"
#include "util.h"

#define OA_MAX_TOOL_CALLS 128
#define OA_MAX_ERR_BODY (64 * 1024)     /* error bodies: enough for a message */
#define OA_MAX_BODY (64L * 1024 * 1024) /* plain JSON answers */
#define OA_BACKOFF_CAP_S 8.0
#define OA_RETRY_AFTER_CAP_S 30.0
#define OA_POLL_S 0.05 /* how often should_cancel is polled during a transfer */

enum oa_mode { OA_UNKNOWN, OA_SSE, OA_JSON, OA_ERRBODY };

enum oa_abort {
    OA_NONE,
    OA_CANCEL,    /* should_cancel said so */
    OA_GONE,      /* on_delta / on_idle said so */
    OA_STREAMERR, /* an {"error": ...} event in the stream */
    OA_TOOBIG,
};

enum oa_result { OA_OK, OA_RETRY, OA_FAIL };

struct oa_tool {
    char *id;
    char *name;
    struct svc_buf args;
};

struct oa {
    const struct svc_model_call *call;
    CURL *h;
    const char *key;
    bool delivered; /* a delta was delivered: no more retries */
    double last_data, last_idle, last_poll;
    /* per attempt */
    enum oa_mode mode;
    enum oa_abort abort;
    char stream_error[400];
    struct svc_sse sse;  /* the SSE reader (httpc.h) */
    struct svc_buf body; /* plain JSON answer, or error body */
    struct svc_buf text;
    struct oa_tool *tools;
    size_t ntools;
    /* the server's usage, finish_reason and logprobs.content entries of choice 0 */
    struct svc_model_reply r;
    bool have_usage;
    bool got_event;     /* at least one chunk was handled */
    double retry_after; /* seconds, < 0 when the server sent none */
    double retry_after_ms;
};

/* ---- small helpers ---- */

char *svc_openai_redact(const char *src, const char *secret)
{
    if (!src)
        return NULL;
    if (!secret || !*secret)
        return svc_xstrdup(src);
    struct svc_buf b;
    svc_buf_init(&b);
    size_t kl = strlen(secret);
    const char *p = src, *hit;
    for (; (hit = strstr(p, secret)) != NULL; p = hit + kl) {
        svc_buf_add(&b, p, (size_t)(hit - p));
        svc_buf_adds(&b, "***");
    }
    svc_buf_adds(&b, p);
    /* backstop: a text cut short may end in the start of the key; mask such a tail */
    for (size_t n = kl - 1 < b.len ? kl - 1 : b.len; n >= 4; n--)
        if (memcmp(b.data + b.len - n, secret, n) == 0) {
            b.len -= n;
            svc_buf_adds(&b, "***");
            break;
        }
    return svc_buf_steal(&b);
}

/* Set err with a message that never carries the key. OA_FAIL. */
__attribute__((format(printf, 4, 5))) static enum oa_result
oa_fail(struct oa *st, struct svc_err *err, enum svc_errcode code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    svc_err_oneline(msg, true);
    char *red = svc_openai_redact(msg, st->key);
    svc_err_set(err, code, "%s", red);
    free(red);
    return OA_FAIL;
}

static int oa_event(void *ctx, const char *data, size_t len);

static void oa_reset_attempt(struct oa *st)
{
    st->mode = OA_UNKNOWN;
    st->abort = OA_NONE;
    st->stream_error[0] = '\0';
    svc_sse_free(&st->sse);
    svc_sse_init(&st->sse, oa_event, st);
    svc_buf_free(&st->body);
    svc_buf_free(&st->text);
    for (size_t i = 0; i < st->ntools; i++) {
        free(st->tools[i].id);
        free(st->tools[i].name);
        svc_buf_free(&st->tools[i].args);
    }
    free(st->tools);
    st->tools = NULL;
    st->ntools = 0;
    json_object_put(st->r.logprobs);
    memset(&st->r, 0, sizeof st->r);
    st->have_usage = false;
    st->got_event = false;
    st->retry_after = -1;
    st->retry_after_ms = -1;
}

/* ---- the request ---- */

static json_object *oa_tools_json(json_object *tools)
{
    json_object *out = json_object_new_array();
    bool array = json_object_is_type(tools, json_type_array);
    for (size_t i = 0; array && i < json_object_array_length(tools); i++) {
        json_object *t = json_object_array_get_idx(tools, i);
        const char *name = svc_json_str(t, "name", NULL);
        if (!name || !*name)
            continue;
        json_object *fn = svc_json_new_obj("name", name, NULL);
        const char *desc = svc_json_str(t, "description", NULL);
        if (desc)
            svc_json_set_str(fn, "description", desc);
        json_object *params = svc_json_obj(t, "parameters");
        svc_json_set(fn, "parameters",
                     params ? svc_json_copy(params)
                            : json_tokener_parse("{\"type\": \"object\", \"properties\": {}}"));
        json_object *strict = NULL;
        if (json_object_object_get_ex(t, "strict", &strict) && strict)
            svc_json_set(fn, "strict", json_object_get(strict));
        json_object *tool = svc_json_new_obj("type", "function", NULL);
        svc_json_set(tool, "function", fn);
        json_object_array_add(out, tool);
    }
    if (json_object_array_length(out) == 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

/* The request's tool_choice in the wire format: a mode, or the function it names. */
static json_object *oa_tool_choice(const char *choice)
{
    if (strcmp(choice, "auto") == 0 || strcmp(choice, "none") == 0 ||
        strcmp(choice, "required") == 0)
        return json_object_new_string(choice);
    json_object *o = svc_json_new_obj("type", "function", NULL);
    svc_json_set(o, "function", svc_json_new_obj("name", choice, NULL));
    return o;
}

/* Characters of the prompt, for the 4-characters-a-token estimate. */
static size_t oa_prompt_chars(json_object *messages)
{
    size_t chars = 0;
    for (size_t i = 0; i < json_object_array_length(messages); i++) {
        json_object *m = json_object_array_get_idx(messages, i);
        const char *c = svc_json_str(m, "content", NULL);
        chars += c ? strlen(c) : 0;
        json_object *tcs = svc_json_arr(m, "tool_calls");
        for (size_t k = 0; tcs && k < json_object_array_length(tcs); k++) {
            json_object *fn = svc_json_obj(json_object_array_get_idx(tcs, k), "function");
            chars +=
                strlen(svc_json_str(fn, "name", "")) + strlen(svc_json_str(fn, "arguments", ""));
        }
    }
    return chars;
}

static json_object *oa_request_json(const struct svc_model_call *call, size_t *prompt_chars)
{
    const struct svc_config *cfg = call->cfg;
    json_object *req = svc_json_new_obj("model", cfg->model.name ? cfg->model.name : "", NULL);
    json_object *msgs = json_object_new_array();
    const char *sys = call->system_prompt ? call->system_prompt : cfg->model.system_prompt;
    if (sys && *sys) {
        json_object_array_add(msgs, svc_json_new_obj("role", "system", "content", sys, NULL));
    }
    for (size_t i = 0; call->messages && i < json_object_array_length(call->messages); i++) {
        json_object *proj = svc_openai_project(json_object_array_get_idx(call->messages, i));
        size_t k = proj ? json_object_array_length(proj) : 0;
        for (size_t j = 0; j < k; j++)
            json_object_array_add(msgs, json_object_get(json_object_array_get_idx(proj, j)));
        json_object_put(proj);
    }
    *prompt_chars = oa_prompt_chars(msgs);
    svc_json_set(req, "messages", msgs);
    svc_json_set_bool(req, "stream", true);
    svc_json_set(req, "stream_options", json_tokener_parse("{\"include_usage\": true}"));
    json_object *tools = oa_tools_json(call->tools);
    if (tools)
        svc_json_set(req, "tools", tools);
    if (tools && call->tool_choice)
        svc_json_set(req, "tool_choice", oa_tool_choice(call->tool_choice));
    if (call->has_temperature)
        svc_json_set(req, "temperature", json_object_new_double(call->temperature));
    else if (cfg->model.has_temperature)
        svc_json_set(req, "temperature", json_object_new_double(cfg->model.temperature));
    const char *mtp = call->max_tokens_param && strcmp(call->max_tokens_param, "max_tokens") != 0
                          ? "max_completion_tokens"
                          : "max_tokens";
    if (call->has_max_tokens)
        svc_json_set_int(req, mtp, call->max_tokens);
    else if (cfg->model.has_max_tokens)
        svc_json_set_int(req, "max_tokens", cfg->model.max_tokens);
    /* the request's own settings, unchanged (SPEC 15); svc's keys above stay svc's */
    if (call->settings) {
        json_object_object_foreach(call->settings, key, val)
        {
            if (!json_object_object_get_ex(req, key, NULL) &&
                (tools || strcmp(key, "parallel_tool_calls") != 0))
                svc_json_set(req, key, json_object_get(val));
        }
    }
    return req;
}

/* ---- the answer ---- */

static int oa_deliver(struct oa *st, const char *text)
{
    if (!*text)
        return 0;
    svc_buf_adds(&st->text, text);
    st->delivered = true;
    if (st->call->on_delta && st->call->on_delta(st->call->ctx, text)) {
        st->abort = OA_GONE;
        return -1;
    }
    return 0;
}

static struct oa_tool *oa_tool_slot(struct oa *st, int64_t index)
{
    if (index < 0 || index >= OA_MAX_TOOL_CALLS)
        return NULL;
    if ((size_t)index >= st->ntools) {
        struct oa_tool *t = svc_xrealloc(st->tools, ((size_t)index + 1) * sizeof *t);
        memset(t + st->ntools, 0, ((size_t)index + 1 - st->ntools) * sizeof *t); /* bufs empty */
        st->tools = t;
        st->ntools = (size_t)index + 1;
    }
    return &st->tools[index];
}

/* A name or id piece: set when empty, ignore a repetition, else append. */
static void oa_piece(char **dst, const char *piece)
{
    if (!piece || !*piece)
        return;
    if (!*dst) {
        *dst = svc_xstrdup(piece);
        return;
    }
    if (strcmp(*dst, piece) == 0)
        return;
    size_t a = strlen(*dst), b = strlen(piece);
    char *s = svc_xrealloc(*dst, a + b + 1);
    memcpy(s + a, piece, b + 1);
    *dst = s;
}

static void oa_tool_calls(struct oa *st, json_object *tcs, bool whole_message)
{
    for (size_t i = 0; i < json_object_array_length(tcs); i++) {
        json_object *tc = json_object_array_get_idx(tcs, i);
        const char *id = svc_json_str(tc, "id", NULL);
        int64_t index = whole_message ? (int64_t)i : svc_json_int(tc, "index", -1);
        if (index < 0) { /* servers that leave out index: a new id opens a new call */
            bool fresh = id && *id &&
                         (st->ntools == 0 || !st->tools[st->ntools - 1].id ||
                          strcmp(st->tools[st->ntools - 1].id, id) != 0);
            index = fresh || st->ntools == 0 ? (int64_t)st->ntools : (int64_t)st->ntools - 1;
        }
        struct oa_tool *t = oa_tool_slot(st, index);
        if (!t)
            continue;
        if (id && *id && !t->id)
            t->id = svc_xstrdup(id);
        json_object *fn = svc_json_obj(tc, "function"), *args = NULL;
        oa_piece(&t->name, svc_json_str(fn, "name", NULL));
        json_object_object_get_ex(fn, "arguments", &args);
        if (json_object_is_type(args, json_type_string)) {
            svc_buf_adds(&t->args, json_object_get_string(args));
        } else if (json_object_is_type(args, json_type_object)) { /* lenient servers */
            char *s = svc_json_dump_compact(args);
            svc_buf_adds(&t->args, s);
            free(s);
        }
    }
}

/* The message of an error value: the string itself, or its "message". */
static const char *oa_message_of(json_object *e)
{
    return json_object_is_type(e, json_type_string) ? json_object_get_string(e)
                                                    : svc_json_str(e, "message", NULL);
}

/* One chunk (or a whole chat.completion when whole_message). 0, or -1 to abort. */
static int oa_chunk(struct oa *st, json_object *chunk, bool whole_message)
{
    st->got_event = true;
    json_object *e = NULL;
    if (json_object_object_get_ex(chunk, "error", &e) && e &&
        !json_object_is_type(e, json_type_null)) {
        const char *m = oa_message_of(e);
        /* redact before the copy can cut the key in two */
        char *red = svc_openai_redact(m && *m ? m : "the model server reported an error", st->key);
        snprintf(st->stream_error, sizeof st->stream_error, "%s", red);
        free(red);
        st->abort = OA_STREAMERR;
        return -1;
    }
    json_object *usage = svc_json_obj(chunk, "usage");
    if (usage) {
        st->have_usage = true;
        st->r.prompt_tokens = svc_json_int(usage, "prompt_tokens", 0);
        st->r.completion_tokens = svc_json_int(usage, "completion_tokens", 0);
        st->r.cached_tokens =
            svc_json_int(svc_json_obj(usage, "prompt_tokens_details"), "cached_tokens", 0);
        st->r.reasoning_tokens =
            svc_json_int(svc_json_obj(usage, "completion_tokens_details"), "reasoning_tokens", 0);
    }
    json_object *choices = svc_json_arr(chunk, "choices");
    for (size_t i = 0; choices && i < json_object_array_length(choices); i++) {
        json_object *ch = json_object_array_get_idx(choices, i);
        if (svc_json_int(ch, "index", 0) != 0)
            continue; /* we ask for one choice */
        json_object *d = svc_json_obj(ch, whole_message ? "message" : "delta");
        if (!d && !whole_message)
            d = svc_json_obj(ch, "message");
        json_object *co = NULL, *tcs = svc_json_arr(d, "tool_calls");
        json_object_object_get_ex(d, "content", &co);
        char *t = svc_openai_content_text(co); /* a string, or text parts */
        int rc = t ? oa_deliver(st, t) : 0;
        free(t);
        if (rc)
            return -1;
        if (tcs)
            oa_tool_calls(st, tcs, whole_message);
        json_object *lp = svc_json_arr(svc_json_obj(ch, "logprobs"), "content");
        for (size_t k = 0; lp && k < json_object_array_length(lp); k++) {
            if (!st->r.logprobs)
                st->r.logprobs = json_object_new_array();
            json_object_array_add(st->r.logprobs,
                                  json_object_get(json_object_array_get_idx(lp, k)));
        }
        const char *fr = svc_json_str(ch, "finish_reason", NULL);
        if (fr && *fr)
            snprintf(st->r.finish_reason, sizeof st->r.finish_reason, "%s", fr);
    }
    return 0;
}

/* One SSE event of the stream (httpc.h): [DONE] ends it, a JSON object is a chunk, anything
 * else is skipped. */
static int oa_event(void *ctx, const char *data, size_t len)
{
    struct oa *st = ctx;
    if (strcmp(data, "[DONE]") == 0)
        return 1;
    json_object *chunk = NULL;
    int rc = 0;
    if (svc_json_parse(data, len, &chunk, NULL) == 0 &&
        json_object_is_type(chunk, json_type_object))
        rc = oa_chunk(st, chunk, false);
    json_object_put(chunk);
    return rc;
}

static size_t oa_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct oa *st = ud;
    size_t n = size * nmemb;
    st->last_data = svc_time_monotonic();
    if (st->mode == OA_UNKNOWN) {
        long status = 0;
        char *ct = NULL;
        curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(st->h, CURLINFO_CONTENT_TYPE, &ct);
        if (status >= 300) {
            st->mode = OA_ERRBODY;
        } else if (ct && strcasestr(ct, "event-stream")) {
            st->mode = OA_SSE;
        } else if (ct && strcasestr(ct, "json")) {
            st->mode = OA_JSON;
        } else {
            size_t i = 0;
            while (i < n && (ptr[i] == ' ' || ptr[i] == '\t' || ptr[i] == '\r' || ptr[i] == '\n'))
                i++;
            if (i == n)
                return n; /* nothing to sniff yet */
            st->mode = ptr[i] == '{' ? OA_JSON : OA_SSE;
        }
    }
    switch (st->mode) {
    case OA_SSE:
        if (svc_sse_feed(&st->sse, ptr, n) == 0)
            return n;
        if (st->sse.too_big)
            st->abort = OA_TOOBIG;
        return 0;
    case OA_JSON:
        if ((long)(st->body.len + n) > OA_MAX_BODY) {
            st->abort = OA_TOOBIG;
            return 0;
        }
        svc_buf_add(&st->body, ptr, n);
        return n;
    default:
        svc_buf_add(&st->body, ptr,
                    st->body.len + n <= OA_MAX_ERR_BODY ? n : OA_MAX_ERR_BODY - st->body.len);
        return n;
    }
}

static double oa_header_seconds(const char *v, size_t n)
{
    char tmp[64], *end;
    if (n >= sizeof tmp)
        return -1;
    snprintf(tmp, sizeof tmp, "%.*s", (int)n, v);
    double s = strtod(tmp, &end); /* past leading white space */
    end += strspn(end, " \t\r\n");
    if (end == tmp || *end || !(s >= 0))
        return -1; /* HTTP dates are not honoured */
    return s;
}

static size_t oa_header(char *buf, size_t size, size_t nmemb, void *ud)
{
    struct oa *st = ud;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        st->retry_after = -1; /* a new response (after 100 Continue, say) */
        st->retry_after_ms = -1;
    } else if (n > 15 && strncasecmp(buf, "retry-after-ms:", 15) == 0) {
        st->retry_after_ms = oa_header_seconds(buf + 15, n - 15);
    } else if (n > 12 && strncasecmp(buf, "retry-after:", 12) == 0) {
        st->retry_after = oa_header_seconds(buf + 12, n - 12);
    }
    st->last_data = svc_time_monotonic();
    return n;
}

/* Cancel polling and idle pings while the transfer runs. */
static int oa_poll(struct oa *st)
{
    const struct svc_model_call *call = st->call;
    double now = svc_time_monotonic();
    if (now - st->last_poll >= OA_POLL_S) {
        st->last_poll = now;
        if (call->should_cancel && call->should_cancel(call->ctx)) {
            st->abort = OA_CANCEL;
            return 1;
        }
    }
    if (call->on_idle && now - st->last_data >= 1.0 && now - st->last_idle >= 1.0) {
        st->last_idle = now;
        if (call->on_idle(call->ctx)) {
            st->abort = OA_GONE;
            return 1;
        }
    }
    return 0;
}

static int oa_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    return oa_poll(ud);
}

/* The server's message from an error body (heap), or NULL; its error.param (a field of the
 * request) into param. */
static char *oa_error_message(const char *body, char *param, size_t psz)
{
    size_t len = strlen(body);
    json_object *o = NULL;
    char *msg = NULL;
    if (len == 0)
        return NULL;
    if (svc_json_parse(body, len, &o, NULL) == 0) {
        const char *m = oa_message_of(json_object_object_get(o, "error"));
        if (!m)
            m = svc_json_str(o, "message", svc_json_str(o, "detail", NULL));
        snprintf(param, psz, "%s", svc_json_str(svc_json_obj(o, "error"), "param", ""));
        msg = m && *m ? svc_xstrdup(m) : NULL;
        json_object_put(o);
        if (msg)
            return msg;
    }
    /* Not an error object: a short, one-line excerpt of the body. */
    size_t cut = len < 200 ? len : 200;
    char *excerpt = svc_xstrndup(body, cut);
    svc_err_oneline(excerpt, true);
    size_t from = strspn(excerpt, " "), l = strlen(excerpt);
    while (l > from && excerpt[l - 1] == ' ')
        l--;
    if (l > from)
        svc_xasprintf(&msg, "%.*s%s", (int)(l - from), excerpt + from, cut < len ? "..." : "");
    free(excerpt);
    return msg;
}

static bool oa_connect_error(CURLcode cc)
{
    static const CURLcode retried[] = {CURLE_COULDNT_RESOLVE_PROXY,
                                       CURLE_COULDNT_RESOLVE_HOST,
                                       CURLE_COULDNT_CONNECT,
                                       CURLE_SEND_ERROR,
                                       CURLE_RECV_ERROR,
                                       CURLE_GOT_NOTHING,
                                       CURLE_PARTIAL_FILE,
                                       CURLE_SSL_CONNECT_ERROR,
                                       CURLE_HTTP2,
                                       CURLE_HTTP2_STREAM};
    for (size_t i = 0; i < sizeof retried / sizeof *retried; i++)
        if (cc == retried[i])
            return true;
    return false;
}

/* The verdict of an attempt whose answer could not be taken (st->abort says why): the
 * client left, or the server reported an error (retried while nothing has reached the
 * client yet). */
static enum oa_result oa_chunk_failed(struct oa *st, struct svc_err *err)
{
    if (st->abort == OA_GONE) {
        svc_err_set(err, SVC_E_CANCELLED, "client went away");
        return OA_FAIL;
    }
    oa_fail(st, err, SVC_E_UPSTREAM, "model server error: %s", st->stream_error);
    return st->delivered ? OA_FAIL : OA_RETRY;
}

/* One HTTP attempt. */
static enum oa_result oa_attempt(struct oa *st, struct svc_err *err)
{
    const struct svc_model_call *call = st->call;
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(st->h, CURLOPT_ERRORBUFFER, errbuf);
    st->last_data = st->last_idle = st->last_poll = svc_time_monotonic();
    CURLcode cc = curl_easy_perform(st->h);
    long status = 0;
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(st->h, CURLOPT_ERRORBUFFER, NULL);

    switch (st->abort) {
    case OA_CANCEL:
        svc_err_set(err, SVC_E_CANCELLED, "run cancelled");
        return OA_FAIL;
    case OA_TOOBIG:
        return oa_fail(st, err, SVC_E_UPSTREAM, "the model server's answer is too large");
    case OA_GONE:
    case OA_STREAMERR:
        return oa_chunk_failed(st, err);
    case OA_NONE:
        break;
    }
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        if (status == 0 && st->mode == OA_UNKNOWN && errbuf[0] &&
            strstr(errbuf, "onnect")) /* "Connection timed out", "connect timeout" */
            return oa_fail(st, err, SVC_E_UPSTREAM_TIMEOUT,
                           "could not connect to the model server in time: %s", errbuf);
        return oa_fail(st, err, SVC_E_UPSTREAM_TIMEOUT,
                       "the model server did not answer within %d s", call->cfg->model.timeout_s);
    }
    if (status >= 300) {
        /* redact the whole body before any excerpt is cut from it */
        char *body = svc_openai_redact(st->body.data ? st->body.data : "", st->key);
        char param[sizeof err->param] = "";
        char *m = oa_error_message(body, param, sizeof param);
        bool refused = status == 400 || status == 422;
        oa_fail(st, err, refused ? SVC_E_UPSTREAM_REFUSED : SVC_E_UPSTREAM,
                "model server answered HTTP %ld%s%s", status, m ? ": " : "", m ? m : "");
        if (refused && err) /* the field the server names, so the client knows which it refused */
            snprintf(err->param, sizeof err->param, "%s", param);
        free(body);
        free(m);
        return status == 429 || status >= 500 ? OA_RETRY : OA_FAIL;
    }
    if (cc != CURLE_OK) {
        oa_fail(st, err, SVC_E_UPSTREAM, "%s: %s",
                status == 0 ? "cannot reach the model server"
                            : "the connection to the model server failed",
                errbuf[0] ? errbuf : curl_easy_strerror(cc));
        return oa_connect_error(cc) && !st->delivered ? OA_RETRY : OA_FAIL;
    }
    if (st->mode == OA_JSON) {
        json_object *o = NULL;
        if (svc_json_parse(st->body.data ? st->body.data : "", st->body.len, &o, NULL) != 0 ||
            !json_object_is_type(o, json_type_object)) {
            json_object_put(o);
            return oa_fail(st, err, SVC_E_UPSTREAM, "the model server's answer is not valid JSON");
        }
        int rc = oa_chunk(st, o, true);
        json_object_put(o);
        if (rc)
            return oa_chunk_failed(st, err);
    } else if (st->mode == OA_SSE) {
        /* a last line without its newline, a last event without its blank line */
        if (svc_sse_end(&st->sse) != 0)
            return oa_chunk_failed(st, err);
    }
    if (!st->got_event)
        return oa_fail(st, err, SVC_E_UPSTREAM, "the model server sent an empty answer (HTTP %ld)",
                       status);
    return OA_OK;
}

/* Wait before a retry, still polling for cancellation. 0, or -1 with err when cancelled. */
static int oa_backoff(struct oa *st, int attempt, struct svc_err *err)
{
    double delay = st->retry_after_ms >= 0 ? st->retry_after_ms / 1000.0
                   : st->retry_after >= 0  ? st->retry_after
                                           : fmin(ldexp(0.5, attempt), OA_BACKOFF_CAP_S);
    if (delay > OA_RETRY_AFTER_CAP_S)
        delay = OA_RETRY_AFTER_CAP_S;
    double until = svc_time_monotonic() + delay;
    st->last_data = st->last_idle = svc_time_monotonic();
    st->last_poll = 0;
    for (;;) {
        st->abort = OA_NONE;
        if (oa_poll(st)) {
            svc_err_set(err, SVC_E_CANCELLED,
                        st->abort == OA_CANCEL ? "run cancelled" : "client went away");
            return -1;
        }
        double left = until - svc_time_monotonic();
        if (left <= 0)
            return 0;
        svc_sleep_s(left < OA_POLL_S ? left : OA_POLL_S);
    }
}

static json_object *oa_tool_uses(struct oa *st, size_t *arg_chars)
{
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < st->ntools; i++) {
        struct oa_tool *t = &st->tools[i];
        if (!t->name || !*t->name)
            continue;
        *arg_chars += strlen(t->name) + t->args.len;
        json_object *input = svc_openai_args(t->args.data ? t->args.data : "");
        char idbuf[40] = "call_"; /* a server that gave no id: one of ours */
        if (!t->id || !*t->id)
            svc_random_hex(idbuf + 5, 24);
        const char *id = t->id && *t->id ? t->id : idbuf;
        json_object *tu = svc_json_new_obj("toolUseId", id, "name", t->name, NULL);
        svc_json_set(tu, "input", input);
        json_object_array_add(out, tu);
    }
    return out;
}

int svc_openai_sse_parse(const char *p, size_t n, size_t step, char **text, json_object **tool_uses)
{
    struct svc_model_call call = {0};
    struct oa st = {.call = &call}; /* its svc_bufs empty */
    oa_reset_attempt(&st);
    st.mode = OA_SSE;
    *text = NULL;
    *tool_uses = NULL;
    int rc = 0;
    if (step == 0)
        step = n;
    for (size_t off = 0; off < n && rc == 0; off += step)
        rc = svc_sse_feed(&st.sse, p + off, n - off < step ? n - off : step);
    if (rc == 0) /* the end of the transfer */
        rc = svc_sse_end(&st.sse);
    if (rc == 0) {
        size_t arg_chars = 0;
        *tool_uses = oa_tool_uses(&st, &arg_chars);
        *text = svc_buf_steal(&st.text);
    }
    oa_reset_attempt(&st);
    return rc;
}

/* Attempts until one succeeds, fails for good, or model.max_retries is spent (never once
 * text reached the client). 0 or -1 with err set. */
static int oa_attempts(struct oa *st, struct svc_err *err)
{
    const struct svc_model_call *call = st->call;
    int max_retries = call->cfg->model.max_retries > 0 ? call->cfg->model.max_retries : 0;
    for (int attempt = 0;; attempt++) {
        oa_reset_attempt(st);
        enum oa_result r = oa_attempt(st, err);
        if (r == OA_OK)
            return 0;
        if (r != OA_RETRY || attempt >= max_retries || st->delivered)
            return -1;
        if (call->on_retry)
            call->on_retry(call->ctx, attempt + 1, max_retries + 1, err ? err->message : "");
        if (oa_backoff(st, attempt, err) != 0)
            return -1;
    }
}

/* The reply from a finished stream: text, tool uses, a finish reason that agrees with
 * them, and the server's usage or an estimate of 4 characters a token. */
static void oa_reply(struct oa *st, size_t prompt_chars, struct svc_model_reply *out)
{
    size_t arg_chars = 0;
    *out = st->r; /* usage, finish_reason, logprobs */
    st->r.logprobs = NULL;
    out->tool_uses = oa_tool_uses(st, &arg_chars);
    out->text = svc_buf_steal(&st->text);
    size_t ntu = json_object_array_length(out->tool_uses);
    const char *fr = out->finish_reason;
    if (ntu > 0 && (!*fr || strcmp(fr, "stop") == 0 || strcmp(fr, "function_call") == 0))
        snprintf(out->finish_reason, sizeof out->finish_reason, "tool_calls");
    else if (ntu == 0 &&
             (!*fr || strcmp(fr, "tool_calls") == 0 || strcmp(fr, "function_call") == 0))
        snprintf(out->finish_reason, sizeof out->finish_reason, "stop");
    if (!st->have_usage) {
        out->prompt_tokens = (int64_t)((prompt_chars + 3) / 4);
        out->completion_tokens = (int64_t)((strlen(out->text) + arg_chars + 3) / 4);
    }
}

int svc_model_openai_invoke(const struct svc_model_call *call, struct svc_model_reply *out,
                            struct svc_err *err)
{
    const struct svc_config *cfg = call->cfg;
    const char *base = cfg->model.base_url;
    if (!base || !*base)
        return svc_err_set(err, SVC_E_CONFIG, "model.base_url is not set");
    if (svc_httpc_init(err) != 0)
        return -1;

    /* its svc_bufs empty */
    struct oa st = {.call = call, .key = svc_config_model_api_key(cfg), .h = curl_easy_init()};
    if (!st.h)
        return svc_err_set(err, SVC_E_INTERNAL, "libcurl could not create a handle");
    if (st.key && !*st.key)
        st.key = NULL;
    char *url = NULL, *auth = NULL;
    size_t prompt_chars = 0;
    json_object *req = oa_request_json(call, &prompt_chars);
    char *body = svc_json_dump_compact(req);
    json_object_put(req);
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    svc_xasprintf(&url, "%.*s/chat/completions", (int)bl, base);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: text/event-stream, application/json");
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (st.key) {
        svc_xasprintf(&auth, "Authorization: Bearer %s", st.key);
        hdrs = curl_slist_append(hdrs, auth);
    }
    svc_httpc_setopts(st.h, url, hdrs, body, cfg->model.timeout_s > 0 ? cfg->model.timeout_s : 120,
                      oa_write, oa_header, oa_progress, &st);
    int rc = oa_attempts(&st, err);
    if (rc == 0)
        oa_reply(&st, prompt_chars, out);
    else
        out->streamed = st.text.len;
    oa_reset_attempt(&st);
    curl_easy_cleanup(st.h);
    curl_slist_free_all(hdrs);
    if (auth) {
        memset(auth, 0, strlen(auth));
        free(auth);
    }
    free(url);
    free(body);
    return rc;
}
