#include "httpc.h"

#include <string.h>

#include "jsonx.h"

#define HTTPC_CONNECT_TIMEOUT_S 10L

int svc_httpc_init(struct svc_err *err)
{
    static int done;
    if (done)
        return 0;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return svc_err_set(err, SVC_E_INTERNAL, "libcurl could not be initialised");
    done = 1;
    return 0;
}

void svc_httpc_setopts(CURL *h, const char *url, struct curl_slist *hdrs, const char *body,
                       long timeout_s, curl_write_callback on_body, curl_write_callback on_header,
                       curl_xferinfo_callback on_progress, void *ctx)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    curl_easy_setopt(h, CURLOPT_USERAGENT, "svc/" SVC_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                     timeout_s < HTTPC_CONNECT_TIMEOUT_S ? timeout_s : HTTPC_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, ctx);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, ctx);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, on_progress ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, ctx);
}

/* ---- server-sent events ---- */

void svc_sse_init(struct svc_sse *s, int (*on_event)(void *ctx, const char *data, size_t len),
                  void *ctx)
{
    *s = (struct svc_sse){.on_event = on_event, .ctx = ctx}; /* its svc_bufs empty */
}

void svc_sse_free(struct svc_sse *s)
{
    svc_buf_free(&s->line);
    svc_buf_free(&s->event);
}

static int sse_dispatch(struct svc_sse *s)
{
    if (s->event.len == 0 || s->done)
        return 0;
    int rc = s->on_event(s->ctx, s->event.data, s->event.len);
    svc_buf_free(&s->event);
    if (rc == 1)
        s->done = true;
    return rc < 0 ? -1 : 0;
}

static int sse_line(struct svc_sse *s, const char *p, size_t n)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (n == 0)
        return sse_dispatch(s);
    if (p[0] == ':' || s->done || n < 5 || strncmp(p, "data:", 5) != 0)
        return 0; /* a comment, event:, id:, retry: */
    p += 5;
    n -= 5;
    if (n > 0 && *p == ' ') {
        p++;
        n--;
    }
    if (s->event.len > 0)
        svc_buf_add(&s->event, "\n", 1);
    svc_buf_add(&s->event, p, n);
    s->too_big = (long)s->event.len > SVC_SSE_MAX;
    if (s->too_big)
        return -1;
    json_object *probe = NULL; /* a whole JSON object is an event at once */
    bool whole =
        strcmp(s->event.data, "[DONE]") == 0 ||
        (s->event.data[0] == '{' && svc_json_parse(s->event.data, s->event.len, &probe, NULL) == 0);
    json_object_put(probe);
    return whole ? sse_dispatch(s) : 0;
}

int svc_sse_feed(struct svc_sse *s, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        if (!nl || s->line.len > 0)
            svc_buf_add(&s->line, p, seg);
        if (!nl) {
            s->too_big = (long)s->line.len > SVC_SSE_MAX;
            return s->too_big ? -1 : 0;
        }
        int rc = s->line.len > 0 ? sse_line(s, s->line.data, s->line.len) : sse_line(s, p, seg);
        s->line.len = 0;
        if (rc)
            return -1;
        p += seg + 1;
        n -= seg + 1;
    }
    return 0;
}

int svc_sse_end(struct svc_sse *s)
{
    int rc = s->line.len > 0 ? sse_line(s, s->line.data, s->line.len) : 0;
    s->line.len = 0;
    return rc == 0 ? sse_dispatch(s) : -1;
}
