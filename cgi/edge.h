/* edge: what svc-fcgi refuses before a route does any work (SPEC 19), decided here once.
 *   edge_check   the router calls it for every routed request: a state-changing request
 *                (any method but GET, HEAD, OPTIONS) whose Origin names another host than
 *                its Host, whose Origin is "null", or whose Sec-Fetch-Site is cross-site is
 *                403 cross_site_refused; a request with a body whose Content-Type is not
 *                application/json or a +json type is 415 unsupported_media_type. A browser
 *                page of another site can send neither without a preflight svc never grants.
 *   edge_exposed whether this request came through an address beyond loopback (the web
 *                server's REMOTE_ADDR or SERVER_ADDR) to a server with no token and no
 *                users: the warning of GET /api/health. */
#ifndef SVC_EDGE_H
#define SVC_EDGE_H

#include <stdbool.h>

#include "http.h"

int edge_check(struct http_req *r, struct svc_err *err);
bool edge_exposed(const struct http_req *r);

#endif
