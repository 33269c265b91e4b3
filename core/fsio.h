/* fsio: durable file primitives used by every writer in core/.
 * svc_file_write_atomic writes a unique temp file in the same directory, fdatasyncs it,
 * renames it over the target and fsyncs the directory, so a reader sees the old file
 * or the new one and never a torn one; with durable=false the two syncs are skipped
 * (svc_file_write_synced chooses them one by one).
 * Temp names are ".<name>.tmp-<pid>-<hex>" (spares ".<name>.tmp-spare"), never listed or
 * exported; the leading dot keeps a rename atomic on a multi-brick GlusterFS volume.
 * svc_file_append writes one line with a single write(2) (O_APPEND), then fdatasyncs; it
 * never follows a symbolic link. */
#ifndef SVC_FSIO_H
#define SVC_FSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "err.h"

/* out = "<dir>/.<name><tail>" for path "<dir>/<name>" (temp and spare names). */
void svc_temp_path(char *out, size_t outsz, const char *path, const char *tail);
/* What a write syncs: SVC_SYNC_FILE fdatasyncs the temp file before the rename (the new
 * file is whole if its name survives a power cut), SVC_SYNC_DIR fsyncs the directory after
 * it (the name survives); a writer of several files in one directory syncs it once. */
enum { SVC_SYNC_NONE = 0, SVC_SYNC_FILE = 1, SVC_SYNC_DIR = 2, SVC_SYNC_FULL = 3 };
/* Or'ed into sync: the target does not exist yet (a new message, a run's record), so the
 * temp file is renamed at once, not first tried as an exchange (replace_with in fsio.c). */
enum { SVC_WRITE_NEW = 4 };
/* Or'ed into sync by a holder of the lock every writer of path takes: the file is written
 * into the spare ".<name>.tmp-spare" beside it, then exchanged with it, so a rewrite neither
 * creates nor frees an inode (on ext4 without a journal an inode allocation walks past those
 * freed in the last minute: a turn 3-6x slower under load, docs/BENCH.md). A spare that is
 * not a lone regular file is removed (a directory left) and a temp file used instead. */
enum { SVC_WRITE_SPARE = 8 };
#define SVC_SPARE_SUFFIX ".tmp-spare"
/* What a store that is durable (or not) syncs by default: all of it (or nothing). */
static inline int svc_sync_full(bool durable)
{
    return durable ? SVC_SYNC_FULL : SVC_SYNC_NONE;
}
/* sync | SVC_WRITE_SPARE, and SVC_SYNC_FILE in a durable store: a rename can reach the disk
 * before the data (XFS, ext4 without auto_da_alloc), leaving an empty file after a power cut
 * that Strands cannot read. SVC_SYNC_DIR stays the caller's (make powercut, DECISIONS.md). */
static inline int svc_sync_spare(int sync, bool durable)
{
    return durable ? sync | SVC_SYNC_FILE | SVC_WRITE_SPARE : sync | SVC_WRITE_SPARE;
}
int svc_file_write_synced(const char *path, const void *data, size_t len, int sync,
                          struct svc_err *err);
static inline int svc_file_write_atomic(const char *path, const void *data, size_t len,
                                        bool durable, struct svc_err *err)
{
    return svc_file_write_synced(path, data, len, svc_sync_full(durable), err);
}
int svc_fsync_dir(const char *dir, struct svc_err *err);
/* Everything written under dir (a staged import, an export bundle) reaches the disk:
 * syncfs(2) on a local filesystem, else an fdatasync of each file and fsync of each
 * directory, children first (FUSE never passes a syncfs on: make powercut lost imports). */
int svc_sync_tree(const char *dir, struct svc_err *err);
int svc_file_append(const char *path, const void *data, size_t len, bool durable,
                    struct svc_err *err);
/* Write a new JSON-lines file straight under its name (its readers take a torn tail as not
 * yet written); one that exists is replaced whole. sync_file fdatasyncs it (the directory is
 * the caller's). A failed write removes the file. */
int svc_file_write_new(const char *path, const void *data, size_t len, bool sync_file,
                       struct svc_err *err);
