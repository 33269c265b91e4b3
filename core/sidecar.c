#include "sidecar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "journal.h"
#include "jsonx.h"
#include "openai.h"
#include "title.h"
#include "util.h"

json_object *svc_sidecar_new(const char *sid, const char *agent_id, const char *model)
{
    char now[SVC_TIME_LEN];
    svc_time_now_iso(now);
    json_object *sc = json_tokener_parse(
        "{\"schema_version\": 1, \"session_id\": null, \"agent_id\": null, \"title\": \"\", "
        "\"user_id\": \"anonymous\", \"channel\": \"api\", \"model\": null, \"locale\": \"en\", "
        "\"created_at\": null, \"updated_at\": null, \"message_count\": 0, \"turn_count\": 0, "
        "\"run_count\": 0, \"last_run_id\": null, \"status\": \"idle\", \"archived\": false, "
        "\"archived_at\": null, \"current_run\": null, \"last_error\": null, "
        "\"token_state\": {}, \"memory_state\": {}}");
    svc_json_set_str(sc, "session_id", sid);
    svc_json_set_str(sc, "agent_id", agent_id);
    svc_json_set_str(sc, "model", model ? model : "");
    svc_json_set_str(sc, "created_at", now);
    svc_json_set_str(sc, "updated_at", now);
    return sc;
}

int svc_sidecar_read(const struct svc_sess *s, json_object **out, struct svc_err *err)
{
    return svc_sess_read_object(s, SVC_F_SIDECAR, out, err);
}

int svc_sidecar_write(const struct svc_sess *s, json_object *sc, int sync, struct svc_err *err)
{
    char *path = svc_sess_path(s, SVC_F_SIDECAR, SVC_FROM_ABS);
    int rc = svc_json_write_pretty_sync(path, sc, svc_store_sync(&s->st, sync), err);
    free(path);
    if (rc == 0 && !s->st.staged) { /* a staging root's are told when it is published */
        json_object *sum = svc_sidecar_summary(sc);
        svc_journal_note(&s->st, s->sid, sum);
        json_object_put(sum);
    }
    return rc;
}

json_object *svc_sidecar_summary_of(const struct svc_store *st, const char *sid)
{
    json_object *sc = NULL;
    struct svc_sess h;
    bool got = svc_sess_open_store(st, sid, &h, NULL) == 0 &&
               (svc_sidecar_read(&h, &sc, NULL) == 0 || svc_sidecar_derive(&h, &sc, NULL) == 0);
    /* past the sidecar's count when Strands appended messages: as listing and detail show */
    int64_t trusted = got ? svc_json_int(sc, "message_count", -1) : -1, cnt = 0, next = 0;
    int64_t *ids = NULL;
    if (trusted >= 0 && strcmp(svc_json_str(sc, "status", ""), "running") != 0 &&
        svc_sess_message_count(&h, trusted, &cnt, &next, &ids, NULL) == 0 && cnt > trusted)
        svc_json_set_int(sc, "message_count", cnt);
    free(ids);
    svc_sess_close(&h);
    if (got)
        json_object_object_del(sc, "schema_version"); /* as svc_sidecar_summary */
    return sc;                                        /* NULL when !got */
}

void svc_sidecar_resync(const struct svc_store *st, const char *sid)
{
    json_object *sum = svc_store_session_exists(st, sid) ? svc_sidecar_summary_of(st, sid) : NULL;
    svc_journal_note(st, sid, sum);
    json_object_put(sum);
}

int svc_sidecar_get(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    struct svc_err rerr;
    if (!s->sidecar_read && svc_sidecar_read(s, &s->sidecar, &rerr) != 0) {
        s->sidecar = NULL;
        if (rerr.code != SVC_E_NOT_FOUND) {
            if (err)
                *err = rerr;
            return -1;
        }
    }
    s->sidecar_read = true;
    *out = s->sidecar;
    return 0;
}

