/* store: the one door to a session's files (SPEC 2.1; the layout is in FORMAT.md).
 * Only store.c knows a file's name or a path's shape: everyone else opens a handle
 * (struct svc_sess) and asks it for a path, or asks svc_store_name for a name.
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
#include "lock.h"

/* The longest session or agent id, in characters (SPEC 2.1). */
#define SVC_ID_MAX 128

struct svc_store {
    const char *root;      /* borrowed, expanded */
    const char *agent_id;  /* borrowed, valid id */
    bool durable;          /* sessions.fsync */
    bool sidecars;         /* provider svc_repository: svc_session.json and svc_turns.jsonl */
    bool shared;           /* sessions.shared resolved: other hosts write here too */
    bool cache;            /* sessions.cache not off, root not shared: caches may serve (cache.h) */
    const char *index_dir; /* borrowed: where this host keeps the listing database, or NULL
                            * to list from memory (sessions.index_db off, or cache off) */
};

/* The files of the layout, by role; the comments give the path from the session directory
 * (the last ones from the root). */
enum svc_file {
    SVC_F_DIR,            /* <root>/session_<sid> */
    SVC_F_SESSION,        /* session.json */
    SVC_F_SIDECAR,        /* svc_session.json */
    SVC_F_TURNS,          /* svc_turns.jsonl */
    SVC_F_TURNS_CORRUPT,  /* svc_turns.jsonl.corrupt (fsck's) */
    SVC_F_MEMORY,         /* svc_memory.json */
    SVC_F_FEEDBACK,       /* svc_feedback.json */
    SVC_F_AGENTS,         /* agents */
    SVC_F_AGENT_DIR,      /* agents/agent_<aid> */
    SVC_F_AGENT,          /* agents/agent_<aid>/agent.json */
    SVC_F_MESSAGES,       /* agents/agent_<aid>/messages */
    SVC_F_MULTI_AGENTS,   /* multi_agents */
    SVC_F_LOCK,           /* .svc.lock */
    SVC_F_RUN_LOCK,       /* .svc.run.lock */
    SVC_F_INDEX,          /* <root>/.svc_index.jsonl */
    SVC_F_INDEX_LOCK,     /* <root>/.svc_index.lock */
    SVC_F_INDEX_BUILD,    /* <root>/.svc_index.build: held while the index is read anew */
    SVC_F_RUNS,           /* <root>/.svc_runs */
    SVC_F_RESPONSES,      /* <root>/.svc_responses */
    SVC_F_IMPORT_LOCK,    /* <root>/.svc_import.lock */
    SVC_F_IMPORT_STAGING, /* <root>/.svc_import-<hex> */
    SVC_F_IMPORT_ASIDE,   /* <staging>/old_session_<sid>: an overwritten session moved aside */
    SVC_F_TRASH,          /* <root>/.svc_trash-<sid>-<hex>: a session being deleted */
    SVC_F_STAGE,          /* <root>/.svc_new-<hex>: a new session being built */
    SVC_F_RETENTION,      /* <root>/.svc_retention.json: the retention job's state */
    SVC_F_RETENTION_LOCK, /* <root>/.svc_retention.lock: held while it runs */
    SVC_F__MAX
};
/* Where a path starts: absolute, from the root, from the session directory, or the last
 * component alone. */
enum svc_from { SVC_FROM_ABS, SVC_FROM_ROOT, SVC_FROM_SESSION, SVC_FROM_NAME };
/* A run record's files in <root>/.svc_runs: <id>.json, .events.jsonl, .cancel, .lock. */
enum svc_run_file { SVC_RUN_RECORD, SVC_RUN_EVENTS, SVC_RUN_CANCEL, SVC_RUN_LOCK, SVC_RUN__MAX };

