#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include "err.h"

static void default_sink(const char *line, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "svc: %s\n", line);
}

static struct {
    svc_log_sink fn;
    void *ctx;
} sink = {default_sink, NULL};

void svc_log_set_sink(svc_log_sink fn, void *ctx)
{
    sink.fn = fn ? fn : default_sink;
    sink.ctx = fn ? ctx : NULL;
}

void svc_logf(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    svc_err_oneline(line, false);
    sink.fn(line, sink.ctx);
}
