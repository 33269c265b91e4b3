/* listing: what the session listing's parts share (index.h's dispatcher, indexdb.h and
 * listdb.h): the query, a page's rows, the marks of a walk. Types only. */
#ifndef SVC_LISTING_H
#define SVC_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* A listing request (SPEC 4.3), parsed by the caller; query.h validates it. */
#define SVC_LIST_LIMIT_DEFAULT 50
#define SVC_LIST_LIMIT_MAX 500

struct svc_list_query {
    int64_t limit; /* 1..SVC_LIST_LIMIT_MAX (svc_sessions_list checks), SVC_LIST_LIMIT_DEFAULT */
    const char *cursor; /* opaque, from next_cursor; NULL for the first page */
    bool include_archived;
    bool archived_only;
    const char *status;      /* NULL or running|idle|error|cancelled */
    const char *q;           /* NULL or a case-insensitive title substring */
    const char *owner;       /* NULL: every session; else only those it owns (core/user.h) */
    const char *pinned;      /* NULL, "true" or "false" */
    const char *const *tags; /* ntags tags the session must all have (labels.h) */
    size_t ntags;
    bool stored_counts; /* message_count as the index holds it, not recounted (a stat a
                         * row): for a caller that reads the files anyway (an export) */
};

/* Where a page starts and what it filters, as the copies take it: the cursor's key
 * (csid NULL: from the start) and q's title folded (qlc, or NULL). */
struct svc_list_page {
    const struct svc_list_query *q;
    const char *qlc;
    double cu;
    const char *csid;
    int limit; /* rows wanted: the page's and one more */
};

/* One row of a page (owned by the page's array). */
struct svc_list_row {
    char *sid;
    json_object *summary; /* its compact JSON, as a raw node (jsonx.h) */
    char status[12];
    int64_t msgs;
    double updated;
};

/* A walk's mark (svc_index_each): which database counted, and how far. A mark of another
 * (a process's own copy against this host's file, or one made since) sends the next walk
 * whole. */
struct svc_list_mark {
    uint64_t copy; /* 0: none yet; else the database's first change number */
    uint64_t seq;
};
typedef void svc_index_each_fn(void *ctx, const char *sid, double updated, int64_t msgs,
                               bool archived);

#endif
