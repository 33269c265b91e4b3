/* cron: the standard 5-field schedule (minute hour day-of-month month day-of-week), in UTC.
 * Fields take `*`, numbers, ranges `a-b`, steps `*\/n`, `a-b/n` and `a/n` (a to the field's
 * end), and comma lists of these; months `jan`..`dec` and weekdays `sun`..`sat` by name (any
 * case); Sunday is 0 or 7. Day rule (Vixie cron): when both day fields are restricted (neither
 * starts with `*`), a day matches if EITHER matches; otherwise both must match.
 * svc_cron_parse fills a struct (no heap); svc_cron_next gives the first matching minute
 * strictly after a time. A schedule that can never match (`0 0 30 2 *`) is refused by
 * svc_cron_parse, so svc_cron_next succeeds on every parsed schedule. */
#ifndef SVC_CRON_H
#define SVC_CRON_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

struct svc_cron {
    uint64_t minute; /* bit m: minute m (0..59) */
    uint32_t hour;   /* bit h (0..23) */
    uint32_t dom;    /* bit d (1..31) */
    uint16_t month;  /* bit m (1..12) */
    uint8_t dow;     /* bit d (0..6, Sunday 0) */
    bool dom_star, dow_star;
};

/* Parse expr. On failure SVC_E_INVALID_FIELD with a message naming the field at fault. */
int svc_cron_parse(const char *expr, struct svc_cron *out, struct svc_err *err);
/* The first matching minute strictly after t (epoch seconds, UTC); -1 when none within
 * about 30 years (never for a schedule svc_cron_parse accepted). */
time_t svc_cron_next(const struct svc_cron *c, time_t t);
/* The start of t's minute. */
time_t svc_cron_minute(time_t t);
/* The minute after which a schedule's next run is looked for: last_due_at (ISO 8601, the
 * last minute handled; NULL when none), else the minute before now's. */
time_t svc_cron_base(const char *last_due_at, time_t now);
/* For the configuration table: NULL when expr is a valid schedule, else what is wrong
 * (a static string). */
const char *svc_cron_check(const char *expr);

#endif
