/* extension: the child processes of tools. svc_ext_spawn starts one: argv without a shell
 * (a bare name looked up on the PATH of its environment, else /usr/local/bin:/usr/bin:/bin),
 * in its own process group, with every descriptor but stdin/stdout/stderr closed, every
 * signal at its default, an empty signal mask, an environment holding only its items
 * ("NAME=value", or "NAME" copied from ours when set), and SIGKILLed when this process ends
 * (PR_SET_PDEATHSIG). svc_ext_run runs one configured extension tool (SPEC 9) so, its `env`
 * the items, to its end: the arguments go to stdin as one line of compact JSON.
 * The result is stdout (valid UTF-8, invalid bytes replaced, a trailing newline dropped), at
 * most SVC_EXT_OUTPUT_MAX bytes: past that the rest is read and dropped and the result is
 * marked truncated. A non-zero exit, a signal, a timeout (timeout_s, then SIGKILL to the
 * whole group) or a spawn failure is a result with ok false and a one-line reason (with the
 * start of stderr when there is one). The child is always reaped and its group killed
 * before this returns: no zombie and no leftover process in its group. */
#ifndef SVC_EXTENSION_H
#define SVC_EXTENSION_H

#include <json-c/json.h>
#include <sys/types.h>

#include "config.h"
#include "tools.h"
#include "util.h"

#define SVC_EXT_OUTPUT_MAX (64 * 1024)

/* Run x with args (borrowed; NULL means {}); fills *out (svc_tool_result_free releases it).
 * should_cancel (may be NULL) is polled about every 50 ms: nonzero stops the tool like a
 * timeout (the result says it was cancelled). */
void svc_ext_run(const struct svc_extension *x, json_object *args, int (*should_cancel)(void *ctx),
                 void *ctx, struct svc_tool_result *out);

/* Cut b to at most SVC_EXT_OUTPUT_MAX bytes, on a UTF-8 boundary: whether it was cut. */
bool svc_ext_cap(struct svc_buf *b);

/* Read what non-blocking *fd has into buf (keeping at most keep bytes in all; *over, may be
 * NULL, set when bytes were dropped); at EOF or an error *fd is closed and set to -1. */
void svc_ext_drain(int *fd, struct svc_buf *buf, size_t keep, bool *over);
/* write(2) that cannot raise SIGPIPE in a program that did not ignore it (the svc tool): a
 * child that exits without reading its stdin is EPIPE here, nothing more. */
ssize_t svc_ext_write(int fd, const void *buf, size_t len);
/* Start argv with env_items as above, its stdin, stdout and stderr on pipes (fds[0] writes
 * its stdin, fds[1] and fds[2] read its stdout and stderr; non-blocking, close-on-exec).
 * Its pid, or -1 with err (an exec that failed is reported here, its child reaped). */
pid_t svc_ext_spawn(char *const argv[], char *const env_items[], int fds[3], struct svc_err *err);

#endif
