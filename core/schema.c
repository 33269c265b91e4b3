#include "schema.h"

#include <stdbool.h>
#include <string.h>

#include "jsonx.h"

struct ex {
    json_object *root;
    const char *text;
    bool used;    /* the text went into a string already */
    size_t nodes; /* values made: a schema whose $refs or minItems multiply stops at EX_NODES */
};

#define EX_NODES 4096

static json_object *ex_value(struct ex *x, json_object *s, int depth);

/* A local reference "#/a/b" followed from the root, or NULL. */
static json_object *ex_ref(struct ex *x, const char *ref)
{
    if (strncmp(ref, "#", 1) != 0)
        return NULL;
    json_object *at = x->root;
    const char *p = ref + 1;
    while (at && *p == '/') {
        const char *e = strchr(p + 1, '/');
        size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);
        char key[128];
        if (n >= sizeof key)
            return NULL;
        memcpy(key, p + 1, n);
        key[n] = '\0';
        at = svc_json_obj(at, key);
        p += n + 1;
    }
    return at;
}

/* The first branch of anyOf / oneOf that is not {"type": "null"}. */
static json_object *ex_branch(json_object *list)
{
    size_t n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(list, i);
        if (strcmp(svc_json_str(b, "type", ""), "null") != 0)
            return b;
    }
    return n ? json_object_array_get_idx(list, 0) : NULL;
}

/* The schema's type: its "type", the first of a list that is not "null", or a guess. */
static const char *ex_type(json_object *s)
{
    json_object *t = NULL;
    json_object_object_get_ex(s, "type", &t);
    if (json_object_is_type(t, json_type_string))
        return json_object_get_string(t);
    for (size_t i = 0; json_object_is_type(t, json_type_array) && i < json_object_array_length(t);
         i++) {
        const char *v = json_object_get_string(json_object_array_get_idx(t, i));
        if (v && strcmp(v, "null") != 0)
            return v;
    }
    if (svc_json_obj(s, "properties"))
        return "object";
    return svc_json_obj(s, "items") ? "array" : "string";
}

static json_object *ex_string(struct ex *x, json_object *s)
{
    static const char *const formats[][2] = {{"date-time", "1970-01-01T00:00:00Z"},
                                             {"date", "1970-01-01"},
                                             {"time", "00:00:00"},
                                             {"email", "echo@example.com"},
                                             {"uri", "https://example.com/"},
                                             {"url", "https://example.com/"},
                                             {"uuid", "00000000-0000-4000-8000-000000000000"}};
    const char *fmt = svc_json_str(s, "format", NULL);
    for (size_t i = 0; fmt && i < sizeof formats / sizeof *formats; i++)
        if (strcmp(fmt, formats[i][0]) == 0)
            return json_object_new_string(formats[i][1]);
    const char *v = x->used ? "" : x->text;
    x->used = true;
    size_t n = strlen(v), min = (size_t)svc_json_int(s, "minLength", 0);
    int64_t max = svc_json_int(s, "maxLength", -1);
    if (max >= 0 && n > (size_t)max)
        n = (size_t)max;
    char buf[256];
    if (n >= min)
        return json_object_new_string_len(v, (int)n);
    min = min < sizeof buf ? min : sizeof buf - 1;
    memset(buf, 'x', min);
    memcpy(buf, v, n);
    return json_object_new_string_len(buf, (int)min);
}

static json_object *ex_number(json_object *s, bool integer)
{
    json_object *v = NULL;
    double d = 0;
    if (json_object_object_get_ex(s, "minimum", &v))
        d = json_object_get_double(v);
    else if (json_object_object_get_ex(s, "exclusiveMinimum", &v))
        d = json_object_get_double(v) + 1;
    else if (json_object_object_get_ex(s, "maximum", &v) && json_object_get_double(v) < 0)
        d = json_object_get_double(v);
    /* an integer beyond int64 stays a double (1e308 is an integer too): the cast is UB */
    bool whole = integer && d > -9e18 && d < 9e18;
    return whole ? json_object_new_int64((int64_t)d) : json_object_new_double(d);
}

static json_object *ex_object(struct ex *x, json_object *s, int depth)
{
    json_object *o = json_object_new_object(), *props = svc_json_obj(s, "properties");
    json_object *req = svc_json_arr(s, "required");
    if (!props) /* {"type": "object"} alone: any object, the empty one */
        return o;
    json_object_object_foreach(props, key, sub)
    {
        bool want = !req;
        for (size_t i = 0; req && i < json_object_array_length(req) && !want; i++) {
            const char *r = json_object_get_string(json_object_array_get_idx(req, i));
            want = r && strcmp(r, key) == 0; /* required: [null] killed the worker */
        }
        if (want)
            svc_json_set(o, key, ex_value(x, sub, depth + 1));
    }
    return o;
}

static json_object *ex_array(struct ex *x, json_object *s, int depth)
{
    json_object *a = json_object_new_array(), *items = svc_json_obj(s, "items");
    int64_t n = svc_json_int(s, "minItems", 0), max = svc_json_int(s, "maxItems", -1);
    if (n < 1 && max != 0)
        n = 1;
    for (int64_t i = 0; i < n && i < 64; i++)
        json_object_array_add(a, ex_value(x, items, depth + 1));
    return a;
}

static json_object *ex_value(struct ex *x, json_object *s, int depth)
{
    json_object *v = NULL;
    if (depth > 32 || ++x->nodes > EX_NODES) /* 5 properties that $ref "#" were 5^16 */
        return NULL;
    if (!json_object_is_type(s, json_type_object))
        return ex_string(x, s);
    const char *ref = svc_json_str(s, "$ref", NULL);
    if (ref)
        return ex_value(x, ex_ref(x, ref), depth + 1);
    if (json_object_object_get_ex(s, "const", &v))
        return svc_json_copy(v);
    json_object *list = svc_json_arr(s, "enum");
    if (list && json_object_array_length(list) > 0)
        return svc_json_copy(json_object_array_get_idx(list, 0));
    if ((list = svc_json_arr(s, "anyOf")) || (list = svc_json_arr(s, "oneOf")) ||
        (list = svc_json_arr(s, "allOf")))
        return ex_value(x, ex_branch(list), depth + 1);
    const char *t = ex_type(s);
    if (strcmp(t, "object") == 0)
        return ex_object(x, s, depth);
    if (strcmp(t, "array") == 0)
        return ex_array(x, s, depth);
    if (strcmp(t, "integer") == 0 || strcmp(t, "number") == 0)
        return ex_number(s, t[0] == 'i');
    if (strcmp(t, "boolean") == 0)
        return json_object_new_boolean(0);
    if (strcmp(t, "null") == 0)
        return NULL;
    return ex_string(x, s);
}

json_object *svc_schema_example(json_object *schema, const char *text)
{
    struct ex x = {schema, text ? text : "", false, 0};
    return ex_value(&x, schema, 0);
}
