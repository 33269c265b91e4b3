/* conversation: the Conversations API's view of a session (SPEC 12.2). Any session is a
 * conversation; its items are its messages in OpenAI's shapes: a message's text is one
 * `message` item (input_text parts for user, output_text for assistant) with the id
 * msg_<sid>_<n>, each toolUse a `function_call` item fc_<sid>_<n>_<k>, each toolResult a
 * `function_call_output` item fco_<sid>_<n>_<k> (n the message id, k the block), so ids are
 * stable across requests. A message redacted to empty text (deleting an item redacts its
 * message, as Strands' redact_message does, so ids stay contiguous) has no items and leaves
 * the model's context (svc_model_invoke leaves it out). Items given by a client are checked whole
 * before any file is written. Every function validates the id and answers as core/query.h does. */
#ifndef SVC_CONVERSATION_H
#define SVC_CONVERSATION_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "err.h"

/* OpenAI items -> native messages (new array in *out); 422 naming "<param>[i]..." otherwise.
 * svc_conv_parse_item: one item (named p in errors) appended to msgs. */
int svc_conv_parse_item(json_object *item, const char *p, json_object *msgs, struct svc_err *err);
int svc_conv_parse_items(json_object *items, const char *param, json_object **out,
                         struct svc_err *err);
/* The items of message id of session sid (m: its effective message), appended to out. */
void svc_conv_message_items(const char *sid, int64_t id, json_object *m, json_object *out);
/* {"id", "object": "conversation", "created_at" (unix seconds), "metadata"} of a summary. */
json_object *svc_conv_object(json_object *summary);
/* A new session holding natives (may be NULL) with metadata (checked; may be NULL), owned
 * by owner (NULL: none). sid NULL: a new conv_<32 hex>. The conversation object in *out. */
int svc_conv_create(const struct svc_config *cfg, const char *sid, json_object *natives,
                    json_object *metadata, const char *owner, json_object **out,
                    struct svc_err *err);
/* Append natives after the last message (SVC_E_SESSION_BUSY while a run holds the session);
 * *out: the new messages' items. */
int svc_conv_append(const struct svc_config *cfg, const char *sid, json_object *natives,
                    json_object **out, struct svc_err *err);
/* Every item, oldest first (new array). */
int svc_conv_items(const struct svc_config *cfg, const char *sid, json_object **out,
                   struct svc_err *err);
/* One item (new reference), SVC_E_NOT_FOUND when the session has none of that id; with
 * redact, its message is redacted (under the run lock: busy while a run holds it). */
int svc_conv_item(const struct svc_config *cfg, const char *sid, const char *item_id, bool redact,
                  json_object **out, struct svc_err *err);

/* An item of any conversation that scope (user.h; NULL: an admin) sees, by its id alone (the
 * session is in it); SVC_E_NOT_FOUND for another user's, as for a missing one. */
int svc_conv_find_item(const struct svc_config *cfg, const char *scope, const char *item_id,
                       json_object **out, struct svc_err *err);

/* The items of session sid when scope sees it (the answer of a missing session otherwise);
 * a session that does not exist yet has none (*out NULL). */
int svc_conv_items_seen(const struct svc_config *cfg, const char *scope, const char *sid,
                        json_object **out, struct svc_err *err);

#endif
