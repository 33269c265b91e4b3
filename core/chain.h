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
 *   svc_chain_id                     the key's first 8 bytes, the index's column */
#ifndef SVC_CHAIN_H
#define SVC_CHAIN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

void svc_chain_seed(const char *owner, unsigned char key[32]);
bool svc_chain_step(unsigned char key[32], json_object *native_msg);
int64_t svc_chain_id(const unsigned char key[32]);

#endif
