/* bench/listdb_page.c: a first list page of the listing database (core/listdb.c) timed by
 * itself, without nginx, FastCGI or the page's JSON: what a title search (q=) costs.
 *   listdb_page make DB N          a database of N sessions titled as bench/gen_sessions.c
 *                                  titles them, the newest first (as a pool's build)
 *   listdb_page time DB RUNS Q...  median and p90 of RUNS first pages (limit 50) for each Q
 *                                  ("-": no q), each in its own read transaction
 * Build after `make B=build-opt all`: cc -O2 -Icore -DSVC_VERSION=\"$(cat VERSION)\" -o
 * /tmp/listdb_page bench/listdb_page.c build-opt/libsvccore.a $(pkg-config --libs fcgi json-c
 * yaml-0.1 zlib libcurl libcrypto sqlite3) -lunistring -lpthread -lm */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "index.h"
#include "listdb.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int make(const char *path, long n)
{
    if (svc_listdb_open(path, true) != 0 || svc_listdb_begin() != 0)
        return 1;
    char filler[601];
    memset(filler, 'x', 600);
    filler[600] = '\0';
    for (long i = n - 1; i >= 0; i--) {
        char sid[32], title[80], when[40];
        time_t t = 1795703340 + i;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S.000000+00:00", &tm);
        snprintf(sid, sizeof sid, "s-%06ld", i);
        snprintf(title, sizeof title, "Bench session %ld, question 1: how is the ma", i);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "session_id", json_object_new_string(sid));
        json_object_object_add(o, "title", json_object_new_string(title));
        json_object_object_add(o, "updated_at", json_object_new_string(when));
        json_object_object_add(o, "status", json_object_new_string("idle"));
        json_object_object_add(o, "message_count", json_object_new_int(2));
        json_object_object_add(o, "filler", json_object_new_string(filler));
        int rc = svc_listdb_put(sid, o);
        json_object_put(o);
        if (rc != 0)
            return 1;
    }
    int rc = svc_listdb_commit();
    svc_listdb_close();
    return rc != 0;
}

/* One q's first pages, runs times; prints its median and p90. */
static int time_q(const char *arg, int runs, double *t)
{
    char *q = strcmp(arg, "-") != 0 ? svc_fold(arg) : NULL;
    int got = 0;
    for (int i = 0; i < runs; i++) {
        struct svc_list_query lq = {.limit = 50, .q = q};
        struct svc_listdb_row *rows = NULL;
        double t0 = now_ms();
        svc_listdb_read_begin();
        if (svc_listdb_page(&lq, q, 0, NULL, 51, &rows, &got) != 0)
            return 1;
        svc_listdb_read_end();
        t[i] = now_ms() - t0;
        svc_listdb_page_free(rows, got);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    printf("%-28s %2d rows  median %8.3f ms  p90 %8.3f ms\n", q ? arg : "(first page)", got,
           t[runs / 2], t[runs * 9 / 10]);
    free(q);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "make") == 0)
        return make(argv[2], atol(argv[3]));
    if (argc < 5 || strcmp(argv[1], "time") != 0 || atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: listdb_page make DB N | listdb_page time DB RUNS Q...\n");
        return 2;
    }
    if (svc_listdb_open(argv[2], false) != 0)
        return 1;
    int runs = atoi(argv[3]);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int a = 4; a < argc; a++)
        if (!t || time_q(argv[a], runs, t) != 0)
            return 1;
    free(t);
    svc_listdb_close();
    return 0;
}
