#include "compact.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmgr.h"
#include "fsio.h"
#include "jsonx.h"
#include "model.h"
#include "parts.h"
#include "runstate.h"
#include "store.h"
#include "util.h"

#define KEY_LEN 32
#define NONCE_LEN 12
#define TAG_LEN 16
static const char prefix[] = "svc1.";
static const unsigned char aad[] = "svc compaction v1";

int svc_compact_window(const struct svc_config *cfg, const char *sid, json_object *msgs,
                       json_object *ids, struct svc_err *err)
{
    struct svc_sess s;
    json_object *agent = NULL;
    int64_t *all = NULL;
    size_t n = 0;
    if (svc_sess_open(cfg, sid, &s, err) != 0)
        return -1;
    int rc =
        svc_sess_lock(&s, false, err) == 0 && svc_sess_message_ids(&s, &all, &n, err) == 0 ? 0 : -1;
    if (rc == 0)
        svc_sess_read_agent(&s, &agent, NULL);
    json_object *summary = svc_cm_summary(agent);
    if (rc == 0 && summary) {
        json_object_array_add(msgs, json_object_get(summary));
        json_object_array_add(ids, json_object_new_int64(-1));
    }
    for (size_t i = (size_t)svc_agent_removed_count(agent); rc == 0 && i < n; i++) {
        json_object *rec = NULL;
        if (svc_sess_read_message(&s, all[i], &rec, NULL, NULL, err) != 0) {
            rc = -1;
            break;
        }
        json_object_array_add(msgs, json_object_get(svc_store_effective_message(rec)));
        json_object_array_add(ids, json_object_new_int64(all[i]));
        json_object_put(rec);
    }
    json_object_put(agent);
    free(all);
    svc_sess_close(&s);
    return rc;
}

int svc_compact_summary(const struct svc_config *cfg, json_object *msgs, size_t n,
                        json_object **out, int64_t *prompt, int64_t *completion,
                        struct svc_err *err)
{
    *out = NULL;
    json_object *req = svc_cm_request(msgs, n);
    struct svc_model_call call = {.cfg = cfg, .system_prompt = svc_cm_prompt(), .messages = req};
    struct svc_model_reply reply;
    int rc = svc_model_invoke(&call, &reply, err);
    json_object_put(req);
    *prompt = reply.prompt_tokens;
    *completion = reply.completion_tokens;
    if (rc != 0)
        return -1;
    *out = svc_parts_message("user", svc_parts_text(reply.text ? reply.text : ""));
    svc_model_reply_free(&reply);
    return 0;
}

/* The root's key into key: read, or made (a temp file link()ed to its name: one host wins
 * the race, everyone reads the winner's). */
static int root_key(const struct svc_config *cfg, unsigned char *key, struct svc_err *err)
{
    char *path = svc_layout_root_path(cfg->sessions.root, SVC_F_COMPACTION_KEY, NULL);
    char *buf = NULL, *tmp = NULL;
    size_t len = 0;
    int rc = svc_mkdirs(cfg->sessions.root, 0777, err) == 0 ? -1 : -2;
    for (int attempt = 0; attempt < 2 && rc == -1; attempt++) {
        if (svc_file_read(path, &buf, &len, NULL) == 0 && len == KEY_LEN) {
            memcpy(key, buf, KEY_LEN);
            rc = 0;
            break;
        }
        free(buf);
        buf = NULL;
        unsigned char fresh[KEY_LEN];
        svc_random_bytes(fresh, sizeof fresh);
        char salt[17];
        svc_random_hex(salt, 16);
        free(tmp);
        svc_xasprintf(&tmp, "%s.tmp-%ld-%s", path, (long)getpid(), salt);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || write(fd, fresh, sizeof fresh) != (ssize_t)sizeof fresh || fsync(fd) != 0 ||
            (link(tmp, path) != 0 && errno != EEXIST)) {
            svc_err_errno(err, "compaction key");
            if (fd >= 0)
                close(fd);
            unlink(tmp);
            rc = -2;
            break;
        }
        close(fd);
        unlink(tmp);
    }
    if (rc == -1)
        svc_err_set(err, SVC_E_IO, "compaction: the root's key is not %d bytes", KEY_LEN);
    free(buf);
    free(tmp);
    free(path);
    return rc == 0 ? 0 : -1;
}

