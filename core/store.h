/* store: the one door to a session's files (SPEC 2.1; the layout is in FORMAT.md).
 * Names and paths are layout.h's; everyone opens a handle (struct svc_sess) and asks it
 * for a path, or asks layout.h for a name.
 * svc_sess_open validates the id (SVC_E_INVALID_SESSION_ID) and derives the session's
 * paths; it touches no file. svc_sess_lock takes the short lock (.svc.lock, lock.h) in the
 * mode asked (asking again in the mode held is a no-op): exclusive around every mutation,
 * shared around multi-file reads. Files are written as Strands' FileSessionManager writes
 * them (jsonx native dump, atomic, synced as `sync` says: SVC_SYNC_STORE follows
 * sessions.fsync). A session directory that is a symlink or resolves outside the root is
 * refused. svc_sess_close releases the lock and frees everything; a handle set to
 * SVC_SESS_INIT may be closed. Paths returned are heap strings the caller frees. */
#ifndef SVC_STORE_H
#define SVC_STORE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config.h"
#include "err.h"
#include "layout.h"
#include "lock.h"

/* Whether some process holds session sid's run lock (a run is live). */
bool svc_store_run_held(const struct svc_store *st, const char *sid);
/* Whether session_<sid> exists as a real directory inside the root (no symlink escape). */
bool svc_store_session_exists(const struct svc_store *st, const char *sid);
/* What shows a session changed between two looks: (inode, size, mtime, ctime) of its
 * directory and sidecar (a missing sidecar counts as zeros). */
struct svc_sess_mark {
    ino_t dir_ino, side_ino;
    off_t side_size;
    struct timespec dir_m, dir_c, side_m, side_c;
};
/* Session sid's mark now: 0, or -1 when it is not a session directory. */
int svc_store_session_mark(const struct svc_store *st, const char *sid, struct svc_sess_mark *m);
bool svc_store_mark_same(const struct svc_sess_mark *a, const struct svc_sess_mark *b);
/* The store a configuration describes (root, agent id, sessions.fsync, provider). */
void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st);
/* The SVC_SYNC_* mask (fsio.h) of a write asked with sync: SVC_SYNC_STORE as sessions.fsync
 * says, SVC_SYNC_STORE_FILE the file's data alone when durable (its directory synced later). */
#define SVC_SYNC_STORE (-1)
#define SVC_SYNC_STORE_FILE (-2)
int svc_store_sync(const struct svc_store *st, int sync);

/* A fresh agent record (new reference), with a fresh state of st's manager (cmgr.h). */
json_object *svc_store_new_agent(const struct svc_store *st);
/* conversation_manager_state.removed_message_count / model_call_count (0 when absent);
 * model_call_count is set only where the state has one (the sliding window's). */
int64_t svc_agent_removed_count(json_object *agent);
void svc_agent_set_counts(json_object *agent, int64_t removed, int64_t model_calls);
int64_t svc_agent_model_calls(json_object *agent);
/* The message to use: redact_message when not null, else message (borrowed from rec). */
json_object *svc_store_effective_message(json_object *rec);

struct svc_sess {
    struct svc_store st;
    char sid[SVC_ID_MAX + 1];
    char *dir;     /* <root>/session_<sid> (heap) */
    char *msg_dir; /* the messages directory (heap) */
    int msg_fd;    /* msg_dir opened on first use (O_PATH by the layout check), or -1:
                    * for openat, fstat(at) and watches, never for reading */
    struct svc_lock lock;
    bool exclusive; /* mode of lock when held */
    bool sidecar_read;
    json_object *sidecar; /* as read under the lock, or NULL */
    int64_t win_life;     /* the window cache's life of msg_dir (wincache.h), 0: not cached */
};
#define SVC_SESS_INIT                                                                              \
    {                                                                                              \
        .lock = SVC_LOCK_INIT, .msg_fd = -1                                                        \
    }

int svc_sess_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                  struct svc_err *err);
/* The same for a store (copied; its strings stay borrowed). */
int svc_sess_open_store(const struct svc_store *st, const char *sid, struct svc_sess *s,
                        struct svc_err *err);
/* The path of f, or of message id's file, starting where from says. */
char *svc_sess_path(const struct svc_sess *s, enum svc_file f, enum svc_from from);
char *svc_sess_message_path(const struct svc_sess *s, int64_t id, enum svc_from from);
bool svc_sess_exists(const struct svc_sess *s);
int svc_sess_lock(struct svc_sess *s, bool exclusive, struct svc_err *err);
void svc_sess_unlock(struct svc_sess *s); /* and forgets the sidecar read under the lock */
void svc_sess_close(struct svc_sess *s);
/* A new, empty staging root <root>/.svc_new-<hex> (heap path; listings, exports and Strands
 * ignore it), *stg its store: a session built whole there appears with svc_sess_publish. */
