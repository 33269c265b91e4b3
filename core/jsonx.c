#include "jsonx.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsio.h"
#include "util.h"

/* svc_buf_add with the common case (room left) inline: the dumper appends many pieces. */
static inline void put(struct svc_buf *b, const char *s, size_t n)
{
    if (b->len + n < b->cap) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = '\0';
    } else {
        svc_buf_add(b, s, n);
    }
}

static inline void puts_(struct svc_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void dump_string(struct svc_buf *b, const char *s, size_t n)
{
    /* as Python: control characters below 0x20 escaped, by name where JSON has one */
    static const char named[] = "btn\0fr"; /* \b (8) to \r (13); 11 has none */
    put(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        char esc[8] = {'\\', (char)c};
        if (c >= 8 && c <= 13 && named[c - 8])
            esc[1] = named[c - 8];
        else if (c < 0x20)
            snprintf(esc + 1, sizeof esc - 1, "u%04x", c);
        put(b, s + start, i - start);
        puts_(b, esc);
        start = i + 1;
    }
    put(b, s + start, n - start);
    put(b, "\"", 1);
}

void svc_json_format_double(double d, char *out, size_t outsz)
{
    /* Python's repr: the shortest digits that read back as the same double, written in
     * fixed notation when the decimal exponent is in [-4, 16), else as d.ddde+XX */
    char e[40];
    int prec = 0;
    do
        snprintf(e, sizeof e, "%.*e", prec++, d);
    while (prec < 17 && strtod(e, NULL) != d);
    int exp = atoi(strchr(e, 'e') + 1), decimals = prec - 1 - exp;
    if (exp < -4 || exp >= 16)
        snprintf(out, outsz, "%s", e);
    else /* the same digits, rounded at the same place; at least one after the point */
        snprintf(out, outsz, "%.*f", decimals > 0 ? decimals : 1, d);
}

static void dump_indent(struct svc_buf *b, int level)
{
    static const char spaces[] = "                                                                ";
    int n = level * 2;
    put(b, "\n", 1);
    while (n > 0) {
        int k = n > 64 ? 64 : n;
        put(b, spaces, (size_t)k);
        n -= k;
    }
}

static char raw_marker; /* userdata of string nodes that hold JSON text to write verbatim */

json_object *svc_json_new_raw_len(const char *json, size_t len)
{
    json_object *o = json_object_new_string_len(json, (int)len);
    if (!o)
        svc_oom(len);
    json_object_set_userdata(o, &raw_marker, NULL);
    return o;
}

json_object *svc_json_new_raw(const char *json)
{
    return svc_json_new_raw_len(json, strlen(json));
}

static void dump_value(struct svc_buf *b, json_object *o, int level, bool pretty);

/* json-c formats an int64 into a printbuf kept on the object: format it here (INT64_MAX may
 * stand for a larger uint64: json-c's own text then). */
static void dump_int(struct svc_buf *b, json_object *o)
{
    int64_t v = json_object_get_int64(o);
    if (v == INT64_MAX) {
        puts_(b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        return;
    }
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof tmp - 1 - n++] = '-';
    put(b, tmp + sizeof tmp - n, (size_t)n);
}

static void dump_double(struct svc_buf *b, json_object *o)
{
    /* a parsed number keeps its text (json-c's double_s): a float, or a big integer */
    const char *text = json_object_get_userdata(o);
    if (text) {
        puts_(b, text);
        return;
    }
    double d = json_object_get_double(o);
    if (!isfinite(d)) {
        puts_(b, "null"); /* never NaN/Infinity on disk */
        return;
    }
    /* the shortest round-trip text takes up to 17 snprintf/strtod pairs; a polled
     * answer repeats its doubles, so the last one is remembered (a pure function) */
    static double last_d;
    static char last_num[40];
    if (!last_num[0] || memcmp(&d, &last_d, sizeof d) != 0) {
        svc_json_format_double(d, last_num, sizeof last_num);
        last_d = d;
    }
    puts_(b, last_num);
}

/* A string, or a raw JSON text kept verbatim (re-indented when pretty). */
static void dump_str(struct svc_buf *b, json_object *o, int level, bool pretty)
{
    const char *s = json_object_get_string(o);
    size_t len = (size_t)json_object_get_string_len(o);
    if (json_object_get_userdata(o) == &raw_marker) {
        if (!pretty) {
            put(b, s, len);
            return;
        }
        json_object *parsed = NULL; /* pretty output (CLI): indent it like the rest */
        if (svc_json_parse(s, len, &parsed, NULL) == 0) {
            dump_value(b, parsed, level, pretty);
            json_object_put(parsed);
            return;
        }
    }
    dump_string(b, s, len);
}

/* Member i of a container: a comma after the first, an indent when pretty, "key": for an
 * object's. */
static void dump_member(struct svc_buf *b, const char *key, json_object *v, size_t i, int level,
                        bool pretty)
{
    if (i)
        put(b, ",", 1);
    if (pretty)
        dump_indent(b, level + 1);
    if (key) {
        dump_string(b, key, strlen(key));
        puts_(b, pretty ? ": " : ":");
    }
    dump_value(b, v, level + 1, pretty);
}

/* An array or an object: "[]" or "{}" when empty, else its members (one a line when pretty). */
static void dump_container(struct svc_buf *b, json_object *o, int level, bool pretty)
{
    bool arr = json_object_is_type(o, json_type_array);
    size_t n = arr ? json_object_array_length(o) : (size_t)json_object_object_length(o), i = 0;
    if (n == 0) {
        puts_(b, arr ? "[]" : "{}");
        return;
    }
    put(b, arr ? "[" : "{", 1);
    if (arr) {
        for (; i < n; i++)
            dump_member(b, NULL, json_object_array_get_idx(o, i), i, level, pretty);
    } else {
        json_object_object_foreach(o, key, val)
        {
            dump_member(b, key, val, i++, level, pretty);
        }
    }
    if (pretty)
        dump_indent(b, level);
    put(b, arr ? "]" : "}", 1);
}

static void dump_value(struct svc_buf *b, json_object *o, int level, bool pretty)
{
    switch (json_object_get_type(o)) {
    case json_type_null:
        puts_(b, "null");
        break;
    case json_type_boolean:
        puts_(b, json_object_get_boolean(o) ? "true" : "false");
        break;
    case json_type_int:
        dump_int(b, o);
        break;
    case json_type_double:
        dump_double(b, o);
        break;
    case json_type_string:
        dump_str(b, o, level, pretty);
        break;
    case json_type_array:
    case json_type_object:
        dump_container(b, o, level, pretty);
        break;
    }
}

static char *dump(json_object *o, bool pretty)
{
    struct svc_buf b;
    svc_buf_init(&b);
    dump_value(&b, o, 0, pretty);
    return svc_buf_steal(&b);
}

char *svc_json_dump_native(json_object *o)
{
    return dump(o, true);
}

char *svc_json_dump_compact(json_object *o)
{
    return dump(o, false);
}

/* json-c's strict mode still takes single quotes, NaN, Infinity and lax UTF-8: refuse them
 * before parsing. Outside strings only JSON's own characters may appear. */
static const bool json_outside[256] = {
    [' '] = true, ['\t'] = true, ['\r'] = true, ['\n'] = true, ['{'] = true, ['}'] = true,
    ['['] = true, [']'] = true,  [','] = true,  [':'] = true,  ['0'] = true, ['1'] = true,
    ['2'] = true, ['3'] = true,  ['4'] = true,  ['5'] = true,  ['6'] = true, ['7'] = true,
    ['8'] = true, ['9'] = true,  ['+'] = true,  ['-'] = true,  ['.'] = true, ['e'] = true,
    ['E'] = true, ['t'] = true,  ['r'] = true,  ['u'] = true,  ['f'] = true, ['a'] = true,
    ['l'] = true, ['s'] = true,  ['n'] = true,
};

static size_t digits_end(const char *buf, size_t len, size_t j)
{
    while (j < len && buf[j] >= '0' && buf[j] <= '9')
        j++;
    return j;
}

/* The end of a JSON number starting at buf[i], or 0 when it breaks the grammar
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; *plain is false when it has a fraction
 * or an exponent. */
static size_t number_end(const char *buf, size_t len, size_t i, bool *plain)
{
    size_t d = i + (i < len && buf[i] == '-'), j = digits_end(buf, len, d);
    *plain = true;
    if (j == d || (buf[d] == '0' && j > d + 1))
        return 0; /* no digits, or a leading zero */
    if (j < len && buf[j] == '.') {
        *plain = false;
        d = j + 1;
        if ((j = digits_end(buf, len, d)) == d)
            return 0;
    }
    if (j < len && (buf[j] == 'e' || buf[j] == 'E')) {
        *plain = false;
        d = j + 1;
        if (d < len && (buf[d] == '+' || buf[d] == '-'))
            d++;
        if ((j = digits_end(buf, len, d)) == d)
            return 0;
    }
    return j;
}

/* json-c saturates integers beyond 64 bits: the text is parsed with each one quoted behind
 * a marker, and the strings it makes become numbers that keep their digits. The marker
 * holds a random number of this process's, so that no client's string can pass for one. */
static struct {
    char text[40];    /* as written in JSON: \u0000svc-int-<16 hex>: */
    char decoded[32]; /* as json-c reads it: NUL, svc-int-<16 hex>: */
    size_t len;       /* of decoded */
} mark;

static void mark_init(void)
{
    if (mark.len)
        return;
    uint64_t r;
    svc_random_bytes((unsigned char *)&r, sizeof r);
    snprintf(mark.text, sizeof mark.text, "\\u0000svc-int-%016llx:", (unsigned long long)r);
    mark.len = 1 + (size_t)snprintf(mark.decoded + 1, sizeof mark.decoded - 1,
                                    "svc-int-%016llx:", (unsigned long long)r);
}

struct quote_ctx {
    const char *buf;
    struct svc_buf *out;
    size_t done; /* bytes of buf copied to out */
    size_t skip; /* the end of the last run of number characters looked at */
};

static void quote_big(struct quote_ctx *q, size_t at, size_t end)
{
    svc_buf_add(q->out, q->buf + q->done, at - q->done);
    svc_buf_adds(q->out, "\"");
    mark_init();
    svc_buf_adds(q->out, mark.text);
    svc_buf_add(q->out, q->buf + at, end - at);
    svc_buf_adds(q->out, "\"");
    q->done = end;
}

/* The end of the run of number characters at buf[i]; *big: an integer beyond 64 bits. */
static size_t number_run(const char *buf, size_t len, size_t i, bool *big)
{
    size_t j = i;
    bool neg = buf[j] == '-', integral = true;
    if (neg)
        j++;
    size_t d0 = j;
    while (j < len && ((buf[j] >= '0' && buf[j] <= '9') || strchr(".eE+-", buf[j]))) {
        if (buf[j] == '.' || buf[j] == 'e' || buf[j] == 'E')
            integral = false;
        j++;
    }
    size_t nd = j - d0;
    const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
    *big = integral && (nd > 19 || (nd == 19 && strncmp(buf + d0, lim, 19) > 0));
    return j;
}

/* *bigs: the integers beyond 64 bits of buf, their runs quoted into q (used only then). */
static int strict_prescan(const char *buf, size_t len, size_t *bigs, struct quote_ctx *q,
                          struct svc_err *err)
{
    *bigs = 0;
    if (!svc_utf8_valid(buf, len))
        return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON: not valid UTF-8");
    bool in_str = false, nul_in_str = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (in_str) {
            if (c < 0x20)
                return svc_err_set(err, SVC_E_INVALID_JSON,
                                   "invalid JSON: control character in a string at byte %zu", i);
            if (c == '\\') {
                if (i + 5 < len && memcmp(buf + i + 1, "u0000", 5) == 0)
                    nul_in_str = true;
                i++;
            } else if (c == '"') {
                in_str = false;
                if (nul_in_str) { /* json-c cuts keys at NUL: "a\u0000b" would become "a" */
                    size_t k = i + 1;
                    while (k < len && strchr(" \t\r\n", buf[k]))
                        k++;
                    if (k < len && buf[k] == ':')
                        return svc_err_set(err, SVC_E_INVALID_JSON,
                                           "invalid JSON: a key holds \\u0000 at byte %zu", i);
                }
            }
            continue;
        }
        if (c == '"') {
            in_str = true;
            nul_in_str = false;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            bool plain, big = false;
            size_t end = number_end(buf, len, i, &plain);
            if (end == 0)
                return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON: bad number at byte %zu",
                                   i);
            if (i >= q->skip) { /* a run's first number */
                q->skip = number_run(buf, len, i, &big);
                big = big && q->skip == end; /* a run of more ("1-2"): json-c refuses it */
                if (big)
                    quote_big(q, i, q->skip);
            } else if (plain && end - i > 18) {
                number_run(buf, len, i, &big);
            }
            *bigs += plain && end - i > 18 && big;
            if (!plain) { /* 1e400 would read as infinity, which JSON cannot carry */
                char num[512];
                size_t n = end - i < sizeof num - 1 ? end - i : sizeof num - 1;
                memcpy(num, buf + i, n);
                num[n] = '\0';
                if (!isfinite(strtod(num, NULL)))
                    return svc_err_set(err, SVC_E_INVALID_JSON,
                                       "invalid JSON: number out of range at byte %zu", i);
            }
            i = end - 1;
            continue;
        }
        if (json_outside[c])
            continue;
        return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON: unexpected '%c' at byte %zu",
                           c >= 0x20 && c < 0x7f ? c : '?', i);
    }
    return 0;
}

