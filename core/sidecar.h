/* sidecar: svc_session.json and svc_turns.jsonl (SPEC 2.2).
 * The sidecar is kept as a json-c object so that keys we do not know survive rewrites.
 * svc_sidecar_derive builds the same shape from native files alone (sessions written by
 * Strands), with a title from the first user text and status idle; it writes nothing.
 * svc_turns_read skips torn or undecodable lines and counts them in *skipped. Every
 * sidecar write tells the journal (journal.h). */
#ifndef SVC_SIDECAR_H
#define SVC_SIDECAR_H

#include <json-c/json.h>

#include "err.h"
#include "store.h"

/* A new sidecar object (new reference) with every field of SPEC 2.2 at its initial value. */
json_object *svc_sidecar_new(const char *sid, const char *agent_id, const char *model);
/* SVC_E_NOT_FOUND when missing or empty (what a power cut can leave of a replacement in a
 * store without fsync); SVC_E_IO when damaged. */
int svc_sidecar_read(const struct svc_sess *s, json_object **out, struct svc_err *err);
/* Read (once under the handle's lock) the sidecar; a missing one is *out NULL and 0.
 * SVC_E_IO when damaged. *out is borrowed from the handle (svc_sess_forget_sidecar). */
int svc_sidecar_get(struct svc_sess *s, json_object **out, struct svc_err *err);
/* sync: SVC_SYNC_STORE or an SVC_SYNC_* mask (fsio.h). Once written, the journal learns
 * the new summary (journal.h; in a staging root, svc_sess_publish tells it): the one path
 * by which a writer of svc_session.json tells the listing. */
int svc_sidecar_write(const struct svc_sess *s, json_object *sc, int sync, struct svc_err *err);
/* Build a sidecar-shaped object from session.json, agent.json and message files.
 * SVC_E_SESSION_NOT_FOUND when the directory holds neither session.json nor a message. */
int svc_sidecar_derive(struct svc_sess *s, json_object **out, struct svc_err *err);
/* The API summary: a copy of the sidecar without schema_version (new reference). */
json_object *svc_sidecar_summary(json_object *sc);
/* Session sid's summary from its sidecar or, failing that, its native files (new
 * reference), or NULL when it has neither. */
json_object *svc_sidecar_summary_of(const struct svc_store *st, const char *sid);
/* Tell the journal the session as its files say now (gone when its directory is): for a
 * change that wrote no sidecar (a native_file session's turn, a session written by
 * another program), or a reader that found the listing behind the files. Best effort. */
void svc_sidecar_resync(const struct svc_store *st, const char *sid);

/* Appends one turn line (synced when the store is durable; a line that creates the file
 * also syncs the session directory). */
int svc_turns_append(const struct svc_sess *s, json_object *line, struct svc_err *err);
/* Creates svc_turns.jsonl, empty, when it is missing (a new session's run does, before it
 * syncs its new directories, so that its first line needs no directory sync of its own). */
int svc_turns_create(const struct svc_sess *s, struct svc_err *err);
/* All decodable lines as an array (new reference); *skipped counts torn lines. A missing
 * file is an empty array. */
int svc_turns_read(const struct svc_sess *s, json_object **out, int *skipped, struct svc_err *err);
/* The last whole line of svc_turns.jsonl (new reference), reading only the file's tail;
 * *out NULL when there is none or it does not decode. */
int svc_turns_last(const struct svc_sess *s, json_object **out, struct svc_err *err);

#endif
