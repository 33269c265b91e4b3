/* compact: SPEC 15's compaction. A context (native messages) is summarised by the model into
 * one user message, as section 17's summarizing manager summarises (cmgr.h: Strands' prompt
 * and request), then sealed so that only this service reads it back: AES-256-GCM under a key
 * kept on the root (store.h SVC_F_COMPACTION_KEY: 32 random bytes, mode 0600, made once by
 * the first host that needs it, link()ed into place so that every host of the root reads
 * the same key). encrypted_content is "svc1." then the base64 of nonce, ciphertext and tag
 * of {"summary": <message>, "user": <owner id> | null}; a changed byte fails the tag.
 *   svc_compact_window   the context a turn on session sid restores (its summary first,
 *                        then the messages from removed_message_count on, as cmgr.h says),
 *                        appended to msgs, their message ids (-1: the summary) to ids.
 *   svc_compact_summary  the summary of msgs' first n (new reference in *out), tokens in
 *                        *prompt and *completion; the model's errors as svc_model_invoke's.
 *   svc_compact_seal     the encrypted_content of summary for user (NULL: the admins'),
 *                        heap in *out.
 *   svc_compact_open     the summary sealed in text (new reference in *out), for user (NULL:
 *                        an admin, who reads any): SVC_E_INVALID_FIELD naming param when
 *                        this service did not seal it, a byte of it changed, or it is
 *                        another user's. */
#ifndef SVC_COMPACT_H
#define SVC_COMPACT_H

#include <json-c/json.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

int svc_compact_window(const struct svc_config *cfg, const char *sid, json_object *msgs,
                       json_object *ids, struct svc_err *err);
int svc_compact_summary(const struct svc_config *cfg, json_object *msgs, size_t n,
                        json_object **out, int64_t *prompt, int64_t *completion,
                        struct svc_err *err);
int svc_compact_seal(const struct svc_config *cfg, json_object *summary, const char *user,
                     char **out, struct svc_err *err);
int svc_compact_open(const struct svc_config *cfg, const char *text, const char *user,
                     const char *param, json_object **out, struct svc_err *err);

#endif
