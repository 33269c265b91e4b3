/* log: how core/ says something worth an operator's attention (a repaired stale run, an
 * index that could not be updated) without printing itself. The program installs a sink
 * (svc-fcgi: its timestamped log line on stderr); the default sink writes "svc: <line>"
 * to stderr. Lines never carry bodies or secrets. */
#ifndef SVC_LOG_H
#define SVC_LOG_H

typedef void (*svc_log_sink)(const char *line, void *ctx);

/* Install the sink (NULL restores the default). Not thread-safe: call at start-up. */
void svc_log_set_sink(svc_log_sink sink, void *ctx);
/* Format one line (newlines folded to spaces) and hand it to the sink. */
void svc_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