/* The marked string o as the number it stands for (new reference), or NULL. */
static json_object *big_unmark(json_object *o)
{
    if (!mark.len || !json_object_is_type(o, json_type_string) ||
        (size_t)json_object_get_string_len(o) <= mark.len ||
        memcmp(json_object_get_string(o), mark.decoded, mark.len) != 0)
        return NULL;
    const char *digits = json_object_get_string(o) + mark.len;
    json_object *n = json_object_new_double_s(strtod(digits, NULL), digits);
    if (!n)
        svc_oom(strlen(digits));
    return n;
}

static size_t ws_end(const char *buf, size_t len, size_t i)
{
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
        i++;
    return i;
}

/* The parse proper, of text strict_prescan passed. */
static int parse_plain(const char *buf, size_t len, json_object **out, struct svc_err *err)
{
    /* one tokener for the process, reset for each document (a page parses hundreds);
     * parsing never nests, and the processes are single-threaded */
    static json_tokener *tok;
    if (!tok) {
        tok = json_tokener_new_ex(64); /* NULL only for a depth below 1 */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    } else {
        json_tokener_reset(tok);
    }
    json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = tok->char_offset;
    if (jerr == json_tokener_continue && len > 0) {
        /* all input was consumed; a bare number ("42") is complete only at its end: say so */
        o = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        used = len;
    }
    if (jerr == json_tokener_continue || ws_end(buf, len, 0) == len) { /* only whitespace */
        json_object_put(o);
        return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON: unexpected end of input");
    }
    if (jerr != json_tokener_success) {
        json_object_put(o);
        return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON at byte %zu: %s", used,
                           json_tokener_error_desc(jerr));
    }
    size_t tail = ws_end(buf, len, used);
    if (tail < len) {
        json_object_put(o);
        return svc_err_set(err, SVC_E_INVALID_JSON, "invalid JSON: trailing data at byte %zu",
                           tail);
    }
    *out = o;
    return 0;
}

