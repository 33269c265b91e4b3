/* cfgy: the YAML walker of the configuration loader. See cfgy.h. */
#include "cfgy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Caps of cfgy_to_json: aliases can make a small document describe a huge or cyclic tree. */
#define CFGY_JSON_DEPTH 64
#define CFGY_JSON_NODES 100000

struct cfgy {
    const char *file;
    yaml_document_t *doc;
    struct svc_buf path;
    cfgy_fn fn;
    void *ctx;
    struct svc_err *err;
};

int cfgy_fail(struct svc_err *err, const char *file, int line, int col, const char *key,
              const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (key && *key)
        return svc_err_setp(err, SVC_E_CONFIG, key, "%s:%d:%d: %s: %s", file, line, col, key, what);
    return svc_err_set(err, SVC_E_CONFIG, "%s:%d:%d: %s", file, line, col, what);
}

/* libyaml's 0-based line or column, 1-based; MARK(m) is both. */
static int mark_num(size_t v)
{
    return v >= (size_t)INT32_MAX ? INT32_MAX : (int)v + 1;
}
#define MARK(m) mark_num((m).line), mark_num((m).column)

bool cfgy_is_null(const char *s, size_t len)
{
    return len == 0 || (len == 1 && s[0] == '~') || (len == 4 && strncasecmp(s, "null", 4) == 0);
}

static int cfgy_children(struct cfgy *y, yaml_node_t *node, int depth);

static int cfgy_visit(struct cfgy *y, yaml_node_t *val, yaml_node_t *key, size_t index, int depth)
{
    size_t saved = y->path.len;
    int rc;
    if (key) {
        if (saved)
            svc_buf_add(&y->path, ".", 1);
        svc_buf_add(&y->path, (const char *)key->data.scalar.value, key->data.scalar.length);
    } else {
        svc_buf_printf(&y->path, "[%zu]", index);
    }

    struct cfgy_node n = {
        .file = y->file,
        .path = y->path.data,
        .key = key ? (const char *)key->data.scalar.value : NULL,
        .index = index,
        .depth = depth,
        .line = mark_num(val->start_mark.line),
        .col = mark_num(val->start_mark.column),
        .doc = y->doc,
        .node = val,
    };
    n.key_line = key ? mark_num(key->start_mark.line) : n.line;
    n.key_col = key ? mark_num(key->start_mark.column) : n.col;
    switch (val->type) {
    case YAML_SCALAR_NODE:
        n.text = (const char *)val->data.scalar.value;
        n.len = val->data.scalar.length;
        n.plain = val->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n.kind = n.plain && cfgy_is_null(n.text, n.len) ? CFGY_NULL : CFGY_SCALAR;
        break;
    case YAML_SEQUENCE_NODE:
        n.kind = CFGY_SEQ;
        n.count = (size_t)(val->data.sequence.items.top - val->data.sequence.items.start);
        break;
    case YAML_MAPPING_NODE:
        n.kind = CFGY_MAP;
        n.count = (size_t)(val->data.mapping.pairs.top - val->data.mapping.pairs.start);
        break;
    default:
        n.kind = CFGY_NULL;
        n.text = "";
        break;
    }

    rc = y->fn(y->ctx, &n, y->err);
    if (rc == CFGY_DESCEND) {
        rc = cfgy_children(y, val, depth);
        if (rc == 0) {
            n.leaving = true;
            n.path = y->path.data; /* the children may have moved the buffer */
            rc = y->fn(y->ctx, &n, y->err);
        }
    }
    y->path.len = saved;
    y->path.data[saved] = '\0';
    return rc < 0 ? -1 : 0;
}

/* Child i of a sequence or mapping: 1 with *k (NULL in a sequence) and *v, 0 past the last
 * (or for a scalar), -1 with err when the document is broken. */
