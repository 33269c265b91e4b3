#include "parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonx.h"
#include "util.h"

/* Strands' ImageFormat and DocumentFormat, with the MIME types that name them. */
struct media {
    const char *mime, *format;
};
static const struct media images[] = {
    {"image/png", "png"}, {"image/jpeg", "jpeg"}, {"image/jpg", "jpeg"},
    {"image/gif", "gif"}, {"image/webp", "webp"},
};
static const struct media documents[] = {
    {"application/pdf", "pdf"},
    {"text/csv", "csv"},
    {"application/msword", "doc"},
    {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"},
    {"application/vnd.ms-excel", "xls"},
    {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"},
    {"text/html", "html"},
    {"text/plain", "txt"},
    {"text/markdown", "md"},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *format_of(const struct media *t, size_t n, const char *mime, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(t[i].mime) == len && strncasecmp(t[i].mime, mime, len) == 0)
            return t[i].format;
    return NULL;
}

static const char *mime_of(const struct media *t, size_t n, const char *format)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].format, format) == 0)
            return t[i].mime;
    return "application/octet-stream";
}

/* A document's format from its file name's extension, or NULL. */
static const char *format_of_name(const char *name)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    for (size_t i = 0; dot && i < COUNT(documents); i++)
        if (strcasecmp(documents[i].format, dot + 1) == 0)
            return documents[i].format;
    return NULL;
}

/* "data:<mime>[;...];base64,<data>": the MIME type and the base64 text. */
struct data_url {
    const char *mime, *b64;
    size_t mime_len, b64_len;
};

static bool data_url_parse(const char *url, struct data_url *d)
{
    const char *comma = strncasecmp(url, "data:", 5) == 0 ? strchr(url, ',') : NULL;
    if (!comma)
        return false;
    d->mime = url + 5;
    d->mime_len = strcspn(d->mime, ";,");
    if (comma - url < 12 || strncasecmp(comma - 7, ";base64", 7) != 0)
        return false;
    d->b64 = comma + 1;
    d->b64_len = strlen(d->b64);
    return true;
}

long long svc_parts_bytes_size(json_object *bytes)
{
    const char *data = json_object_is_type(bytes, json_type_string)
                           ? json_object_get_string(bytes)
                           : svc_json_str(bytes, "data", NULL);
    if (!data)
        return -1;
    size_t n = strlen(data), pad = 0;
    while (pad < 2 && n > pad && data[n - 1 - pad] == '=')
        pad++;
    return (long long)(n / 4 * 3) - (long long)pad;
}

static int check_data(const struct data_url *d, const char *param, int64_t max_bytes,
                      struct svc_err *err)
{
    size_t n = 0;
    unsigned char *raw = svc_b64_decode(d->b64, d->b64_len, false, &n);
    if (!raw)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s': the data is not base64", param);
    free(raw);
    if (n == 0) /* was stored: an image or document of no bytes */
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' holds no data", param);
    if ((int64_t)n > max_bytes)
        return svc_err_setp(err, SVC_E_BODY_TOO_LARGE, param,
                            "'%s' holds %zu bytes, more than limits.max_image_bytes (%lld)", param,
                            n, (long long)max_bytes);
    return 0;
}

/* The URL of an image_url part ({"url"}, or the URL alone), or NULL; *v its node. */
static const char *image_url_of(json_object *part, json_object **v)
{
    json_object *iu = json_object_object_get(part, "image_url");
    *v = json_object_is_type(iu, json_type_object) ? json_object_object_get(iu, "url") : iu;
    return json_object_is_type(*v, json_type_string) ? json_object_get_string(*v) : NULL;
}

