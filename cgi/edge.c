/* edge: refusals before any work. See edge.h. */
#include "edge.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "acl.h"
#include "user.h"

static bool safe_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0;
}

/* Whether the request carries a body whose type counts: a length above 0 (not above
 * max_body_bytes: that body is 413's, before its type), or (FastCGI without a length) bytes
 * on its stdin, which a web server that streams a body may send. */
static bool has_body(struct http_req *r)
{
    if (r->content_length > r->cfg->server.max_body_bytes)
        return false;
    if (r->content_length >= 0 || !r->fcgx || safe_method(r->method))
        return r->content_length > 0;
    struct svc_err e;
    return http_read_body(r, &e) < 0 || r->body_len > 0;
}

/* application/json, or application/<anything>+json, parameters aside, any case. */
static bool json_media_type(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, "; \t");
    if (n < 12 || strncasecmp(ct, "application/", 12) != 0)
        return false;
    return (n == 16 && strncasecmp(ct + 12, "json", 4) == 0) ||
           (n > 17 && strncasecmp(ct + n - 5, "+json", 5) == 0);
}

/* host[:port] of s (n bytes) without the scheme's default port, lower-cased into out. */
static void authority(const char *s, size_t n, bool https, char *out, size_t outsz)
{
    const char *dflt = https ? ":443" : ":80";
    size_t dl = strlen(dflt);
    if (n > dl && strncmp(s + n - dl, dflt, dl) == 0)
        n -= dl;
    size_t i = 0;
    for (; i < n && i + 1 < outsz; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

/* Whether Origin names the host the request was sent to (its Host header). */
static bool same_host(const struct http_req *r)
{
    const char *o = r->origin, *sep = strstr(o, "://");
    if (!sep || !r->host)
        return false; /* "null" (a sandboxed frame, a file), or no Host to compare with */
    bool https = (size_t)(sep - o) == 5 && strncasecmp(o, "https", 5) == 0;
    const char *a = sep + 3;
    char from[300], to[300];
    authority(a, strcspn(a, "/"), https, from, sizeof from);
    authority(r->host, strlen(r->host), https, to, sizeof to);
    return from[0] && strcmp(from, to) == 0;
}

int edge_check(struct http_req *r, struct svc_err *err)
{
    if (!safe_method(r->method)) {
        if (r->fetch_site && strcasecmp(r->fetch_site, "cross-site") == 0)
            return svc_err_set(err, SVC_E_CROSS_SITE,
                               "a %s from another site (Sec-Fetch-Site: cross-site) is refused",
                               r->method);
        if (r->origin && !same_host(r))
            return svc_err_set(err, SVC_E_CROSS_SITE,
                               "a %s whose Origin is not this server's host (%.100s) is refused",
                               r->method, r->host ? r->host : "no Host header");
    }
    if (has_body(r) && !json_media_type(r->content_type))
        return svc_err_set(err, SVC_E_MEDIA_TYPE,
                           "the body must be JSON, sent as Content-Type: application/json "
                           "(got %.100s)",
                           r->content_type ? r->content_type : "no Content-Type");
    return 0;
}

bool edge_exposed(const struct http_req *r)
{
    if (svc_config_api_token(r->cfg) || svc_users_enabled(r->cfg))
        return false;
    return (r->remote_addr[0] && !svc_acl_text_loopback(r->remote_addr)) ||
           (r->server_addr[0] && !svc_acl_text_loopback(r->server_addr));
}
