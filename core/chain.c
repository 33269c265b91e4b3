#include "chain.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "openai.h"
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
            svc_buf_printf(b, "\036call\037%s\037%s\037%s", svc_json_str(v, "toolUseId", ""),
                           svc_json_str(v, "name", ""), j ? j : "{}");
            free(j);
        } else if ((v = svc_json_obj(blk, "toolResult"))) {
            svc_buf_printf(b, "\036result\037%s\037", svc_json_str(v, "toolUseId", ""));
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
