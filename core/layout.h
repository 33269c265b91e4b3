/* layout: every name of the files svc and Strands keep under a sessions root (SPEC 2.1;
 * docs/FORMAT.md), the ids that name sessions and agents, and the paths they make. The
 * bottom of the storage floor: strings only, no I/O, nothing below it but err. The names
 * are spelled here alone (`make check-layout`); everyone else asks. Paths returned are
 * heap strings the caller frees. */
#ifndef SVC_LAYOUT_H
#define SVC_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The longest session or agent id, in characters (SPEC 2.1). */
#define SVC_ID_MAX 128

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
    SVC_F_COMPACTION_KEY, /* <root>/.svc_compaction.key: the seal of compaction items */
    SVC_F__MAX
};
/* Where a path starts: absolute, the root, the session directory, or its last component. */
enum svc_from { SVC_FROM_ABS, SVC_FROM_ROOT, SVC_FROM_SESSION, SVC_FROM_NAME };
/* A run record's files in <root>/.svc_runs: <id>.json, .events.jsonl, .cancel, .lock. */
enum svc_run_file { SVC_RUN_RECORD, SVC_RUN_EVENTS, SVC_RUN_CANCEL, SVC_RUN_LOCK, SVC_RUN__MAX };

/* Where a store's files are and how they are written (svc_store_from_config fills it). */
struct svc_store {
    const char *root;      /* borrowed, expanded */
    const char *agent_id;  /* borrowed, valid id */
    bool durable;          /* sessions.fsync */
    bool sidecars;         /* provider svc_repository: svc_session.json and svc_turns.jsonl */
    bool shared;           /* sessions.shared resolved: other hosts write here too */
    bool cache;            /* sessions.cache not off, root not shared: caches may serve (cache.h) */
    const char *index_dir; /* borrowed: this host's listing database, NULL: list from memory */
    bool staged;           /* a staging root (svc_store_stage): the journal learns on publish */
    int manager;           /* agent.conversation_manager (enum svc_conv_manager) */
};

/* 1..SVC_ID_MAX chars of [A-Za-z0-9._-], not starting with '.'. */
bool svc_layout_id_valid(const char *id);
/* SVC_E_INVALID_SESSION_ID with a message saying what is wrong; param "session_id". */
int svc_layout_id_check(const char *id, struct svc_err *err);

/* The name of f (its last component; of an id-named one, the part before the id). */
const char *svc_layout_name(enum svc_file f);
/* <root>/<name of f><tail> for the root's own files (SVC_F_INDEX on); tail may be NULL. */
char *svc_layout_root_path(const char *root, enum svc_file f, const char *tail);
/* The path of f of session sid under agent aid, or of message id's file, from where said. */
char *svc_layout_path(const char *root, const char *aid, const char *sid, enum svc_file f,
                      enum svc_from from);
char *svc_layout_message_path(const char *root, const char *aid, const char *sid, int64_t id,
                              enum svc_from from);
/* The same into buf (sz bytes), without the heap, from SVC_FROM_ROOT or SVC_FROM_ABS: its
 * length, or 0 when it does not fit. */
size_t svc_layout_message_path_in(const char *root, const char *aid, const char *sid, int64_t id,
                                  enum svc_from from, char *buf, size_t sz);
/* message_<id>.json into name (at least 48 bytes). */
void svc_layout_message_name(char *name, int64_t id);
/* <root>/.svc_runs/<run_id><suffix of f> (root NULL: the name alone). */
char *svc_layout_run_path(const char *root, const char *run_id, enum svc_run_file f);
/* The run id of a name in .svc_runs holding f's suffix (heap), else NULL. */
char *svc_layout_run_id_of(const char *name, enum svc_run_file f);
/* The id in session_<sid>, multi_agent_<id> (borrowed from name), else NULL;
 * <dir>/multi_agent_<id>, with /multi_agent.json when file (heap). */
const char *svc_layout_session_of(const char *name);
const char *svc_layout_multi_agent_of(const char *name);
char *svc_layout_multi_agent_path(const char *dir, const char *id, bool file);
/* The id of a message file's name (message_<n>.json, n decimal without padding), else -1. */
int64_t svc_layout_message_id_of(const char *name);
/* The names of a session's lock files, NULL-terminated (static); whether name is one; or a
 * lock or temporary file (never copied or reported). */
const char *const *svc_layout_lock_names(void);
bool svc_layout_is_lock(const char *name);
bool svc_layout_is_internal(const char *name);

#endif
