/* jsonx: svc_json_dump_native must write what Python's json.dumps(obj, indent=2,
 * ensure_ascii=False) writes (Strands' files), svc_json_dump_compact the one-line form, and
 * svc_json_parse must refuse trailing garbage, NaN/Infinity and invalid UTF-8.
 * The expected strings below were produced by Python 3's json module. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "tap.h"
#include "util.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    struct svc_err e;
    if (svc_json_parse(s, strlen(s), &o, &e) != 0) {
        printf("# parse failed: %s\n", e.message);
        return NULL;
    }
    return o;
}

/* Parse Python's output and dump it again: the bytes must come back unchanged. */
static void roundtrip(const char *name, const char *py_native, const char *py_compact)
{
    json_object *o = parse(py_native);
    ok(o != NULL, "%s: Python output parses", name);
    char *n = o ? svc_json_dump_native(o) : NULL;
    char *c = o ? svc_json_dump_compact(o) : NULL;
    is_str(n, py_native, "%s: dump_native == json.dumps(indent=2, ensure_ascii=False)", name);
    is_str(c, py_compact, "%s: dump_compact == json.dumps(separators=(',',':'))", name);
    free(n);
    free(c);
    json_object_put(o);
}

static void rejects(const char *name, const char *buf, size_t len)
{
    json_object *o = (json_object *)1;
    struct svc_err e;
    svc_err_clear(&e);
    int rc = svc_json_parse(buf, len, &o, &e);
    ok(rc == -1, "parse rejects %s", name);
    is_int(e.code, SVC_E_INVALID_JSON, "%s: SVC_E_INVALID_JSON", name);
    ok(o == NULL, "%s: *out is NULL", name);
    if (rc == 0)
        json_object_put(o);
}

static void accepts(const char *name, const char *buf, size_t len)
{
    json_object *o = NULL;
    struct svc_err e;
    int rc = svc_json_parse(buf, len, &o, &e);
    ok(rc == 0, "parse accepts %s", name);
    if (rc != 0)
        printf("#   %s\n", e.message);
    json_object_put(o);
}

