/* memory: memory sync and recall (SPEC 8); the files are in docs/FORMAT.md ("Memory").
 * svc_memory_sync (after a successful run, provider svc_repository, sync_memory on) appends
 * the digest of the session's newest user/assistant text pair (tool traffic skipped) to
 * <memory.root>/<agent_id>/memory.jsonl unless that pair was synced already, holding the
 * session lock throughout. A run's own sync of a pair it stored skips the look back for a
 * line already written (svc_memory_sync refuses, session_busy, while a run holds the run
 * lock). A failure is logged, recorded in memory_state.error and returned; a run never
 * fails for it. A digest of an owned session carries its "owner" (user.h).
 * svc_memory_system_prompt adds the memory.recall newest digests of the agent from other
 * sessions of the same owner to the configured system prompt. Both read at most the last
 * SVC_MEMORY_TAIL bytes of the memory file. */
#ifndef SVC_MEMORY_H
#define SVC_MEMORY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "err.h"
#include "store.h"

struct svc_hostdb;

#define SVC_MEMORY_SIDE_MAX 280 /* code points of each side of a digest */
#define SVC_MEMORY_TAIL (1024 * 1024)

/* The digest form of one side: whitespace runs folded to one space, ends trimmed, cut to at
 * most max_cp code points (the last one "…" when cut). Heap string, never NULL. */
char *svc_memory_fold(const char *text, size_t max_cp);
/* The newest user/assistant text pair of a list of native messages (json array, oldest
 * first; ids[i] is the id of element i). *user and *assistant are heap digests, *message_id
 * the assistant message's id. Returns 1 when found, 0 when there is no pair. */
int svc_memory_pair(json_object *msgs, const int64_t *ids, char **user, char **assistant,
                    int64_t *message_id);
/* Sync the session of handle s (unlocked; locked and unlocked here; see above). Returns 0
 * when synced or nothing to do, -1 with err when it failed (already logged and recorded).
 * An unknown session, a configuration without memory sync (sessions disabled, native_file,
 * sync_memory off), or a run in progress on the session (session_busy) is -1 with err and
 * touches nothing. */
int svc_memory_sync(const struct svc_config *cfg, struct svc_sess *s, struct svc_hostdb *have,
                    struct svc_err *err);
/* For svc memory sync: what the memory file holds, the newest message_id of each session's
 * digests, in a temporary database (hostdb.h); given to svc_memory_sync, a pair synced already
 * whose digest is not there (a root restored without its memory, a memory.root that moved)
 * is written again. NULL with err when the file cannot be read. */
struct svc_hostdb *svc_memory_have(const struct svc_config *cfg, struct svc_err *err);
void svc_memory_have_free(struct svc_hostdb *have);
/* The same, for a caller that holds the session's newest messages already (a run that just
 * stored them): recent is a json array of them, oldest first, recent_ids[i] the id of element
 * i, and no message newer than the last one may exist. The pair is looked for there first,
 * so a turn's sync reads no message file; only when recent holds no pair are the newest
 * files read as svc_memory_sync does. recent NULL is svc_memory_sync. */
int svc_memory_sync_recent(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                           const int64_t *recent_ids, struct svc_err *err);
/* The same inside a run's end (core/run.c): the caller holds the session's exclusive lock
 * and writes the sidecar sc next, so memory_state is set in sc instead of written (one
 * sidecar write for the run's end and its memory sync). The checks of svc_memory_sync are
 * the caller's. */
int svc_memory_sync_run(const struct svc_config *cfg, struct svc_sess *s, json_object *recent,
                        const int64_t *recent_ids, json_object *sc, struct svc_err *err);
/* A failure as recorded: {"code", "message", "run_id" (unless run_id is NULL), "at": now}
 * (memory_state.error, last_error, a turn line's error). NULL when e is NULL. New reference. */
json_object *svc_memory_failure(const struct svc_err *e, const char *run_id);
/* A deleted session's digests out of the memory file (svc_memory_replace, nothing added). */
int svc_memory_forget(const struct svc_config *cfg, const char *sid, struct svc_err *err);

/* The whole memory file of agent, for export and import (SPEC 19), in bounded memory (a line
 * at a time). svc_memory_each calls fn on each digest line (with its '\n') and its session,
 * oldest first, under the shared memory lock (unlocked where the lock cannot be made: a
 * read-only root); fn's nonzero return ends the walk and is returned. svc_memory_replace
 * rewrites the file atomically under the memory lock: the digests of the sessions ours()
 * names are left out, then those of add (digest lines, read from its position; NULL: none)
 * appended, the other lines kept in order. A missing file has no lines. 0 or -1 with err. */
typedef int svc_memory_line_fn(void *ctx, const char *sid, const char *line, size_t n);
int svc_memory_each(const struct svc_config *cfg, const char *agent, svc_memory_line_fn *fn,
                    void *ctx, struct svc_err *err);
int svc_memory_replace(const struct svc_config *cfg, const char *agent, FILE *add,
                       bool (*ours)(void *ctx, const char *sid), void *ctx, struct svc_err *err);
/* <memory.root>/<agent>/memory.jsonl (heap), its directory into *dir (heap); that directory's
 * memory lock (flock how on its .memory.lock): the descriptor, or -1 with err. */
char *svc_memory_file(const struct svc_config *cfg, const char *agent, char **dir);
int svc_memory_lock(const char *dir, int how, struct svc_err *err);
/* A restored session's memory state (state: the path of its svc_memory.json) points at the
 * memory file of agent under this configuration's memory.root; no state file: nothing. */
int svc_memory_relocate(const struct svc_config *cfg, const char *agent, const char *state,
                        struct svc_err *err);
/* The system prompt with recall for a run on sid, whose owner is owner (user.h; NULL: the
 * admins'): only digests of sessions of the same owner are recalled (SPEC 14). NULL when
 * memory.recall is 0 or there is nothing to recall (use cfg->model.system_prompt), else a
 * heap string. */
char *svc_memory_system_prompt(const struct svc_config *cfg, const char *sid, const char *owner);

#endif