/* 1..SVC_ID_MAX chars of [A-Za-z0-9._-], not starting with '.'. */
bool svc_id_valid(const char *id);
/* SVC_E_INVALID_SESSION_ID with a message saying what is wrong; param "session_id". */
int svc_id_check(const char *id, struct svc_err *err);

/* The name of f (its last component); for the id-named ones (session_<sid>, agent_<aid>,
 * .svc_import-<hex>) the part before the id. */
const char *svc_store_name(enum svc_file f);
/* <root>/<name of f> for the root's own files (SVC_F_INDEX and after). */
char *svc_store_root_path(const struct svc_store *st, enum svc_file f);
/* <root>/.svc_runs/<run_id><suffix of f> (root NULL: the name alone). */
char *svc_store_run_path(const char *root, const char *run_id, enum svc_run_file f);
/* The events a run recorded, in order (new reference; empty when none or id invalid). */
json_object *svc_store_run_events(const char *root, const char *run_id);
/* The run id of a name in .svc_runs holding f's suffix (heap), else NULL. */
char *svc_store_run_id_of(const char *name, enum svc_run_file f);
/* The session id in a root entry's name session_<sid> (borrowed from name), else NULL. */
const char *svc_store_session_of(const char *name);
/* The id of a message file's name (message_<n>.json, n decimal without padding), else -1. */
int64_t svc_store_message_id_of(const char *name);
/* The names of a session's lock files, NULL-terminated (static). */
const char *const *svc_store_lock_names(void);
/* Whether name is one of them. */
bool svc_store_is_lock(const char *name);
/* Whether name is a lock or temporary file of the layout (never copied or reported). */
bool svc_store_is_internal(const char *name);
/* The path of session sid's message id file from the root or absolute (from: SVC_FROM_ROOT
 * or SVC_FROM_ABS) into buf of sz bytes, without the heap (a listed row's check): its
 * length, or 0 when it does not fit. */
size_t svc_store_message_path_in(const struct svc_store *st, const char *sid, int64_t id,
                                 enum svc_from from, char *buf, size_t sz);
/* Whether session_<sid> exists as a real directory inside the root (no symlink escape). */
bool svc_store_session_exists(const struct svc_store *st, const char *sid);
/* What shows that a session changed between two looks: its directory's and its sidecar's
 * (inode, size, mtime, ctime); a sidecar that is missing counts as zeros. */
struct svc_sess_mark {
    ino_t dir_ino, side_ino;
    off_t side_size;
    struct timespec dir_m, dir_c, side_m, side_c;
};
/* Session sid's mark now: 0, or -1 when it is not a session directory. */
int svc_store_session_mark(const struct svc_store *st, const char *sid, struct svc_sess_mark *m);
/* Whether two marks are the same. */
bool svc_store_mark_same(const struct svc_sess_mark *a, const struct svc_sess_mark *b);
/* The store a configuration describes (root, agent id, sessions.fsync, provider). */
void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st);
/* The SVC_SYNC_* mask (fsio.h) of a write asked with sync (SVC_SYNC_STORE: sessions.fsync). */
#define SVC_SYNC_STORE (-1)
int svc_store_sync(const struct svc_store *st, int sync);

/* A fresh agent record (new reference) with removed_message_count 0, model_call_count 0. */
json_object *svc_store_new_agent(const char *agent_id);
/* conversation_manager_state.removed_message_count / model_call_count (0 when absent). */
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
    int msg_fd;    /* msg_dir opened (O_DIRECTORY, or O_PATH by the layout check) on first
                    * use, or -1: for openat, fstat(at) and watches, never for reading */
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
/* The same for a store (st is copied; its strings stay borrowed). */
int svc_sess_open_store(const struct svc_store *st, const char *sid, struct svc_sess *s,
                        struct svc_err *err);
