/* labels: what people attach to a session (SPEC 13.3, 12.2): `pinned`, `tags`, `metadata`.
 * The one owner of their limits: at most 20 tags of 1..64 characters; at most 16 metadata
 * keys of 1..64 characters with string values of at most 512; no control characters. They
 * live in the sidecar (svc_session.json), so the summary and the listing index carry them;
 * absent means unpinned, no tags, no metadata. A check failing is 422 invalid_field naming
 * the field ("tags", "metadata.<key>"). */
#ifndef SVC_LABELS_H
#define SVC_LABELS_H

#include <json-c/json.h>

#include "err.h"

#define SVC_TAGS_MAX 20
#define SVC_TAG_LEN_MAX 64
#define SVC_METADATA_KEYS_MAX 16
#define SVC_METADATA_KEY_MAX 64
#define SVC_METADATA_VALUE_MAX 512

/* tags: an array of strings within the limits (duplicates allowed; the stored set drops them). */
int svc_labels_check_tags(json_object *tags, struct svc_err *err);
/* metadata: an object of string values within the limits. */
int svc_labels_check_metadata(json_object *metadata, struct svc_err *err);
/* The sidecar sc's metadata (sc may be NULL) with add's keys over it (new reference; NULL when
 * add is): 422 invalid_field "metadata" when it would hold more than the keys allowed. */
int svc_labels_metadata_merge(json_object *sc, json_object *add, json_object **out,
                              struct svc_err *err);
/* tags as stored: in order, each once (new reference). */
json_object *svc_labels_tags_set(json_object *tags);
/* tags as the listing keeps them, "\x1f<tag>\x1f<tag>\x1f" (heap), or NULL for none. */
char *svc_labels_tags_joined(json_object *tags);

#endif