static int cfgy_child(yaml_document_t *doc, yaml_node_t *node, size_t i, yaml_node_t **k,
                      yaml_node_t **v, struct svc_err *err)
{
    *k = NULL;
    if (node->type == YAML_SEQUENCE_NODE) {
        if (node->data.sequence.items.start + i >= node->data.sequence.items.top)
            return 0;
        *v = yaml_document_get_node(doc, node->data.sequence.items.start[i]);
    } else if (node->type == YAML_MAPPING_NODE) {
        yaml_node_pair_t *p = node->data.mapping.pairs.start + i;
        if (p >= node->data.mapping.pairs.top)
            return 0;
        *k = yaml_document_get_node(doc, p->key);
        *v = *k ? yaml_document_get_node(doc, p->value) : NULL;
    } else {
        return 0;
    }
    return *v ? 1 : svc_err_set(err, SVC_E_INTERNAL, "config: broken YAML document");
}

static int cfgy_children(struct cfgy *y, yaml_node_t *node, int depth)
{
    yaml_node_t *k, *v;
    int rc;
    for (size_t i = 0; (rc = cfgy_child(y->doc, node, i, &k, &v, y->err)) > 0; i++) {
        if (k && k->type != YAML_SCALAR_NODE)
            return cfgy_fail(y->err, y->file, MARK(k->start_mark), y->path.data,
                             "keys must be scalars");
        if (k && strlen((const char *)k->data.scalar.value) != k->data.scalar.length)
            return cfgy_fail(y->err, y->file, MARK(k->start_mark), y->path.data,
                             "a key contains a NUL character");
        if (cfgy_visit(y, v, k, k ? 0 : i, depth + 1) < 0)
            return -1;
    }
    return rc;
}

/* 1-based line and column of a byte offset (libyaml's reader errors carry only that). */
static void cfgy_offset_mark(const char *buf, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (buf[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int cfgy_syntax_error(yaml_parser_t *p, const char *file, const char *buf, size_t len,
                             struct svc_err *err)
{
    int line, col;
    /* malloc aborts (err.h), so a memory error is libyaml's own limit on a stack or string */
    if (p->error == YAML_MEMORY_ERROR)
        return svc_err_set(err, SVC_E_CONFIG, "%s: too large to parse", file);
    if (p->error == YAML_READER_ERROR) {
        cfgy_offset_mark(buf, len, p->problem_offset, &line, &col);
    } else {
        line = mark_num(p->problem_mark.line);
        col = mark_num(p->problem_mark.column);
    }
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->context)
        return svc_err_set(err, SVC_E_CONFIG, "%s:%d:%d: syntax error: %s (%s)", file, line, col,
                           problem, p->context);
    return svc_err_set(err, SVC_E_CONFIG, "%s:%d:%d: syntax error: %s", file, line, col, problem);
}

/* Load buf's only document into doc: 0, or -1 with err (a syntax error, or a second
 * document, refused rather than silently ignored). */
static int cfgy_load(const char *file, const char *buf, size_t len, yaml_document_t *doc,
                     struct svc_err *err)
{
    yaml_parser_t parser;
    yaml_document_t extra;
    int rc = 0;
    (void)yaml_parser_initialize(&parser); /* fails only when malloc does: never (err.h) */
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, doc)) {
        rc = cfgy_syntax_error(&parser, file, buf, len, err);
    } else if (yaml_document_get_root_node(doc)) {
        if (!yaml_parser_load(&parser, &extra)) {
            rc = cfgy_syntax_error(&parser, file, buf, len, err);
        } else {
            if (yaml_document_get_root_node(&extra))
                rc = cfgy_fail(err, file, MARK(extra.start_mark), NULL,
                               "a second YAML document is not supported");
            yaml_document_delete(&extra);
        }
        if (rc != 0)
            yaml_document_delete(doc);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int cfgy_walk(const char *file, const char *buf, size_t len, cfgy_fn fn, void *ctx,
              struct svc_err *err)
{
    yaml_document_t doc;
    if (cfgy_load(file, buf, len, &doc, err) != 0)
        return -1;
    struct cfgy y = {.file = file, .doc = &doc, .fn = fn, .ctx = ctx, .err = err};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc = 0;
    svc_buf_init(&y.path);
    if (!root ||
        (root->type == YAML_SCALAR_NODE && root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
         cfgy_is_null((const char *)root->data.scalar.value, root->data.scalar.length))) {
        rc = 0; /* nothing to walk */
    } else if (root->type != YAML_MAPPING_NODE) {
        rc = cfgy_fail(err, file, MARK(root->start_mark), NULL, "the top level must be a mapping");
    } else {
        svc_buf_add(&y.path, "", 0); /* path.data is never NULL from here on */
        rc = cfgy_children(&y, root, 0);
    }
    yaml_document_delete(&doc);
    svc_buf_free(&y.path);
    return rc;
}

/* A scalar by YAML 1.2's core schema: null, bool, integer, float, else (or quoted) a string. */
static json_object *cfgy_json_scalar(const yaml_node_t *node)
{
    const char *s = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_object_new_string_len(s, (int)len);
    if (cfgy_is_null(s, len))
        return NULL; /* JSON null */
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        return json_object_new_boolean(1);
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        return json_object_new_boolean(0);
    if (len > 0 && len == strlen(s) && strspn(s, "0123456789+-.eE") == len &&
        strpbrk(s, "0123456789")) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0)
            return json_object_new_int64(v);
        errno = 0;
        double d = strtod(s, &end);
        if (*end == '\0' && isfinite(d))
            return json_object_new_double(d);
    }
    return json_object_new_string_len(s, (int)len);
}

