/* summap: the last summary put for a session is the one got back, a NULL put forgets it,
 * the count follows, and a map far larger than its page cache still answers every lookup. */
#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "summap.h"
#include "tap.h"

static int64_t summary_n(struct svc_summap *m, const char *sid)
{
    json_object *o = svc_summap_get(m, sid);
    int64_t n = o ? svc_json_int(o, "n", -1) : -1;
    json_object_put(o);
    return n;
}

int main(void)
{
    struct svc_summap *m = svc_summap_open();
    ok(m != NULL, "a map opens");
    const char *a1 = "{\"n\":1}", *a2 = "{\"n\":2}";
    is_int(svc_summap_put(m, "a", a1, strlen(a1)), 0, "put a");
    is_int(svc_summap_put(m, "a", a2, strlen(a2)), 0, "put a again");
    is_int(summary_n(m, "a"), 2, "the last put wins");
    is_int(svc_summap_count(m), 1, "one session");
    ok(svc_summap_get(m, "b") == NULL, "no summary for an id never put");
    is_int(svc_summap_put(m, "a", NULL, 0), 0, "forget a");
    ok(svc_summap_get(m, "a") == NULL, "forgotten");
    is_int(svc_summap_put(m, "a", NULL, 0), 0, "forgetting an absent id is no error");
    is_int(svc_summap_put(m, "s", "[1]", 3), 0, "put a summary that is not an object");
    ok(svc_summap_get(m, "s") == NULL, "not an object: no summary");
    /* 40,000 rows of 300 bytes (12 MB), three times the page cache */
    char sid[32], text[320];
    int bad = 0;
    for (int i = 0; i < 40000 && !bad; i++) {
        snprintf(sid, sizeof sid, "s-%06d", (i * 7919) % 40000);
        int n = snprintf(text, sizeof text, "{\"n\":%d,\"pad\":\"%0280d\"}", i, 0);
        bad += svc_summap_put(m, sid, text, (size_t)n) != 0;
    }
    is_int(bad, 0, "40,000 puts");
    is_int(svc_summap_count(m), 40001, "40,000 sessions and s");
    for (int i = 0; i < 40000 && !bad; i++) {
        snprintf(sid, sizeof sid, "s-%06d", (i * 7919) % 40000);
        bad += summary_n(m, sid) != i;
    }
    is_int(bad, 0, "each found with its summary");
    svc_summap_close(m);
    svc_summap_close(NULL);
    ok(1, "closed (NULL too)");
    return done_testing();
}
