#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Every name of the layout (FORMAT.md), and nowhere else in the code. */
#define LOCK_NAME ".svc.lock"
#define RUN_LOCK_NAME ".svc.run.lock"
static const char *const lock_names[] = {LOCK_NAME, RUN_LOCK_NAME, NULL};
static const char *const names[SVC_F__MAX] = {
    [SVC_F_DIR] = "session_",
    [SVC_F_SESSION] = "session.json",
    [SVC_F_SIDECAR] = "svc_session.json",
    [SVC_F_TURNS] = "svc_turns.jsonl",
    [SVC_F_TURNS_CORRUPT] = "svc_turns.jsonl.corrupt",
    [SVC_F_MEMORY] = "svc_memory.json",
    [SVC_F_FEEDBACK] = "svc_feedback.json",
    [SVC_F_AGENTS] = "agents",
    [SVC_F_AGENT_DIR] = "agent_",
    [SVC_F_AGENT] = "agent.json",
    [SVC_F_MESSAGES] = "messages",
    [SVC_F_MULTI_AGENTS] = "multi_agents",
    [SVC_F_LOCK] = LOCK_NAME,
    [SVC_F_RUN_LOCK] = RUN_LOCK_NAME,
    [SVC_F_INDEX] = ".svc_index.jsonl",
    [SVC_F_INDEX_LOCK] = ".svc_index.lock",
    [SVC_F_INDEX_BUILD] = ".svc_index.build",
    [SVC_F_RUNS] = ".svc_runs",
    [SVC_F_RESPONSES] = ".svc_responses",
    [SVC_F_IMPORT_LOCK] = ".svc_import.lock",
    [SVC_F_IMPORT_STAGING] = ".svc_import-",
    [SVC_F_IMPORT_ASIDE] = "old_",
    [SVC_F_TRASH] = ".svc_trash-",
    [SVC_F_STAGE] = ".svc_new-",
    [SVC_F_RETENTION] = ".svc_retention.json",
    [SVC_F_RETENTION_LOCK] = ".svc_retention.lock",
    [SVC_F_COMPACTION_KEY] = ".svc_compaction.key",
};
static const char *const run_suffix[SVC_RUN__MAX] = {
    [SVC_RUN_RECORD] = ".json",
    [SVC_RUN_EVENTS] = ".events.jsonl",
    [SVC_RUN_CANCEL] = ".cancel",
    [SVC_RUN_LOCK] = ".lock",
};
#define MESSAGE_PRE "message_"
#define MESSAGE_SUF ".json"

bool svc_layout_id_valid(const char *id)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
    size_t n = id ? strnlen(id, SVC_ID_MAX + 1) : 0;
    return n > 0 && n <= SVC_ID_MAX && id[0] != '.' && strspn(id, ok) == n;
}

int svc_layout_id_check(const char *id, struct svc_err *err)
{
    if (!id || !*id)
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id", "session id is empty");
    if (strlen(id) > SVC_ID_MAX)
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id is longer than %d characters", SVC_ID_MAX);
    if (id[0] == '.')
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id must not start with '.'");
    if (!svc_layout_id_valid(id))
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, "session_id",
                            "session id may contain only A-Z a-z 0-9 . _ -");
    return 0;
}

/* Concatenate n strings into a new heap string (NULL prints as "(null)", as %s did).
 * Paths are built on every request: plain copies, no printf. */
static char *path_cat(int n, const char *const *parts)
{
    size_t total = 1;
    for (int i = 0; i < n; i++)
        total += strlen(parts[i] ? parts[i] : "(null)");
    char *out = svc_xmalloc(total), *p = out;
    *p = '\0';
    for (int i = 0; i < n; i++)
        p = stpcpy(p, parts[i] ? parts[i] : "(null)");
    return out;
}

const char *svc_layout_name(enum svc_file f)
{
    return f >= 0 && f < SVC_F__MAX ? names[f] : NULL;
}

