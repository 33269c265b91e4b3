/* nosync.so: fsync, fdatasync, syncfs and sync return success without syncing anything.
 * `LD_PRELOAD=$PWD/build/powercut/nosync.so make powercut` must then fail and name a lost
 * or torn file: the power-cut test can tell a program that syncs from one that does not. */
#include <unistd.h>

int fsync(int fd)
{
    (void)fd;
    return 0;
}

int fdatasync(int fd)
{
    (void)fd;
    return 0;
}

int syncfs(int fd)
{
    (void)fd;
    return 0;
}

void sync(void) {}
