/* idlist: ids come back sorted and once each, from one run or from many merged (ids repeated
 * across runs included), an empty list reads as empty, and an id out of bounds is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idlist.h"
#include "tap.h"
#include "util.h"

/* Read l back: how many ids, whether each is above the one before, and the first one. */
static size_t read_back(struct svc_idlist *l, int *unsorted, char *first, size_t firstsz)
{
    struct svc_err err;
    const char *id;
    char prev[SVC_IDLIST_ID_MAX + 1] = "";
    size_t n = 0;
    *unsorted = svc_idlist_rewind(l, &err) != 0;
    while (svc_idlist_next(l, &id, &err) == 1) {
        if (n == 0)
            snprintf(first, firstsz, "%s", id);
        *unsorted += n > 0 && strcmp(prev, id) >= 0;
        snprintf(prev, sizeof prev, "%s", id);
        n++;
    }
    return n;
}

/* n ids (long: many runs) added in a scattered order, each twice; then read back. */
static void many(size_t n, size_t pad)
{
    struct svc_idlist *l = NULL;
    struct svc_err err;
    ok(svc_idlist_new(&l, &err) == 0, "a list of %zu ids opens", n);
    char id[SVC_IDLIST_ID_MAX + 1];
    int bad = 0;
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < n; i++) {
            snprintf(id, sizeof id, "s-%0*zu", (int)pad, (i * 7919 + k * 13) % n);
            bad += svc_idlist_add(l, id, &err) != 0;
        }
    is_int(bad, 0, "  %zu ids added twice", n);
    is_int(svc_idlist_sort(l, &err), 0, "  sorted");
    is_int(svc_idlist_count(l), n, "  %zu distinct ids", n);
    int unsorted = 0;
    char first[SVC_IDLIST_ID_MAX + 1] = "";
    is_int(read_back(l, &unsorted, first, sizeof first), n, "  %zu read back", n);
    is_int(unsorted, 0, "  in order, none twice");
    snprintf(id, sizeof id, "s-%0*d", (int)pad, 0);
    is_str(first, id, "  the smallest first");
    is_int(read_back(l, &unsorted, first, sizeof first), n, "  read again after a rewind");
    svc_idlist_free(l);
}

int main(void)
{
    struct svc_idlist *l = NULL;
    struct svc_err err;
    ok(svc_idlist_new(&l, &err) == 0, "an empty list opens");
    ok(svc_idlist_add(l, "", &err) != 0, "an empty id is refused");
    ok(svc_idlist_add(l, "a\nb", &err) != 0, "an id with a newline is refused");
    char big[SVC_IDLIST_ID_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ok(svc_idlist_add(l, big, &err) != 0, "an id of %d bytes is refused", SVC_IDLIST_ID_MAX + 1);
    const char *id = NULL;
    is_int(svc_idlist_next(l, &id, &err), -1, "read before it is sorted: an error");
    is_int(svc_idlist_sort(l, &err), 0, "an empty list sorts");
    is_int(svc_idlist_count(l), 0, "  no id");
    int unsorted = 0;
    char first[8] = "";
    is_int(read_back(l, &unsorted, first, sizeof first), 0, "  none read back");
    svc_idlist_free(l);
    many(1000, 6);    /* one run */
    many(60000, 100); /* 12 MB of ids added: about 48 runs */
    return done_testing();
}
