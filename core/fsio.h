/* fsio: durable file primitives used by every writer in core/.
 * svc_file_write_atomic writes a unique temp file in the same directory, fsyncs it,
 * renames it over the target and fsyncs the directory, so a reader sees the old file
 * or the new one and never a torn one; with durable=false the two fsyncs are skipped.
 * Temp names are "<name>.tmp-<pid>-<hex>" and never listed or exported.
 * svc_file_append writes one line with a single write(2) (O_APPEND), then fsyncs; it never
 * follows a symbolic link. */
#ifndef SVC_FSIO_H
#define SVC_FSIO_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

int svc_file_write_atomic(const char *path, const void *data, size_t len, bool durable,
                          struct svc_err *err);
int svc_file_append(const char *path, const void *data, size_t len, bool durable,
                    struct svc_err *err);
/* Read a whole file into a heap buffer (NUL-terminated; *len excludes the NUL).
 * A missing file is SVC_E_NOT_FOUND; other failures SVC_E_IO. Data files are never read
 * through a symbolic link (it could point out of the root): that is SVC_E_IO too. */
int svc_file_read(const char *path, char **out, size_t *len, struct svc_err *err);
/* The same, following a symbolic link: for configuration files, which ops often link. */
int svc_file_read_follow(const char *path, char **out, size_t *len, struct svc_err *err);
/* Whether a directory entry name is one of our temp files or lock files. */
bool svc_file_is_internal(const char *name);
/* Remove a file or a directory tree (never following a symbolic link); 0, or -1 with errno
 * of the last failure. A missing path is 0. */
int svc_file_remove_tree(const char *path);
/* Test hook: when the environment variable SVC_TEST_CRASH_BEFORE_RENAME is set to a
 * substring of the target path, the process _exit(77)s after the temp write, before the
 * rename. Used by t/ to prove that a crash leaves the previous file whole. */

#endif
