/* snapshot: one session read whole into memory under its shared lock (SPEC 2.3, 5), so
 * that what is taken from it holds no half-written turn.
 *   svc_snap_take   repairs a stale `running` first (as every reader does), takes the shared
 *                   lock, reads every file and directory of the session (never through a
 *                   link; lock and temp files left out) and its summary (the sidecar, or
 *                   one derived from the native files), then releases the lock. While a run
 *                   is in flight, the messages it stored after the last turn boundary (the
 *                   sidecar's message_count, which counts its input) are left out.
 *   Unreadable files, links and special files are named in s->warnings (borrowed;
 *   {"session_id", "file", "message"}, file as native/session_<id>/<path>).
 * Memory: one session at a time; svc_snap_free releases it. */
#ifndef SVC_SNAPSHOT_H
#define SVC_SNAPSHOT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "err.h"

struct svc_snap_file {
    char *rel;  /* relative to the session directory */
    char *data; /* NULL for a directory */
    size_t len;
    time_t mtime;
};

struct svc_snap {
    const char *sid;
    struct svc_snap_file *f;
    size_t n, cap;
    int64_t skip_from;     /* messages from this id on are left out (a run in flight); -1: none */
    char *dirname;         /* "session_<sid>" */
    char *msgdir;          /* "agents/agent_<aid>/messages" */
    char *agent_file;      /* "agents/agent_<aid>/agent.json" */
    json_object *summary;  /* sidecar or derived, without schema_version */
    json_object *warnings; /* borrowed: the export's array */
};

/* s->sid and s->warnings set by the caller, the rest zeroed. */
int svc_snap_take(const struct svc_config *cfg, struct svc_snap *s, struct svc_err *err);
void svc_snap_free(struct svc_snap *s);
/* A file of the snapshot by its path relative to the session directory, or NULL. */
const struct svc_snap_file *svc_snap_find(const struct svc_snap *s, const char *rel);
/* Append {"session_id", "file", "message"} to s->warnings for a file of the session, named
 * native/session_<id>/<rel> (rel NULL: the session directory itself). */
void svc_snap_warn_native(struct svc_snap *s, const char *rel, const char *msg);

#endif