char *svc_store_stage(const struct svc_store *st, struct svc_store *stg, struct svc_err *err);
/* Move s from its staging root into st's: one rename that never replaces
 * (SVC_E_SESSION_EXISTS), its directories synced first when durable; then the journal learns
 * summary. The staging root is removed either way. */
int svc_sess_publish(struct svc_sess *s, const struct svc_store *st, json_object *summary,
                     struct svc_err *err);
/* Delete the session (caller holds both locks): renamed to SVC_F_TRASH (the root synced when
 * durable), then removed, and the journal told. SVC_E_SESSION_NOT_FOUND when missing. */
int svc_sess_remove(struct svc_sess *s, struct svc_err *err);

/* SVC_E_IO unless agents/, agent_<aid>/ and messages/ are real directories when present and
 * svc_turns.jsonl a regular file (a symbolic link could lead out of the root).
 * *has_messages (may be NULL): messages/ is there (its O_PATH descriptor becomes msg_fd). */
int svc_sess_check_layout(struct svc_sess *s, bool *has_messages, struct svc_err *err);
/* The multi-agent states a Strands Swarm or Graph wrote (SPEC 17), in id order: each(ctx, id,
 * absolute path, path from the root) of every multi_agent_<id> (its file may be missing). */
size_t svc_sess_multi_agents(const struct svc_sess *s,
                             void (*each)(void *ctx, const char *id, const char *abs,
                                          const char *rel),
                             void *ctx);
/* Copy src's multi-agent state files into dst, byte for byte (a missing one is skipped). */
int svc_sess_copy_multi_agents(const struct svc_sess *src, const struct svc_sess *dst, int sync,
                               struct svc_err *err);
/* Create what is missing of the session and messages directories and session.json (not
 * agent.json). dirs_seen: svc_sess_check_layout just saw the directories (under the run
 * lock), look for session.json only. *made (may be NULL): set true when it created any. */
int svc_sess_ensure(struct svc_sess *s, bool dirs_seen, int sync, bool *made, struct svc_err *err);
/* svc_sess_ensure, and agent.json fresh when missing or empty (a first run cut before it
 * stored a message), for a writer that adds messages outside a run. */
int svc_sess_ensure_natives(struct svc_sess *s, int sync, struct svc_err *err);

/* Forget the sidecar read under the lock (svc_sidecar_get), to read it again. */
void svc_sess_forget_sidecar(struct svc_sess *s);

/* Read file f as a JSON object (new reference); SVC_E_NOT_FOUND when missing or empty (a
 * power cut can leave that of a replacement not synced, core/run.c). */
int svc_sess_read_object(const struct svc_sess *s, enum svc_file f, json_object **out,
                         struct svc_err *err);
/* The same of agent.json. */
int svc_sess_read_agent(struct svc_sess *s, json_object **out, struct svc_err *err);
/* Write agent.json, setting updated_at and keeping created_at and unknown keys of *agent. */
int svc_sess_write_agent(struct svc_sess *s, json_object *agent, int sync, struct svc_err *err);

/* Ids of message_<n>.json files, ascending (heap; a missing directory is 0 ids). */
int svc_sess_message_ids(struct svc_sess *s, int64_t **ids, size_t *n, struct svc_err *err);
/* The message files in O(1): trusted (a count read under the lock, -1: unknown) when
 * message_<trusted-1>.json exists and message_<trusted>.json does not, else a scan.
 * *count files, *next the largest id + 1, *ids NULL for 0..count-1, else sorted (heap). */
int svc_sess_message_count(struct svc_sess *s, int64_t trusted, int64_t *count, int64_t *next,
                           int64_t **ids, struct svc_err *err);
/* Read message id (new reference) through msg_fd: SVC_E_NOT_FOUND when missing, SVC_E_IO
 * when damaged. *st, *bytes (may be NULL): the file's fstat and length. */
int svc_sess_read_message(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                          size_t *bytes, struct svc_err *err);
/* Write message_<id>.json (a new id): {"message": <copy>, "message_id", "redact_message":
 * null, "created_at", "updated_at"}; *bytes (may be NULL): its length. */
int svc_sess_write_message(struct svc_sess *s, int64_t id, json_object *message, int sync,
                           size_t *bytes, struct svc_err *err);
/* The effective messages at positions from..to-1 (ids NULL: position is id) appended to out,
 * through the window cache (wincache.h): a file unchanged since this process read or wrote
 * it is not parsed again. slide: the window starts at from, the cache forgets ids below;
 * from then on svc_sess_write_message caches what it writes too. */
int svc_sess_read_window(struct svc_sess *s, int64_t from, int64_t to, const int64_t *ids,
                         bool slide, json_object *out, struct svc_err *err);
/* lstat of message id's file through msg_fd: whether it is a regular file. */
bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st);
/* msg_fd (opened now if it was not), -1 when the directory cannot be opened. */
int svc_sess_messages_fd(struct svc_sess *s);

#endif