static int check_image(json_object *part, const char *param, int64_t max_bytes, struct svc_err *err)
{
    char p[256];
    json_object *uv;
    const char *url = image_url_of(part, &uv);
    json_object *dv = json_object_object_get(svc_json_obj(part, "image_url"), "detail");
    const char *detail = !dv                                         ? "auto"
                         : json_object_is_type(dv, json_type_string) ? json_object_get_string(dv)
                                                                     : ""; /* 5 was auto */
    snprintf(p, sizeof p, "%s.image_url.url", param);
    if (!url || strlen(url) != (size_t)json_object_get_string_len(uv))
        return svc_err_setp(err, uv ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, p,
                            "'%s' must be a data: URL or an http(s) URL", p);
    if (strcmp(detail, "auto") != 0) {
        snprintf(p, sizeof p, "%s.image_url.detail", param);
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s': images are stored as Strands image blocks, which keep no "
                            "detail; only \"auto\" is accepted",
                            p);
    }
    if (strncasecmp(url, "https://", 8) == 0 || strncasecmp(url, "http://", 7) == 0)
        return strlen(url) <= 8192 ? 0
                                   : svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                                                  "'%s' is longer than 8192 characters", p);
    struct data_url d;
    if (!data_url_parse(url, &d))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s' must be a base64 data: URL or an http(s) URL", p);
    if (!format_of(images, COUNT(images), d.mime, d.mime_len))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s': image type '%.*s' is not png, jpeg, gif or webp", p,
                            (int)(d.mime_len < 64 ? d.mime_len : 64), d.mime);
    return check_data(&d, p, max_bytes, err);
}

static int check_file(json_object *part, const char *param, int64_t max_bytes, struct svc_err *err)
{
    char p[256];
    json_object *f = svc_json_obj(part, "file"), *v = NULL;
    snprintf(p, sizeof p, "%s.file", param);
    if (!f)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be an object", p);
    if (json_object_object_get_ex(f, "file_id", NULL)) {
        snprintf(p, sizeof p, "%s.file.file_id", param);
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s': svc keeps no uploaded files; send the file as file_data", p);
    }
    const char *name = NULL;
    snprintf(p, sizeof p, "%s.file.filename", param);
    if (json_object_object_get_ex(f, "filename", &v) &&
        (!json_object_is_type(v, json_type_string) || !*(name = json_object_get_string(v)) ||
         strlen(name) != (size_t)json_object_get_string_len(v)))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be a non-empty string", p);
    snprintf(p, sizeof p, "%s.file.file_data", param);
    const char *data = svc_json_str(f, "file_data", NULL);
    struct data_url d;
    if (!data || !data_url_parse(data, &d))
        return svc_err_setp(err, data ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, p,
                            "'%s' must be a base64 data: URL", p);
    if (!format_of(documents, COUNT(documents), d.mime, d.mime_len) && !format_of_name(name))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s': a document must be pdf, csv, doc, docx, xls, xlsx, html, txt "
                            "or md (by its MIME type or its filename)",
                            p);
    return check_data(&d, p, max_bytes, err);
}

int svc_parts_check(json_object *part, const char *param, int64_t max_bytes, struct svc_err *err)
{
    const char *type = svc_json_str(part, "type", "text");
    if (strcmp(type, "text") == 0)
        return 0;
    if (strcmp(type, "image_url") == 0)
        return check_image(part, param, max_bytes, err);
    if (strcmp(type, "file") == 0)
        return check_file(part, param, max_bytes, err);
    char p[256];
    snprintf(p, sizeof p, "%s.type", param);
    return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                        "'%s' must be text, image_url or file, not '%.32s'", p, type);
}

/* Strands' bytes value of a checked data URL (new reference). */
static json_object *bytes_of(const struct data_url *d)
{
    size_t n = 0;
    unsigned char *raw = svc_b64_decode(d->b64, d->b64_len, false, &n);
    char *b64 = svc_b64_encode(raw, n, false); /* encoded again, as Python's b64encode */
    free(raw);
    json_object *o = json_object_new_object();
    svc_json_set_bool(o, "__bytes_encoded__", true);
    svc_json_set_str(o, "data", b64);
    free(b64);
    return o;
}

