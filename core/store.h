/* store: the Strands native session layout under a root (SPEC 2.1).
 *   <root>/session_<sid>/session.json
 *   <root>/session_<sid>/agents/agent_<aid>/agent.json
 *   <root>/session_<sid>/agents/agent_<aid>/messages/message_<n>.json
 * Files are written exactly as Strands' FileSessionManager writes them (jsonx native dump,
 * atomic, durable when store->durable). Ids are validated before any path is built; a
 * session directory that is a symlink or resolves outside the root is refused.
 * Callers hold the session's .svc.lock (lock.h) around every mutation.
 * Paths returned by svc_store_*_path/dir are heap strings the caller frees. */
#ifndef SVC_STORE_H
#define SVC_STORE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "err.h"

struct svc_store {
    const char *root;     /* borrowed, expanded */
    const char *agent_id; /* borrowed, valid id */
    bool durable;         /* sessions.fsync */
    bool shared;          /* sessions.shared resolved: other hosts write here too */
};

/* 1..128 chars of [A-Za-z0-9._-], not starting with '.'. */
bool svc_id_valid(const char *id);
/* SVC_E_INVALID_SESSION_ID with a message saying what is wrong; param "session_id". */
int svc_id_check(const char *id, struct svc_err *err);

char *svc_store_session_dir(const struct svc_store *st, const char *sid);
char *svc_store_session_file(const struct svc_store *st, const char *sid, const char *name);
char *svc_store_agent_dir(const struct svc_store *st, const char *sid);
char *svc_store_messages_dir(const struct svc_store *st, const char *sid);
char *svc_store_message_path(const struct svc_store *st, const char *sid, int64_t id);

/* Whether session_<sid> exists as a real directory inside the root (no symlink escape). */
bool svc_store_session_exists(const struct svc_store *st, const char *sid);
/* The directories under session_<sid> that we write into (agents/, agents/agent_<aid>/,
 * messages/) must be real directories when present, and svc_turns.jsonl a regular file:
 * a symbolic link there could lead out
 * of the root. SVC_E_IO when one is not. */
int svc_store_check_layout(const struct svc_store *st, const char *sid, struct svc_err *err);
/* The same, telling whether agents/agent_<aid>/messages is there (a directory). When
 * msg_fd is not NULL and the check could open the messages directory (O_PATH, no link on
 * the way), *msg_fd is that descriptor (the caller's to close), else -1. */
int svc_store_check_layout_seen(const struct svc_store *st, const char *sid, bool *has_messages,
                                int *msg_fd, struct svc_err *err);
/* Create the root, the session directory, agents/agent_<aid>/messages and session.json
 * (when missing, even if the directory exists). Does not create agent.json. */
int svc_store_ensure_session(const struct svc_store *st, const char *sid, struct svc_err *err);
/* The same for a caller that has just seen the session and messages directories (by
 * svc_store_check_layout_seen, under the run lock): only session.json is looked for.
 * sync: how session.json is written when missing (SVC_SYNC_*; a run passes SVC_SYNC_FILE
 * and syncs the directories it made once, at its end). *made (may be NULL): set true when
 * a directory or session.json was created. */
int svc_store_ensure_session_seen(const struct svc_store *st, const char *sid, bool dirs_seen,
                                  int sync, bool *made, struct svc_err *err);
/* Rewrite session.json's updated_at (keeps other keys). */
int svc_store_touch_session(const struct svc_store *st, const char *sid, struct svc_err *err);

/* A fresh agent record (new reference) with removed_message_count 0, model_call_count 0. */
json_object *svc_store_new_agent(const char *agent_id);
/* Read agent.json (SVC_E_NOT_FOUND when missing, or empty: what a power cut can leave of
 * a replacement that was not synced, see core/run.c). *out is a new reference. */
int svc_store_read_agent(const struct svc_store *st, const char *sid, json_object **out,
                         struct svc_err *err);
/* Write agent.json, setting updated_at and keeping created_at and unknown keys of *agent. */
int svc_store_write_agent(const struct svc_store *st, const char *sid, json_object *agent,
                          struct svc_err *err);
/* The same with an explicit SVC_SYNC_* mask (fsio.h) instead of st->durable. */
int svc_store_write_agent_sync(const struct svc_store *st, const char *sid, json_object *agent,
                               int sync, struct svc_err *err);
/* conversation_manager_state.removed_message_count / model_call_count (0 when absent). */
int64_t svc_agent_removed_count(json_object *agent);
void svc_agent_set_counts(json_object *agent, int64_t removed, int64_t model_calls);
int64_t svc_agent_model_calls(json_object *agent);

/* Ids of message_<n>.json files, ascending (heap array; *n may be 0; a missing messages
 * directory is 0 ids, not an error). */
int svc_store_message_ids(const struct svc_store *st, const char *sid, int64_t **ids, size_t *n,
                          struct svc_err *err);
/* The message files in O(1): trusts `trusted` (a count read under the session lock, -1
 * when unknown) when message_<trusted-1>.json exists and message_<trusted>.json does not,
 * and scans the directory otherwise (a file written by another program). *count files,
 * *next the largest id + 1; *ids NULL when the ids are 0..count-1, else the sorted ids
 * (heap, caller frees). */
int svc_store_message_count(const struct svc_store *st, const char *sid, int64_t trusted,
                            int64_t *count, int64_t *next, int64_t **ids, struct svc_err *err);
/* Read one message record (new reference). */
int svc_store_read_message(const struct svc_store *st, const char *sid, int64_t id,
                           json_object **out, struct svc_err *err);
/* The same from the open messages directory msg_dirfd (handle.h keeps one per session);
 * *st (when not NULL) gets the fstat of the file read, *bytes (when not NULL) its length. */
int svc_store_read_message_at(int msg_dirfd, int64_t id, json_object **out, struct stat *st,
                              size_t *bytes, struct svc_err *err);
/* Write message_<id>.json: {"message": <copy of message>, "message_id", "redact_message": null,
 * "created_at", "updated_at"}. message is borrowed. */
int svc_store_write_message(const struct svc_store *st, const char *sid, int64_t id,
                            json_object *message, struct svc_err *err);
int svc_store_write_message_sync(const struct svc_store *st, const char *sid, int64_t id,
                                 json_object *message, int sync, struct svc_err *err);
/* The same, and *bytes gets the length of the file written. */
int svc_store_write_message_len(const struct svc_store *st, const char *sid, int64_t id,
                                json_object *message, int sync, size_t *bytes, struct svc_err *err);
/* The message to use: redact_message when not null, else message (borrowed from rec). */
json_object *svc_store_effective_message(json_object *rec);

#endif
