/* tar: gzip-compressed tar archives, written as a stream and read back safely (SPEC 5).
 * Writer: ustar headers, with a pax header ('x') for a path longer than ustar holds or a size
 * of 8 GiB or more, so GNU tar, bsdtar and Python's tarfile read every archive; deflate
 * (gzip wrapper) runs on a thread of the writer's own and hands its output to a callback in
 * pieces of at most 64 KiB, in flat memory; the callback's ctx is not the caller's to touch
 * until svc_tarw_finish or svc_tarw_free returns. Reader: regular files and directories
 * only. A member with an absolute path, a `..` component, or of another type (link, device,
 * fifo, GNU long link) is refused (SVC_E_IO naming the member), so nothing read from an
 * archive leads outside the directory it is restored into. ustar prefixes, pax `path`/`size`
 * and GNU long names are understood. All functions return 0 or -1 with err. */
#ifndef SVC_TAR_H
#define SVC_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

/* Receives compressed bytes; returns 0, or -1 to stop the archive (client gone, disk full). */
typedef int (*svc_tar_out_fn)(void *ctx, const void *data, size_t len);

struct svc_tarw;

/* A writer to out (borrowed ctx). *out_w is freed by svc_tarw_free. */
int svc_tarw_new(svc_tar_out_fn out, void *ctx, struct svc_tarw **out_w, struct svc_err *err);
/* A directory member ("a/b/" is written with the trailing slash). */
int svc_tarw_dir(struct svc_tarw *w, const char *path, time_t mtime, struct svc_err *err);
/* A regular file member of exactly size bytes: begin, then data in any number of pieces
 * whose lengths add up to size, then end (which pads the block). */
int svc_tarw_file_begin(struct svc_tarw *w, const char *path, uint64_t size, time_t mtime,
                        struct svc_err *err);
int svc_tarw_data(struct svc_tarw *w, const void *data, size_t len, struct svc_err *err);
int svc_tarw_file_end(struct svc_tarw *w, struct svc_err *err);
/* The end-of-archive blocks and the gzip trailer; the last bytes go to out. */
int svc_tarw_finish(struct svc_tarw *w, struct svc_err *err);
/* Compressed bytes handed to out so far. */
uint64_t svc_tarw_bytes(const struct svc_tarw *w);
void svc_tarw_free(struct svc_tarw *w);

enum svc_tar_type { SVC_TAR_FILE, SVC_TAR_DIR };

struct svc_tar_member {
    char *path; /* normalized: no leading "./", no trailing '/', never absolute or ".." */
    enum svc_tar_type type;
    uint64_t size; /* bytes of data for a file */
};

struct svc_tarr;

/* Open a .tar.gz file for reading. */
int svc_tarr_open(const char *path, struct svc_tarr **out, struct svc_err *err);
/* The next member: 1 with *m filled (m->path valid until the next call), 0 at the end of the
 * archive, -1 on a damaged archive or a refused member. The data of the previous member,
 * read or not, is skipped. */
int svc_tarr_next(struct svc_tarr *r, struct svc_tar_member *m, struct svc_err *err);
/* Read up to n bytes of the current file's data: the count (0 at its end), or -1. */
long svc_tarr_read(struct svc_tarr *r, void *buf, size_t n, struct svc_err *err);
void svc_tarr_close(struct svc_tarr *r);

/* Normalize a relative member path in place ("./a//b/" -> "a/b"); false when it is empty,
 * absolute, or holds a ".." component. */
bool svc_tar_path_normalize(char *path);

#endif
