/* nosync.so: fsync, fdatasync, syncfs and sync return success without syncing anything.
 * `LD_PRELOAD=$PWD/build/powercut/nosync.so make powercut` must then fail and name a lost
 * or torn file: the power-cut test can tell a program that syncs from one that does not.
 * Defined under their own names and exported under libc's by asm labels: no source of the
 * tree defines a function called fsync (a reader of the code would take this file for
 * every caller's). */
#include <unistd.h>

int nosync_fsync(int fd) __asm__("fsync");
int nosync_fdatasync(int fd) __asm__("fdatasync");
int nosync_syncfs(int fd) __asm__("syncfs");
void nosync_sync(void) __asm__("sync");

int nosync_fsync(int fd)
{
    (void)fd;
    return 0;
}

int nosync_fdatasync(int fd)
{
    (void)fd;
    return 0;
}

int nosync_syncfs(int fd)
{
    (void)fd;
    return 0;
}

void nosync_sync(void) {}
