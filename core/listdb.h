/* listdb: this host's SQLite copy of the listing index (SPEC 11; docs/FORMAT.md "the listing
 * database"), read a page at a time instead of held in memory. It is derived from the
 * root's change journal (.svc_index.jsonl, index.c) and records how far into which journal
 * generation it has read (struct svc_listdb_pos); indexdb.c feeds it and decides when it
 * must be built anew. One database a process, on a local disk; a missing, damaged or
 * foreign file is never answered from: svc_listdb_open reports it and indexdb.c rebuilds.
 * Writes happen inside svc_listdb_begin/commit (BEGIN IMMEDIATE: one writer a host). */
#ifndef SVC_LISTDB_H
#define SVC_LISTDB_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "journal.h"
#include "listing.h"

/* Where it stands in the journal (ino 0 on a shared root; root_mtime at the last rescan). */
struct svc_listdb_pos {
    char gen[17];
    uint64_t ino;
    int64_t offset;
    int64_t root_mtime;
};

/* Which database the calls below address: this host's file, or (own) this process's copy. */
void svc_listdb_select(bool own);
/* The database file for root under dir: <dir>/listing/<16 hex digits>.sqlite (heap). */
char *svc_listdb_path(const char *dir, const char *root);
/* Open path (NULL: a temporary one; create: an empty one): 0, or -1 (closed) when it is
 * missing, damaged or of another schema. */
int svc_listdb_open(const char *path, bool create);
/* Whether a database is open, and whether its file is still the one at path. */
bool svc_listdb_current(const char *path);
void svc_listdb_close(void);
/* Flush the file to the disk and mark it sealed (used after a reboot) until the next write. */
int svc_listdb_seal(const char *path);
/* Drop the connection without closing it: a forked child's, which is its parent's. */
void svc_listdb_forget(void);
/* One read transaction until svc_listdb_read_end (svc_listdb_begin ends it first). */
int svc_listdb_read_begin(void);
void svc_listdb_read_end(void);
/* A write transaction (BEGIN IMMEDIATE); on a sealed file the seal is lifted first. */
int svc_listdb_begin(void);
int svc_listdb_commit(void);
void svc_listdb_rollback(void);
int svc_listdb_pos_get(struct svc_listdb_pos *p);
int svc_listdb_pos_set(const struct svc_listdb_pos *p);
/* Record sid's summary (NULL: gone); text (len bytes): its compact JSON, or NULL. */
int svc_listdb_put(const char *sid, json_object *summary, const char *text, size_t len);
/* Whether sid has a row: 1, 0, or -1 on error. */
int svc_listdb_has(const char *sid);
/* Up to p->limit rows of the page in order (*rows: *n, the caller's also on failure). */
int svc_listdb_page(const struct svc_list_page *p, struct svc_list_row **rows, int *n);
/* The summary of sid (new reference) or NULL. */
json_object *svc_listdb_summary(const char *sid);
int64_t svc_listdb_count(void);
/* fn with each row's id and summary in listing order until nonzero (returned); -1. */
int svc_listdb_rows(svc_journal_emit_fn *fn, void *ctx);
/* Merge the title trigram table into one segment (after a build): one b-tree a trigram. */
int svc_listdb_optimize(void);
/* svc_index_each over the rows changed after *mark (all when it is another copy's or older
 * than the last removal): 1 when whole, 0, -1; *mark gets the new mark. */
int svc_listdb_each(struct svc_list_mark *mark, svc_index_each_fn *fn, void *ctx);
/* fn for each of the n sorted names without a row (gone false) and each row not among them
 * (gone true), in id order, during one walk of the rows: fn must not write. */
int svc_listdb_diff_names(char *const *names, size_t n,
                          void (*fn)(void *ctx, const char *sid, bool gone), void *ctx);

#endif
