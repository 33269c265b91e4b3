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

/* Where the database stands in the journal: its generation, inode (0 on a shared root),
 * the offset read up to, and the root directory's mtime at the last rescan (ns). */
struct svc_listdb_pos {
    char gen[17];
    uint64_t ino;
    int64_t offset;
    int64_t root_mtime;
};

/* Which of this process's two databases the calls below address: this host's file, or
 * (own) a temporary copy of its own (indexdb.h), each with its own connection. */
void svc_listdb_select(bool own);
/* The database file for root under dir: <dir>/listing/<16 hex digits>.sqlite (heap). */
char *svc_listdb_path(const char *dir, const char *root);
/* Open path (0), or -1 when it is missing, damaged or of another schema (then it is left
 * closed; create makes an empty one instead of failing on a missing file; path NULL: a
 * temporary one). */
int svc_listdb_open(const char *path, bool create);
/* Whether a database is open, and whether its file is still the one at path. */
bool svc_listdb_current(const char *path);
void svc_listdb_close(void);
/* Flush the file at path to the disk and mark it sealed: it is then used after a reboot
 * (else it is built anew) until the next write lifts the mark. 0, or -1. */
int svc_listdb_seal(const char *path);
/* Drop the connection without closing it: a forked child's, which is its parent's. */
void svc_listdb_forget(void);
/* One read transaction over the statements until svc_listdb_read_end (one lock and check
 * of the file instead of one a statement); svc_listdb_begin ends it first. */
int svc_listdb_read_begin(void);
void svc_listdb_read_end(void);
/* A write transaction (BEGIN IMMEDIATE); on a sealed file the seal is lifted first. */
int svc_listdb_begin(void);
int svc_listdb_commit(void);
void svc_listdb_rollback(void);
int svc_listdb_pos_get(struct svc_listdb_pos *p);
int svc_listdb_pos_set(const struct svc_listdb_pos *p);
/* Record sid's summary (NULL: sid is gone); text (len bytes) is its compact JSON when the
 * caller has it (a journal line's), else NULL. */
int svc_listdb_put(const char *sid, json_object *summary, const char *text, size_t len);
/* Whether sid has a row: 1, 0, or -1 on error. */
int svc_listdb_has(const char *sid);
/* Up to p->limit rows of the page, in listing order (*rows: a heap array of *n, freed by
 * the caller with its strings also on failure). */
int svc_listdb_page(const struct svc_list_page *p, struct svc_list_row **rows, int *n);
/* The summary of sid (new reference) or NULL. */
json_object *svc_listdb_summary(const char *sid);
int64_t svc_listdb_count(void);
/* Call fn with each row's id and summary, in listing order, until it returns nonzero
 * (returned): the journal written from a new database (indexdb.c). -1 on error. */
int svc_listdb_rows(svc_journal_emit_fn *fn, void *ctx);
/* Merge the title trigram table into one segment (FTS5's optimize): a title search then
 * reads one b-tree a trigram, not one a segment. Run once a build is written (seconds at
 * 1,000,000 sessions). */
int svc_listdb_optimize(void);
/* svc_index_each over the rows: those changed after *mark (all when *mark is another copy's
 * or predates the last removal); returns 1 when whole, 0 when not, -1 on error; *mark gets
 * the new mark. */
int svc_listdb_each(struct svc_list_mark *mark, svc_index_each_fn *fn, void *ctx);
/* Rescan support: fn is called for each of the n names (sorted by strcmp) that has no row
 * (gone false), then for each row whose id is not among them (gone true); one walk of the
 * rows in id order. */
int svc_listdb_diff_names(char *const *names, size_t n,
                          void (*fn)(void *ctx, const char *sid, bool gone), void *ctx);

#endif