/* What replaces o in a parsed tree (new reference), or NULL: with bigs a string marked as a
 * big integer becomes its number; with py a float is written as Python would, in place. */
static json_object *fix_up(json_object *o, bool bigs, bool py)
{
    json_object *n = bigs ? big_unmark(o) : NULL;
    const char *text =
        json_object_is_type(o, json_type_double) ? json_object_get_userdata(o) : NULL;
    if (n)
        return n;
    if (py && text && strpbrk(text, ".eE")) { /* a float; a big integer stays as it is */
        json_object_set_double(o, json_object_get_double(o));
    } else if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if ((n = fix_up(json_object_array_get_idx(o, i), bigs, py)))
                json_object_array_put_idx(o, i, n);
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, key, v)
        {
            if ((n = fix_up(v, bigs, py)))
                json_object_object_add(o, key, n); /* replaces in place */
        }
    }
    return NULL;
}

int svc_json_parse(const char *buf, size_t len, json_object **out, struct svc_err *err)
{
    *out = NULL;
    size_t bigs = 0;
    struct svc_buf q;
    svc_buf_init(&q);
    struct quote_ctx ctx = {buf, &q, 0, 0};
    int rc = strict_prescan(buf, len, &bigs, &ctx, err);
    if (rc == 0 && bigs == 0) /* the common case: one pass over the text before json-c's */
        rc = parse_plain(buf, len, out, err);
    else if (rc == 0) {
        svc_buf_add(&q, buf + ctx.done, len - ctx.done);
        rc = parse_plain(q.data, q.len, out, err);
    }
    svc_buf_free(&q);
    json_object *n = rc == 0 && bigs ? fix_up(*out, true, false) : NULL;
    if (n) {
        json_object_put(*out);
        *out = n;
    }
    return rc;
}

