/* h_base: the base endpoints of SPEC 4.4: health, config, jobs, extensions, metrics, and the
 * OpenAPI document (SPEC 18). */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "config.h"
#include "edge.h"
#include "fsio.h"
#include "handlers.h"
#include "jobs.h"
#include "jsonx.h"
#include "metrics.h"
#include "query.h"
#include "tools.h"
#include "user.h"
#include "util.h"

static struct {
    double at;
    int master_pid;
} started;

void h_base_start(double at, int master_pid)
{
    started.at = at;
    started.master_pid = master_pid;
}

double h_base_started(void)
{
    return started.at;
}

/* What the health body is made of: it changes once a second (uptime_s) or when the root's
 * state does, so a polled health check reuses the last text while its key is the same. */
struct health_key {
    const struct svc_config *cfg;
    int pid; /* the worker's: a forked child builds its own */
    int64_t uptime;
    bool writable, exposed;
    char reason[512]; /* when not writable */
};

static struct {
    struct health_key key;
    char *text; /* compact JSON (heap) */
} last_health;

int h_health(struct http_req *r, struct svc_err *err)
{
    const struct svc_config *cfg = r->cfg;
    struct health_key k;
    memset(&k, 0, sizeof k); /* the padding too: keys are compared with memcmp */
    k.cfg = cfg;
    k.pid = svc_pid();
    k.uptime = (int64_t)(svc_time_now() - started.at);
    k.writable = svc_dir_writable("session root", cfg->sessions.root, k.reason, sizeof k.reason);
    k.exposed = edge_exposed(r);
    bool degraded = cfg->sessions.enabled && !k.writable;
    bool cache = svc_cache_on(cfg, -1);
    if (cache && last_health.text && memcmp(&k, &last_health.key, sizeof k) == 0)
        return http_reply(r, degraded ? 503 : 200, svc_json_new_raw(last_health.text));

    json_object *o = svc_json_new_obj("status", degraded ? "degraded" : "ok", NULL);
    json_object *reasons = json_object_new_array(); /* what makes it degraded, each named */
    if (degraded) {
        svc_json_set_str(o, "reason", k.reason);
        json_object_array_add(reasons, json_object_new_string(k.reason));
    }
    svc_json_set(o, "reasons", reasons);
    svc_json_set_str(o, "version", SVC_VERSION);
    svc_json_set_int(o, "pid", started.master_pid);
    svc_json_set_int(o, "worker_pid", (int64_t)svc_pid());
    svc_json_set_int(o, "uptime_s", k.uptime);
    json_object *s = json_object_new_object();
    svc_json_set_bool(s, "enabled", cfg->sessions.enabled);
    svc_json_set_str(s, "provider",
                     cfg->sessions.provider == SVC_PROVIDER_NATIVE_FILE ? "native_file"
                                                                        : "svc_repository");
    svc_json_set_bool(s, "root_writable", k.writable);
    bool local;
    svc_json_set_str(s, "filesystem", svc_fs_kind(cfg->sessions.root, &local));
    svc_json_set_bool(s, "shared", svc_fs_shared(cfg->sessions.shared, cfg->sessions.root));
    svc_json_set(o, "sessions", s);
    svc_json_set(o, "model",
                 svc_json_new_obj("provider",
                                  cfg->model.provider == SVC_MODEL_OPENAI ? "openai" : "echo",
                                  "name", cfg->model.name, NULL));
    json_object *warn = json_object_new_array();
    if (k.exposed)
        json_object_array_add(
            warn, json_object_new_string(
                      "no token and no users, and this server is reachable beyond loopback (this "
                      "request came through a public address): whoever reaches it reads and runs "
                      "every session; set server.api_token or server.users, or have the web "
                      "server authenticate (docs/OPS.md, \"Safe by default\")"));
    svc_json_set(o, "warnings", warn);
    free(last_health.text);
    last_health.text = cache ? svc_json_dump_compact(o) : NULL;
    last_health.key = k;
    return http_reply(r, degraded ? 503 : 200, o);
}

int h_config(struct http_req *r, struct svc_err *err)
{
    return http_reply(r, 200, svc_config_to_json(r->cfg));
}

/* Who the token acts for, so that a page can say who is signed in (SPEC 14). */
int h_me(struct http_req *r, struct svc_err *err)
{
    json_object *o = svc_json_new_obj("user_id", r->user.id, NULL);
    svc_json_set_bool(o, "admin", r->user.admin);
    svc_json_set_bool(o, "users", svc_users_enabled(r->cfg));
    return http_reply(r, 200, o);
}

int h_jobs(struct http_req *r, struct svc_err *err)
{
    json_object *o = json_object_new_object();
    svc_json_set(o, "jobs", svc_jobs_list(r->cfg, svc_jobs_now())); /* core/jobs.h */
    return http_reply(r, 200, o);
}

int h_extensions(struct http_req *r, struct svc_err *err)
{
    return http_reply(r, 200, svc_tools_list(r->cfg, r->user.id, r->user.admin));
}

/* GET /api/metrics: the pool's counters in the Prometheus text format (core/metrics.h). */
int h_metrics(struct http_req *r, struct svc_err *err)
{
    struct svc_buf b;
    svc_buf_init(&b);
    svc_metrics_render(&b, http_route_name, svc_sessions_count(r->cfg));
    http_send_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "", b.len);
    svc_buf_free(&b);
    return 0;
}

/* The OpenAPI document, converted once per worker from docs/openapi.yaml as compiled in. */
static struct {
    json_object *doc;
} openapi;

/* GET /api/openapi.json: docs/openapi.yaml as JSON, with this build's version and a server
 * at the prefix this request came through (the base path), so its paths resolve. */
int h_openapi(struct http_req *r, struct svc_err *err)
{
    if (!openapi.doc) {
        const char *y = h_openapi_yaml();
        if (svc_config_yaml_to_json("docs/openapi.yaml", y, strlen(y), &openapi.doc, err) < 0)
            return -1;
        svc_json_set_str(svc_json_obj(openapi.doc, "info"), "version", SVC_VERSION);
    }
    size_t base = r->route ? strlen(r->path) - strlen(r->route) : 0;
    json_object *server = json_object_new_object();
    svc_json_set(server, "url",
                 json_object_new_string_len(base ? r->path : "/", base ? (int)base : 1));
    json_object *servers = json_object_new_array();
    json_object_array_add(servers, server);
    svc_json_set(openapi.doc, "servers", servers);
    return http_send_json(r, 200, openapi.doc) < 0 ? -1 : 0;
}
