/* jstream, the first half of an import's bounded read: an object read a member at a time
 * (strings holding brackets and quotes, the array given an element at a time, bad syntax
 * anywhere refused). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
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
    return done_testing();
}
