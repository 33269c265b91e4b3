#include "jstream.h"

#include <errno.h>
#include <string.h>

#include "jsonx.h"
#include "util.h"

struct rd {
    FILE *f;
    struct svc_buf cap; /* the text of the value being read */
    size_t max;
};

static int skip_ws(struct rd *r)
{
    int c;
    while ((c = getc(r->f)) == ' ' || c == '\n' || c == '\r' || c == '\t')
        ;
    if (c != EOF)
        ungetc(c, r->f);
    return c;
}

static int take(struct rd *r, int c)
{
    char ch = (char)c;
    svc_buf_add(&r->cap, &ch, 1);
    return r->cap.len > r->max ? -1 : 0;
}

/* The text of the next value into r->cap: a string, an object or an array by its closing
 * bracket (strings minded), else a scalar up to the next delimiter. 0, or -1. */
static int capture(struct rd *r)
{
    r->cap.len = 0;
    int c = skip_ws(r), depth = 0;
    bool str = false, esc = false;
    if (c != '"' && c != '{' && c != '[') {
        while ((c = getc(r->f)) != EOF && !strchr(",}] \t\r\n", c))
            if (take(r, c) != 0)
                return -1;
        if (c != EOF)
            ungetc(c, r->f);
        return r->cap.len ? 0 : -1;
    }
    do {
        if ((c = getc(r->f)) == EOF || take(r, c) != 0)
            return -1;
        if (esc)
            esc = false;
        else if (str) {
            esc = c == '\\';
            str = c != '"';
        } else if (c == '"')
            str = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
    } while (str || depth > 0);
    return 0;
}

/* The next value, parsed (JSON null is NULL); -1 when it is not JSON. */
static int next_value(struct rd *r, json_object **v)
{
    *v = NULL;
    return capture(r) == 0 && svc_json_parse(r->cap.data, r->cap.len, v, NULL) == 0 ? 0 : -1;
}

/* The elements of the array each, '[' next. */
static int elements(struct rd *r, const struct svc_jstream_fns *fns)
{
    getc(r->f);
    if (skip_ws(r) == ']')
        return getc(r->f) == ']' ? 0 : -1;
    for (size_t i = 0;; i++) {
        json_object *v;
        if (next_value(r, &v) != 0)
            return -1;
        int rc = fns->element(fns->ctx, i, v);
        json_object_put(v);
        if (rc != 0)
            return rc;
        int c = skip_ws(r) == EOF ? EOF : getc(r->f);
        if (c == ']')
            return 0;
        if (c != ',')
            return -1;
    }
}

/* One "key": value member; -1 on bad syntax, else the callback's return. */
static int member(struct rd *r, const struct svc_jstream_fns *fns)
{
    json_object *k;
    if (skip_ws(r) != '"' || next_value(r, &k) != 0)
        return -1;
    const char *key = json_object_get_string(k);
    int rc = -1;
    if (skip_ws(r) == ':' && getc(r->f) == ':') {
        if (fns->each && strcmp(key, fns->each) == 0 && skip_ws(r) == '[') {
            json_object *empty = json_object_new_array();
            rc = fns->member(fns->ctx, key, empty);
            json_object_put(empty);
            if (rc == 0)
                rc = elements(r, fns);
        } else {
            json_object *v;
            rc = next_value(r, &v);
            if (rc == 0)
                rc = fns->member(fns->ctx, key, v);
            json_object_put(v);
        }
    }
    json_object_put(k);
    return rc;
}

int svc_jstream_object(FILE *f, size_t value_max, const struct svc_jstream_fns *fns,
                       struct svc_err *err)
{
    struct rd r = {.f = f, .max = value_max};
    svc_buf_init(&r.cap);
    int rc = -1, c;
    bool end = false;
    if (skip_ws(&r) == '{' && getc(f) == '{') {
        rc = 0;
        if (skip_ws(&r) == '}')
            end = getc(f) == '}';
        while (rc == 0 && !end && (rc = member(&r, fns)) == 0) {
            c = skip_ws(&r) == EOF ? EOF : getc(f);
            end = c == '}';
            rc = c == ',' || end ? 0 : -1;
        }
        if (rc == 0 && skip_ws(&r) != EOF)
            rc = -1;
    }
    svc_buf_free(&r.cap);
    if (rc == -1 && ferror(f))
        return svc_err_set(err, SVC_E_IO, "read: %s", strerror(errno));
    if (rc == -1)
        return svc_err_set(err, SVC_E_INVALID_JSON, "not one JSON object");
    return rc;
}
