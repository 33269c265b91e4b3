/* listmem: this process's memory copy of the listing (index.h serves from it when there is
 * no listing database: sessions.index_db off, caches off, or while the database is built).
 * It reads the root's journal (journal.h) into a sorted array of entries (the sort keys and
 * filters of each session; its summary stays in the journal file, read back by offset),
 * applying only the bytes appended since its last look; a journal that is not whole is
 * rebuilt from the directories (dirscan.h) under the root lock first. A change of the
 * root's mtime compares its names with the entries (sessions another program added or
 * removed: summarised and told to the journal). A journal mostly of superseded lines is
 * compacted (rewritten from the entries). One copy a process (cache.h's listing copy). */
#ifndef SVC_LISTMEM_H
#define SVC_LISTMEM_H

#include <json-c/json.h>
#include <stdbool.h>

#include "layout.h"
#include "listing.h"

/* Bring the copy up to date: 0, or -1 (errno EAGAIN: another process's rebuild outlasted a
 * list's brief wait). compact: the journal may be compacted from it (not while it stands
 * in for a database being built: the build compacts it). */
int svc_listmem_refresh(const struct svc_store *st, bool brief, bool compact);
/* Rebuild the journal from the directories now, under the root lock, and load it. */
int svc_listmem_rebuild(const struct svc_store *st);
/* Up to p->limit rows of the page: 0, or 1 when a summary could not be read back from the
 * journal (it changed under this process): nothing is answered then. */
int svc_listmem_page(const struct svc_list_page *p, struct svc_list_row **rows, int *n);
/* svc_index_each over the copy (see index.h). */
int svc_listmem_each(struct svc_list_mark *mark, svc_index_each_fn *fn, void *ctx);
json_object *svc_listmem_summary(const char *sid);
size_t svc_listmem_count(void);
/* Whether the copy holds anything (kept while a database was built: given back then). */
bool svc_listmem_loaded(void);
/* Load the copy for a pool master before it forks: a load that parsed sidecars (a rebuild,
 * sessions found by a rescan) is read again from the journal, so that the workers share a
 * heap of live entries (their summaries in the file), not the parse's leftovers. */
void svc_listmem_warm(const struct svc_store *st);
void svc_listmem_reset(void);

#endif
