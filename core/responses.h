/* responses: the stored objects of the Responses API (SPEC 4.1), on disk under the session
 * root so that any worker of any pool on that root finds them.
 *   <root>/.svc_responses/<response_id>.json   the response object as it was answered,
 *                                              with its "session_id" and "run_id"
 * The file is the response id -> session mapping that previous_response_id follows, and
 * what GET /api/v1/responses/{id} returns; its "input_items" (the request's input as
 * OpenAI items, SPEC 12.3) are kept apart from the object returned. It is written whole (temp file,
 * fsync when sessions.fsync, rename), never edited in place. The directory does not start with
 * "session_", so Strands and the session listing ignore it; a symlink in its place is
 * refused. Ids are "resp_" + 32 hex; any other shape is SVC_E_RESPONSE_NOT_FOUND before a
 * path is built. */
#ifndef SVC_RESPONSES_H
#define SVC_RESPONSES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "err.h"

#define SVC_RESPONSE_ID_LEN 38 /* "resp_" + 32 hex + NUL */

/* A new id: prefix ("resp_", "msg_") + 32 random hex into out (outsz >= strlen(prefix)+33). */
void svc_responses_new_id(const char *prefix, char *out, size_t outsz);
/* Whether id has the shape of a response id. */
bool svc_responses_id_valid(const char *id);
/* Store resp (its "id" names the file). 0, or -1 with err (io_error). */
int svc_responses_put(const struct svc_config *cfg, json_object *resp, struct svc_err *err);
/* Stored responses are kept this long after they were written (OpenAI keeps 30 days). */
#define SVC_RESPONSES_KEEP_S (30 * 24 * 3600.0)
/* Remove stored responses older than max_age_s; runs at most once an hour per root (the
 * mtime of .svc_responses/.pruned says when). Returns how many were removed. */
int svc_responses_prune(const struct svc_config *cfg, double max_age_s);
/* Idempotency-Key: a completed, stored response is recorded under the key the request
 * carried, root-wide (a request may start a new conversation, so keys are not per session):
 *   <root>/.svc_responses/key_<sha256 hex of the key>.json   {"response_id"}
 * A retry with the key gets that response again and starts nothing; a key that names a
 * failed or unstored response, or nothing, runs the request (as POST /api/chat, idem.h).
 * Key files are pruned with the responses. svc_responses_by_key: the response (new
 * reference) or SVC_E_RESPONSE_NOT_FOUND; svc_responses_put_key: 0 or -1 with err. */
int svc_responses_by_key(const struct svc_config *cfg, const char *key, json_object **out,
                         struct svc_err *err);
int svc_responses_put_key(const struct svc_config *cfg, const char *key, const char *id,
                          struct svc_err *err);
/* A deleted session's stored responses and the Idempotency-Key files naming them, removed.
 * Returns how many responses were removed. */
int svc_responses_forget(const struct svc_config *cfg, const char *sid);
/* The stored object without its input items (new reference), or SVC_E_RESPONSE_NOT_FOUND. */
int svc_responses_get(const struct svc_config *cfg, const char *id, json_object **out,
                      struct svc_err *err);
/* The input items stored with the response (new reference, an array), or the same errors. */
int svc_responses_input_items(const struct svc_config *cfg, const char *id, json_object **out,
                              struct svc_err *err);
/* Remove the stored response (the session's messages stay): 0, or SVC_E_RESPONSE_NOT_FOUND. */
int svc_responses_delete(const struct svc_config *cfg, const char *id, struct svc_err *err);

#endif
