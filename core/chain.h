/* chain: one session per conversation for clients that name none (SPEC 15,
 * sessions.continue_stateless). A transcript is keyed by a chained hash: k0 is SHA-256 of
 * the owner's id ("" for the admins'), k(i) SHA-256 of k(i-1) and the canonical form of
 * message i, so that equal keys mean equal transcripts of one owner. Canonical form: the
 * role as OpenAI names it (user, assistant, tool), the text blocks joined, each tool call
 * (its id, name and compact JSON input) and each tool result (its call's id and text);
 * statuses, metadata, timestamps and system prompts are not part of it, and a message
 * redacted to nothing is left out. The search index (search.h) keeps every stored
 * message's key, derived from the files like the rest of it.
 *   svc_chain_seed / svc_chain_step  the keys, one message at a time (step returns false,
 *                                    leaving the key, for a message that is left out)
 *   svc_chain_id                     the key's first 8 bytes, the index's column
 *   svc_chain_resolve                for a request naming no session whose history is hist
 *                                    (OpenAI messages): the session of the same owner whose
 *                                    transcript equals the longest prefix of hist (a fork
 *                                    of it when its transcript goes on past that prefix,
 *                                    svc_session_fork), *sid (heap) and *used, how many of
 *                                    hist's messages it holds, *count the messages the
 *                                    session holds (for svc_run_request.expect_count; 0 for
 *                                    a fork); *sid NULL when none. */
#ifndef SVC_CHAIN_H
#define SVC_CHAIN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

void svc_chain_seed(const char *owner, unsigned char key[32]);
bool svc_chain_step(unsigned char key[32], json_object *native_msg);
int64_t svc_chain_id(const unsigned char key[32]);
int svc_chain_resolve(const struct svc_config *cfg, const char *owner, json_object *hist,
                      char **sid, size_t *used, int64_t *count, struct svc_err *err);

#endif