/* Doubles as Python's repr writes them (values checked against python3's repr). */
static void python_float_repr(void)
{
    static const struct {
        double d;
        const char *want;
    } cases[] = {
        {100.0, "100.0"},   {1e15, "1000000000000000.0"},
        {1e16, "1e+16"},    {12345678901234567.0, "1.2345678901234568e+16"},
        {0.1, "0.1"},       {1.0, "1.0"},
        {-2.25, "-2.25"},   {0.0025, "0.0025"},
        {1e-5, "1e-05"},    {1.5e-7, "1.5e-07"},
        {0.0001, "0.0001"}, {123456.789, "123456.789"},
        {1e22, "1e+22"},    {-0.0, "-0.0"},
        {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        svc_json_format_double(cases[i].d, out, sizeof out);
        is_str(out, cases[i].want, "double written as Python's repr: %.17g", cases[i].d);
    }
}

int main(void)
{
    python_float_repr();
    /* ---- byte-for-byte Python ---- */
    roundtrip(
        "nested/empty",
        "{\n  \"a\": [\n    1,\n    {\n      \"b\": null,\n      \"c\": true,\n      \"d\": "
        "false\n    }\n  ],\n  \"e\": {},\n  \"f\": [],\n  \"g\": \"x\",\n  \"h\": [\n    []\n  "
        "],\n  \"i\": {\n    \"j\": {}\n  },\n  \"k\": [\n    {}\n  ]\n}",
        "{\"a\":[1,{\"b\":null,\"c\":true,\"d\":false}],\"e\":{},\"f\":[],\"g\":\"x\",\"h\":[[]"
        "],\"i\":{\"j\":{}},\"k\":[{}]}");
    roundtrip(
        "unicode",
        "{\n  \"t\": \"\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x8e\x89\",\n  \"s\": \"a/b\",\n  "
        "\"u2028\": \"\xe2\x80\xa8\",\n  \"key \xc3\xa9\": \"v\"\n}",
        "{\"t\":\"\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x8e\x89\",\"s\":\"a/b\",\"u2028\":"
        "\"\xe2\x80\xa8\",\"key \xc3\xa9\":\"v\"}");
    roundtrip("doubles",
              "[\n  0.1,\n  3.0,\n  1e+100,\n  1e-07,\n  -0.0,\n  2.5,\n  123456.789,\n  1e+16,\n  "
              "0.0001953125\n]",
              "[0.1,3.0,1e+100,1e-07,-0.0,2.5,123456.789,1e+16,0.0001953125]");
    roundtrip(
        "ints",
        "[\n  0,\n  -1,\n  9007199254740993,\n  -9223372036854775808,\n  9223372036854775807\n]",
        "[0,-1,9007199254740993,-9223372036854775808,9223372036854775807]");
    roundtrip(
        "escapes without DEL",
        "{\n  \"c\": \"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\ end\",\n  \"k\\\"\\\\\": 1\n}",
        "{\"c\":\"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\ end\",\"k\\\"\\\\\":1}");
    /* SPEC 17: numbers keep their text (Python keeps big integers; what it wrote as a float
     * comes back as written) */
    roundtrip("big integers",
              "{\n  \"big\": 123456789012345678901234567890,\n  \"neg\": "
              "-99999999999999999999,\n  \"u64\": 18446744073709551615,\n  \"in\": [\n    "
              "9223372036854775808,\n    -9223372036854775809\n  ]\n}",
              "{\"big\":123456789012345678901234567890,\"neg\":-99999999999999999999,\"u64\":"
              "18446744073709551615,\"in\":[9223372036854775808,-9223372036854775809]}");
    roundtrip("a big integer alone", "123456789012345678901234567890",
              "123456789012345678901234567890");
    roundtrip("a client's string shaped like the big-integer marker stays a string",
              "{\n  \"b\": 123456789012345678901234567890,\n  \"s\": \"\\u0000svc-int:5\"\n}",
              "{\"b\":123456789012345678901234567890,\"s\":\"\\u0000svc-int:5\"}");
    roundtrip("floats as written", "[\n  1.10,\n  1E+2,\n  0.30000000000000004,\n  5e-324\n]",
              "[1.10,1E+2,0.30000000000000004,5e-324]");
    {
        const char *txt = "{\"s\":\"123456789012345678901234567890\",\"f\":1E+2,\"b\":"
                          "123456789012345678901234567890,\"x\":1.10}";
        json_object *o = parse(txt), *c = svc_json_copy(o);
        char *s = svc_json_dump_compact(c);
        is_str(s, txt, "a deep copy keeps every number's text, a string of digits stays a string");
        free(s);
        ok(svc_json_int(o, "b", -7) == -7, "svc_json_int does not read a big integer");
        json_object_put(c);
        json_object_put(o);
        o = NULL;
        struct svc_err e;
        ok(svc_json_parse_python(txt, strlen(txt), &o, &e) == 0, "parse_python");
        s = svc_json_dump_compact(o);
        is_str(s,
               "{\"s\":\"123456789012345678901234567890\",\"f\":100.0,\"b\":"
               "123456789012345678901234567890,\"x\":1.1}",
               "parse_python: floats as Python writes them, integers exact");
        free(s);
        json_object_put(o);
    }
    roundtrip("top-level empty object", "{}", "{}");
    roundtrip("top-level empty array", "[]", "[]");
    roundtrip("top-level string", "\"x\"", "\"x\"");

    /* ---- objects built in C ---- */
    {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "nul", json_object_new_string_len("a\0b", 3));
        json_object_object_add(o, "ctl", json_object_new_string("\x01\x1f\x7f"));
        json_object_object_add(o, "e", json_object_new_object());
        json_object_object_add(o, "l", json_object_new_array());
        json_object_object_add(o, "n", NULL);
        char *s = svc_json_dump_native(o);
        /* Python: json.dumps({"nul": "a\0b", "ctl": "\x01\x1f\x7f", "e": {}, "l": [], "n": None},
         *                    indent=2, ensure_ascii=False) -- Python leaves DEL (0x7f) raw */
        const char *want_prefix = "{\n  \"nul\": \"a\\u0000b\",\n  \"ctl\": \"\\u0001\\u001f";
        ok(s && strncmp(s, want_prefix, strlen(want_prefix)) == 0,
           "NUL and C0 controls as \\u00XX");
        is_str(strstr(s ? s : "", "\"e\": {}"), "\"e\": {},\n  \"l\": [],\n  \"n\": null\n}",
               "empty {} and [] inline, null, no trailing newline");
        is_str(s,
               "{\n  \"nul\": \"a\\u0000b\",\n  \"ctl\": \"\\u0001\\u001f\x7f\",\n  \"e\": {},\n  "
               "\"l\": [],\n  \"n\": null\n}",
               "DEL (0x7f) is written raw like Python");
        free(s);
        json_object_put(o);
    }
    {
        /* DEL inside a parsed Python file must survive a rewrite byte for byte */
        json_object *o = parse("{\n  \"c\": \"a\x7f"
                               "b\"\n}");
        char *s = o ? svc_json_dump_native(o) : NULL;
        is_str(s,
               "{\n  \"c\": \"a\x7f"
               "b\"\n}",
               "a Python file with DEL round-trips");
        free(s);
        json_object_put(o);
    }
    {
        json_object *a = json_object_new_array();
        json_object_array_add(a, json_object_new_double(0.5));
        json_object_array_add(a, json_object_new_double(3.0));
        json_object_array_add(a, json_object_new_double(-2.25));
        json_object_array_add(a, json_object_new_double(NAN));
        json_object_array_add(a, json_object_new_double(INFINITY));
        json_object_array_add(a, json_object_new_int64(-42));
        json_object_array_add(a, json_object_new_boolean(1));
        char *s = svc_json_dump_compact(a);
        is_str(s, "[0.5,3.0,-2.25,null,null,-42,true]",
               "fresh doubles like Python, NaN/Infinity never written");
        free(s);
        json_object_put(a);
    }
    {
        json_object *a = json_object_new_array();
        json_object_array_add(a, json_object_new_double(0.1));
        char *s = svc_json_dump_compact(a);
        is_str(s, "[0.1]", "computed double 0.1 written as Python's repr");
        free(s);
        json_object_put(a);
    }
    {
        /* deep nesting: indentation grows by 2 per level */
        json_object *o = parse("{\"a\":{\"b\":{\"c\":[1,[2,{\"d\":[]}]]}}}");
        char *s = o ? svc_json_dump_native(o) : NULL;
        is_str(s,
               "{\n  \"a\": {\n    \"b\": {\n      \"c\": [\n        1,\n        [\n          2,\n"
               "          {\n            \"d\": []\n          }\n        ]\n      ]\n    }\n  }\n}",
               "deep nesting indents by 2 per level");
        free(s);
        json_object_put(o);
    }
    {
        /* key order is insertion order, even after replacing a key */
        json_object *o = json_object_new_object();
        svc_json_set_int(o, "z", 1);
        svc_json_set_int(o, "a", 2);
        svc_json_set_int(o, "m", 3);
        svc_json_set_int(o, "a", 4);
        char *s = svc_json_dump_compact(o);
        is_str(s, "{\"z\":1,\"a\":4,\"m\":3}",
               "keys keep insertion order; replacing keeps the place");
        free(s);
        json_object_put(o);
    }

    /* ---- write_native / write_pretty ---- */
    {
        char dir[] = "/tmp/svc-jsonx-XXXXXX";
        ok(mkdtemp(dir) != NULL, "temp dir");
        char *p1 = svc_path_join(dir, "n.json"), *p2 = svc_path_join(dir, "p.json");
        json_object *o = parse("{\"a\": [1], \"b\": {}}");
        struct svc_err e;
        ok(svc_json_write_native_sync(p1, o, SVC_SYNC_NONE, &e) == 0, "write_native");
        ok(svc_json_write_pretty(p2, o, true, &e) == 0, "write_pretty (durable)");
        char *b1 = NULL, *b2 = NULL;
        size_t l1 = 0, l2 = 0;
        svc_file_read(p1, &b1, &l1, &e);
        svc_file_read(p2, &b2, &l2, &e);
        is_str(b1, "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}",
               "native file: no trailing newline");
        is_str(b2, "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}\n",
               "pretty file: one trailing newline");
        json_object *back = NULL;
        ok(svc_json_read_file(p1, &back, &e) == 0 && json_object_equal(back, o),
           "read_file round-trips");
        json_object_put(back);
        is_int(svc_json_read_file("/nonexistent/x.json", &back, &e), -1, "missing file fails");
        is_int(e.code, SVC_E_NOT_FOUND, "missing file is SVC_E_NOT_FOUND");
        svc_file_write_atomic(p1, "{\"a\":", 5, false, &e);
        is_int(svc_json_read_file(p1, &back, &e), -1, "damaged file fails");
        is_int(e.code, SVC_E_IO, "damaged file is SVC_E_IO");
        free(b1);
        free(b2);
        json_object_put(o);
        unlink(p1);
        unlink(p2);
        rmdir(dir);
        free(p1);
        free(p2);
    }

    /* ---- parse: what must be refused ---- */
    rejects("trailing garbage", "{} x", 4);
    rejects("two documents", "{}{}", 4);
    rejects("extra bracket", "[1]]", 4);
    rejects("trailing NUL byte", "{}\0", 3);
    rejects("NaN", "NaN", 3);
    rejects("[NaN]", "[NaN]", 5);
    rejects("Infinity", "[Infinity]", 10);
    rejects("-Infinity", "[-Infinity]", 11);
    rejects("nan lowercase", "[nan]", 5);
    rejects("trailing comma", "[1,]", 4);
    rejects("single quotes", "{'a': 1}", 8);
    rejects("comment", "/* c */ {}", 10);
    rejects("empty input", "", 0);
    rejects("only spaces", "   ", 3);
    rejects("truncated object", "{\"a\": ", 6);
    rejects("unquoted key", "{a: 1}", 6);
    rejects("invalid UTF-8 byte 0xff", "\"\xff\"", 3);
    rejects("invalid UTF-8 continuation alone", "\"\x80\"", 3);
    rejects("overlong UTF-8 (0xc0 0xaf)", "\"\xc0\xaf\"", 4);
    rejects("truncated UTF-8 sequence", "\"\xe6\x97\"", 4);
    rejects("UTF-8 above U+10FFFF", "\"\xf4\x90\x80\x80\"", 6);
    rejects("invalid UTF-8 in a key", "{\"\xfe\": 1}", 8);
    rejects("UTF-8-encoded surrogate U+D800", "\"\xed\xa0\x80\"", 5);
    rejects("a number ending in a dot", "1.", 2);
    rejects("a leading zero", "-01", 3);
    rejects("two zeros", "[00]", 4);
    rejects("a lone minus", "[-]", 3);
    rejects("a big integer run on from a number", "[1-12345678901234567890]", 24);
    rejects("a number run on into a big integer", "[12345678901234567890+1]", 24);
    rejects("a raw control byte in a string", "\"\x01\"", 3);
    rejects("a number beyond double range (1E400)", "1E400", 5);
    rejects("a key holding \\u0000 (json-c would cut it)", "{\"model\\u0000x\":1}", 17);

    /* ---- parse: what must be accepted ---- */
    accepts("surrounding whitespace", " \n\t{}\r\n ", 8);
    accepts("a value holding \\u0000", "{\"a\":\"x\\u0000y\"}", 16);
    accepts("numbers of every shape", "[0,1.5,-0.0,1e5,2E-3,10,1e308]", 30);
    accepts("an escaped backslash before u0000", "\"a\\\\u0000\"", 10);
    accepts("UTF-8 text", "\"\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89\"", 11);
    accepts("escaped surrogate pair", "\"\\ud83c\\udf89\"", 14);
    accepts("length excludes a following byte", "{}x", 2);
    {
        json_object *o =
            parse("{\"a\": 1, \"b\": \"x\", \"c\": true, \"d\": {\"e\": []}, \"f\": null}");
        is_int(svc_json_int(o, "a", -1), 1, "svc_json_int");
        is_int(svc_json_int(o, "b", -1), -1, "svc_json_int default for a string");
        is_str(svc_json_str(o, "b", NULL), "x", "svc_json_str");
        ok(svc_json_str(o, "a", NULL) == NULL, "svc_json_str default for an int");
        ok(svc_json_bool(o, "c", false), "svc_json_bool");
        ok(svc_json_obj(o, "d") != NULL && svc_json_obj(o, "a") == NULL, "svc_json_obj");
        ok(svc_json_arr(svc_json_obj(o, "d"), "e") != NULL, "svc_json_arr");
        ok(svc_json_str(o, "f", "def") && strcmp(svc_json_str(o, "f", "def"), "def") == 0,
           "null falls back to the default");
        json_object *c = svc_json_copy(o);
        ok(c && c != o && json_object_equal(c, o), "svc_json_copy is deep and equal");
        json_object_put(c);
        json_object_put(o);
    }
    return done_testing();
}
