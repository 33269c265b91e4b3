/* feedback: ratings of assistant messages (SPEC 13.3), kept beside the session's messages in
 * svc_feedback.json {"schema_version": 1, "feedback": {"<message_id>": {"rating": "up" |
 * "down" | null, "comment"?, "updated_at"}}}, rewritten whole under the exclusive session
 * lock. A PUT replaces the message's entry; a null rating without a comment removes it. The
 * messages rows and export bundles show an entry as "feedback". Preference pairs for
 * fine-tuning (svc_feedback_pairs_*) join an answer rated up and one rated down that follow
 * the same input (the same earlier messages: a session and its forks, a regenerated answer),
 * never two answers of one linear session, whose inputs always differ. */
#ifndef SVC_FEEDBACK_H
#define SVC_FEEDBACK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "store.h"

#define SVC_FEEDBACK_COMMENT_MAX 2000

/* PUT: message_id as the path gave it; rating the body's field (borrowed, NULL for JSON null;
 * rating_given false when absent: 422 missing_field); comment NULL when absent. Not an
 * assistant message: 422; no such message: 404 not_found. *out: {"session_id", "message_id",
 * "feedback": entry | null}. */
int svc_feedback_set(const struct svc_config *cfg, const char *sid, const char *message_id,
                     bool rating_given, json_object *rating, const char *comment, json_object **out,
                     struct svc_err *err);
/* The entries by message id from the file's bytes (new reference), NULL when none. */
json_object *svc_feedback_parse(const char *data, size_t len);
/* The same read from the session (the caller holds its lock), NULL when none. */
json_object *svc_feedback_read(const struct svc_sess *s);
/* The entry of message id in entries (borrowed), or NULL. */
json_object *svc_feedback_of(json_object *entries, int64_t id);

/* Rated answers gathered across sessions; the pairs as OpenAI's preference (DPO) lines:
 * {"input": {"messages"}, "preferred_output", "non_preferred_output"}. */
struct svc_feedback_pairs;
struct svc_feedback_pairs *svc_feedback_pairs_new(void);
/* input: the OpenAI messages before the answer; output: the answer's (both borrowed). */
void svc_feedback_pairs_add(struct svc_feedback_pairs *p, const char *rating, json_object *input,
                            json_object *output);
/* Every pair as JSON lines (heap text, "" when none). */
char *svc_feedback_pairs_jsonl(struct svc_feedback_pairs *p);
void svc_feedback_pairs_free(struct svc_feedback_pairs *p);

#endif