int svc_json_parse_python(const char *buf, size_t len, json_object **out, struct svc_err *err)
{
    if (svc_json_parse(buf, len, out, err) != 0)
        return -1;
    fix_up(*out, false, true); /* replaces nothing: no bigs */
    return 0;
}

int svc_json_read_file(const char *path, json_object **out, struct svc_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    if (svc_file_read(path, &buf, &len, err) != 0)
        return -1;
    struct svc_err perr;
    int rc = svc_json_parse(buf, len, out, &perr);
    free(buf);
    if (rc != 0)
        return svc_err_set(err, SVC_E_IO, "damaged file %s: %s", path, perr.message);
    return 0;
}

int svc_json_read_object_file(const char *path, json_object **out, struct svc_err *err)
{
    if (svc_json_read_file(path, out, err) != 0)
        return -1;
    if (!json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        const char *base = strrchr(path, '/');
        return svc_err_set(err, SVC_E_IO, "damaged %s: not an object", base ? base + 1 : path);
    }
    return 0;
}

size_t svc_jsonl_lines(const char *buf, size_t len,
                       void (*each)(void *ctx, const char *line, size_t n, size_t off), void *ctx)
{
    size_t done = 0;
    for (;;) {
        const char *nl = memchr(buf + done, '\n', len - done);
        if (!nl)
            return done;
        size_t n = (size_t)(nl - (buf + done));
        if (n > 0)
            each(ctx, buf + done, n, done);
        done += n + 1;
    }
}