int svc_sidecar_derive(struct svc_sess *s, json_object **out, struct svc_err *err)
{
    *out = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    if (svc_sess_message_ids(s, &ids, &n, err) != 0)
        return -1;
    char *sfile = svc_sess_path(s, SVC_F_SESSION, SVC_FROM_ABS);
    json_object *sess = NULL;
    struct stat sb;
    /* no session.json, no message: not a session (yet); a run creating it has not written
     * its first file, or died before it did */
    bool none = n == 0 && lstat(sfile, &sb) != 0;
    if (!none)
        svc_json_read_file(sfile, &sess, NULL);
    free(sfile);
    if (none) {
        free(ids);
        return svc_err_set(err, SVC_E_SESSION_NOT_FOUND, "session %s not found", s->sid);
    }
    json_object *sc = svc_sidecar_new(s->sid, s->st.agent_id, "");
    svc_json_set(sc, "model", NULL);
    svc_json_set_str(sc, "channel", "native");
    static const char *const times[] = {"created_at", "updated_at"}; /* session.json's */
    for (int i = 0; i < 2; i++)
        if (svc_json_str(sess, times[i], NULL))
            svc_json_set_str(sc, times[i], svc_json_str(sess, times[i], NULL));
    json_object_put(sess);
    /* title: the first user message with text */
    bool titled = false;
    for (size_t i = 0; i < n && i < 8 && !titled; i++) {
        json_object *rec = NULL, *m;
        char *txt = NULL;
        titled = svc_sess_read_message(s, ids[i], &rec, NULL, NULL, NULL) == 0 &&
                 strcmp(svc_openai_role(m = svc_store_effective_message(rec)), "user") == 0 &&
                 (txt = svc_native_text(m)) && *txt;
        if (titled)
            svc_title_derive(sc, txt);
        free(txt);
        json_object_put(rec);
    }
    /* newest message time is a better updated_at than session.json's */
    json_object *rec = NULL, *agent = NULL;
    const char *u = n > 0 && svc_sess_read_message(s, ids[n - 1], &rec, NULL, NULL, NULL) == 0
                        ? svc_json_str(rec, "updated_at", NULL)
                        : NULL;
    double a, b;
    if (u && svc_time_parse_iso(u, &a) == 0 &&
        (svc_time_parse_iso(svc_json_str(sc, "updated_at", ""), &b) != 0 || a > b))
        svc_json_set_str(sc, "updated_at", u);
    json_object_put(rec);
    svc_json_set_int(sc, "message_count", (int64_t)n);
    if (svc_sess_read_agent(s, &agent, NULL) == 0)
        svc_json_set_int(svc_json_obj(sc, "token_state"), "removed_message_count",
                         svc_agent_removed_count(agent));
    json_object_put(agent);
    free(ids);
    *out = sc;
    return 0;
}

json_object *svc_sidecar_summary(json_object *sc)
{
    json_object *s = svc_json_copy(sc);
    if (s)
        json_object_object_del(s, "schema_version");
    return s;
}

/* svc_err_errno naming the turns file after verb. */
static int turns_errno(struct svc_err *err, const char *verb)
{
    char what[64];
    snprintf(what, sizeof what, "%s %s", verb, svc_layout_name(SVC_F_TURNS));
    return svc_err_errno(err, what);
}

int svc_turns_append(const struct svc_sess *s, json_object *line, struct svc_err *err)
{
    char *path = svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS);
    int rc = svc_json_append_line(path, line, s->st.durable, err);
    free(path);
    return rc;
}

int svc_turns_create(const struct svc_sess *s, struct svc_err *err)
{
    char *path = svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS);
    int rc = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0)
        close(fd);
    else if (errno != EEXIST)
        rc = turns_errno(err, "create");
    free(path);
    return rc;
}

struct turns_ctx {
    json_object *arr;
    int skipped;
};

static void turn_line_add(void *ctx, const char *line, size_t n, size_t off)
{
    struct turns_ctx *c = ctx;
    json_object *o = svc_jsonl_object(line, n);
    if (o)
        json_object_array_add(c->arr, o);
    else
        c->skipped++;
}

int svc_turns_read(const struct svc_sess *s, json_object **out, int *skipped, struct svc_err *err)
{
    *out = NULL;
    if (skipped)
        *skipped = 0;
    char *path = svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS);
    char *buf = NULL;
    size_t len = 0;
    struct svc_err rerr;
    int rc = svc_file_read(path, &buf, &len, &rerr);
    free(path);
    if (rc != 0 && rerr.code != SVC_E_NOT_FOUND) {
        if (err)
            *err = rerr;
        return -1;
    }
    *out = json_object_new_array();
    struct turns_ctx c = {*out, 0};
    if (rc == 0 && svc_jsonl_lines(buf, len, turn_line_add, &c) < len)
        c.skipped++; /* a line without its newline is torn (lines are appended whole) */
    if (skipped)
        *skipped = c.skipped;
    free(buf);
    return 0;
}

int svc_turns_last(const struct svc_sess *s, json_object **out, struct svc_err *err)
{
    *out = NULL;
    char *path = svc_sess_path(s, SVC_F_TURNS, SVC_FROM_ABS);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (fd < 0)
        return 0;
    struct stat sb;
    char *buf = NULL;
    int rc = 0;
    bool some = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
    /* read a growing tail until it holds a whole last line (lines end with '\n') */
    for (size_t want = 16384; some; want *= 4) {
        size_t size = (size_t)sb.st_size;
        size_t take = want < size ? want : size;
        free(buf);
        buf = svc_xmalloc(take + 1);
        ssize_t got = pread(fd, buf, take, (off_t)(size - take));
        if (got != (ssize_t)take) {
            rc = turns_errno(err, "read");
            break;
        }
        size_t end = take, start;
        while (end > 0 && buf[end - 1] != '\n')
            end--; /* a torn last line (no newline) is not a line */
        for (start = end ? end - 1 : 0; start > 0 && buf[start - 1] != '\n'; start--)
            ;
        if (start == 0 && take < size)
            continue; /* the line may begin before this tail */
        if (end > 0)
            *out = svc_jsonl_object(buf + start, end - 1 - start);
        break;
    }
    free(buf);
    close(fd);
    return rc;
}
