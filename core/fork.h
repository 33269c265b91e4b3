/* fork: a new session from the first messages of another (SPEC 13.3). The new session is
 * built whole in a staging root (store.h) from copies of messages 0..n, read under the
 * source's shared lock (a redacted message is copied redacted), with a fresh session.json
 * and agent.json (the source's agent state and conversation manager; its window start and
 * summary when the copy reaches them), the multi-agent states byte for byte (SPEC 17), and
 * a sidecar with the source's title, model and user and `forked_from: {"session_id",
 * "message_id"}`; it appears in one rename that never replaces a session. Strands reads it
 * as an ordinary session. The source is not changed. svc_session_continued finds (or
 * forks) the session a request that names none continues. */
#ifndef SVC_FORK_H
#define SVC_FORK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

struct svc_fork_req {
    const char *session_id; /* the source */
    bool has_message_id;    /* else the last message */
    int64_t message_id;     /* the last message copied: 0..the source's last id, else 422 */
    const char *new_id;     /* NULL: a new sess-<16 hex>; one that exists: 409 session_exists */
    const char *title;      /* NULL: the source's */
};

/* The new session's summary in *out (new reference). */
int svc_session_fork(const struct svc_config *cfg, const struct svc_fork_req *f, json_object **out,
                     struct svc_err *err);
/* sessions.continue_stateless (SPEC 15, chain.h): the owner's session whose transcript is
 * the longest prefix of hist (OpenAI messages), or a fork of it when it goes on past it:
 * *sid (heap; NULL: none), *used of hist's messages it holds, *count its messages (for
 * svc_run_request.expect_count; 0 for a fork). */
int svc_session_continued(const struct svc_config *cfg, const char *owner, json_object *hist,
                          char **sid, size_t *used, int64_t *count, struct svc_err *err);

#endif