int svc_compact_seal(const struct svc_config *cfg, json_object *summary, const char *user,
                     char **out, struct svc_err *err)
{
    *out = NULL;
    unsigned char key[KEY_LEN], nonce[NONCE_LEN];
    if (root_key(cfg, key, err) != 0)
        return -1;
    json_object *p = json_object_new_object();
    svc_json_set(p, "summary", json_object_get(summary));
    svc_json_set_str(p, "user", user);
    char *plain = svc_json_dump_compact(p);
    json_object_put(p);
    size_t n = strlen(plain);
    unsigned char *box = svc_xmalloc(NONCE_LEN + n + TAG_LEN);
    svc_random_bytes(nonce, sizeof nonce);
    memcpy(box, nonce, NONCE_LEN);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0,
        ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
             EVP_EncryptUpdate(c, NULL, &len, aad, sizeof aad - 1) == 1 &&
             EVP_EncryptUpdate(c, box + NONCE_LEN, &len, (unsigned char *)plain, (int)n) == 1 &&
             EVP_EncryptFinal_ex(c, box + NONCE_LEN + len, &len) == 1 &&
             EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, box + NONCE_LEN + n) == 1;
    EVP_CIPHER_CTX_free(c);
    free(plain);
    if (ok) {
        size_t total = NONCE_LEN + n + TAG_LEN;
        char *b64 = svc_b64_encode(box, total, false);
        svc_xasprintf(out, "%s%s", prefix, b64);
        free(b64);
    }
    free(box);
    return ok ? 0 : svc_err_set(err, SVC_E_INTERNAL, "compaction: the seal failed");
}

/* The plain text sealed in text (heap, NUL-terminated), or NULL when it does not open. */
static char *unseal(const unsigned char *key, const char *text)
{
    size_t tl = strlen(text);
    if (tl < sizeof prefix - 1 || memcmp(text, prefix, sizeof prefix - 1) != 0)
        return NULL;
    const char *b64 = text + sizeof prefix - 1;
    size_t bl = strlen(b64);
    if (bl == 0 || bl % 4 != 0)
        return NULL;
    size_t n = 0;
    unsigned char *box = svc_b64_decode(b64, bl, false, &n);
    char *plain = NULL;
    if (box && n > NONCE_LEN + TAG_LEN) {
        size_t cn = n - NONCE_LEN - TAG_LEN;
        plain = svc_xmalloc(cn + 1);
        EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        int len = 0,
            ok =
                c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, box) == 1 &&
                EVP_DecryptUpdate(c, NULL, &len, aad, sizeof aad - 1) == 1 &&
                EVP_DecryptUpdate(c, (unsigned char *)plain, &len, box + NONCE_LEN, (int)cn) == 1 &&
                EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, box + NONCE_LEN + cn) == 1 &&
                EVP_DecryptFinal_ex(c, (unsigned char *)plain + len, &len) == 1;
        EVP_CIPHER_CTX_free(c);
        plain[cn] = '\0';
        if (!ok) {
            free(plain);
            plain = NULL;
        }
    }
    free(box);
    return plain;
}

int svc_compact_open(const struct svc_config *cfg, const char *text, const char *user,
                     const char *param, json_object **out, struct svc_err *err)
{
    *out = NULL;
    unsigned char key[KEY_LEN];
    if (root_key(cfg, key, err) != 0)
        return -1;
    char *plain = unseal(key, text ? text : "");
    json_object *p = NULL;
    if (plain)
        svc_json_parse(plain, strlen(plain), &p, NULL);
    free(plain);
    json_object *summary = svc_json_obj(p, "summary");
    const char *owner = svc_json_str(p, "user", NULL);
    int rc = 0;
    if (!summary)
        rc = svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                          "'%s' is not a compaction this service made, or it was changed", param);
    else if (user && (!owner || strcmp(owner, user) != 0))
        rc = svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' is another user's compaction",
                          param);
    else
        *out = json_object_get(summary);
    json_object_put(p);
    return rc;
}