/* The append of svc_file_append on fd, which the caller opened O_APPEND for path (named
 * for the test crash hook and errors) and closes. */
int svc_fd_append(int fd, const char *path, const void *data, size_t len, bool durable,
                  struct svc_err *err);
/* svc_file_append of one line (ending in '\n') that starts a line of its own: after a torn
 * line, line[-1] (the caller's '\n') is written first, in the same write. A durable append
 * that creates the file also syncs its directory. */
int svc_file_append_line(const char *path, const char *line, size_t len, bool durable,
                         struct svc_err *err);
/* Read a whole file into a heap buffer (NUL-terminated; *len excludes the NUL). Missing:
 * SVC_E_NOT_FOUND; else SVC_E_IO, a symbolic link too (it could point out of the root). */
int svc_file_read(const char *path, char **out, size_t *len, struct svc_err *err);
/* The same for name relative to the open directory dirfd (no path walk from the root);
 * *st (when not NULL) gets the fstat of the file that was read. */
int svc_file_read_at(int dirfd, const char *name, char **out, size_t *len, struct stat *st,
                     struct svc_err *err);
/* The same, following a symbolic link: for configuration files, which ops often link. */
int svc_file_read_follow(const char *path, char **out, size_t *len, struct svc_err *err);
/* Whether path is an existing, empty regular file. */
bool svc_file_is_empty(const char *path);
/* Whether it is a spare (SVC_WRITE_SPARE): not an orphan, whatever its age. */
bool svc_file_is_spare(const char *name);
/* At most once an hour (stamp's mtime), remove_one(ctx, id, its lstat) decides on each
 * regular "<id>.json" of dir older than max_age_s and returns how many it removed.
 * Returns the sum; errors only make it remove less. */
int svc_file_prune_old_json(const char *dir, const char *stamp, double max_age_s,
                            int (*remove_one)(const void *ctx, const char *id,
                                              const struct stat *sb),
                            const void *ctx);
/* Call fn(ctx, id, path) on each regular "<id>.json" file of dir (not followed if a link);
 * a missing dir has none. */
void svc_file_each_json(const char *dir, void (*fn)(void *ctx, const char *id, const char *path),
                        void *ctx);
/* Whether root is writable, or can be created (its nearest existing ancestor is a writable
 * directory); when not, why gets "<what> <root>: <reason>" ("session root /srv: not
 * writable: Read-only file system"). */
bool svc_dir_writable(const char *what, const char *root, char *why, size_t whysz);
/* After a failed write under root: SVC_E_IO becomes SVC_E_UNAVAILABLE with that reason when
 * root cannot take a write (health's `degraded`, not a disk fault). Returns -1. */
int svc_err_unwritable(const char *root, struct svc_err *err);
/* The filesystem kind of path or its nearest existing ancestor ("ext4", "fuse", "nfs",
 * ...; "other") and whether it is local: FUSE, NFS, CephFS, SMB and 9p are shared (another
 * host may write there behind this one's caches). */
const char *svc_fs_kind(const char *path, bool *local);
/* Whether a statfs f_type is one of the local filesystems above (unknown: not local). */
bool svc_fs_local_magic(unsigned long magic);
/* Whether a root is shared between hosts under sessions.shared = mode (enum
 * svc_shared_mode: auto asks svc_fs_kind once per process and root). */
bool svc_fs_shared(int mode, const char *root);
/* rename(from, to) that never replaces to (EEXIST): RENAME_NOREPLACE, or where refused
 * (NFS, CephFS, GlusterFS) link+unlink a file, lstat+rename a directory. 0, or -1, errno. */
int svc_rename_noreplace(const char *from, const char *to);
/* write(2) all of data to fd, again after EINTR: 0, or -1 with errno. */
int svc_write_all(int fd, const void *data, size_t len);
/* Says once per process in the log that a fallback replaced a refused call (what, why). */
void svc_fs_fallback_note(const char *what, int err);
/* Remove a file or a directory tree (never following a symbolic link); 0, or -1 with errno
 * of the last failure. A missing path is 0. */
int svc_file_remove_tree(const char *path);

#endif
