#include "cache.h"

#include <sys/vfs.h>

#include "fsio.h"

bool svc_cache_local(int fd)
{
    struct statfs sf;
    return fd >= 0 && fstatfs(fd, &sf) == 0 && svc_fs_local_magic((unsigned long)sf.f_type);
}

bool svc_cache_on(const struct svc_config *cfg, int fd)
{
    if (cfg->sessions.cache == SVC_CACHE_OFF)
        return false;
    /* sessions.shared on, or auto on a root other hosts reach: inotify cannot see them */
    if (cfg->sessions.root && svc_fs_shared(cfg->sessions.shared, cfg->sessions.root))
        return false;
    return fd < 0 || svc_cache_local(fd);
}
