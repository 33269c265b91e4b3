/* held: which session's run each worker of a pool is executing, kept in memory shared
 * with the master (one slot per worker). A worker killed in the middle of a synchronous run
 * leaves its session `running` with the run lock free; the master, when it reaps that
 * worker, repairs the session at once (SPEC 2.3) instead of waiting for the next reader.
 * Outside a pool (plain CGI, no held_init) every call is a no-op. */
#ifndef SVC_HELD_H
#define SVC_HELD_H

#include <stddef.h>

/* Master, before forking: the room n workers' slots take, and that room (shared with the
 * workers, main.c's shared_init). */
size_t held_size(int n);
void held_init(void *region, int n);
/* Master: a free slot for a new worker (-1 when none), taken until held_release. */
int held_take(void);
/* Worker, after fork: this process writes to slot. */
void held_attach(int slot);
/* Worker: a run on sid began / ended. */
void held_set(const char *sid);
void held_clear(void);
/* Master: slot free again, and the session whose run its (dead) worker held copied into buf
 * (at least 132 bytes); returns 1 when there was one, 0 when not. */
int held_release(int slot, char *buf, unsigned size);

#endif
