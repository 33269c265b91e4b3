#include "chain.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "fork.h"
#include "jsonx.h"
#include "openai.h"
#include "search.h"
#include "util.h"

void svc_chain_seed(const char *owner, unsigned char key[32])
{
    const char *o = owner ? owner : "";
    EVP_Digest(o, strlen(o), key, NULL, EVP_sha256(), NULL);
}

/* The canonical form of a message's blocks, after its role (chain.h). */
static void canon_blocks(struct svc_buf *b, json_object *content)
{
    for (size_t i = 0; content && i < json_object_array_length(content); i++) {
        json_object *blk = json_object_array_get_idx(content, i), *v = NULL;
        const char *text = svc_json_str(blk, "text", NULL);
        if (text) {
            svc_buf_adds(b, text);
        } else if ((v = svc_json_obj(blk, "toolUse"))) {
            json_object *input = NULL;
            json_object_object_get_ex(v, "input", &input);
            char *j = input ? svc_json_dump_compact(input) : NULL;
            svc_buf_adds(b, "\x1e"
                            "call\x1f");
            svc_buf_adds(b, svc_json_str(v, "toolUseId", ""));
            svc_buf_adds(b, "\x1f");
            svc_buf_adds(b, svc_json_str(v, "name", ""));
            svc_buf_adds(b, "\x1f");
            svc_buf_adds(b, j ? j : "{}");
            free(j);
        } else if ((v = svc_json_obj(blk, "toolResult"))) {
            svc_buf_adds(b, "\x1e"
                            "result\x1f");
            svc_buf_adds(b, svc_json_str(v, "toolUseId", ""));
            svc_buf_adds(b, "\x1f");
            json_object *items = svc_json_arr(v, "content");
            for (size_t k = 0; items && k < json_object_array_length(items); k++)
                svc_buf_adds(b, svc_json_str(json_object_array_get_idx(items, k), "text", ""));
        }
    }
}

bool svc_chain_step(unsigned char key[32], json_object *native_msg)
{
    if (!native_msg || svc_native_erased(native_msg))
        return false;
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_add(&b, (const char *)key, 32);
    svc_buf_adds(&b, svc_openai_role(native_msg));
    svc_buf_adds(&b, "\x1d");
    canon_blocks(&b, svc_json_arr(native_msg, "content"));
    EVP_Digest(b.data, b.len, key, NULL, EVP_sha256(), NULL);
    svc_buf_free(&b);
    return true;
}

int64_t svc_chain_id(const unsigned char key[32])
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | key[i];
    return (int64_t)v;
}

int svc_chain_resolve(const struct svc_config *cfg, const char *owner, json_object *hist,
                      char **sid, size_t *used, int64_t *count, struct svc_err *err)
{
    size_t n = hist ? json_object_array_length(hist) : 0, m = 0;
    int64_t *ids = svc_xcalloc(n + 1, sizeof *ids);
    size_t *at = svc_xcalloc(n + 1, sizeof *at); /* hist messages held by ids[0..k] */
    unsigned char key[32];
    svc_chain_seed(owner, key);
    for (size_t i = 0; i < n; i++) {
        json_object *nm = svc_openai_to_native(json_object_array_get_idx(hist, i));
        if (svc_chain_step(key, nm)) {
            ids[m] = svc_chain_id(key);
            at[m++] = i + 1;
        }
        json_object_put(nm);
    }
    *sid = NULL;
    *used = 0;
    *count = 0;
    struct svc_chain_hit hit;
    int rc = m ? svc_search_chain_find(cfg, ids, m, &hit, err) : 0;
    if (rc == 1 && hit.pos == hit.total)
        *count = hit.msgs;
    if (rc == 1 && hit.pos < hit.total) { /* its transcript goes on: the turn runs in a fork */
        struct svc_fork_req f = {
            .session_id = hit.sid, .has_message_id = true, .message_id = hit.mid};
        json_object *sum = NULL;
        rc = svc_session_fork(cfg, &f, &sum, err) == 0 ? 1 : -1;
        if (rc == 1)
            snprintf(hit.sid, sizeof hit.sid, "%s", svc_json_str(sum, "session_id", ""));
        json_object_put(sum);
    }
    if (rc == 1) {
        *sid = svc_xstrdup(hit.sid);
        *used = at[hit.pos - 1];
    }
    free(ids);
    free(at);
    return rc < 0 ? -1 : 0;
}
