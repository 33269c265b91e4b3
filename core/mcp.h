/* mcp: the client side of the Model Context Protocol (SPEC 16), over json-c and libcurl.
 * Transports: stdio (the server a child of this process, extension.h's svc_ext_spawn:
 * newline-delimited JSON-RPC 2.0 on its stdin and stdout, each stderr line to the log) and
 * Streamable HTTP (each message a POST with Accept: application/json, text/event-stream;
 * a JSON or an SSE answer; Mcp-Session-Id and MCP-Protocol-Version sent once known).
 * A connection initializes (offering 2025-06-18 and taking the revision the server answers
 * among those svc speaks), lists the tools (following nextCursor) and calls them one at a
 * time within timeout_s. A server's ping is answered and its other requests refused
 * (-32601); notifications/tools/list_changed makes the next use list again.
 * Configured servers (cfg->mcp_servers) live in one table per process: a server is started
 * when first needed and kept, restarted when found dead, and stopped after a call that timed
 * out (the next use starts it again). One that cannot start or list is `failed` with
 * last_error, retried at a use SVC_MCP_RETRY_S later, never fatal. A forked child never
 * touches its parent's connections. The program owns the rest of the lifetime: it calls
 * svc_mcp_stop_all when it ends (and a stdio server is SIGKILLed if this process dies).
 * A request's own servers (Responses "type": "mcp") are connections of that request alone.
 * Values of env and headers never reach the log or an answer. */
#ifndef SVC_MCP_H
#define SVC_MCP_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"
#include "tools.h"

#define SVC_MCP_RETRY_S 5.0
#define SVC_MCP_REMOTE_TIMEOUT_S 30 /* a request's own server: one call */

struct svc_mcp_conn;

/* Whether user (NULL: the admin of server.api_token) may use server s: enabled, and its
 * users: empty or naming user. */
bool svc_mcp_usable(const struct svc_mcp_server *s, const char *user);
/* Whether url lies under one of allow (mcp.remote_allow): an http(s) URL without user
 * info whose scheme, host and port are an entry's and whose path starts with its path
 * (parsed, so "http://a:1@b/" is host b, never a). */
bool svc_mcp_url_allowed(char *const *allow, const char *url);
/* The connection of configured server name (borrowed from the table), NULL when none. */
struct svc_mcp_conn *svc_mcp_configured(const struct svc_config *cfg, const char *name);
/* A connection of a request's own server (Responses "type": "mcp"): label names it, url is
 * where, headers ({name: value}, may be NULL) go with every message. Closed with
 * svc_mcp_remote_close; nothing is sent before the first use. */
struct svc_mcp_conn *svc_mcp_remote_open(const char *label, const char *url, json_object *headers,
                                         int timeout_s);
void svc_mcp_remote_close(struct svc_mcp_conn *c);
/* The server's tools as it lists them ([{name, description, inputSchema, ...}], filtered by
 * allowed_tools), starting and listing as needed: 0 with *tools (borrowed until the next
 * call on c), or -1 with err (the server's state says failed). */
int svc_mcp_list(struct svc_mcp_conn *c, json_object **tools, struct svc_err *err);
/* Call tool (its bare name) with args (borrowed; NULL is {}): *out as tools.h, its blocks the
 * Strands toolResult content (text as text, an image as an image block), structuredContent
 * apart (a json block too when there is no content); ok false for isError, a JSON-RPC error, a dead
 * server, a timeout or a cancel (should_cancel, polled, may be NULL), with the reason as its text.
 */
void svc_mcp_call(struct svc_mcp_conn *c, const char *tool, json_object *args,
                  int (*should_cancel)(void *ctx), void *ctx, struct svc_tool_result *out);
/* The server as GET /api/extensions shows it: {name, transport, state ("ready", "failed",
 * "not started"), tools: [{name, description}], last_error}, listing first when start. */
json_object *svc_mcp_status(struct svc_mcp_conn *c, bool start);
/* Stop every server of the table (stdio children killed and reaped, HTTP sessions ended). */
void svc_mcp_stop_all(void);

#endif
