// http_fuzz: libFuzzer harness for svc-fcgi's request layer, in plain-CGI mode: the input
// is "METHOD\nURI\nIdempotency-Key\nX-Session-Id\nbody". It covers the FastCGI/CGI params,
// query strings and percent-decoding, list cursors and filters, route parameters (session
// and run ids), the Idempotency-Key header and request bodies after parsing (messages,
// content parts). Every route but the one that forks a detached runner
// (POST /api/chat/runs) is dispatched against a root on /dev/shm; the answer goes to
// /dev/null. Inputs asking the echo model to sleep (/slow) are skipped.
// Built by `make fuzz` (build-fuzz/http_fuzz); run: build-fuzz/http_fuzz -max_total_time=600
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "http.h"
#include "util.h"

#include "sandbox.h"

static struct svc_config cfg;

static char *field(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *e = nl ? nl : end;
    char *s = strndup(*p, (size_t)(e - *p));
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.sessions.root) {
        fuzz_sandbox("http");
        svc_config_defaults(&cfg, NULL);
        fuzz_sandbox_config(&cfg, NULL, 0);
        if (!freopen("/dev/null", "w", stdout))
            abort();
    }
    if (memmem(data, size, "/slow", 5))
        return 0;
    const char *p = (const char *)data, *end = p + size;
    char *method = field(&p, end), *uri = field(&p, end), *key = field(&p, end),
         *sid = field(&p, end);
    size_t blen = (size_t)(end - p);
    char *body = NULL;
    if (strcmp(method, "POST") == 0 && strstr(uri, "/runs") && !strstr(uri, "/cancel"))
        goto out; /* would fork a detached runner */
    setenv("REQUEST_METHOD", method, 1);
    setenv("REQUEST_URI", uri, 1);
    char *q = strchr(uri, '?');
    setenv("QUERY_STRING", q ? q + 1 : "", 1);
    if (*key)
        setenv("HTTP_IDEMPOTENCY_KEY", key, 1);
    else
        unsetenv("HTTP_IDEMPOTENCY_KEY");
    if (*sid)
        setenv("HTTP_X_SESSION_ID", sid, 1);
    else
        unsetenv("HTTP_X_SESSION_ID");
    setenv("CONTENT_TYPE", "application/json", 1);
    char len[32];
    snprintf(len, sizeof len, "%zu", blen);
    setenv("CONTENT_LENGTH", len, 1);
    body = malloc(blen ? blen : 1); /* fmemopen takes a writable buffer */
    if (body)
        memcpy(body, blen ? p : "x", blen ? blen : 1);
    FILE *in = body ? fmemopen(body, blen ? blen : 1, "r") : NULL;
    if (!in)
        goto out;
    FILE *saved = stdin;
    stdin = in;
    struct http_req r;
    http_req_init(&r, NULL, &cfg);
    http_dispatch(&r);
    http_finish(&r);
    http_req_free(&r);
    stdin = saved;
    fclose(in);
out:
    free(body);
    free(method);
    free(uri);
    free(key);
    free(sid);
    return 0;
}