json_object *svc_jsonl_object(const char *line, size_t n)
{
    json_object *o = NULL;
    if (svc_json_parse(line, n, &o, NULL) != 0 || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

int svc_json_append_line(const char *path, json_object *o, bool durable, struct svc_err *err)
{
    struct svc_buf b;
    svc_buf_init(&b);
    /* a leading '\n', written only after a torn line: the torn one stays apart, skippable */
    put(&b, "\n", 1);
    dump_value(&b, o, 0, false);
    put(&b, "\n", 1);
    int rc = svc_file_append_line(path, b.data + 1, b.len - 1, durable, err);
    svc_buf_free(&b);
    return rc;
}

static int write_dump(const char *path, json_object *o, int sync, bool newline, struct svc_err *err)
{
    struct svc_buf b;
    svc_buf_init(&b);
    dump_value(&b, o, 0, true);
    if (newline)
        svc_buf_add(&b, "\n", 1);
    int rc = svc_file_write_synced(path, b.data, b.len, sync, err);
    svc_buf_free(&b);
    return rc;
}

int svc_json_write_pretty(const char *path, json_object *o, bool durable, struct svc_err *err)
{
    return write_dump(path, o, durable ? SVC_SYNC_FULL : SVC_SYNC_NONE, true, err);
}

int svc_json_write_native_sync(const char *path, json_object *o, int sync, struct svc_err *err)
{
    return write_dump(path, o, sync, false, err);
}

int svc_json_write_pretty_sync(const char *path, json_object *o, int sync, struct svc_err *err)
{
    return write_dump(path, o, sync, true, err);
}

/* o's value of key when it is of type t, else NULL. */
static json_object *typed(json_object *o, const char *key, json_type t)
{
    json_object *v;
    return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, t) ? v : NULL;
}

const char *svc_json_str(json_object *o, const char *key, const char *def)
{
    json_object *v = typed(o, key, json_type_string);
    return v ? json_object_get_string(v) : def;
}

int64_t svc_json_int(json_object *o, const char *key, int64_t def)
{
    json_object *v = typed(o, key, json_type_int);
    return v ? json_object_get_int64(v) : def;
}

bool svc_json_bool(json_object *o, const char *key, bool def)
{
    json_object *v = typed(o, key, json_type_boolean);
    return v ? json_object_get_boolean(v) : def;
}

json_object *svc_json_obj(json_object *o, const char *key)
{
    return typed(o, key, json_type_object);
}

json_object *svc_json_arr(json_object *o, const char *key)
{
    return typed(o, key, json_type_array);
}

/* json-c returns NULL or -1 when an allocation fails: that is out of memory (err.h). */
void svc_json_set(json_object *o, const char *key, json_object *val)
{
    if (json_object_object_add(o, key, val) != 0)
        svc_oom(strlen(key));
}

json_object *svc_json_new_obj(const char *key, ...)
{
    json_object *o = json_object_new_object();
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; k; k = va_arg(ap, const char *))
        svc_json_set_str(o, k, va_arg(ap, const char *));
    va_end(ap);
    return o;
}

/* Set key to v, a value just made of n bytes (NULL: json-c's allocation failed). */
static void set_made(json_object *o, const char *key, json_object *v, size_t n)
{
    if (!v)
        svc_oom(n);
    svc_json_set(o, key, v);
}

void svc_json_set_str(json_object *o, const char *key, const char *val)
{
    if (!val)
        svc_json_set(o, key, NULL);
    else
        set_made(o, key, json_object_new_string(val), strlen(val));
}

void svc_json_set_int(json_object *o, const char *key, int64_t val)
{
    set_made(o, key, json_object_new_int64(val), sizeof val);
}

void svc_json_set_bool(json_object *o, const char *key, bool val)
{
    set_made(o, key, json_object_new_boolean(val), sizeof val);
}

void svc_json_merge(json_object *dst, json_object *src)
{
    if (!json_object_is_type(src, json_type_object))
        return;
    json_object_object_foreach(src, key, val)
        json_object_object_add(dst, key, json_object_get(val));
}

json_object *svc_json_copy(json_object *o)
{
    json_object *c = NULL;
    return o && json_object_deep_copy(o, &c, NULL) == 0 ? c : NULL;
}