json_object *svc_parts_wrap(const char *key, json_object *v)
{
    json_object *o = json_object_new_object();
    svc_json_set(o, key, v);
    return o;
}

json_object *svc_parts_text(const char *t)
{
    return svc_json_new_obj("text", t, NULL);
}

json_object *svc_parts_result(const char *id, const char *status, const char *text)
{
    json_object *tr = svc_json_new_obj("toolUseId", id, "status", status, NULL);
    json_object *items = json_object_new_array();
    json_object_array_add(items, svc_parts_text(text));
    svc_json_set(tr, "content", items);
    return svc_parts_wrap("toolResult", tr);
}

json_object *svc_parts_message(const char *role, json_object *content)
{
    json_object *m = svc_json_new_obj("role", role, NULL);
    if (!json_object_is_type(content, json_type_array)) {
        json_object *one = json_object_new_array();
        json_object_array_add(one, content);
        content = one;
    }
    svc_json_set(m, "content", content);
    return m;
}

json_object *svc_parts_block(json_object *part)
{
    const char *type = svc_json_str(part, "type", "text");
    struct data_url d;
    if (strcmp(type, "image_url") == 0) {
        json_object *uv;
        const char *url = image_url_of(part, &uv);
        json_object *img = json_object_new_object(), *src = json_object_new_object();
        if (data_url_parse(url, &d)) {
            svc_json_set_str(img, "format", format_of(images, COUNT(images), d.mime, d.mime_len));
            svc_json_set(src, "bytes", bytes_of(&d));
        } else {
            /* Strands' image block needs a format: the URL's extension's, else png */
            const char *ext = strrchr(url, '.'), *fmt = "png";
            for (size_t i = 0; ext && i < COUNT(images); i++)
                if (strncasecmp(ext + 1, images[i].mime + 6, strlen(images[i].mime + 6)) == 0)
                    fmt = images[i].format;
            svc_json_set_str(img, "format", fmt);
            svc_json_set(src, "location", svc_json_new_obj("type", "url", "url", url, NULL));
        }
        svc_json_set(img, "source", src);
        return svc_parts_wrap("image", img);
    }
    if (strcmp(type, "file") == 0) {
        json_object *f = svc_json_obj(part, "file");
        const char *name = svc_json_str(f, "filename", NULL);
        data_url_parse(svc_json_str(f, "file_data", ""), &d);
        const char *fmt = format_of(documents, COUNT(documents), d.mime, d.mime_len);
        json_object *doc = json_object_new_object(), *src = json_object_new_object();
        svc_json_set_str(doc, "format", fmt ? fmt : format_of_name(name));
        svc_json_set_str(doc, "name", name ? name : "document");
        svc_json_set(src, "bytes", bytes_of(&d));
        svc_json_set(doc, "source", src);
        return svc_parts_wrap("document", doc);
    }
    return svc_parts_text(svc_json_str(part, "text", ""));
}

/* The data URL (heap) of a block's source bytes, or its location's URL, or NULL. */
static char *source_url(json_object *src, const char *mime)
{
    const char *data = svc_json_str(svc_json_obj(src, "bytes"), "data", NULL);
    if (data) {
        char *u = NULL;
        svc_xasprintf(&u, "data:%s;base64,%s", mime, data);
        return u;
    }
    const char *url = svc_json_str(svc_json_obj(src, "location"), "url", NULL);
    return url ? svc_xstrdup(url) : NULL;
}

