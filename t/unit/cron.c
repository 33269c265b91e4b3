/* cron: 5-field schedules against next run times worked out by hand (UTC): steps, lists,
 * ranges, names, Sunday as 0 or 7, month ends, leap days (2100 is not one), the
 * day-of-month / day-of-week OR rule, and the schedules that must be refused. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "tap.h"

static time_t at(const char *s)
{
    struct tm tm = {0};
    int sec = 0;
    sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
           &sec);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = sec;
    return timegm(&tm);
}

static const char *fmt(time_t t)
{
    static char buf[32];
    struct tm tm;
    if (t < 0)
        return "never";
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M", &tm);
    return buf;
}

static void next_is(const char *expr, const char *from, const char *want)
{
    struct svc_cron c;
    struct svc_err err;
    if (!ok(svc_cron_parse(expr, &c, &err) == 0, "parse '%s'", expr)) {
        printf("#   %s\n", err.message);
        return;
    }
    is_str(fmt(svc_cron_next(&c, at(from))), want, "'%s' after %s", expr, from);
}

static void refused(const char *expr, const char *why)
{
    struct svc_cron c;
    struct svc_err err;
    svc_err_clear(&err);
    int rc = svc_cron_parse(expr, &c, &err);
    ok(rc == -1 && strstr(err.message, why), "'%s' refused: %s", expr, err.message);
    ok(svc_cron_check(expr) != NULL, "'%s': svc_cron_check says what is wrong", expr);
}

int main(void)
{
    next_is("* * * * *", "2026-01-01T00:00:30", "2026-01-01T00:01");
    next_is("* * * * *", "2026-01-01T00:01:00", "2026-01-01T00:02");
    next_is("*/15 * * * *", "2026-03-04T10:07", "2026-03-04T10:15");
    next_is("*/15 * * * *", "2026-03-04T10:45", "2026-03-04T11:00");
    next_is("1-10/3 * * * *", "2026-03-04T10:04", "2026-03-04T10:07");
    next_is("1-10/3 * * * *", "2026-03-04T10:10", "2026-03-04T11:01");
    next_is("30/10 9 * * *", "2026-03-04T09:45", "2026-03-04T09:50");
    next_is("0 9,17 * * *", "2026-03-04T09:00", "2026-03-04T17:00");
    /* year and month ends */
    next_is("5 4 * * *", "2026-12-31T05:00", "2027-01-01T04:05");
    next_is("59 23 31 12 *", "2026-12-31T23:59", "2027-12-31T23:59");
    next_is("0 0 31 * *", "2026-01-31T00:00", "2026-03-31T00:00");
    next_is("0 0 30 * *", "2026-02-01T00:00", "2026-03-30T00:00");
    /* leap days */
    next_is("0 0 29 2 *", "2026-03-01T00:00", "2028-02-29T00:00");
    next_is("0 0 29 2 *", "2099-03-01T00:00", "2104-02-29T00:00");
    next_is("0 0 29 2 *", "2000-01-01T00:00", "2000-02-29T00:00");
    next_is("0 0 28-29 feb *", "2027-02-28T00:00", "2028-02-28T00:00");
    /* names, any case; Sunday as 0 or 7 (2026-11-22 is a Sunday) */
    next_is("30 8 * * mon-fri", "2026-11-21T09:00", "2026-11-23T08:30");
    next_is("30 8 * * MON-FRI", "2026-11-27T08:30", "2026-11-30T08:30");
    next_is("0 12 * * 0", "2026-11-16T00:00", "2026-11-22T12:00");
    next_is("0 12 * * 7", "2026-11-16T00:00", "2026-11-22T12:00");
    next_is("0 12 * * sun", "2026-11-16T00:00", "2026-11-22T12:00");
    next_is("0 12 * * 5-7", "2026-11-21T13:00", "2026-11-22T12:00");
    next_is("0 0 1 jan,Jul *", "2026-02-01T00:00", "2026-07-01T00:00");
    next_is("0 0 * aug-oct/2 *", "2026-08-31T00:00", "2026-10-01T00:00");
    /* day-of-month OR day-of-week when both are restricted */
    next_is("0 0 1 * mon", "2026-11-22T01:00", "2026-11-23T00:00");
    next_is("0 0 1 * mon", "2026-11-24T00:00", "2026-11-30T00:00");
    next_is("0 0 1 * mon", "2026-11-30T00:00", "2026-12-01T00:00");
    /* ... AND when one of them is '*' (a field starting with '*' counts, as in Vixie cron) */
    next_is("0 0 1 * *", "2026-11-02T00:00", "2026-12-01T00:00");
    next_is("0 0 * * mon", "2026-11-24T00:00", "2026-11-30T00:00");
    next_is("0 0 2 * */2", "2026-11-02T00:00", "2027-01-02T00:00"); /* Dec 2 is a Wednesday */

    refused("60 * * * *", "out of range");
    refused("* 24 * * *", "out of range");
    refused("* * 0 * *", "out of range");
    refused("* * * 13 *", "out of range");
    refused("* * * * 8", "out of range");
    refused("* * * *", "5-field");
    refused("* * * * * *", "5-field");
    refused("", "5-field");
    refused("0 0 30 2 *", "never matches");
    refused("0 12 31 4,6,9,11 *", "never matches");
    refused("0 0 * foo *", "not a number or name");
    refused("0 0 * * monday", "not a number or name");
    refused("0 0 * * jan", "not a number or name");
    refused("*/0 * * * *", "step");
    refused("5-2 * * * *", "backwards");
    refused("1,,2 * * * *", "not a number");
    refused("1- * * * *", "range end");
    refused("*x * * * *", "unexpected");
    ok(svc_cron_check("0 3 * * *") == NULL, "a valid schedule passes the config check");
    return done_testing();
}
