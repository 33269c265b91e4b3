/* httpc: the HTTP client pieces the model provider (model_openai.c) and the MCP client
 * (mcp.c) share, over libcurl.
 *   svc_httpc_init     libcurl's global initialisation, once per process.
 *   svc_httpc_setopts  one request of handle h: a POST of body (NULL: a DELETE) to url with
 *                      hdrs, timeout_s for the whole of it (connecting at most 10 s of it),
 *                      the answer's body to on_body and its header lines to on_header as they
 *                      arrive, on_progress (may be NULL) called while it runs (nonzero
 *                      aborts the transfer); ctx is the data of all three.
 *   struct svc_sse     the server-sent events reader: feed it bytes as they arrive and it
 *                      hands each event's data (its data: lines joined by "\n") to on_event;
 *                      event:, id:, retry: lines and comments are skipped. A data: line that
 *                      completes a JSON object (or is [DONE]) is an event at once, for servers
 *                      that put no blank line between events. on_event returns 0 to go on,
 *                      1 when the stream is over (the rest is ignored), -1 to stop reading.
 *                      A line or an event over SVC_SSE_MAX bytes stops it (too_big). */
#ifndef SVC_HTTPC_H
#define SVC_HTTPC_H

#include <curl/curl.h>
#include <stdbool.h>

#include "err.h"
#include "util.h"

#define SVC_SSE_MAX (16L * 1024 * 1024)

int svc_httpc_init(struct svc_err *err);
void svc_httpc_setopts(CURL *h, const char *url, struct curl_slist *hdrs, const char *body,
                       long timeout_s, curl_write_callback on_body, curl_write_callback on_header,
                       curl_xferinfo_callback on_progress, void *ctx);

struct svc_sse {
    int (*on_event)(void *ctx, const char *data, size_t len);
    void *ctx;
    struct svc_buf line, event;
    bool done, too_big;
};

void svc_sse_init(struct svc_sse *s, int (*on_event)(void *ctx, const char *data, size_t len),
                  void *ctx);
/* 0, or -1 when on_event stopped it or it was too big. */
int svc_sse_feed(struct svc_sse *s, const char *p, size_t n);
/* The end of the transfer: what is left of the last line, then the pending event. */
int svc_sse_end(struct svc_sse *s);
void svc_sse_free(struct svc_sse *s);

#endif
