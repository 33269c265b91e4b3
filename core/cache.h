/* cache: the one switch over every process cache and memo of svc, and their list.
 * A cache is a pure optimisation: with sessions.cache off every request reads the files
 * and answers the same (t/23-cache-off.t; CI runs the whole suite so). The rule: an entry
 * serves only after a check that sees every writer: a stat of what it covers ((inode,
 * size, mtime, ctime), under the shared session lock where the files are session files)
 * or the bytes themselves; inotify is a fast path on a local filesystem only (it sees
 * writes through the watched directory's names, not other hosts' (SPEC 10) nor those
 * through a name elsewhere: docs/CACHES.md), and `auto` turns every cache off elsewhere.
 *   svc_cache_on(cfg, fd)  whether caches serve for the filesystem of fd (fd < 0: the root)
 *   svc_cache_local(fd)    whether that filesystem is local (statfs f_type)
 * Each cache below asks svc_cache_on before it is read or filled; docs/CACHES.md has the
 * gain `make bench` measured for each. */
#ifndef SVC_CACHE_H
#define SVC_CACHE_H

/* The caches and memos (module: what it covers; how an entry is validated):
 * - dirwatch.c `dw`: one inotify instance and its watches; the fast path of the watches
 *   below, never an answer of its own (IN_Q_OVERFLOW or a broken instance drop them all).
 * - listmem.c `M`: the root's listing in memory; the stamp in the root lock file and the
 *   journal's (inode, size) read under the root lock, the root's mtime for rescans, and on
 *   each page a stat of each row's next message file (index.c): checks that see other
 *   hosts' writes, so `auto` keeps it on a shared root too; `off` drops it before each
 *   listing.
 * - indexdb.c + listdb.c: the listing database, this host's copy of the listing index on
 *   local disk; before each page the journal's stamp, inode and size against the offset
 *   the database has read, and the root's mtime against its last rescan (the bytes since
 *   are applied first), then the per-row stat: checks that see other hosts' appends, so
 *   `auto` keeps it on a shared root too; `off` lists from the in-memory copy instead.
 * - search.c `S`: the message search index (hostdb.h, a per-host file) and the memo of what
 *   it holds per session; caught up before each query from the listing's changes (each
 *   session's updated_at and message_count), a file whose stamp or schema is another's
 *   built anew; `off`: a temporary index built for each query.
 * - query.c `dt.memo`: the last (sidecar bytes, message count) -> detail summary; the
 *   bytes read under the shared lock compared whole, the count by a stat of message_<n>.
 * - query.c `dt.watched`: the detail of a session polled again, served without the lock
 *   while four content watches armed before its read saw nothing (local roots only) and
 *   the session directory's and svc_session.json's stats match.
 * - msgcache.c: rendered message rows by (messages directory, id); the file's stat under
 *   the shared lock ((inode, size, mtime, ctime) the same; a file changed < 1 s ago is never
 *   kept), or no stat while the directory's content watch, armed before the rows were
 *   checked, saw no change and the file had one link (local roots only).
 * - wincache.c: a session's parsed window messages, read and filled through the handle
 *   (store.c, read_window, under a turn), valid under the directory's content life while
 *   no event named the file (inotify, local roots only; a file of two links is not kept).
 * - cgi/h_sessions.c `last_get`: the detail text of the last summary (pointer identity of
 *   query.c's memo, held by a reference); off: the summary is rendered each time.
 * - cgi/h_base.c `last_health`: the health body of this second, keyed on all it shows.
 * Pure memos, never stale (not switched): jsonx.c's last number formatted and its one
 * tokener, http.c's date of the current second, fsio.c's filesystem kind of the root,
 * layout.c's messages directory path under the last agent id (svc_layout_message_path_in). */

#include <stdbool.h>

#include "config.h"

bool svc_cache_on(const struct svc_config *cfg, int fd);
bool svc_cache_local(int fd);

#endif
