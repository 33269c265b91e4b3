/* bundle_out: where the parts of an export bundle go (SPEC 5): files of a directory written
 * under its temporary name, or members of a tar.gz stream (tar.h). Every file is recorded,
 * with its size and SHA-256 (libcrypto EVP), as one compact JSON line in the spool `list`,
 * from which the manifest's "files" is written; top-level files are also kept in `top` for
 * the API answer. The three files that gather every session (sessions.json, messages.jsonl,
 * openai_dataset.jsonl) are written as the sessions go: straight into the directory, or,
 * for a tar stream, into unnamed temporary files in `spooldir` (O_TMPFILE) that join the
 * archive at the end, since a tar member's size comes before its data. Functions return 0
 * or -1 with err; svc_bout_free releases everything (the caller fills tar/tw/prefix/tmpdir/
 * spooldir, zeroes the rest). */
#ifndef SVC_BUNDLE_OUT_H
#define SVC_BUNDLE_OUT_H

#include <json-c/json.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "err.h"
#include "tar.h"

enum { SVC_BOUT_SESSIONS, SVC_BOUT_MESSAGES, SVC_BOUT_DATASET };

struct svc_bout_agg {
    const char *name;
    int fd;
    EVP_MD_CTX *md; /* directory output: the digest as it is written */
    uint64_t n;
    char buf[65536]; /* rows gather here: one write(2) per 64 KiB, not per row */
    size_t blen;
};

struct svc_bout {
    bool tar;
    struct svc_tarw *tw;
    char prefix[80]; /* "chat-export-.../" inside the archive */
    char *tmpdir;    /* directory output: the bundle under its temporary name */
    char *spooldir;  /* where unnamed temporary files go */
    FILE *list;      /* manifest "files" entries, one compact JSON line each */
    uint64_t bytes;  /* sum of file sizes */
    size_t sessions; /* sessions written */
    time_t now;
    struct svc_bout_agg agg[3];
    json_object *top; /* the top-level files' entries, for the answer */
    char last_parent[PATH_MAX];
};

/* Hex of a SHA-256 digest into out (65 bytes). */
void svc_bout_hex(const unsigned char *md, char *out);
int svc_bout_write_all(int fd, const void *p, size_t n);
/* A directory member, relative to the bundle. */
int svc_bout_dir(struct svc_bout *o, const char *rel, time_t mtime, struct svc_err *err);
/* A file from memory. */
int svc_bout_file(struct svc_bout *o, const char *rel, const void *data, size_t len, time_t mtime,
                  struct svc_err *err);
/* A file from an fd, from its start. */
int svc_bout_file_fd(struct svc_bout *o, const char *rel, int fd, struct svc_err *err);
/* An unnamed temporary file in dir (gone when closed, even after a crash). */
int svc_bout_spool(const char *dir, struct svc_err *err);
/* The gathering files: open ("[" starts sessions.json), append to one, close (writes "]" and
 * records all three). */
int svc_bout_agg_open(struct svc_bout *o, struct svc_err *err);
int svc_bout_agg_write(struct svc_bout *o, int i, const char *data, size_t len,
                       struct svc_err *err);
int svc_bout_agg_close(struct svc_bout *o, struct svc_err *err);
void svc_bout_free(struct svc_bout *o);

#endif