char *svc_layout_root_path(const char *root, enum svc_file f, const char *tail)
{
    const char *parts[] = {root, "/", names[f], tail};
    return path_cat(tail ? 4 : 3, parts);
}

char *svc_layout_run_path(const char *root, const char *run_id, enum svc_run_file f)
{
    const char *parts[] = {root, "/", names[SVC_F_RUNS], "/", run_id, run_suffix[f]};
    return root ? path_cat(6, parts) : path_cat(2, parts + 4);
}

char *svc_layout_run_id_of(const char *name, enum svc_run_file f)
{
    size_t n = strlen(name), m = strlen(run_suffix[f]);
    if (n <= m || strcmp(name + n - m, run_suffix[f]) != 0)
        return NULL;
    return svc_xstrndup(name, n - m);
}

const char *svc_layout_session_of(const char *name)
{
    size_t pl = strlen(names[SVC_F_DIR]);
    return strncmp(name, names[SVC_F_DIR], pl) == 0 && svc_layout_id_valid(name + pl) ? name + pl
                                                                                      : NULL;
}

#define MULTI_AGENT_PRE "multi_agent_"
#define MULTI_AGENT_FILE "multi_agent.json"

const char *svc_layout_multi_agent_of(const char *name)
{
    size_t pl = sizeof MULTI_AGENT_PRE - 1;
    return strncmp(name, MULTI_AGENT_PRE, pl) == 0 && svc_layout_id_valid(name + pl) ? name + pl
                                                                                     : NULL;
}

char *svc_layout_multi_agent_path(const char *dir, const char *id, bool file)
{
    char *p = NULL;
    svc_xasprintf(&p, "%s/" MULTI_AGENT_PRE "%s%s", dir, id, file ? "/" MULTI_AGENT_FILE : "");
    return p;
}

int64_t svc_layout_message_id_of(const char *name)
{
    static const size_t pl = sizeof MESSAGE_PRE - 1;
    if (strncmp(name, MESSAGE_PRE, pl) != 0)
        return -1;
    const char *p = name + pl, *d = p;
    if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
        return -1; /* padded: not a name Strands writes */
    int64_t id = 0;
    while (*p >= '0' && *p <= '9' && p - d < 18)
        id = id * 10 + (*p++ - '0');
    return p > d && strcmp(p, MESSAGE_SUF) == 0 ? id : -1;
}

const char *const *svc_layout_lock_names(void)
{
    return lock_names;
}

bool svc_layout_is_lock(const char *name)
{
    for (int i = 0; lock_names[i]; i++)
        if (strcmp(name, lock_names[i]) == 0)
            return true;
    return false;
}

bool svc_layout_is_internal(const char *name)
{
    return strstr(name, ".tmp-") != NULL || svc_layout_is_lock(name);
}

/* The parts of f's path from the root (session_<sid>[/...]) into p; returns their number. */
static int sess_parts(const char *aid, const char *sid, enum svc_file f, const char **p)
{
    int n = 0;
    p[n++] = names[SVC_F_DIR];
    p[n++] = sid;
    if (f == SVC_F_DIR)
        return n;
    p[n++] = "/";
    if (f == SVC_F_AGENT_DIR || f == SVC_F_AGENT || f == SVC_F_MESSAGES) {
        p[n++] = names[SVC_F_AGENTS];
        p[n++] = "/";
        p[n++] = names[SVC_F_AGENT_DIR];
        p[n++] = aid;
        if (f == SVC_F_AGENT_DIR)
            return n;
        p[n++] = "/";
    }
    p[n++] = names[f];
    return n;
}

/* id in decimal into num (at least 24 bytes), NUL-terminated; returns its length. Without
 * printf, which cost more than the stat a listed row or a cached message row makes. */
