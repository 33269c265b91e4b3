#include "metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const double buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                 1,     2.5,   5,    10,    30,   60,  300};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

/* The statuses svc and nginx answer with; any other counts as "other". */
static const int statuses[] = {200, 201, 202, 204, 206, 304, 400, 401, 403, 404, 405, 406, 408,
                               409, 410, 413, 415, 422, 429, 431, 499, 500, 501, 502, 503, 504};
#define NSTATUS (sizeof statuses / sizeof statuses[0] + 1)

static const char *const run_statuses[] = {"done", "cancelled", "error"};
#define NRUN 3
#define MINUTES 60

struct hist {
    _Atomic uint64_t le[NBUCKETS]; /* not cumulative here; rendering sums them */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
};

struct minute {
    _Atomic int64_t minute; /* minutes since the epoch this slot counts */
    _Atomic uint64_t turns, errors;
};

struct shm {
    _Atomic uint64_t http[SVC_METRICS_ROUTES][NSTATUS];
    struct hist http_dur[SVC_METRICS_ROUTES];
    _Atomic uint64_t runs[NRUN];
    struct hist run_dur, model_dur, lock_wait;
    _Atomic uint64_t model_err[SVC_E__MAX];
    _Atomic uint64_t index_rebuilds;
    _Atomic int64_t workers;
    struct minute minutes[MINUTES];
};

/* This process's counters until svc_metrics_share points m at the shared ones. */
static struct shm own;
static struct shm *m = &own;

size_t svc_metrics_size(void)
{
    return sizeof(struct shm);
}

void svc_metrics_share(void *region)
{
    m = region;
}

static void hist_add(struct hist *h, double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    size_t i = 0;
    while (i < NBUCKETS && seconds > buckets[i])
        i++;
    if (i < NBUCKETS)
        atomic_fetch_add_explicit(&h->le[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)(seconds * 1e6), memory_order_relaxed);
}

void svc_metrics_http(int route, int status, double seconds)
{
    if (route < 0 || route >= SVC_METRICS_ROUTES)
        route = SVC_METRICS_ROUTES - 1;
    size_t s = NSTATUS - 1;
    for (size_t i = 0; i + 1 < NSTATUS; i++)
        if (statuses[i] == status)
            s = i;
    atomic_fetch_add_explicit(&m->http[route][s], 1, memory_order_relaxed);
    hist_add(&m->http_dur[route], seconds);
}

/* The slot of the current minute, cleared when it last counted an older minute. */
static struct minute *minute_now(void)
{
    int64_t now = (int64_t)(time(NULL) / 60);
    struct minute *slot = &m->minutes[now % MINUTES];
    int64_t seen = atomic_load(&slot->minute);
    if (seen != now && atomic_compare_exchange_strong(&slot->minute, &seen, now)) {
        atomic_store(&slot->turns, 0);
        atomic_store(&slot->errors, 0);
    }
    return slot;
}

void svc_metrics_run(const char *status, double seconds)
{
    int i = 0;
    while (i < NRUN - 1 && strcmp(run_statuses[i], status) != 0)
        i++;
    atomic_fetch_add_explicit(&m->runs[i], 1, memory_order_relaxed);
    hist_add(&m->run_dur, seconds);
    struct minute *slot = minute_now();
    atomic_fetch_add_explicit(&slot->turns, 1, memory_order_relaxed);
    if (i == NRUN - 1)
        atomic_fetch_add_explicit(&slot->errors, 1, memory_order_relaxed);
}

void svc_metrics_model(double seconds, enum svc_errcode failure)
{
    hist_add(&m->model_dur, seconds);
    if (failure > SVC_OK && failure < SVC_E__MAX)
        atomic_fetch_add_explicit(&m->model_err[failure], 1, memory_order_relaxed);
}

void svc_metrics_lock_wait(double seconds)
{
    hist_add(&m->lock_wait, seconds);
}

void svc_metrics_index_rebuild(void)
{
    atomic_fetch_add_explicit(&m->index_rebuilds, 1, memory_order_relaxed);
}

void svc_metrics_workers(int n)
{
    atomic_store(&m->workers, n);
}

static void head(struct svc_buf *b, const char *name, const char *type, const char *help)
{
    svc_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The series of one histogram (after its head when help is given); labels is "" or
 * `key="value",` pairs ending in a comma. */
static void hist_render(struct svc_buf *b, const char *name, const char *help, const char *labels,
                        const struct hist *h)
{
    uint64_t cum = 0;
    if (help)
        head(b, name, "histogram", help);
    for (size_t i = 0; i < NBUCKETS; i++) {
        cum += atomic_load_explicit(&h->le[i], memory_order_relaxed);
        svc_buf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, buckets[i],
                       (unsigned long long)cum);
    }
    uint64_t count = atomic_load_explicit(&h->count, memory_order_relaxed);
    char braced[272] = ""; /* the labels without the last comma, in braces */
    if (*labels)
        snprintf(braced, sizeof braced, "{%.*s}", (int)strlen(labels) - 1, labels);
    svc_buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)count);
    svc_buf_printf(b, "%s_sum%s %.6f\n", name, braced, (double)atomic_load(&h->sum_us) / 1e6);
    svc_buf_printf(b, "%s_count%s %llu\n", name, braced, (unsigned long long)count);
}

