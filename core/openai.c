#include "openai.h"

#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "parts.h"
#include "util.h"

char *svc_native_text(json_object *msg)
{
    struct svc_buf b;
    svc_buf_init(&b);
    json_object *content = svc_json_arr(msg, "content");
    for (size_t i = 0; content && i < json_object_array_length(content); i++) {
        const char *t = svc_json_str(json_object_array_get_idx(content, i), "text", NULL);
        if (t)
            svc_buf_adds(&b, t);
    }
    return svc_buf_steal(&b);
}

size_t svc_native_chars(json_object *msgs)
{
    size_t chars = 0;
    for (size_t i = 0; msgs && i < json_object_array_length(msgs); i++) {
        char *t = svc_native_text(json_object_array_get_idx(msgs, i));
        chars += strlen(t);
        free(t);
    }
    return chars;
}

bool svc_native_has(json_object *msg, const char *key)
{
    json_object *c = svc_json_arr(msg, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++)
        if (svc_json_obj(json_object_array_get_idx(c, i), key))
            return true;
    return false;
}

bool svc_native_erased(json_object *msg)
{
    json_object *content = svc_json_arr(msg, "content");
    size_t n = content ? json_object_array_length(content) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *blk = json_object_array_get_idx(content, i);
        const char *t = svc_json_str(blk, "text", NULL);
        if (!t || *t || json_object_object_length(blk) != 1)
            return false;
    }
    return n > 0;
}

const char *svc_openai_role(json_object *msg)
{
    if (svc_native_has(msg, "toolResult"))
        return "tool";
    const char *role = svc_json_str(msg, "role", "user");
    return strcmp(role, "assistant") == 0 ? "assistant" : "user";
}

/* Text of a toolResult's content list: text items joined, json items compacted. */
static char *tool_result_text(json_object *tr)
{
    struct svc_buf b;
    svc_buf_init(&b);
    json_object *items = svc_json_arr(tr, "content");
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        const char *t = svc_json_str(it, "text", NULL);
        json_object *j;
        if (t) {
            svc_buf_adds(&b, t);
        } else if (json_object_object_get_ex(it, "json", &j)) {
            char *s = svc_json_dump_compact(j);
            svc_buf_adds(&b, s);
            free(s);
        }
    }
    return svc_buf_steal(&b);
}

static json_object *text_part(const char *t)
{
    return svc_json_new_obj("type", "text", "text", t, NULL);
}

/* The images and documents of a toolResult as chat parts, appended to media (an OpenAI tool
 * message carries text only: they follow in a user message, as Strands' openai model does). */
static void result_media(json_object *tr, json_object *media)
{
    json_object *items = svc_json_arr(tr, "content");
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *p = svc_parts_openai(json_object_array_get_idx(items, i));
        if (p)
            json_object_array_add(media, p);
    }
}

/* A user message's content with its images and documents: the parts in order (new
 * reference), or NULL when it has none (its content is then its text). */
static json_object *user_parts(json_object *msg)
{
    if (!svc_native_has(msg, "image") && !svc_native_has(msg, "document"))
        return NULL;
    json_object *content = svc_json_arr(msg, "content"), *parts = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        json_object *blk = json_object_array_get_idx(content, i), *p = svc_parts_openai(blk);
        const char *t = svc_json_str(blk, "text", NULL);
        if (p || t)
            json_object_array_add(parts, p ? p : text_part(t));
    }
    return parts;
}

