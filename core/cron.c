#include "cron.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const field_names[5] = {"minute", "hour", "day of month", "month",
                                           "day of week"};
static const int field_min[5] = {0, 0, 1, 1, 0};
static const int field_max[5] = {59, 23, 31, 12, 7};
static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* A number or a name of field f at *p; advances *p. Returns -1 when neither. */
static int parse_value(int f, const char **p)
{
    const char *s = *p;
    if (isdigit((unsigned char)*s)) {
        long v = 0;
        while (isdigit((unsigned char)*s) && v < 1000)
            v = v * 10 + (*s++ - '0');
        if (isdigit((unsigned char)*s))
            return -1;
        *p = s;
        return (int)v;
    }
    const char *const *names = f == 3 ? month_names : dow_names;
    for (int i = 0; (f == 3 || f == 4) && i < (f == 3 ? 12 : 7); i++)
        if (strncasecmp(s, names[i], 3) == 0 && !isalpha((unsigned char)s[3])) {
            *p = s + 3;
            return i + (f == 3); /* months from 1 */
        }
    return -1;
}

/* One field (len bytes at s) into *bits. Returns NULL or what is wrong. */
static const char *parse_field(int f, const char *s, size_t len, uint64_t *bits)
{
    char buf[128];
    if (len >= sizeof buf)
        return "field too long";
    memcpy(buf, s, len);
    buf[len] = '\0';
    *bits = 0;
    if (buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,"))
        return "not a number or name (empty list item)";
    int lo = field_min[f], hi = field_max[f];
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        const char *p = item;
        int a = lo, b = hi, step = 1;
        bool range = *p == '*';
        if (range) {
            p++;
        } else if ((a = b = parse_value(f, &p)) < 0) {
            return "not a number or name";
        } else if (*p == '-') {
            p++;
            range = true;
            if ((b = parse_value(f, &p)) < 0)
                return "bad range end";
        }
        if (*p == '/') {
            p++;
            if (!isdigit((unsigned char)*p))
                return "bad step";
            char *end;
            long st = strtol(p, &end, 10);
            p = end;
            if (st < 1 || st > hi)
                return "step out of range";
            step = (int)st;
            if (!range)
                b = hi; /* "a/n": from a to the field's end */
        }
        if (*p)
            return "unexpected character";
        if (a < lo || a > hi || b < lo || b > hi)
            return "value out of range";
        if (a > b)
            return "range runs backwards";
        for (int v = a; v <= b; v += step)
            *bits |= 1ull << (f == 4 && v == 7 ? 0 : v);
    }
    return *bits ? NULL : "empty field";
}

static int days_in_month(int year, int month)
{
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0))
        return 29;
    return d[month - 1];
}

/* Whether some (month, day) the schedule allows exists in some year: a day-of-month
 * schedule like "30 2" alone never matches. With the OR rule or a free day-of-month,
 * every month has a matching day. */
static bool can_match(const struct svc_cron *c)
{
    if (c->dom_star || !c->dow_star)
        return true;
    for (int m = 1; m <= 12; m++) {
        uint64_t days = (2ull << (m == 2 ? 29 : days_in_month(2001, m))) - 1; /* bits 0..last */
        if ((c->month & (1u << m)) && (c->dom & days))
            return true;
    }
    return false;
}

int svc_cron_parse(const char *expr, struct svc_cron *out, struct svc_err *err)
{
    memset(out, 0, sizeof *out);
    const char *p = expr ? expr : "";
    uint64_t bits[5];
    int f;
    for (f = 0; f < 5; f++) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            break;
        const char *why = parse_field(f, p, n, &bits[f]);
        if (why)
            return svc_err_set(err, SVC_E_INVALID_FIELD, "cron %s field '%.*s': %s", field_names[f],
                               (int)(n > 40 ? 40 : n), p, why);
        if (f == 2)
            out->dom_star = *p == '*';
        if (f == 4)
            out->dow_star = *p == '*';
        p += n;
    }
    if (f != 5 || p[strspn(p, " \t")])
        return svc_err_set(err, SVC_E_INVALID_FIELD,
                           "not a 5-field cron schedule (minute hour day month weekday)");
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint16_t)bits[3];
    out->dow = (uint8_t)bits[4];
    if (!can_match(out))
        return svc_err_set(err, SVC_E_INVALID_FIELD,
                           "cron schedule never matches (no such day in those months)");
    return 0;
}

static bool day_matches(const struct svc_cron *c, int mday, int wday)
{
    bool d = (c->dom >> mday) & 1, w = (c->dow >> wday) & 1;
    if (c->dom_star || c->dow_star)
        return d && w;
    return d || w;
}

time_t svc_cron_minute(time_t t)
{
    return t - ((t % 60) + 60) % 60;
}

time_t svc_cron_next(const struct svc_cron *c, time_t t)
{
    time_t start = svc_cron_minute(t) + 60;
    struct tm tm;
    if (!gmtime_r(&start, &tm))
        return -1;
    int year = tm.tm_year + 1900, month = tm.tm_mon + 1, day = tm.tm_mday, wday = tm.tm_wday;
    int hour = tm.tm_hour, minute = tm.tm_min;
    time_t day0 = start - hour * 3600 - minute * 60;
    /* walk day by day (at most ~30 years), then hour and minute within the day */
    for (int guard = 0; guard < 366 * 30; guard++) {
        if ((c->month & (1u << month)) && day_matches(c, day, wday)) {
            for (int h = hour; h < 24; h++) {
                if (!(c->hour & (1u << h)))
                    continue;
                for (int m = h == hour ? minute : 0; m < 60; m++)
                    if (c->minute & (1ull << m))
                        return day0 + h * 3600 + m * 60;
            }
        }
        hour = minute = 0;
        day0 += 86400;
        wday = (wday + 1) % 7;
        if (++day > days_in_month(year, month)) {
            day = 1;
            if (++month > 12) {
                month = 1;
                year++;
            }
        }
    }
    return -1;
}

time_t svc_cron_base(const char *last_due_at, time_t now)
{
    double t;
    return last_due_at && svc_time_parse_iso(last_due_at, &t) == 0 ? (time_t)t
                                                                   : svc_cron_minute(now) - 60;
}

const char *svc_cron_check(const char *expr)
{
    static __thread struct svc_err err;
    struct svc_cron c;
    return svc_cron_parse(expr, &c, &err) == 0 ? NULL : err.message;
}