static void http_render(struct svc_buf *b, svc_metrics_route_fn route)
{
    char labels[SVC_METRICS_ROUTES][256]; /* each route's `method="GET",route="/x",` */
    head(b, "svc_http_requests_total", "counter", "HTTP requests answered, by route and status.");
    for (int i = 0; i < SVC_METRICS_ROUTES; i++) {
        const char *method = "", *pattern = route(i, &method);
        snprintf(labels[i], sizeof labels[i], "method=\"%s\",route=\"%s\",", pattern ? method : "",
                 pattern ? pattern : "none");
        for (size_t s = 0; s < NSTATUS; s++) {
            uint64_t n = atomic_load_explicit(&m->http[i][s], memory_order_relaxed);
            if (n == 0)
                continue;
            char st[8] = "other";
            if (s + 1 < NSTATUS)
                snprintf(st, sizeof st, "%d", statuses[s]);
            svc_buf_printf(b, "svc_http_requests_total{%sstatus=\"%s\"} %llu\n", labels[i], st,
                           (unsigned long long)n);
        }
    }
    head(b, "svc_http_request_duration_seconds", "histogram", "HTTP request durations by route.");
    for (int i = 0; i < SVC_METRICS_ROUTES; i++)
        if (atomic_load(&m->http_dur[i].count) != 0)
            hist_render(b, "svc_http_request_duration_seconds", NULL, labels[i], &m->http_dur[i]);
}

static void runs_render(struct svc_buf *b)
{
    head(b, "svc_runs_total", "counter", "Runs (turns) ended, by status.");
    for (int i = 0; i < NRUN; i++)
        svc_buf_printf(b, "svc_runs_total{status=\"%s\"} %llu\n", run_statuses[i],
                       (unsigned long long)atomic_load(&m->runs[i]));
    hist_render(b, "svc_run_duration_seconds", "Run durations.", "", &m->run_dur);
    hist_render(b, "svc_model_request_duration_seconds", "Model call durations.", "",
                &m->model_dur);
    head(b, "svc_model_errors_total", "counter", "Model calls that failed, by error code.");
    for (int c = SVC_E_INTERNAL; c < SVC_E__MAX; c++) {
        uint64_t n = atomic_load(&m->model_err[c]);
        if (n)
            svc_buf_printf(b, "svc_model_errors_total{code=\"%s\"} %llu\n",
                           svc_err_name((enum svc_errcode)c), (unsigned long long)n);
    }
}

/* Turns and run errors of each of the last 60 minutes (0: the current one), for the
 * dashboard's chart: what a scraper would derive from svc_runs_total, kept for a page. */
static void minutes_render(struct svc_buf *b)
{
    int64_t now = (int64_t)(time(NULL) / 60);
    const char *names[2] = {"svc_turns_per_minute", "svc_run_errors_per_minute"};
    for (int k = 0; k < 2; k++) {
        head(b, names[k], "gauge",
             k ? "Runs ended in error in each of the last 60 minutes."
               : "Runs ended in each of the last 60 minutes.");
        for (int ago = 0; ago < MINUTES; ago++) {
            const struct minute *slot = &m->minutes[(now - ago) % MINUTES];
            uint64_t n = 0;
            if (atomic_load(&slot->minute) == now - ago)
                n = atomic_load(k ? &slot->errors : &slot->turns);
            svc_buf_printf(b, "%s{minutes_ago=\"%d\"} %llu\n", names[k], ago,
                           (unsigned long long)n);
        }
    }
}

void svc_metrics_render(struct svc_buf *b, svc_metrics_route_fn route, int64_t sessions)
{
    http_render(b, route);
    runs_render(b);
    hist_render(b, "svc_lock_wait_seconds", "Time spent waiting for a session lock.", "",
                &m->lock_wait);
    head(b, "svc_index_rebuilds_total", "counter", "Listing index rebuilds from the directories.");
    svc_buf_printf(b, "svc_index_rebuilds_total %llu\n",
                   (unsigned long long)atomic_load(&m->index_rebuilds));
    if (sessions >= 0) {
        head(b, "svc_sessions", "gauge", "Sessions in the listing index.");
        svc_buf_printf(b, "svc_sessions %lld\n", (long long)sessions);
    }
    head(b, "svc_workers", "gauge", "Worker processes of the pool.");
    svc_buf_printf(b, "svc_workers %lld\n", (long long)atomic_load(&m->workers));
    minutes_render(b);
}
