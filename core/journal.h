/* journal: the root's change journal, .svc_index.jsonl, and its stamp (SPEC 4.3, 11;
 * docs/FORMAT.md "the index"): the only code that opens, appends, reads or rewrites it.
 * Every change of a session is one line {"session_id", "summary"} (summary null: gone),
 * appended under the root lock (.svc_index.lock) with one write, after which the writer
 * stamps the lock file with what the journal then is (generation, inode, size, mtime). A
 * journal that does not match its stamp (deleted, truncated, torn, edited, an older copy
 * put back) is never appended to nor answered from: the listing rebuilds it from the
 * directories (listing.h). A rewrite (compaction, rebuild) is a new generation, named on
 * its first line, renamed over the old one under the root lock.
 *   svc_journal_note      append a session's summary (best effort: a failure is logged and
 *                         withdraws the stamp; the directories hold the change)
 *   svc_journal_lock      the root lock with the stamp read under it (writers excluded)
 *   svc_journal_peek      the stamp read without the lock (a torn read sends the reader to
 *                         the locked path)
 *   svc_journal_open      the file into j: whether it is the stamped one (under the lock
 *                         exactly; without it, appended to since is accepted too)
 *   svc_journal_lines     call fn for each whole line in a byte range (memory: one line)
 *   svc_journal_line      one line parsed
 *   svc_journal_write     a new generation from rows, stamped (under the lock)
 *   svc_journal_gate      the build lock (.svc_index.build) of a rebuild from the
 *                         directories, with its progress for those who wait */
#ifndef SVC_JOURNAL_H
#define SVC_JOURNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "layout.h"

/* One look at the journal: the root lock (or -1), the stamp, the file (fd -1: none). */
struct svc_journal {
    int lock;
    bool writable; /* the stamp can be written through lock */
    struct {
        char gen[17];
        unsigned long long ino;
        long long size, mtime;
        bool ok;
    } stamp;
    int fd;
    struct stat sb;
    char gen[17]; /* the file's generation, "" when it has no header */
    bool shared;  /* on a shared root: reads drop the page cache first */
};
#define SVC_JOURNAL_INIT                                                                           \
    {                                                                                              \
        .lock = -1, .fd = -1                                                                       \
    }

void svc_journal_note(const struct svc_store *st, const char *sid, json_object *summary);
/* 0, or -1 when the root lock cannot be had (a root that cannot be read). */
int svc_journal_lock(const struct svc_store *st, struct svc_journal *j);
/* Let the root lock go for a while (svc_journal_relock takes it again, the stamp read anew). */
void svc_journal_unlock(struct svc_journal *j);
void svc_journal_relock(struct svc_journal *j);
void svc_journal_peek(const struct svc_store *st, struct svc_journal *j);
/* 1 when the file is the stamped one, 0 when not, -1 when there is none. */
int svc_journal_open(const struct svc_store *st, struct svc_journal *j);
/* Record (gen, sb) as the whole journal, or (gen NULL) that there is none to trust. */
void svc_journal_stamp(struct svc_journal *j, const char *gen, const struct stat *sb);
/* Close the file and let the lock go. */
void svc_journal_done(struct svc_journal *j);

/* fn for each line of fd between *at and size, in order, with its offset, until one
 * returns nonzero (returned); *at gets the end of the last whole line read (a line being
 * written is left at *at). -1 on a read error. */
typedef int svc_journal_line_fn(void *ctx, const char *line, size_t n, off_t at);
int svc_journal_lines(int fd, off_t size, off_t *at, svc_journal_line_fn *fn, void *ctx);
/* A line parsed: 1 with *sid (borrowed from *o, which the caller puts) and *summary (NULL:
 * gone; borrowed) and, when the summary's text lies in line, its offset and length there
 * (*sum_off -1 when not); 0 for the generation line at offset 0; -1 for a line not ours. */
int svc_journal_line(const char *line, size_t n, off_t at, json_object **o, const char **sid,
                     json_object **summary, off_t *sum_off, size_t *sum_len);

/* A source of rows: emit called with each session's id and summary (compact JSON) in
 * listing order, until it returns nonzero (returned). */
typedef int svc_journal_emit_fn(void *ectx, const char *sid, const char *summary);
typedef int svc_journal_rows_fn(void *ctx, svc_journal_emit_fn *emit, void *ectx);
/* Under j's lock: the rows as a new generation, stamped; j's file becomes it. 0, or -1
 * with nothing replaced (the stamp withdrawn when withdraw). */
int svc_journal_write(const struct svc_store *st, struct svc_journal *j, svc_journal_rows_fn *rows,
                      void *ctx);

/* The build lock of a rebuild from the directories, taken while the root lock (j) is held:
 * its descriptor (progress goes there), -1 when it cannot be had (read without it), -2
 * when another process held it and it was waited for (the root lock let go meanwhile and
 * taken again: its journal is there to read), -3 when a brief wait (brief: a list's, 10 s)
 * ran out. */
int svc_journal_gate(const struct svc_store *st, struct svc_journal *j, bool may_wait, bool brief);
void svc_journal_progress(int gate, size_t done, size_t total);
/* The progress of another process's rebuild: 0, or -1 when it has not counted yet. */
int svc_journal_progress_of(const struct svc_store *st, size_t *done, size_t *total);

#endif
