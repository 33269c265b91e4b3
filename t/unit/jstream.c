/* jstream and fileset, the two halves of an import's bounded read: an object read a member
 * at a time (strings holding brackets and quotes, the array given an element at a time, bad
 * syntax anywhere refused), and two file lists matched by path across many buckets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fileset.h"
#include "jstream.h"
#include "tap.h"
#include "util.h"

struct seen {
    char keys[256];
    size_t elems;
    char last[64];
};

static int on_member(void *ctx, const char *key, json_object *v)
{
    struct seen *s = ctx;
    (void)v;
    strncat(s->keys, key, sizeof s->keys - strlen(s->keys) - 2);
    strcat(s->keys, ",");
    return 0;
}

static int on_elem(void *ctx, size_t i, json_object *v)
{
    struct seen *s = ctx;
    s->elems = i + 1;
    snprintf(s->last, sizeof s->last, "%s", json_object_get_string(v));
    return 0;
}

static int run(const char *text, struct seen *s)
{
    memset(s, 0, sizeof *s);
    char *copy = strdup(text); /* fmemopen takes a writable buffer */
    FILE *f = fmemopen(copy, strlen(copy), "r");
    struct svc_jstream_fns fns = {
        .member = on_member, .each = "files", .element = on_elem, .ctx = s};
    struct svc_err err;
    int rc = svc_jstream_object(f, 1024, &fns, &err);
    fclose(f);
    free(copy);
    return rc;
}

static int n_paths, n_both, n_dup;

static int on_path(void *ctx, const char *path, const struct svc_fileset_rec *a, size_t na,
                   const struct svc_fileset_rec *b, size_t nb)
{
    (void)ctx;
    (void)path;
    n_paths++;
    n_both += na == 1 && nb == 1 && a->bytes == b->bytes;
    n_dup += nb > 1;
    return 0;
}

static void fileset_join(void)
{
    struct svc_fileset *a, *b;
    struct svc_err err;
    const char *sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    ok(svc_fileset_new(&a, &err) == 0 && svc_fileset_new(&b, &err) == 0, "two filesets");
    char p[64];
    for (int i = 0; i < 40000; i++) { /* more than one bucket */
        snprintf(p, sizeof p, "native/session_s-%06d/x.json", i);
        svc_fileset_add(a, p, (uint64_t)i, sha, &err);
        if (i % 2 == 0)
            svc_fileset_add(b, p, (uint64_t)i, sha, &err);
    }
    svc_fileset_add(b, "only-listed", 1, sha, &err);
    svc_fileset_add(b, "twice", 1, sha, &err);
    svc_fileset_add(b, "twice", 1, sha, &err);
    is_int(svc_fileset_count(a), 40000, "40000 read");
    is_int(svc_fileset_join(a, b, on_path, NULL, &err), 0, "joined");
    is_int(n_paths, 40002, "each path once");
    is_int(n_both, 20000, "20000 on both sides, same size");
    is_int(n_dup, 1, "a path listed twice is seen as such");
    svc_fileset_free(a);
    svc_fileset_free(b);
}

int main(void)
{
    struct seen s;
    is_int(run(" {\"a\": \"x}]\\\"{\", \"files\": [\"p1\", {\"q\": [1, \"]\"]}, \"p3\"],\n"
               "\"n\": 12, \"t\": true, \"z\": null}\n",
               &s),
           0, "an object with strings holding brackets");
    is_str(s.keys, "a,files,n,t,z,", "each member, files given as an empty array first");
    is_int((int)s.elems, 3, "three elements");
    is_str(s.last, "p3", "the last element");
    is_int(run("{\"files\": []}", &s), 0, "an empty array");
    is_int((int)s.elems, 0, "no element");
    is_int(run("{}", &s), 0, "an empty object");
    is_int(run("{\"a\": 1} x", &s), -1, "text after the object");
    is_int(run("{\"a\": 1", &s), -1, "an object never closed");
    is_int(run("{\"files\": [1, 2,]}", &s), -1, "a trailing comma");
    is_int(run("{\"files\": [1 2]}", &s), -1, "elements without a comma");
    is_int(run("{\"a\": [1}", &s), -1, "brackets that do not match");
    is_int(run("{a: 1}", &s), -1, "a key without quotes");
    is_int(run("[1]", &s), -1, "not an object");
    is_int(run("", &s), -1, "nothing");
    char big[2048];
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"a\": \"", 7);
    memcpy(big + sizeof big - 3, "\"}", 3);
    is_int(run(big, &s), -1, "a value over value_max");
    fileset_join();
    return done_testing();
}
