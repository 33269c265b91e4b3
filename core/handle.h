/* handle: one session, opened once per request or run and passed down.
 * svc_sess_open validates the id (SVC_E_INVALID_SESSION_ID) and derives the session's
 * paths once from the configuration; it touches no file. svc_sess_lock takes the short
 * lock (.svc.lock, lock.h) in the mode asked; asking again in the mode held is a no-op.
 * svc_sess_sidecar reads svc_session.json once (the caller holds the lock) and keeps it;
 * *out is borrowed from the handle (NULL when the session has none).
 * svc_sess_message_count is svc_store_message_count (store.h) of this session;
 * svc_sess_read_message_stat and _len read message files through one descriptor of the messages
 * directory (openat: no path walk per file).
 * svc_sess_close releases the lock and frees everything; a handle zeroed with
 * SVC_SESS_INIT may be closed. */
#ifndef SVC_HANDLE_H
#define SVC_HANDLE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "lock.h"
#include "store.h"

struct svc_sess {
    struct svc_store st;
    char sid[129];
    char *dir;     /* <root>/session_<sid> (heap) */
    char *msg_dir; /* <dir>/agents/agent_<aid>/messages (heap) */
    int msg_fd;    /* msg_dir opened (O_DIRECTORY, or O_PATH by a layout check) on first
                    * use, or -1: for openat, fstat(at) and watches, never for reading */
    struct svc_lock lock;
    bool exclusive; /* mode of lock when held */
    bool sidecar_read;
    json_object *sidecar; /* as read under the lock, or NULL */
};
#define SVC_SESS_INIT                                                                              \
    {                                                                                              \
        .lock = SVC_LOCK_INIT, .msg_fd = -1                                                        \
    }

/* The store a configuration describes (root, agent id, sessions.fsync). */
void svc_store_from_config(const struct svc_config *cfg, struct svc_store *st);

int svc_sess_open(const struct svc_config *cfg, const char *sid, struct svc_sess *s,
                  struct svc_err *err);
int svc_sess_lock(struct svc_sess *s, bool exclusive, struct svc_err *err);
void svc_sess_unlock(struct svc_sess *s);
/* Read (once) the sidecar; a missing one is *out NULL and 0. SVC_E_IO when damaged. */
int svc_sess_sidecar(struct svc_sess *s, json_object **out, struct svc_err *err);
/* Forget the sidecar read (after the caller rewrote it, or to read it again). */
void svc_sess_forget_sidecar(struct svc_sess *s);
/* Message files: *count and *next (largest id + 1). *ids is NULL when they are contiguous
 * (ids 0..count-1), else the sorted ids (heap, caller frees). */
int svc_sess_message_count(struct svc_sess *s, int64_t trusted, int64_t *count, int64_t *next,
                           int64_t **ids, struct svc_err *err);
/* Read message id (new reference) through the messages directory's descriptor, opened
 * once for the handle: a window or a page walks the path from the root once, not per file.
 * A missing file is SVC_E_NOT_FOUND, a damaged one SVC_E_IO (as svc_store_read_message).
 * *st (when not NULL) gets the fstat of the file read. */
int svc_sess_read_message_stat(struct svc_sess *s, int64_t id, json_object **out, struct stat *st,
                               struct svc_err *err);
/* The same without the stat, and *bytes gets the file's length. */
int svc_sess_read_message_len(struct svc_sess *s, int64_t id, json_object **out, size_t *bytes,
                              struct svc_err *err);
/* The messages directory's descriptor (borrowed, closed by svc_sess_close), or -1 when
 * it cannot be opened. */
int svc_sess_messages_fd(struct svc_sess *s);
/* lstat of message id's file through the same descriptor: true when it is a regular file. */
bool svc_sess_stat_message(struct svc_sess *s, int64_t id, struct stat *st);
void svc_sess_close(struct svc_sess *s);

#endif
