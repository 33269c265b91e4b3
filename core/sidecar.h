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
/* SVC_E_NOT_FOUND when missing or empty (svc_sess_read_object); SVC_E_IO when damaged. */
int svc_sidecar_read(const struct svc_sess *s, json_object **out, struct svc_err *err);
/* Read (once under the handle's lock) the sidecar; a missing one is *out NULL and 0.
 * SVC_E_IO when damaged. *out is borrowed from the handle (svc_sess_forget_sidecar). */
int svc_sidecar_get(struct svc_sess *s, json_object **out, struct svc_err *err);
/* sync: SVC_SYNC_STORE or an SVC_SYNC_* mask (fsio.h). Then the journal learns the summary
 * (in a staging root, svc_sess_publish tells it): how the listing hears of every write. */
int svc_sidecar_write(const struct svc_sess *s, json_object *sc, int sync, struct svc_err *err);
/* Build a sidecar-shaped object from session.json, agent.json and message files.
 * SVC_E_SESSION_NOT_FOUND when the directory holds neither session.json nor a message. */
int svc_sidecar_derive(struct svc_sess *s, json_object **out, struct svc_err *err);
/* The API summary: a copy of the sidecar without schema_version (new reference). */
json_object *svc_sidecar_summary(json_object *sc);
/* Session sid's summary from its sidecar, else its native files (new reference), or NULL. */
json_object *svc_sidecar_summary_of(const struct svc_store *st, const char *sid);
/* Tell the journal the session as its files say now (gone with its directory), best effort:
 * for a change that wrote no sidecar, or a reader that found the listing behind the files. */
void svc_sidecar_resync(const struct svc_store *st, const char *sid);

/* Appends one turn line (synced when durable, with the directory when it creates the file). */
int svc_turns_append(const struct svc_sess *s, json_object *line, struct svc_err *err);
/* Creates svc_turns.jsonl empty when missing (a new session's run, before it syncs its
 * directories, so its first line needs no directory sync of its own). */
int svc_turns_create(const struct svc_sess *s, struct svc_err *err);
/* All decodable lines (new reference; a missing file: []); *skipped counts torn lines. */
int svc_turns_read(const struct svc_sess *s, json_object **out, int *skipped, struct svc_err *err);
/* The last whole line (new reference), reading the file's tail; NULL: none or undecodable. */
int svc_turns_last(const struct svc_sess *s, json_object **out, struct svc_err *err);

#endif
