/* spawn: how core has work done in a process of its own (the listing's background build
 * and rescan, index.h; a detached run, runs.h). The programs decide (cgi/main.c forks): a
 * spawner runs work(ctx) in a process that nobody waits for and that exits when work
 * returns; it returns 0 once that process runs, or -1 with errno when it could not be
 * started (ECHILD: it was forked but never said it runs). Its stdin and stdout are
 * /dev/null, its stderr the caller's.
 * Without one, the listing does its work in the call and background runs are refused.
 * Types only. */
#ifndef SVC_SPAWN_H
#define SVC_SPAWN_H

enum {
    SVC_SPAWN_KEEP_FDS = 1, /* keep the caller's descriptors (else only 0, 1 and 2) */
    SVC_SPAWN_SETSID = 2,   /* in a session of its own */
};
typedef int svc_spawn_fn(void (*work)(void *ctx), void *ctx, int flags);

#endif
