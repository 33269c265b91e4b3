/* summap: a map from session id to a summary's JSON text kept in a private temporary SQLite
 * file (removed when closed), so that a pass that must look up every session of a root (svc
 * fsck's check of the index journal, index.c) holds a few MB of page cache, not the root.
 * Where the file lives is SQLite's choice of temporary directory (SQLITE_TMPDIR, TMPDIR,
 * /var/tmp, /tmp); it takes about the journal's size on disk. One map is used by one thread. */
#ifndef SVC_SUMMAP_H
#define SVC_SUMMAP_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct svc_summap;

/* A new empty map, or NULL when SQLite cannot make one (errno is not meaningful). */
struct svc_summap *svc_summap_open(void);
/* Record text (len bytes, the summary's JSON) as sid's, or (text NULL) forget sid: 0 or -1. */
int svc_summap_put(struct svc_summap *m, const char *sid, const char *text, size_t len);
/* sid's summary parsed (new reference), or NULL when it has none (or it is not an object). */
json_object *svc_summap_get(struct svc_summap *m, const char *sid);
/* How many sessions have a summary, or -1. */
int64_t svc_summap_count(struct svc_summap *m);
/* fn for each session id of the map (it must not change the map): 0, or -1. */
int svc_summap_each(struct svc_summap *m, void (*fn)(void *ctx, const char *sid), void *ctx);
void svc_summap_close(struct svc_summap *m);

#endif
