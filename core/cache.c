#include "cache.h"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

/* The filesystems whose every writer is this machine's (inotify sees them all); anything
 * else (nfs, fuse and so glusterfs, ceph, cifs/smb, unknown) is taken as shared. */
static bool local_type(unsigned long type)
{
    switch (type) {
    case 0xEF53UL:     /* ext2/3/4 */
    case 0x58465342UL: /* xfs */
    case 0x9123683EUL: /* btrfs */
    case 0x01021994UL: /* tmpfs */
    case 0xF2F52010UL: /* f2fs */
    case 0x794C7630UL: /* overlayfs */
    case 0x2FC12FC1UL: /* zfs */
    case 0x858458F6UL: /* ramfs */
        return true;
    default:
        return false;
    }
}

bool svc_cache_local(int fd)
{
    struct statfs sf;
    return fd >= 0 && fstatfs(fd, &sf) == 0 && local_type((unsigned long)sf.f_type);
}

bool svc_cache_on(const struct svc_config *cfg, int fd)
{
    if (cfg->sessions.cache == SVC_CACHE_OFF)
        return false;
    if (fd >= 0)
        return svc_cache_local(fd);
    struct statfs sf;
    return cfg->sessions.root && statfs(cfg->sessions.root, &sf) == 0 &&
           local_type((unsigned long)sf.f_type);
}