/* The path of f of this session, starting where from says. */
char *svc_sess_path(const struct svc_sess *s, enum svc_file f, enum svc_from from);
/* The path of message id's file, starting where from says. */
char *svc_sess_message_path(const struct svc_sess *s, int64_t id, enum svc_from from);
bool svc_sess_exists(const struct svc_sess *s);
int svc_sess_lock(struct svc_sess *s, bool exclusive, struct svc_err *err);
void svc_sess_unlock(struct svc_sess *s); /* and forgets the sidecar read under the lock */
void svc_sess_close(struct svc_sess *s);
/* A new, empty staging root beside the sessions, <root>/.svc_new-<hex> (heap path): a session
 * built whole under it (a handle on a store with this root) appears at once with
 * svc_sess_publish. Listings, exports and Strands ignore it. */
char *svc_store_stage(const struct svc_store *st, struct svc_err *err);
/* Move s, built under a staging root, into st's root as session_<sid>: one rename that never
 * replaces (SVC_E_SESSION_EXISTS), its directories synced first when st is durable. The
 * staging root is removed either way. */
int svc_sess_publish(struct svc_sess *s, const struct svc_store *st, struct svc_err *err);
/* Delete the session's directory: renamed out of the root's namespace (to SVC_F_TRASH, which
 * listings, exports and Strands ignore; the root synced when durable), then removed. The
 * caller holds the exclusive lock and the run lock. SVC_E_SESSION_NOT_FOUND when missing. */
int svc_sess_remove(struct svc_sess *s, struct svc_err *err);

/* The directories we write into (agents/, agents/agent_<aid>/, messages/) must be real
 * directories when present, and svc_turns.jsonl a regular file: a symbolic link there
 * could lead out of the root. SVC_E_IO when one is not. *has_messages (may be NULL): the
 * messages directory is there; the check's O_PATH descriptor of it becomes the handle's. */
int svc_sess_check_layout(struct svc_sess *s, bool *has_messages, struct svc_err *err);
/* Create the root, the session directory, the messages directory and session.json (when
 * missing, even if the directory exists; not agent.json). dirs_seen: the caller has just
 * seen the session and messages directories (svc_sess_check_layout, under the run lock),
 * so only session.json is looked for. *made (may be NULL): set true when a directory or
 * session.json was created. */
int svc_sess_ensure(struct svc_sess *s, bool dirs_seen, int sync, bool *made, struct svc_err *err);
/* svc_sess_ensure, and agent.json fresh when missing or empty: the native files a session
 * whose first run stopped before it stored a message lacks (a power cut leaves its
 * directories and its `running` sidecar), for a writer that adds messages outside a run. */
int svc_sess_ensure_natives(struct svc_sess *s, int sync, struct svc_err *err);

/* Read (once) the sidecar; a missing one is *out NULL and 0. SVC_E_IO when damaged. *out
 * is borrowed from the handle. */
int svc_sess_sidecar(struct svc_sess *s, json_object **out, struct svc_err *err);
/* Forget the sidecar read (after the caller rewrote it, or to read it again). */
void svc_sess_forget_sidecar(struct svc_sess *s);

/* Read agent.json (SVC_E_NOT_FOUND when missing, or empty: what a power cut can leave of
 * a replacement that was not synced, see core/run.c). *out is a new reference. */
int svc_sess_read_agent(struct svc_sess *s, json_object **out, struct svc_err *err);
/* Write agent.json, setting updated_at and keeping created_at and unknown keys of *agent. */
int svc_sess_write_agent(struct svc_sess *s, json_object *agent, int sync, struct svc_err *err);

/* Ids of message_<n>.json files, ascending (heap array; *n may be 0; a missing messages
 * directory is 0 ids, not an error). */
int svc_sess_message_ids(struct svc_sess *s, int64_t **ids, size_t *n, struct svc_err *err);
/* The message files in O(1): trusts `trusted` (a count read under the session lock, -1
 * when unknown) when message_<trusted-1>.json exists and message_<trusted>.json does not,
 * and scans the directory otherwise (a file written by another program). *count files,
 * *next the largest id + 1; *ids NULL when the ids are 0..count-1, else the sorted ids
 * (heap, caller frees). */