json_object *svc_parts_openai(json_object *block)
{
    json_object *img = svc_json_obj(block, "image"),
                *m = img ? img : svc_json_obj(block, "document");
    const char *fmt = svc_json_str(m, "format", "");
    char *url =
        m ? source_url(svc_json_obj(m, "source"), img ? mime_of(images, COUNT(images), fmt)
                                                      : mime_of(documents, COUNT(documents), fmt))
          : NULL;
    if (!url)
        return NULL;
    json_object *v = svc_json_new_obj(img ? "url" : "file_data", url, NULL);
    free(url);
    if (!img)
        svc_json_set_str(v, "filename", svc_json_str(m, "name", "document"));
    json_object *p = svc_json_new_obj("type", img ? "image_url" : "file", NULL);
    svc_json_set(p, img ? "image_url" : "file", v);
    return p;
}

json_object *svc_parts_responses(json_object *block)
{
    json_object *chat = svc_parts_openai(block);
    if (!chat)
        return NULL;
    json_object *iu = svc_json_obj(chat, "image_url"), *f = svc_json_obj(chat, "file");
    json_object *p =
        iu ? svc_json_new_obj("type", "input_image", "image_url", svc_json_str(iu, "url", ""),
                              "detail", "auto", NULL)
           : svc_json_new_obj("type", "input_file", "filename", svc_json_str(f, "filename", ""),
                              "file_data", svc_json_str(f, "file_data", ""), NULL);
    json_object_put(chat);
    return p;
}

int svc_parts_from_responses(json_object *part, const char *param, json_object **out,
                             struct svc_err *err)
{
    const char *type = svc_json_str(part, "type", "");
    bool image = strcmp(type, "input_image") == 0;
    const char *refused = image ? "file_id" : "file_url";
    char p[256];
    *out = NULL;
    if (!image && strcmp(type, "input_file") != 0) {
        snprintf(p, sizeof p, "%s.type", param);
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s' must be input_text, input_image or input_file, not '%.32s'", p,
                            type);
    }
    if (json_object_object_get_ex(part, refused, NULL)) {
        snprintf(p, sizeof p, "%s.%s", param, refused);
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s': svc keeps no uploaded or remote files; send the data inline", p);
    }
    json_object *inner = json_object_new_object(), *v = NULL;
    if (image) {
        if (json_object_object_get_ex(part, "image_url", &v))
            svc_json_set(inner, "url", json_object_get(v));
        if (json_object_object_get_ex(part, "detail", &v))
            svc_json_set(inner, "detail", json_object_get(v));
    } else {
        static const char *const keys[] = {"file_data", "filename", "file_id"};
        for (size_t i = 0; i < COUNT(keys); i++)
            if (json_object_object_get_ex(part, keys[i], &v))
                svc_json_set(inner, keys[i], json_object_get(v));
    }
    *out = svc_json_new_obj("type", image ? "image_url" : "file", NULL);
    svc_json_set(*out, image ? "image_url" : "file", inner);
    return 0;
}

/* The view of an image, document or video block: format, name, size or URL. */
static json_object *media_view(const char *type, json_object *m, const struct media *t, size_t nt,
                               bool bytes)
{
    json_object *src = svc_json_obj(m, "source"), *b = svc_json_obj(src, "bytes");
    json_object *v =
        svc_json_new_obj("type", type, "format", svc_json_str(m, "format", NULL), NULL);
    if (svc_json_str(m, "name", NULL))
        svc_json_set_str(v, "name", svc_json_str(m, "name", NULL));
    if (b)
        svc_json_set_int(v, "size", svc_parts_bytes_size(b));
    char *url =
        (!b || bytes) && t ? source_url(src, mime_of(t, nt, svc_json_str(m, "format", ""))) : NULL;
    if (url)
        svc_json_set_str(v, "url", url);
    free(url);
    return v;
}

