/* metrics: the pool's counters and histograms for GET /api/metrics (Prometheus text format).
 * A pool master maps svc_metrics_size bytes of memory shared with its workers before it
 * forks them and hands them over (svc_metrics_share), so every worker adds to the same
 * counters and any worker answers for the whole pool; elsewhere (the svc tool, plain CGI)
 * they are this process's own. Counters are C11 atomics: recording never takes a lock nor
 * fails a request. Durations are in seconds, each histogram with the same buckets. */
#ifndef SVC_METRICS_H
#define SVC_METRICS_H

#include <stdint.h>

#include "err.h"
#include "util.h"

#define SVC_METRICS_ROUTES 64 /* route slots; the HTTP layer's route index, last = no route */

/* The counters' room, and where they are from now on (zeroed, shared by the pool). */
size_t svc_metrics_size(void);
void svc_metrics_share(void *region);
void svc_metrics_http(int route, int status, double seconds);
/* A run ended: status "done", "cancelled" or "error" (svc_run_status_of). */
void svc_metrics_run(const char *status, double seconds);
void svc_metrics_model(double seconds, enum svc_errcode failure);
void svc_metrics_lock_wait(double seconds);
void svc_metrics_index_rebuild(void);
void svc_metrics_workers(int n);

/* Names of route i for the labels (method and pattern), NULL past the last route. */
typedef const char *(*svc_metrics_route_fn)(int i, const char **method);
/* The whole exposition into b; sessions < 0 leaves out svc_sessions. */
void svc_metrics_render(struct svc_buf *b, svc_metrics_route_fn route, int64_t sessions);

#endif