/* A failed conversion: what was built of *out dropped; returns rc. */
static int json_fail(json_object **out, int rc)
{
    json_object_put(*out);
    *out = NULL;
    return rc;
}

static int cfgy_json_node(const struct cfgy_node *at, yaml_node_t *node, int depth, size_t *budget,
                          json_object **out, struct svc_err *err)
{
    *out = NULL;
    if (depth > CFGY_JSON_DEPTH || ++*budget > CFGY_JSON_NODES)
        return cfgy_fail(err, at->file, MARK(node->start_mark), at->path,
                         "nested too deeply or too large");
    switch (node->type) {
    case YAML_SCALAR_NODE:
        if (node->data.scalar.length > (size_t)INT32_MAX)
            return cfgy_fail(err, at->file, MARK(node->start_mark), at->path, "value too long");
        *out = cfgy_json_scalar(node); /* NULL is JSON null */
        return 0;
    case YAML_SEQUENCE_NODE:
    case YAML_MAPPING_NODE: {
        bool map = node->type == YAML_MAPPING_NODE;
        yaml_node_t *k, *v;
        int rc;
        *out = map ? json_object_new_object() : json_object_new_array();
        for (size_t i = 0; (rc = cfgy_child(at->doc, node, i, &k, &v, err)) > 0; i++) {
            json_object *jv;
            if (k && (k->type != YAML_SCALAR_NODE ||
                      strlen((const char *)k->data.scalar.value) != k->data.scalar.length))
                return json_fail(out, cfgy_fail(err, at->file, MARK(k->start_mark), at->path,
                                                "keys must be scalars"));
            if (cfgy_json_node(at, v, depth + 1, budget, &jv, err) < 0)
                return json_fail(out, -1);
            if (map)
                json_object_object_add(*out, (const char *)k->data.scalar.value, jv);
            else
                json_object_array_add(*out, jv);
        }
        return rc < 0 ? json_fail(out, -1) : 0;
    }
    default:
        return 0;
    }
}

int cfgy_to_json(const struct cfgy_node *n, json_object **out, struct svc_err *err)
{
    size_t budget = 0;
    return cfgy_json_node(n, n->node, 0, &budget, out, err);
}
