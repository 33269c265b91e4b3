/* chain.h and schema.h: transcript keys equal exactly when the canonical messages are
 * equal (a resent OpenAI message and its stored native form), per owner; a schema's made-up
 * value (SPEC 15). */
#include <string.h>

#include "chain.h"
#include "jsonx.h"
#include "openai.h"
#include "schema.h"
#include "tap.h"

static json_object *J(const char *s)
{
    json_object *o = NULL;
    svc_json_parse(s, strlen(s), &o, NULL);
    return o;
}

/* The key after the OpenAI messages of a JSON array, for owner. */
static int64_t key_of(const char *owner, const char *msgs)
{
    unsigned char k[32];
    svc_chain_seed(owner, k);
    json_object *a = J(msgs);
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *nm = svc_openai_to_native(json_object_array_get_idx(a, i));
        svc_chain_step(k, nm);
        json_object_put(nm);
    }
    json_object_put(a);
    return svc_chain_id(k);
}

int main(void)
{
    const char *conv =
        "[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":null,"
        "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
        "\"w\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},{\"role\":\"tool\","
        "\"tool_call_id\":\"c1\",\"content\":\"sunny\"}]";
    int64_t a = key_of(NULL, conv);
    is_int(key_of("", conv), a, "no owner is the admins' (\"\")");
    ok(key_of("alice", conv) != a, "another owner, another key");
    const char *parts = "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
                        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\","
                        "\"type\":\"function\",\"function\":{\"name\":\"w\",\"arguments\":"
                        "\"{\\\"city\\\": \\\"Oslo\\\"}\"}}]},{\"role\":\"system\",\"content\":"
                        "\"ignored\"},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":"
                        "[{\"type\":\"text\",\"text\":\"sunny\"}]}]";
    is_int(key_of(NULL, parts), a, "text parts, spacing in arguments and system messages: equal");
    ok(key_of(NULL, "[{\"role\":\"user\",\"content\":\"hi!\"}]") !=
           key_of(NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]"),
       "another text, another key");
    ok(key_of(NULL, "[{\"role\":\"assistant\",\"content\":\"hi\"}]") !=
           key_of(NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]"),
       "another role, another key");
    unsigned char k[32];
    svc_chain_seed(NULL, k);
    json_object *erased = J("{\"role\":\"user\",\"content\":[{\"text\":\"\"}]}");
    ok(!svc_chain_step(k, erased), "a message redacted to nothing is left out");
    json_object_put(erased);

    json_object *schema =
        J("{\"type\":\"object\",\"required\":[\"a\",\"n\",\"e\",\"l\"],\"properties\":"
          "{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"n\":{\"type\":"
          "\"integer\",\"minimum\":2},\"e\":{\"enum\":[\"x\",\"y\"]},\"l\":{\"type\":"
          "\"array\",\"items\":{\"$ref\":\"#/$defs/t\"}}},\"$defs\":{\"t\":{\"type\":"
          "[\"string\",\"null\"],\"format\":\"date\"}}}");
    json_object *v = svc_schema_example(schema, "in");
    char *s = svc_json_dump_compact(v);
    is_str(s, "{\"a\":\"in\",\"n\":2,\"e\":\"x\",\"l\":[\"1970-01-01\"]}",
           "schema: required filled, the input first, minimum, enum, $ref, format");
    free(s);
    json_object_put(v);
    json_object_put(schema);
    return done_testing();
}
