/* turn: the sequence of a run's writes under its locks, above the store (the native
 * files) and the sidecar; what they say is core/run.c's (its header gives the order's
 * crash reasoning, FORMAT.md the files).
 * svc_turn_lock (1: the session is missing, nothing made; create makes its directories)
 * takes the run lock and the exclusive session lock, reads the sidecar and counts the
 * messages (svc_turn_count again after a repair, or to learn why the count failed).
 * svc_turn_start writes the `running` sidecar (NULL: none), session.json and agent.json
 * where missing, reads the window into win and stores import then opening, then unlocks;
 * on failure it puts the sidecar back and releases both locks, as svc_turn_release does.
 * svc_turn_store_output is the agent loop's store. svc_turn_end syncs what the commit
 * record depends on, writes agent.json, appends e->line, lets e->leave edit the sidecar
 * read under the lock, writes it and releases both locks. */
#ifndef SVC_TURN_H
#define SVC_TURN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "lock.h"
#include "store.h"

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
    json_object *summary;         /* the summary this run made (cmgr.h), or NULL */
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
