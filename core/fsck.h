/* fsck: check a session root and repair what can be repaired without losing data (SPEC 7,
 * `svc fsck`). Every file of every session (or of the sessions named) is parsed; checked:
 * message numbering (contiguous from 0, the id inside each file equal to its name),
 * removed_message_count within range, sidecar message_count against the files, stale
 * `running` states (run lock free), torn or undecodable lines in svc_turns.jsonl, in the
 * memory files (<memory.root>/<agent>/memory.jsonl, reported as "memory/<agent>/...") and in
 * the run event files, run records left `running` by a dead runner, orphan temp files, lock
 * files and stray files, and the root index against the directories. Each problem carries
 * its file (relative to the root) and, for a line, its byte offset.
 * With repair: stale runs are repaired (as a reader would), sidecar counts recounted, bad
 * lines moved to "<file>.corrupt" (appended) and the file rewritten without them, orphan
 * temp files whose writer is gone (the pid in the name) or older than a minute removed, dead
 * runners' records finished, the index rebuilt. Message files are never removed or rewritten. A
 * session is repaired holding its run lock and then its session lock, as a run does, so repair is
 * safe on a live root; a session with a live run is checked without the checks a run makes untrue
 * (counts, turns tail) and reported in "busy". */
#ifndef SVC_FSCK_H
#define SVC_FSCK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "err.h"

struct svc_fsck_opts {
    bool repair;
    const char *const *sessions; /* only these (validated ids), or all when nsessions is 0 */
    size_t nsessions;
    /* called after each session: done of total (may be NULL) */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
};

/* *report (new reference): {"root", "repair", "sessions_checked", "busy": [ids],
 * "problems": [{"session_id"|null, "file", "offset"|null, "kind", "message", "repaired"}],
 * "counts": {"problems", "repaired", "left", "stale_runs_repaired"}}.
 * Returns 0 when the check ran (whatever it found), -1 with err when it could not
 * (unreadable root, unknown session named). */
int svc_fsck(const struct svc_config *cfg, const struct svc_fsck_opts *o, json_object **report,
             struct svc_err *err);

#endif