json_object *svc_openai_project(json_object *msg)
{
    json_object *out = json_object_new_array(), *media = json_object_new_array();
    json_object *content = svc_json_arr(msg, "content"), *tool_calls = NULL;
    size_t n = content ? json_object_array_length(content) : 0;
    bool assistant = strcmp(svc_json_str(msg, "role", "user"), "assistant") == 0;
    struct svc_buf text;
    svc_buf_init(&text);
    for (size_t i = 0; i < n; i++) {
        json_object *blk = json_object_array_get_idx(content, i);
        const char *t = svc_json_str(blk, "text", NULL);
        json_object *tu = svc_json_obj(blk, "toolUse"), *tr = svc_json_obj(blk, "toolResult");
        if (t) {
            svc_buf_adds(&text, t);
        } else if (tu) {
            if (!tool_calls)
                tool_calls = json_object_new_array();
            json_object *tc =
                svc_json_new_obj("id", svc_json_str(tu, "toolUseId", ""), "type", "function", NULL);
            json_object *fn = svc_json_new_obj("name", svc_json_str(tu, "name", ""), NULL);
            json_object *input = json_object_object_get(tu, "input");
            char *args = input ? svc_json_dump_compact(input) : NULL;
            svc_json_set_str(fn, "arguments", args ? args : "{}");
            free(args);
            svc_json_set(tc, "function", fn);
            json_object_array_add(tool_calls, tc);
        } else if (tr) { /* the tool messages lead */
            json_object *m = svc_json_new_obj("role", "tool", "tool_call_id",
                                              svc_json_str(tr, "toolUseId", ""), NULL);
            char *rt = tool_result_text(tr);
            svc_json_set_str(m, "content", rt);
            free(rt);
            json_object_array_add(out, m);
            result_media(tr, media);
        }
    }
    char *txt = svc_buf_steal(&text);
    if (json_object_array_length(out) > 0) { /* user text or media alongside results */
        if (*txt && json_object_array_length(media))
            json_object_array_add(media, text_part(txt));
        if (json_object_array_length(media)) {
            json_object_array_add(out, svc_parts_message("user", json_object_get(media)));
        } else if (*txt) {
            json_object_array_add(out, svc_json_new_obj("role", "user", "content", txt, NULL));
        }
    } else {
        json_object *m = svc_json_new_obj("role", assistant ? "assistant" : "user", NULL),
                    *parts = assistant ? NULL : user_parts(msg);
        if (parts)
            svc_json_set(m, "content", parts);
        else if (assistant && tool_calls && !*txt)
            svc_json_set(m, "content", NULL);
        else
            svc_json_set_str(m, "content", txt);
        if (tool_calls)
            svc_json_set(m, "tool_calls", json_object_get(tool_calls));
        json_object_array_add(out, m);
    }
    json_object_put(tool_calls);
    json_object_put(media);
    free(txt);
    return out;
}

json_object *svc_openai_args(const char *args)
{
    json_object *input = NULL;
    if (svc_json_parse_python(args, strlen(args), &input, NULL) == 0 &&
        json_object_is_type(input, json_type_object))
        return input;
    json_object_put(input);
    return json_object_new_object();
}

char *svc_openai_content_text(json_object *content)
{
    if (json_object_is_type(content, json_type_string))
        return svc_xstrdup(json_object_get_string(content));
    if (!json_object_is_type(content, json_type_array))
        return NULL;
    struct svc_buf b;
    svc_buf_init(&b);
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        json_object *part = json_object_array_get_idx(content, i);
        const char *type = svc_json_str(part, "type", "text");
        const char *t = svc_json_str(part, "text", NULL);
        if (strcmp(type, "text") == 0 && t) {
            if (b.len)
                svc_buf_adds(&b, "\n");
            svc_buf_adds(&b, t);
        }
    }
    return svc_buf_steal(&b);
}

bool svc_openai_has_media(json_object *content)
{
    bool array = json_object_is_type(content, json_type_array);
    for (size_t i = 0; array && i < json_object_array_length(content); i++) {
        const char *type = svc_json_str(json_object_array_get_idx(content, i), "type", "text");
        if (strcmp(type, "image_url") == 0 || strcmp(type, "file") == 0)
            return true;
    }
    return false;
}

json_object *svc_openai_to_native(json_object *om)
{
    const char *role = svc_json_str(om, "role", NULL);
    if (!role)
        return NULL;
    json_object *content_v = json_object_object_get(om, "content");
    char *text = content_v ? svc_openai_content_text(content_v) : NULL;
    const char *native = NULL; /* the native message's role */
    json_object *blocks = json_object_new_array();
    if (strcmp(role, "user") == 0 && svc_openai_has_media(content_v)) {
        for (size_t i = 0; i < json_object_array_length(content_v); i++)
            json_object_array_add(blocks, svc_parts_block(json_object_array_get_idx(content_v, i)));
        native = "user";
    } else if (strcmp(role, "user") == 0 || strcmp(role, "assistant") == 0) {
        if (text && *text)
            json_object_array_add(blocks, svc_parts_text(text));
        native = role;
        json_object *tcs = strcmp(role, "assistant") == 0 ? svc_json_arr(om, "tool_calls") : NULL;
        for (size_t i = 0; tcs && i < json_object_array_length(tcs); i++) {
            json_object *tc = json_object_array_get_idx(tcs, i), *fn = svc_json_obj(tc, "function");
            json_object *tu = svc_json_new_obj("toolUseId", svc_json_str(tc, "id", ""), "name",
                                               svc_json_str(fn, "name", ""), NULL);
            svc_json_set(tu, "input", svc_openai_args(svc_json_str(fn, "arguments", "{}")));
            json_object_array_add(blocks, svc_parts_wrap("toolUse", tu));
        }
    } else if (strcmp(role, "tool") == 0) {
        json_object_array_add(blocks, svc_parts_result(svc_json_str(om, "tool_call_id", ""),
                                                       "success", text ? text : ""));
        native = "user";
    }
    free(text);
    if (!native || json_object_array_length(blocks) == 0) {
        json_object_put(blocks);
        return NULL;
    }
    return svc_parts_message(native, blocks);
}
