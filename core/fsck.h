/* fsck: check a session root and repair what can be repaired without losing data (SPEC 7,
 * `svc fsck`; the list of checks and repairs is in docs/OPS.md, "fsck"). Every file of
 * every session (or of the sessions named) is parsed, with the memory files (reported as
 * "memory/<agent>/..."), the run files and the root index; each problem carries its file
 * (relative to the root) and, for a line, its byte offset. Repair never removes or rewrites
 * a message file. A session is repaired holding its run lock and then its session lock, as
 * a run does, so repair is safe on a live root; a session with a live run is checked
 * without the checks a run makes untrue (counts, turns tail) and reported in "busy".
 * The root's sessions are walked in id order a batch at a time: memory is bounded whatever
 * the root's size (what grows is the report: its problems and busy ids). */
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
    /* called after each session: done of total, the session names seen (may be NULL) */
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
