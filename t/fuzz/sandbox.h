// sandbox.h: a fuzz harness's scratch directory, <base>/svc-<name>-fuzz-<pid> with <base>
// /dev/shm when writable (speed), else /tmp. fuzz_sandbox_config points every directory
// the configuration names under it (sessions.root = <dir>/root, memory.root =
// <dir>/memory, home = <dir>/home, sessions.export_default_dir = <dir>/export,
// search.index_dir = <dir>/search), so a
// harness never reads or writes the user's ~/.svc or ~/Desktop (http_fuzz reaches the
// export endpoint). With the defaults, every turn a harness ran appended to ~/.svc/memory,
// and svc_fsck read that file again on every input (27 MB of it made one 30 s run take 9
// minutes). The directory is removed when the harness exits (libFuzzer exits through
// exit(3)).
#ifndef SVC_FUZZ_SANDBOX_H
#define SVC_FUZZ_SANDBOX_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "util.h"

static char fuzz_sandbox_dir[256];

static void fuzz_sandbox_remove(void)
{
    svc_file_remove_tree(fuzz_sandbox_dir);
}

/* Makes the (empty) scratch directory for harness `name`; returns it (static storage). */
static const char *fuzz_sandbox(const char *name)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_sandbox_dir, sizeof fuzz_sandbox_dir, "%s/svc-%s-fuzz-%d", base, name,
             (int)getpid());
    svc_file_remove_tree(fuzz_sandbox_dir);
    if (mkdir(fuzz_sandbox_dir, 0755) != 0)
        abort();
    atexit(fuzz_sandbox_remove);
    return fuzz_sandbox_dir;
}

/* After fuzz_sandbox: cfg's directories under it (heap strings cfg owns, as the loader's),
 * writes unsynced; the sessions root copied into root (size bytes) when root is not NULL. */
static void fuzz_sandbox_config(struct svc_config *cfg, char *root, size_t size)
{
    free(cfg->sessions.root);
    free(cfg->memory.root);
    free(cfg->home);
    free(cfg->sessions.export_default_dir);
    free(cfg->search.index_dir);
    cfg->sessions.root = svc_path_join(fuzz_sandbox_dir, "root");
    cfg->memory.root = svc_path_join(fuzz_sandbox_dir, "memory");
    cfg->home = svc_path_join(fuzz_sandbox_dir, "home");
    cfg->sessions.export_default_dir = svc_path_join(fuzz_sandbox_dir, "export");
    cfg->search.index_dir = svc_path_join(fuzz_sandbox_dir, "search");
    cfg->sessions.fsync = false;
    if (root)
        snprintf(root, size, "%s", cfg->sessions.root);
}
#endif
