#include "responses.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fsio.h"
#include "jsonx.h"
#include "store.h"
#include "util.h"

/* Whether s is n lowercase hex digits. */
static bool lower_hex(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

void svc_responses_new_id(const char *prefix, char *out, size_t outsz)
{
    char hex[33];
    svc_random_hex(hex, 32);
    snprintf(out, outsz, "%s%s", prefix, hex);
}

bool svc_responses_id_valid(const char *id)
{
    return id && strncmp(id, "resp_", 5) == 0 && lower_hex(id + 5, SVC_RESPONSE_ID_LEN - 6);
}

/* <root>/.svc_responses, refused (io_error) when something other than a directory is there.
 * Heap path in *out. With create, the directory is made when missing. */
static int responses_dir(const struct svc_config *cfg, bool create, char **out, struct svc_err *err)
{
    struct svc_store sst;
    svc_store_from_config(cfg, &sst);
    *out = svc_layout_root_path(sst.root, SVC_F_RESPONSES, NULL);
    struct stat st;
    if (lstat(*out, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        svc_err_set(err, SVC_E_IO, "%s is not a plain directory", svc_layout_name(SVC_F_RESPONSES));
    } else if (!create) {
        svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response not found");
    } else if (svc_mkdirs_durable(*out, 0755, cfg->sessions.fsync, err) == 0) {
        return 0;
    }
    free(*out);
    *out = NULL;
    return -1;
}

static char *response_file(const char *dir, const char *id)
{
    char *path = NULL;
    svc_xasprintf(&path, "%s/%s.json", dir, id);
    return path;
}

/* The file "<name>.json" of responses_dir into *path (heap): 0, or -1 with err. */
static int response_path(const struct svc_config *cfg, bool create, const char *name, char **path,
                         struct svc_err *err)
{
    char *dir = NULL;
    if (responses_dir(cfg, create, &dir, err) != 0)
        return -1;
    *path = response_file(dir, name);
    free(dir);
    return 0;
}

int svc_responses_put(const struct svc_config *cfg, json_object *resp, struct svc_err *err)
{
    const char *id = svc_json_str(resp, "id", "");
    if (!svc_responses_id_valid(id))
        return svc_err_set(err, SVC_E_INTERNAL, "response object without a valid id");
    char *path = NULL;
    if (response_path(cfg, true, id, &path, err) != 0)
        return -1;
    int rc = svc_json_write_pretty(path, resp, cfg->sessions.fsync, err);
    if (rc == 0)
        svc_responses_prune(cfg, SVC_RESPONSES_KEEP_S); /* the old ones, hourly at most */
    free(path);
    return rc;
}

static int responses_read(const struct svc_config *cfg, const char *id, json_object **out,
                          struct svc_err *err)
{
    *out = NULL;
    if (!svc_responses_id_valid(id))
        return svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response not found");
    char *path = NULL;
    int rc = 0;
    struct svc_err rerr;
    struct stat st;
    if (response_path(cfg, false, id, &path, err) != 0)
        return -1;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        rc = svc_err_set(err, SVC_E_IO, "stored response %s is not a plain file", id);
    } else if (svc_json_read_file(path, out, &rerr) != 0) {
        rc = svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response %s not found", id);
        if (rerr.code != SVC_E_NOT_FOUND && err)
            *err = rerr;
    } else if (!json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        rc = svc_err_set(err, SVC_E_IO, "stored response %s is damaged", id);
    }
    free(path);
    return rc;
}

int svc_responses_get(const struct svc_config *cfg, const char *id, json_object **out,
                      struct svc_err *err)
{
    if (responses_read(cfg, id, out, err) != 0)
        return -1;
    json_object_object_del(*out, "input_items");
    return 0;
}

int svc_responses_input_items(const struct svc_config *cfg, const char *id, json_object **out,
                              struct svc_err *err)
{
    json_object *resp = NULL;
    if (responses_read(cfg, id, &resp, err) != 0)
        return -1;
    json_object *items = svc_json_arr(resp, "input_items");
    *out = items ? json_object_get(items) : json_object_new_array();
    json_object_put(resp);
    return 0;
}

int svc_responses_delete(const struct svc_config *cfg, const char *id, struct svc_err *err)
{
    json_object *resp = NULL;
    if (responses_read(cfg, id, &resp, err) != 0) /* the id checked, the file a plain one */
        return -1;
    json_object_put(resp);
    char *path = NULL;
    if (response_path(cfg, false, id, &path, err) != 0)
        return -1;
    int rc = 0;
    if (unlink(path) != 0)
        rc = errno == ENOENT
                 ? svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response %s not found", id)
                 : svc_err_errno(err, "remove the stored response");
    free(path);
    return rc;
}

/* "key_" + sha256 hex of the key: the name of its file (without .json) in name (69+). */
static void key_name(const char *key, char *name, size_t namesz)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    char *text = NULL, hex[65];
    svc_xasprintf(&text, "responses\n%s", key);
    EVP_Digest(text, strlen(text), md, NULL, EVP_sha256(), NULL);
    free(text);
    svc_hex(md, 32, hex);
    snprintf(name, namesz, "key_%s", hex);
}