static size_t id_digits(char *num, int64_t id)
{
    char rev[24];
    size_t n = 0, k = 0;
    uint64_t v = id < 0 ? 0 - (uint64_t)id : (uint64_t)id;
    do
        rev[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    if (id < 0)
        num[k++] = '-';
    while (n > 0)
        num[k++] = rev[--n];
    num[k] = '\0';
    return k;
}

/* The path of f of session sid, or with num of message num's file. */
static char *lpath(const char *root, const char *aid, const char *sid, enum svc_file f,
                   const char *num, enum svc_from from)
{
    const char *p[16];
    int n = 0;
    if (from == SVC_FROM_ABS) {
        p[n++] = root;
        p[n++] = "/";
    }
    int top = n, first = 0; /* top: where session_<sid> starts */
    n += sess_parts(aid, sid, f, p + n);
    if (num) {
        const char *msg[] = {"/", MESSAGE_PRE, num, MESSAGE_SUF};
        memcpy(p + n, msg, sizeof msg);
        n += 4;
    }
    if (from == SVC_FROM_SESSION)
        first = top + (f == SVC_F_DIR && !num ? 2 : 3);
    else if (from == SVC_FROM_NAME)
        for (int i = first = top; i < n; i++)
            if (strcmp(p[i], "/") == 0)
                first = i + 1;
    return path_cat(n - first, p + first);
}

char *svc_layout_path(const char *root, const char *aid, const char *sid, enum svc_file f,
                      enum svc_from from)
{
    return lpath(root, aid, sid, f, NULL, from);
}

char *svc_layout_message_path(const char *root, const char *aid, const char *sid, int64_t id,
                              enum svc_from from)
{
    char num[24];
    id_digits(num, id);
    return lpath(root, aid, sid, SVC_F_MESSAGES, num, from);
}

/* Append n bytes of s at *at in buf (sz bytes); false when they do not fit. */
static bool put(char *buf, size_t sz, size_t *at, const char *s, size_t n)
{
    if (*at + n >= sz)
        return false;
    memcpy(buf + *at, s, n);
    *at += n;
    return true;
}

size_t svc_layout_message_path_in(const char *root, const char *aid, const char *sid, int64_t id,
                                  enum svc_from from, char *buf, size_t sz)
{
    /* "/agents/agent_<aid>/messages/message_" of the last agent id asked (a pure memo,
     * cache.h): a listed row's path is then four copies, not thirteen parts measured */
    static char last[SVC_ID_MAX + 1], mid[SVC_ID_MAX + 64];
    static size_t midlen;
    if (midlen == 0 || strcmp(last, aid) != 0) {
        const char *p[16];
        int n = sess_parts(aid, "", SVC_F_MESSAGES, p) - 2; /* past session_<sid> */
        char *m = path_cat(n, p + 2);
        midlen = (size_t)snprintf(mid, sizeof mid, "%s/%s", m, MESSAGE_PRE);
        free(m);
        snprintf(last, sizeof last, "%s", aid);
        if (midlen >= sizeof mid) {
            last[0] = '\0';
            midlen = 0;
        }
    }
    char num[24];
    size_t at = 0, nl = id_digits(num, id);
    bool ok = midlen &&
              (from != SVC_FROM_ABS ||
               (put(buf, sz, &at, root, strlen(root)) && put(buf, sz, &at, "/", 1))) &&
              put(buf, sz, &at, names[SVC_F_DIR], strlen(names[SVC_F_DIR])) &&
              put(buf, sz, &at, sid, strlen(sid)) && put(buf, sz, &at, mid, midlen) &&
              put(buf, sz, &at, num, nl) && put(buf, sz, &at, MESSAGE_SUF, sizeof MESSAGE_SUF);
    return ok ? at - 1 : 0;
}

void svc_layout_message_name(char *name, int64_t id)
{
    memcpy(name, MESSAGE_PRE, sizeof MESSAGE_PRE - 1);
    char *p = name + sizeof MESSAGE_PRE - 1;
    p += id_digits(p, id);
    memcpy(p, MESSAGE_SUF, sizeof MESSAGE_SUF); /* with its NUL */
}
