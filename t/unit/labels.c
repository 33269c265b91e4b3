/* labels and feedback pairs: the limits of tags and metadata (in characters, not bytes), the
 * stored tag set, and preference pairs formed only between answers to the same input. */
#include <stdlib.h>
#include <string.h>

#include "feedback.h"
#include "jsonx.h"
#include "labels.h"
#include "tap.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    svc_json_parse(s, strlen(s), &o, NULL);
    return o;
}

static int check(int (*fn)(json_object *, struct svc_err *), const char *json, char *param)
{
    struct svc_err err;
    svc_err_clear(&err);
    json_object *o = parse(json);
    int rc = fn(o, &err);
    json_object_put(o);
    strcpy(param, err.param);
    return rc;
}

/* ["t","t",...] with n tags into buf. */
static const char *tags_json(char *buf, int n)
{
    strcpy(buf, "[");
    for (int i = 0; i < n; i++)
        strcat(buf, i ? ",\"t\"" : "\"t\"");
    return strcat(buf, "]");
}

static void test_limits(void)
{
    char p[128], json[4096];
    ok(check(svc_labels_check_tags, "[\"a\",\"b\"]", p) == 0, "two tags");
    ok(check(svc_labels_check_tags, "[\"\"]", p) != 0 && strcmp(p, "tags") == 0, "empty tag");
    ok(check(svc_labels_check_tags, "[\"a\\tb\"]", p) != 0, "a tag with a tab");
    ok(check(svc_labels_check_tags, "{}", p) != 0, "tags not an array");
    ok(check(svc_labels_check_tags, tags_json(json, 21), p) != 0, "21 tags");
    ok(check(svc_labels_check_tags, tags_json(json, 20), p) == 0, "20 tags");
    strcpy(json, "[\"");
    for (int i = 0; i < 64; i++)
        strcat(json, "\xc3\xa9"); /* é: 64 characters, 128 bytes */
    strcat(json, "\"]");
    ok(check(svc_labels_check_tags, json, p) == 0, "64 two-byte characters");
    ok(check(svc_labels_check_metadata, "{\"k\":\"v\"}", p) == 0, "metadata");
    ok(check(svc_labels_check_metadata, "{\"k\":1}", p) != 0 && strcmp(p, "metadata.k") == 0,
       "a number value names its key");
    ok(check(svc_labels_check_metadata, "{\"\":\"v\"}", p) != 0 && strcmp(p, "metadata") == 0,
       "an empty key");
    json_object *t = parse("[\"b\",\"a\",\"b\"]"), *set = svc_labels_tags_set(t);
    char *d = svc_json_dump_compact(set);
    is_str(d, "[\"b\",\"a\"]", "the stored set: in order, each once");
    free(d);
    json_object_put(set);
    json_object_put(t);
}

static void test_pairs(void)
{
    struct svc_feedback_pairs *p = svc_feedback_pairs_new();
    json_object *in1 = parse("[{\"role\":\"user\",\"content\":\"q\"}]");
    json_object *in2 = parse("[{\"role\":\"user\",\"content\":\"other\"}]");
    json_object *good = parse("[{\"role\":\"assistant\",\"content\":\"good\"}]");
    json_object *bad = parse("[{\"role\":\"assistant\",\"content\":\"bad\"}]");
    svc_feedback_pairs_add(p, "up", in1, good);
    svc_feedback_pairs_add(p, "down", in2, bad); /* another input: no pair */
    char *l = svc_feedback_pairs_jsonl(p);
    is_str(l, "", "answers to different inputs make no pair");
    free(l);
    svc_feedback_pairs_add(p, "down", in1, bad);
    svc_feedback_pairs_add(p, "meh", in1, bad); /* not a rating: ignored */
    l = svc_feedback_pairs_jsonl(p);
    is_str(l,
           "{\"input\":{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]},\"preferred_output\":"
           "[{\"role\":\"assistant\",\"content\":\"good\"}],\"non_preferred_output\":[{\"role\":"
           "\"assistant\",\"content\":\"bad\"}]}\n",
           "up against down for the same input");
    free(l);
    json_object_put(in1);
    json_object_put(in2);
    json_object_put(good);
    json_object_put(bad);
    svc_feedback_pairs_free(p);
}

int main(void)
{
    test_limits();
    test_pairs();
    return done_testing();
}