int svc_sess_message_count(struct svc_sess *s, int64_t trusted, int64_t *count, int64_t *next,
                           int64_t **ids, struct svc_err *err);
/* Read message id (new reference) through the messages directory's descriptor, opened
 * once for the handle. A missing file is SVC_E_NOT_FOUND, a damaged one SVC_E_IO. *st
 * (may be NULL) gets the fstat of the file read, *bytes (may be NULL) its length. */
int svc_sess_read_message(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                          size_t *bytes, struct svc_err *err);
/* Write message_<id>.json (a new id): {"message": <copy of message>, "message_id",
 * "redact_message": null, "created_at", "updated_at"}. *bytes (may be NULL) gets the
 * length of the file written. */
int svc_sess_write_message(struct svc_sess *s, int64_t id, json_object *message, int sync,
                           size_t *bytes, struct svc_err *err);
/* lstat of message id's file through the same descriptor: true when it is a regular file. */
bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st);
/* That descriptor (opened now if it was not), -1 when the directory cannot be opened. */
int svc_sess_messages_fd(struct svc_sess *s);

/* A turn: the sequence of a run's writes under its locks, owned here; what they say is
 * core/run.c's (its header gives the order's crash reasoning, FORMAT.md the files).
 * svc_turn_lock (1: the session is missing, nothing made; create makes its directories)
 * takes the run lock and the exclusive session lock, reads the sidecar and counts the
 * messages (svc_turn_count again after a repair, or to learn why the count failed).
 * svc_turn_start writes the `running` sidecar (NULL: none), session.json and agent.json
 * where missing, reads the window into win and stores import then opening, then unlocks;
 * on failure it puts the sidecar back and releases both locks, as svc_turn_release does.
 * svc_turn_store_output is the agent loop's store. svc_turn_end syncs what the commit
 * record depends on, writes agent.json, appends e->line, lets e->leave edit the sidecar
 * read under the lock, writes it and releases both locks. */
struct svc_turn {
    struct svc_sess *s;       /* borrowed */
    struct svc_lock run_lock; /* from svc_turn_lock to svc_turn_end or a failure */
    json_object *sc;          /* read under the lock (borrowed from s), or NULL */
    bool dirs_seen;           /* the layout check saw the session and messages directories */
    bool counted;             /* stored, next_id and ids hold the count */
    int64_t stored, next_id;  /* message files; the largest id + 1 */
    int64_t *ids;             /* NULL: the ids are 0..stored-1; else sorted (heap) */
    json_object *last;        /* the newest stored message, or NULL (owned) */
    json_object *agent;       /* agent.json (owned) */
    int64_t removed;          /* its removed_message_count */
    int64_t input_id;         /* the first opening message's id, or -1 */
    json_object *output_ids;  /* what svc_turn_store_output stored (owned) */
    bool msgs_unsynced;       /* message files whose directory is not synced yet */
    bool dirs_unsynced;       /* the session's directories are synced at the end */
};
struct svc_turn_end {
    int64_t removed, model_calls; /* agent.json's counts: the window's, this run's calls */
    json_object *line;            /* the turn line (sidecars only) */
    const char *model;            /* for a sidecar made anew */
    void (*leave)(void *ctx, json_object *sc);
    void *ctx;
};
int svc_turn_lock(struct svc_turn *t, bool create, struct svc_err *err);
int svc_turn_count(struct svc_turn *t, struct svc_err *err);
void svc_turn_release(struct svc_turn *t);
int svc_turn_start(struct svc_turn *t, json_object *running, json_object *import,
                   json_object *opening, json_object *win, struct svc_err *err);
int svc_turn_store_output(void *turn, json_object *msg, struct svc_err *err);
int svc_turn_end(struct svc_turn *t, const struct svc_turn_end *e, struct svc_err *err);

#endif
