/* idtab, an import's sessions on disk: events folded into one record an id (numbers added,
 * the first reason kept) across many buckets, each record found by id and written back in
 * place, a walk in id order when the ids fit one bucket. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "idtab.h"
#include "tap.h"

#define N 40000 /* more than one bucket */

struct seen {
    size_t n, bad, unsorted;
    char last[SVC_ID_MAX + 2];
};

/* In the fold: every fifth id failed by the caller, unless an event failed it first. */
static int on_fold(void *ctx, struct svc_idrec *r)
{
    struct seen *s = ctx;
    int i = atoi(r->id + 2);
    s->bad += r->num != (uint64_t)i * 3;
    s->bad += (i % 7 == 0) != (r->state == 2) || (i % 7 == 0 && strcmp(r->why, "first") != 0);
    if (i % 5 == 0 && !r->state)
        svc_idrec_set(r, 1, "by the caller");
    s->n++;
    return 0;
}

static int on_each(void *ctx, struct svc_idrec *r)
{
    struct seen *s = ctx;
    s->unsorted += s->n && strcmp(s->last, r->id) >= 0;
    snprintf(s->last, sizeof s->last, "%s", r->id);
    s->n++;
    if (strcmp(r->id, "s-000010") == 0)
        svc_idrec_set(r, 2, "changed in the walk");
    return 0;
}

static struct svc_idtab *filled(int n)
{
    struct svc_idtab *t;
    struct svc_err err;
    if (svc_idtab_new(&t, &err) != 0)
        return NULL;
    char id[32];
    for (int k = 0; k < n; k++) { /* ids out of order, each noted twice */
        int i = (int)(((long long)k * 7919) % n);
        snprintf(id, sizeof id, "s-%06dXX", i);
        svc_idtab_note(t, id, 8, (uint64_t)i, 0, NULL, &err);
        if (i % 7 == 0)
            svc_idtab_note(t, id, 8, 0, 2, "first", &err);
    }
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "s-%06d", i);
        svc_idtab_note(t, id, 8, (uint64_t)i * 2, i % 7 == 0 ? 2 : 0, "second", &err);
    }
    return t;
}

static void big(void)
{
    struct svc_idtab *t = filled(N);
    struct svc_err err;
    struct seen s = {0};
    ok(t != NULL, "a table");
    is_int(svc_idtab_fold(t, on_fold, &s, &err), 0, "folded");
    is_int(s.n, N, "one record an id");
    is_int(s.bad, 0, "numbers added, the first reason kept");
    struct svc_idrec r;
    is_int(svc_idtab_find(t, "s-012345", 8, &r, &err), 1, "found");
    is_str(r.id, "s-012345", "its id");
    is_int(r.state, 1, "the caller's state");
    is_str(r.why, "by the caller", "and reason");
    r.num = 42;
    svc_idrec_set(&r, 2, "put back");
    is_int(svc_idtab_put(t, &r, &err), 0, "written back");
    memset(&r, 0, sizeof r);
    is_int(svc_idtab_find(t, "s-012345", 8, &r, &err), 1, "found again");
    ok(r.num == 42 && r.state == 2 && strcmp(r.why, "put back") == 0, "as written");
    is_int(svc_idtab_find(t, "s-040000", 8, &r, &err), 0, "an id not there");
    is_int(svc_idtab_find(t, "s-0", 3, &r, &err), 0, "a prefix of one");
    int missing = 0;
    char id[16];
    for (int i = 0; i < N; i += 97) {
        snprintf(id, sizeof id, "s-%06d", i);
        missing += svc_idtab_find(t, id, 8, &r, &err) != 1 || strcmp(r.id, id) != 0;
    }
    is_int(missing, 0, "each id found");
    memset(&s, 0, sizeof s);
    is_int(svc_idtab_each(t, on_each, &s, &err), 0, "a walk");
    is_int(s.n, N, "every record");
    ok(s.unsorted > 0, "in buckets, not in one id order");
    is_int(svc_idtab_find(t, "s-000010", 8, &r, &err), 1, "a record the walk changed");
    is_str(r.why, "changed in the walk", "written back");
    svc_idtab_free(t);
}

static void small(void)
{
    struct svc_idtab *t = filled(1000);
    struct svc_err err;
    struct seen s = {0};
    is_int(svc_idtab_fold(t, NULL, NULL, &err), 0, "a small table folded");
    is_int(svc_idtab_fold(t, NULL, NULL, &err), -1, "once only");
    is_int(svc_idtab_each(t, on_each, &s, &err), 0, "a walk");
    is_int(s.n, 1000, "every record");
    is_int(s.unsorted, 0, "in id order");
    struct svc_idrec r;
    is_int(svc_idtab_find(t, "s-000700", 8, &r, &err), 1, "found");
    is_int(r.state, 2, "failed by an event");
    is_str(r.why, "first", "the first event's reason");
    svc_idtab_free(t);
}

int main(void)
{
    big();
    small();
    return done_testing();
}
