#include "responses.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "jsonx.h"
#include "util.h"

#define RESPONSES_DIR ".svc_responses"

void svc_responses_new_id(const char *prefix, char *out, size_t outsz)
{
    char hex[33];
    svc_random_hex(hex, 32);
    snprintf(out, outsz, "%s%s", prefix, hex);
}

bool svc_responses_id_valid(const char *id)
{
    if (!id || strncmp(id, "resp_", 5) != 0 || strlen(id) != SVC_RESPONSE_ID_LEN - 1)
        return false;
    for (const char *p = id + 5; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* <root>/.svc_responses, refused (io_error) when something other than a directory is there.
 * Heap path in *out. With create, the directory is made when missing. */
static int responses_dir(const struct svc_config *cfg, bool create, char **out, struct svc_err *err)
{
    *out = svc_path_join(cfg->sessions.root, RESPONSES_DIR);
    struct stat st;
    if (lstat(*out, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        svc_err_set(err, SVC_E_IO, "%s is not a plain directory", RESPONSES_DIR);
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

int svc_responses_put(const struct svc_config *cfg, json_object *resp, struct svc_err *err)
{
    const char *id = svc_json_str(resp, "id", "");
    if (!svc_responses_id_valid(id))
        return svc_err_set(err, SVC_E_INTERNAL, "response object without a valid id");
    char *dir = NULL, *path = NULL;
    int rc = -1;
    if (responses_dir(cfg, true, &dir, err) != 0)
        goto out;
    path = response_file(dir, id);
    rc = svc_json_write_pretty(path, resp, cfg->sessions.fsync, err);
    if (rc == 0)
        svc_responses_prune(cfg, SVC_RESPONSES_KEEP_S); /* the old ones, hourly at most */
out:
    free(path);
    free(dir);
    return rc;
}

int svc_responses_get(const struct svc_config *cfg, const char *id, json_object **out,
                      struct svc_err *err)
{
    *out = NULL;
    if (!svc_responses_id_valid(id))
        return svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response not found");
    char *dir = NULL, *path = NULL;
    int rc = -1;
    struct svc_err rerr;
    if (responses_dir(cfg, false, &dir, err) != 0)
        goto out;
    path = response_file(dir, id);
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        svc_err_set(err, SVC_E_IO, "stored response %s is not a plain file", id);
        goto out;
    }
    if (svc_json_read_file(path, out, &rerr) != 0) {
        if (rerr.code == SVC_E_NOT_FOUND)
            svc_err_set(err, SVC_E_RESPONSE_NOT_FOUND, "response %s not found", id);
        else if (err)
            *err = rerr;
        goto out;
    }
    if (!json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        svc_err_set(err, SVC_E_IO, "stored response %s is damaged", id);
        goto out;
    }
    rc = 0;
out:
    free(path);
    free(dir);
    return rc;
}

static int remove_old_response(void *ctx, const char *id, const struct stat *sb)
{
    if (!svc_responses_id_valid(id))
        return 0;
    char *path = response_file(ctx, id);
    int removed = path && unlink(path) == 0;
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