static json_object *result_view(json_object *tr, bool bytes)
{
    json_object *v =
        svc_json_new_obj("type", "tool_result", "id", svc_json_str(tr, "toolUseId", NULL), "status",
                         svc_json_str(tr, "status", "success"), NULL);
    json_object *c = svc_json_arr(tr, "content"), *items = json_object_new_array();
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *it = json_object_array_get_idx(c, i), *j = NULL;
        if (json_object_object_get_ex(it, "json", &j)) {
            json_object *jv = svc_json_new_obj("type", "json", NULL);
            svc_json_set(jv, "json", json_object_get(j));
            json_object_array_add(items, jv);
        } else {
            json_object_array_add(items, svc_parts_view(it, bytes));
        }
    }
    svc_json_set(v, "parts", items);
    return v;
}

/* reasoningContent: its text, whether it is signed or redacted. */
static json_object *reasoning_view(json_object *r)
{
    json_object *rt = svc_json_obj(r, "reasoningText");
    json_object *v =
        svc_json_new_obj("type", "reasoning", "text", svc_json_str(rt, "text", ""), NULL);
    svc_json_set_bool(v, "signed", svc_json_str(rt, "signature", NULL) != NULL);
    svc_json_set_bool(v, "redacted", json_object_object_get_ex(r, "redactedContent", NULL));
    return v;
}

json_object *svc_parts_view(json_object *block, bool bytes)
{
    json_object *v = NULL, *x;
    const char *text = svc_json_str(block, "text", NULL);
    if (text) {
        v = svc_json_new_obj("type", "text", "text", text, NULL);
    } else if ((x = svc_json_obj(block, "image"))) {
        v = media_view("image", x, images, COUNT(images), bytes);
    } else if ((x = svc_json_obj(block, "document"))) {
        v = media_view("document", x, documents, COUNT(documents), bytes);
    } else if ((x = svc_json_obj(block, "video"))) {
        v = media_view("video", x, NULL, 0, false);
    } else if ((x = svc_json_obj(block, "toolUse"))) {
        v = svc_json_new_obj("type", "tool_use", "id", svc_json_str(x, "toolUseId", NULL), "name",
                             svc_json_str(x, "name", NULL), NULL);
        svc_json_set(v, "input", json_object_get(json_object_object_get(x, "input")));
    } else if ((x = svc_json_obj(block, "toolResult"))) {
        v = result_view(x, bytes);
    } else if ((x = svc_json_obj(block, "reasoningContent"))) {
        v = reasoning_view(x);
    } else {
        static const char *const kinds[][2] = {{"citationsContent", "citations"},
                                               {"cachePoint", "cache_point"},
                                               {"guardContent", "guard"}};
        v = json_object_new_object();
        const char *kind = "other";
        for (size_t i = 0; i < COUNT(kinds); i++)
            if (json_object_object_get_ex(block, kinds[i][0], NULL))
                kind = kinds[i][1];
        svc_json_set_str(v, "type", kind);
        if (strcmp(kind, "other") == 0 && json_object_object_length(block) > 0) {
            struct json_object_iterator it = json_object_iter_begin(block);
            svc_json_set_str(v, "block", json_object_iter_peek_name(&it));
        }
    }
    return v;
}

char *svc_parts_describe(json_object *msg)
{
    struct svc_buf b;
    svc_buf_init(&b);
    json_object *c = svc_json_arr(msg, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *blk = json_object_array_get_idx(c, i);
        if (!svc_json_obj(blk, "image") && !svc_json_obj(blk, "document"))
            continue;
        json_object *v = svc_parts_view(blk, false);
        const char *name = svc_json_str(v, "name", NULL), *url = svc_json_str(v, "url", NULL);
        svc_buf_printf(&b, "%s%s %s%s%s%s", b.len ? ", " : "", svc_json_str(v, "type", ""),
                       svc_json_str(v, "format", "?"), name ? " \"" : "", name ? name : "",
                       name ? "\"" : "");
        if (url)
            svc_buf_printf(&b, " at %s", url);
        else
            svc_buf_printf(&b, " of %lld bytes", (long long)svc_json_int(v, "size", 0));
        json_object_put(v);
    }
    return b.len ? svc_buf_steal(&b) : (svc_buf_free(&b), NULL);
}