static bool key_name_valid(const char *name)
{
    return strncmp(name, "key_", 4) == 0 && lower_hex(name + 4, 64);
}

int svc_responses_put_key(const struct svc_config *cfg, const char *key, const char *id,
                          struct svc_err *err)
{
    char name[80], *path = NULL;
    key_name(key, name, sizeof name);
    if (response_path(cfg, true, name, &path, err) != 0)
        return -1;
    json_object *o = svc_json_new_obj("response_id", id, NULL);
    int rc = svc_json_write_pretty(path, o, cfg->sessions.fsync, err);
    json_object_put(o);
    free(path);
    return rc;
}

int svc_responses_by_key(const struct svc_config *cfg, const char *key, json_object **out,
                         struct svc_err *err)
{
    *out = NULL;
    char name[80], *path = NULL;
    json_object *o = NULL;
    key_name(key, name, sizeof name);
    if (response_path(cfg, false, name, &path, err) != 0)
        return -1;
    int rc =
        svc_json_read_object_file(path, &o, NULL) != 0
            ? svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "no response for this idempotency key")
            : svc_responses_get(cfg, svc_json_str(o, "response_id", ""), out, err);
    json_object_put(o);
    free(path);
    return rc;
}

static int remove_old_response(const void *ctx, const char *id, const struct stat *sb)
{
    if (!svc_responses_id_valid(id) && !key_name_valid(id))
        return 0;
    char *path = response_file(ctx, id);
    int removed = unlink(path) == 0;
    free(path);
    return removed;
}

int svc_responses_prune(const struct svc_config *cfg, double max_age_s)
{
    char *dir = NULL, *stamp = NULL;
    int removed = 0;
    if (responses_dir(cfg, false, &dir, NULL) == 0 && (stamp = response_file(dir, ".pruned")))
        removed = svc_file_prune_old_json(dir, stamp, max_age_s, remove_old_response, dir);
    free(stamp);
    free(dir);
    return removed;
}

struct forget {
    const char *sid;
    json_object *gone; /* ids of the responses removed, as keys */
    int removed;
};

static void forget_response(void *ctx, const char *id, const char *path)
{
    struct forget *f = ctx;
    json_object *o = NULL;
    if (svc_responses_id_valid(id) && svc_json_read_file(path, &o, NULL) == 0 &&
        strcmp(svc_json_str(o, "session_id", ""), f->sid) == 0 && unlink(path) == 0) {
        json_object_object_add(f->gone, id, NULL);
        f->removed++;
    }
    json_object_put(o);
}

static void forget_key(void *ctx, const char *id, const char *path)
{
    struct forget *f = ctx;
    json_object *o = NULL;
    if (key_name_valid(id) && svc_json_read_file(path, &o, NULL) == 0 &&
        json_object_object_get_ex(f->gone, svc_json_str(o, "response_id", ""), NULL))
        unlink(path);
    json_object_put(o);
}

int svc_responses_forget(const struct svc_config *cfg, const char *sid)
{
    struct forget f = {.sid = sid, .gone = json_object_new_object()};
    char *dir = NULL;
    if (responses_dir(cfg, false, &dir, NULL) == 0) {
        svc_file_each_json(dir, forget_response, &f);
        if (f.removed)
            svc_file_each_json(dir, forget_key, &f);
    }
    free(dir);
    json_object_put(f.gone);
    return f.removed;
}
