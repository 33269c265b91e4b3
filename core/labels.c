#include "labels.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "util.h"

/* Whether s is 1..max characters without a control character. */
static bool text_ok(const char *s, size_t min, size_t max)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return false;
    size_t n = svc_utf8_len(s);
    return n >= min && n <= max;
}

int svc_labels_check_tags(json_object *tags, struct svc_err *err)
{
    if (!json_object_is_type(tags, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "tags", "tags must be an array of strings");
    size_t n = json_object_array_length(tags);
    if (n > SVC_TAGS_MAX)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "tags", "at most %d tags", SVC_TAGS_MAX);
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(tags, i);
        if (!json_object_is_type(t, json_type_string) ||
            strlen(json_object_get_string(t)) != (size_t)json_object_get_string_len(t) ||
            !text_ok(json_object_get_string(t), 1, SVC_TAG_LEN_MAX)) /* NUL: stored cut */
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "tags",
                                "each tag must be a string of 1..%d characters without control "
                                "characters",
                                SVC_TAG_LEN_MAX);
    }
    return 0;
}

int svc_labels_check_metadata(json_object *metadata, struct svc_err *err)
{
    if (!json_object_is_type(metadata, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata", "metadata must be an object");
    if (json_object_object_length(metadata) > SVC_METADATA_KEYS_MAX)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata", "at most %d metadata keys",
                            SVC_METADATA_KEYS_MAX);
    json_object_object_foreach(metadata, key, val)
    {
        if (!text_ok(key, 1, SVC_METADATA_KEY_MAX))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata",
                                "metadata keys must be 1..%d characters without control "
                                "characters",
                                SVC_METADATA_KEY_MAX);
        if (!json_object_is_type(val, json_type_string) ||
            strlen(json_object_get_string(val)) != (size_t)json_object_get_string_len(val) ||
            svc_utf8_len(json_object_get_string(val)) > SVC_METADATA_VALUE_MAX) {
            char param[SVC_METADATA_KEY_MAX * 4 + 16];
            snprintf(param, sizeof param, "metadata.%s", key);
            return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                                "metadata values must be strings of at most %d characters "
                                "without NUL",
                                SVC_METADATA_VALUE_MAX);
        }
    }
    return 0;
}

int svc_labels_metadata_merge(json_object *sc, json_object *add, json_object **out,
                              struct svc_err *err)
{
    *out = NULL;
    if (!add)
        return 0;
    json_object *m = svc_json_copy(svc_json_obj(sc, "metadata"));
    if (!m)
        m = json_object_new_object();
    json_object_object_foreach(add, key, val) svc_json_set(m, key, json_object_get(val));
    if (json_object_object_length(m) > SVC_METADATA_KEYS_MAX) {
        json_object_put(m);
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata",
                            "the session's metadata would hold more than %d keys",
                            SVC_METADATA_KEYS_MAX);
    }
    *out = m;
    return 0;
}

json_object *svc_labels_tags_set(json_object *tags)
{
    json_object *out = json_object_new_array(), *seen = json_object_new_object();
    for (size_t i = 0; i < json_object_array_length(tags); i++) {
        const char *t = json_object_get_string(json_object_array_get_idx(tags, i));
        if (json_object_object_get_ex(seen, t, NULL))
            continue;
        json_object_object_add(seen, t, NULL);
        json_object_array_add(out, json_object_new_string(t));
    }
    json_object_put(seen);
    return out;
}

char *svc_labels_tags_joined(json_object *tags)
{
    size_t n = tags ? json_object_array_length(tags) : 0;
    if (n == 0)
        return NULL;
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_adds(&b, "\x1f");
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(tags, i);
        if (json_object_is_type(t, json_type_string))
            svc_buf_printf(&b, "%s\x1f", json_object_get_string(t));
    }
    return svc_buf_steal(&b);
}
