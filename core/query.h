/* query: the dashboard reads and small writes the HTTP layer and `svc sessions` call
 * (SPEC 4.3). Every function validates the session id first, answers
 * SVC_E_SESSIONS_DISABLED when sessions are off and SVC_E_SESSION_NOT_FOUND for a missing
 * session, takes the session lock (shared to read, exclusive to write), repairs a stale
 * `running`, and returns a new json-c reference in *out shaped as the API answers it.
 * Listing reads summaries only (sidecars, or a root-level index), never transcripts. */
#ifndef SVC_QUERY_H
#define SVC_QUERY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "index.h" /* struct svc_list_query */

/* Queries arrive as the client typed them (cgi/ parses types only); the functions below
 * decide what is allowed and answer SVC_E_INVALID_QUERY naming the parameter otherwise. */
#define SVC_MESSAGES_LIMIT_DEFAULT 200
#define SVC_MESSAGES_LIMIT_MAX 1000

struct svc_messages_query {
    int64_t limit;      /* 1..SVC_MESSAGES_LIMIT_MAX, SVC_MESSAGES_LIMIT_DEFAULT */
    int64_t offset;     /* >= 0 */
    const char *order;  /* NULL, "asc" or "desc" (newest first) */
    bool include_turns; /* with offset 0: add "turns" */
    bool include_bytes; /* parts carry images' and documents' data URLs (never cached) */
};

/* The entry of the functions below and of the other dashboard writes: sessions on, the id
 * valid, the session present with a safe layout, and (with repair) a stale `running`
 * repaired. 0 with *s an open handle the caller closes, or -1 with err and *s closed. */
int svc_session_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s, bool repair,
                     struct svc_err *err);
/* Whether s is a session status: running, idle, error or cancelled. */
bool svc_session_status_valid(const char *s);
/* {"sessions": [summary...], "next_cursor": "..."|null} */
int svc_sessions_list(const struct svc_config *cfg, const struct svc_list_query *q,
                      json_object **out, struct svc_err *err);
/* fn(ctx, summary, err) for every session q selects, page after page (q's limit and
 * cursor are ignored), until fn answers nonzero. 0, or fn's answer, or -1 with err. */
int svc_sessions_each(const struct svc_config *cfg, const struct svc_list_query *q,
                      int (*fn)(void *ctx, json_object *summary, struct svc_err *err), void *ctx,
                      struct svc_err *err);
/* How many sessions the listing index holds, or -1 (sessions off, root unreadable). */
int64_t svc_sessions_count(const struct svc_config *cfg);
/* Load the listing index in this process (a pool master does, before forking workers, so
 * they inherit it instead of each reading it at its first list). */
void svc_sessions_warm(const struct svc_config *cfg);
/* At a pool's orderly stop, after its workers: keep the listing index across a reboot. */
void svc_sessions_seal(const struct svc_config *cfg);
/* The summary (sidecar without schema_version, message_count true to the files).
 * *out may be shared with a per-process memo of the last summary computed: the caller
 * reads it and releases its reference (json_object_put), and never modifies it.
 * A session read again soon (one of the last four read) has its directories watched by
 * the process (dirwatch.h content watches armed before the checks and the read): while
 * no event came since and the session directory's path names the watched inode, the memo
 * is the answer without the lock or a read (a `running` summary is always read, to repair
 * a stale one). Only on local filesystems; query.c says why a change cannot be missed. */
int svc_session_get(const struct svc_config *cfg, const char *sid, json_object **out,
                    struct svc_err *err);
/* The detail: summary (svc_session_get's, its reference taken) with what Strands keeps in
 * session sid shown read-only (SPEC 17, strands.h): "interrupts" and "multi_agents", each
 * only when there is one (then a copy, the memo untouched). Reads agent.json and the
 * multi-agent states, no lock (each file is replaced whole). */
json_object *svc_session_with_strands(const struct svc_config *cfg, const char *sid,
                                      json_object *summary);
/* {"session_id","agent_id","messages":[...],"next_offset","total"[, "turns"]} */
int svc_session_messages(const struct svc_config *cfg, const char *sid,
                         const struct svc_messages_query *q, json_object **out,
                         struct svc_err *err);
/* One row of "messages" for a message record (borrowed): {"message_id", "role", "content",
 * "created_at", "updated_at", "parts" (parts.h, without data), "raw_native",
 * "openai_messages"} (new reference). */
json_object *svc_message_row(json_object *rec, int64_t id);
/* {"archived": bool, "session_id"}; idempotent. */
int svc_session_set_archived(const struct svc_config *cfg, const char *sid, bool archived,
                             json_object **out, struct svc_err *err);
/* PATCH: what changes (NULL / false: unchanged). At least one is given (else
 * SVC_E_MISSING_FIELD "title"); every field is checked before anything is written. */
struct svc_session_edit {
    const char *title; /* 1..200 characters */
    bool set_pinned;
    bool pinned;
    json_object *tags;     /* borrowed; labels.h */
    json_object *metadata; /* borrowed; labels.h (replaces the whole object) */
};
/* Returns the summary. */
int svc_session_edit(const struct svc_config *cfg, const char *sid,
                     const struct svc_session_edit *e, json_object **out, struct svc_err *err);
/* SPEC 14: 0 when scope (svc_user_scope; NULL: an admin) sees session sid, else -1 with
 * exactly what a missing session answers (SVC_E_SESSION_NOT_FOUND, "session <id> not
 * found"; invalid_session_id, sessions_disabled as the reads do). With missing_ok a
 * session that does not exist yet is fine (a turn may create it). */
int svc_session_visible(const struct svc_config *cfg, const char *scope, const char *sid,
                        bool missing_ok, struct svc_err *err);
/* {"session_id", ...token_state} */
int svc_session_tokens(const struct svc_config *cfg, const char *sid, json_object **out,
                       struct svc_err *err);

#endif
