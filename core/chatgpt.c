#include "chatgpt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZLIB_CONST /* next_in points to const bytes */
#include <zlib.h>

#include "fsio.h"
#include "journal.h"
#include "jsonx.h"
#include "sidecar.h"
#include "store.h"
#include "util.h"

#define MEMBER "conversations.json"
#define SID_PREFIX "chatgpt-"

/* ---- the .zip: its central directory, one member inflated ---- */

static uint32_t le16(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const unsigned char *p)
{
    return le16(p) | le16(p + 2) << 16;
}

/* Whether the name is conversations.json, at the top or in one directory. */
static bool member_name(const unsigned char *name, size_t n)
{
    size_t m = strlen(MEMBER);
    if (n < m || memcmp(name + n - m, MEMBER, m) != 0)
        return false;
    return n == m || name[n - m - 1] == '/';
}

/* Where member `want` starts in z: its method, sizes and crc (from the central directory). */
struct zmember {
    size_t data;
    uint32_t method, csize, usize, crc;
};

static int zip_find(const unsigned char *z, size_t n, struct zmember *m, struct svc_err *err)
{
    /* the end record: 22 bytes and a comment of up to 65535, at the end */
    size_t eocd = SIZE_MAX, lo = n > 22 + 65535 ? n - 22 - 65535 : 0;
    for (size_t i = n >= 22 ? n - 22 + 1 : 0; i-- > lo && eocd == SIZE_MAX;)
        if (le32(z + i) == 0x06054b50)
            eocd = i;
    if (eocd == SIZE_MAX)
        return svc_err_set(err, SVC_E_INVALID_FIELD,
                           "not a whole zip file (no end of its directory)");
    size_t entries = le16(z + eocd + 10), off = le32(z + eocd + 16);
    if (le32(z + eocd + 16) == 0xffffffffu || entries == 0xffff)
        return svc_err_set(err, SVC_E_INVALID_FIELD, "a zip64 archive: unzip it and import %s",
                           MEMBER);
    for (size_t k = 0; k < entries; k++) {
        if (off > n || n - off < 46 || le32(z + off) != 0x02014b50)
            return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's directory is damaged");
        const unsigned char *e = z + off;
        size_t nl = le16(e + 28), xl = le16(e + 30), cl = le16(e + 32), loc = le32(e + 42);
        if (n - off - 46 < nl)
            return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's directory is damaged");
        if (member_name(e + 46, nl)) {
            m->method = le16(e + 10);
            m->crc = le32(e + 16);
            m->csize = le32(e + 20);
            m->usize = le32(e + 24);
            if (loc > n || n - loc < 30 || le32(z + loc) != 0x04034b50)
                return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s is damaged", MEMBER);
            m->data = loc + 30 + le16(z + loc + 26) + le16(z + loc + 28);
            if (m->data > n || n - m->data < m->csize)
                return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s is cut short", MEMBER);
            return 0;
        }
        off += 46 + nl + xl + cl;
    }
    return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip holds no %s", MEMBER);
}

/* The member's bytes (heap, NUL-terminated), stored or deflated, checked by its crc. */
static int zip_member(const unsigned char *z, size_t n, char **out, size_t *len,
                      struct svc_err *err)
{
    struct zmember m = {0};
    if (zip_find(z, n, &m, err) != 0)
        return -1;
    if (m.method != 0 && m.method != 8)
        return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s uses compression method %u",
                           MEMBER, m.method);
    /* The declared size is checked before it is trusted with an allocation: deflate
     * expands at most 1032:1, stored data not at all. */
    if (m.method == 0 ? m.csize != m.usize : (uint64_t)m.usize > (uint64_t)m.csize * 1032 + 64)
        return svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s is damaged", MEMBER);
    char *buf = svc_xmalloc((size_t)m.usize + 1);
    int rc = 0;
    if (m.method == 0) {
        memcpy(buf, z + m.data, m.usize);
    } else {
        z_stream zs = {.next_in = z + m.data,
                       .avail_in = m.csize,
                       .next_out = (unsigned char *)buf,
                       .avail_out = m.usize};
        if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
            free(buf);
            return svc_err_set(err, SVC_E_NOMEM, "zlib: inflateInit2 failed");
        }
        int zr = inflate(&zs, Z_FINISH);
        if (zr != Z_STREAM_END || zs.total_out != m.usize)
            rc = svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s does not inflate (%s)", MEMBER,
                             zs.msg ? zs.msg : "cut short");
        inflateEnd(&zs);
    }
    if (rc == 0 && crc32(0L, (unsigned char *)buf, m.usize) != m.crc)
        rc = svc_err_set(err, SVC_E_INVALID_FIELD, "the zip's %s fails its CRC check", MEMBER);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    buf[m.usize] = '\0';
    *out = buf;
    *len = m.usize;
    return 0;
}

/* The conversations: the file's array (new reference), read from the JSON or the .zip. */
static int read_conversations(const char *file, json_object **out, struct svc_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    if (svc_file_read(file, &buf, &len, err) != 0)
        return -1;
    if (len >= 4 && memcmp(buf, "PK\x03\x04", 4) == 0) {
        char *inner = NULL;
        int rc = zip_member((unsigned char *)buf, len, &inner, &len, err);
        free(buf);
        if (rc != 0)
            return -1;
        buf = inner;
    }
    int rc = len > INT_MAX ? svc_err_set(err, SVC_E_INVALID_FIELD, "%s is over 2 GB", MEMBER)
                           : svc_json_parse(buf, len, out, err);
    free(buf);
    if (rc != 0)
        return -1;
    if (!json_object_is_type(*out, json_type_array)) {
        json_object_put(*out);
        *out = NULL;
        return svc_err_set(err, SVC_E_INVALID_FIELD, "%s is not an array of conversations", MEMBER);
    }
    return 0;
}

/* ---- a conversation: its current branch as Strands messages ---- */

struct conv {
    char sid[SVC_ID_MAX + 1];
    const char *title; /* borrowed from the conversations */
    char created[SVC_TIME_LEN], updated[SVC_TIME_LEN];
    json_object *msgs;  /* array of {"message", "at"} (new reference) */
    int64_t left_out;   /* messages of the branch that are not user or assistant text */
    int64_t branches;   /* leaves of the mapping other than the current node */
    const char *reason; /* skipped: why (static), else NULL */
};

static double epoch_of(json_object *o, const char *key, double def)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return def;
    return json_object_get_double(v);
}

/* The text parts of a message (heap, "" when it has none: another content type). */
static char *text_of(json_object *msg)
{
    json_object *content = svc_json_obj(msg, "content");
    const char *type = svc_json_str(content, "content_type", "");
    json_object *parts = svc_json_arr(content, "parts");
    struct svc_buf b;
    svc_buf_init(&b);
    if (parts && (strcmp(type, "text") == 0 || strcmp(type, "multimodal_text") == 0)) {
        for (size_t i = 0; i < json_object_array_length(parts); i++) {
            json_object *p = json_object_array_get_idx(parts, i);
            if (!json_object_is_type(p, json_type_string) || !json_object_get_string_len(p))
                continue;
            if (b.len)
                svc_buf_adds(&b, "\n\n");
            svc_buf_adds(&b, json_object_get_string(p));
        }
    }
    return svc_buf_steal(&b);
}

/* Add one message of the branch, merged into the one before when of the same role. */
static void add_message(struct conv *c, json_object *msg, double conv_time)
{
    const char *role = svc_json_str(svc_json_obj(msg, "author"), "role", "");
    char *text = text_of(msg);
    bool chat = strcmp(role, "user") == 0 || strcmp(role, "assistant") == 0;
    if (!chat || !*text) {
        bool hidden = !*text && strcmp(role, "system") == 0; /* the empty root prompt */
        c->left_out += !hidden;
        free(text);
        return;
    }
    size_t n = json_object_array_length(c->msgs);
    json_object *last = n ? json_object_array_get_idx(c->msgs, n - 1) : NULL;
    json_object *lm = svc_json_obj(last, "message");
    json_object *block = svc_json_new_obj("text", text, NULL);
    free(text);
    if (lm && strcmp(svc_json_str(lm, "role", ""), role) == 0) {
        json_object_array_add(svc_json_arr(lm, "content"), block);
        return;
    }
    json_object *m = json_object_new_object(), *content = json_object_new_array();
    svc_json_set_str(m, "role", role);
    json_object_array_add(content, block);
    svc_json_set(m, "content", content);
    json_object *rec = json_object_new_object();
    svc_json_set(rec, "message", m);
    svc_json_set(rec, "at", json_object_new_double(epoch_of(msg, "create_time", conv_time)));
    json_object_array_add(c->msgs, rec);
}

static int damaged(struct svc_err *err, size_t idx, const char *what, const char *name)
{
    return svc_err_set(err, SVC_E_INVALID_FIELD, "%s: conversation %zu: %s%s", MEMBER, idx + 1,
                       what, name ? name : "");
}

/* The nodes from the root to current_node (array of borrowed nodes, new reference). */
static int branch_of(json_object *mapping, const char *cur, size_t idx, json_object **out,
                     struct svc_err *err)
{
    json_object *path = json_object_new_array();
    size_t limit = (size_t)json_object_object_length(mapping);
    for (const char *id = cur; id;) {
        json_object *node = NULL;
        if (!json_object_object_get_ex(mapping, id, &node) ||
            !json_object_is_type(node, json_type_object)) {
            json_object_put(path);
            return damaged(err, idx, "names a node its mapping does not have: ", id);
        }
        if (json_object_array_length(path) >= limit) {
            json_object_put(path);
            return damaged(err, idx, "its parents make a cycle", NULL);
        }
        json_object_array_add(path, json_object_get(node));
        id = svc_json_str(node, "parent", NULL);
    }
    *out = path;
    return 0;
}

static int64_t other_leaves(json_object *mapping, const char *cur)
{
    int64_t n = 0;
    json_object_object_foreach(mapping, id, node)
    {
        json_object *ch = svc_json_arr(node, "children");
        n += (!ch || json_object_array_length(ch) == 0) && strcmp(id, cur) != 0;
    }
    return n;
}

static int plan_conv(json_object *o, size_t idx, struct conv *c, struct svc_err *err)
{
    memset(c, 0, sizeof *c);
    json_object *mapping = svc_json_obj(o, "mapping");
    const char *cur = svc_json_str(o, "current_node", NULL);
    const char *id = svc_json_str(o, "conversation_id", svc_json_str(o, "id", NULL));
    if (!json_object_is_type(o, json_type_object) || !mapping || !cur || !id)
        return damaged(err, idx, "not a conversation (mapping, current_node and id)", NULL);
    snprintf(c->sid, sizeof c->sid, "%s%s", SID_PREFIX, id);
    if (!svc_layout_id_valid(c->sid) || strlen(SID_PREFIX) + strlen(id) > SVC_ID_MAX)
        return damaged(err, idx, "its id is not one a session can take: ", id);
    c->title = svc_json_str(o, "title", "");
    double created = epoch_of(o, "create_time", svc_time_now());
    svc_time_format_iso(created, c->created);
    svc_time_format_iso(epoch_of(o, "update_time", created), c->updated);
    json_object *path = NULL;
    if (branch_of(mapping, cur, idx, &path, err) != 0)
        return -1;
    c->msgs = json_object_new_array();
    for (size_t i = json_object_array_length(path); i-- > 0;) {
        json_object *msg = svc_json_obj(json_object_array_get_idx(path, i), "message");
        if (msg)
            add_message(c, msg, created);
    }
    json_object_put(path);
    c->branches = other_leaves(mapping, cur);
    if (json_object_array_length(c->msgs) == 0)
        c->reason = "no user or assistant text on its current branch";
    return 0;
}

/* ---- writing: staged in the root, renamed into place ---- */

static int write_record(struct svc_sess *h, int64_t id, json_object *rec, struct svc_err *err)
{
    char at[SVC_TIME_LEN];
    svc_time_format_iso(json_object_get_double(json_object_object_get(rec, "at")), at);
    json_object *f = json_object_new_object();
    svc_json_set(f, "message", json_object_get(svc_json_obj(rec, "message")));
    svc_json_set_int(f, "message_id", id);
    svc_json_set(f, "redact_message", NULL);
    svc_json_set_str(f, "created_at", at);
    svc_json_set_str(f, "updated_at", at);
    char *p = svc_sess_message_path(h, id, SVC_FROM_ABS);
    int rc = svc_json_write_native_sync(p, f, SVC_SYNC_STORE, err);
    free(p);
    json_object_put(f);
    return rc;
}

/* session.json and agent.json with the conversation's times. */
static int write_heads(struct svc_sess *h, const struct conv *c, struct svc_err *err)
{
    json_object *sess = svc_json_new_obj("session_id", h->sid, "session_type", "AGENT", NULL);
    json_object *o[2] = {sess, svc_store_new_agent(&h->st)};
    const enum svc_file which[2] = {SVC_F_SESSION, SVC_F_AGENT};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        svc_json_set_str(o[i], "created_at", c->created);
        svc_json_set_str(o[i], "updated_at", c->updated);
        char *p = svc_sess_path(h, which[i], SVC_FROM_ABS);
        if (rc == 0)
            rc = svc_json_write_native_sync(p, o[i], SVC_SYNC_STORE, err);
        free(p);
        json_object_put(o[i]);
    }
    return rc;
}

/* Stage the session under stg; *summary gets its summary for the listing index. */
static int stage_conv(const struct svc_store *stg, const struct conv *c, json_object **summary,
                      struct svc_err *err)
{
    struct svc_sess h = SVC_SESS_INIT;
    json_object *sc = NULL;
    int rc = svc_sess_open_store(stg, c->sid, &h, err);
    if (rc == 0)
        rc = svc_sess_ensure(&h, false, SVC_SYNC_STORE, NULL, err);
    if (rc == 0)
        rc = write_heads(&h, c, err);
    for (size_t i = 0; rc == 0 && i < json_object_array_length(c->msgs); i++)
        rc = write_record(&h, (int64_t)i, json_object_array_get_idx(c->msgs, i), err);
    if (rc == 0)
        rc = svc_sidecar_derive(&h, &sc, err);
    if (rc == 0) {
        if (*c->title)
            svc_json_set_str(sc, "title", c->title);
        svc_json_set_str(sc, "channel", "import");
        svc_json_set_str(sc, "created_at", c->created);
        svc_json_set_str(sc, "updated_at", c->updated);
        rc = svc_sidecar_write(&h, sc, SVC_SYNC_STORE, err);
    }
    if (rc == 0)
        *summary = svc_sidecar_summary(sc);
    json_object_put(sc);
    svc_sess_close(&h);
    return rc;
}

/* Rename the staged session into place unless the root has its id; 1 when it had. */
static int place(const struct svc_store *st, const struct svc_store *stg, const char *sid,
                 struct svc_err *err)
{
    struct svc_sess hs = SVC_SESS_INIT, ho = SVC_SESS_INIT;
    int rc = svc_sess_open_store(stg, sid, &hs, err);
    if (rc == 0)
        rc = svc_sess_open_store(st, sid, &ho, err);
    if (rc == 0 && svc_rename_noreplace(hs.dir, ho.dir) != 0)
        rc = errno == EEXIST ? 1 : svc_err_errno(err, "rename into place");
    svc_sess_close(&hs);
    svc_sess_close(&ho);
    return rc;
}

/* ---- the import ---- */

struct job {
    const struct svc_import_options *opt;
    struct svc_store st, stg;
    json_object *convs;
    struct conv *c;
    size_t n;
    json_object **summary; /* per conversation, when staged */
    char *staging;
    int lockfd;
};

static void job_free(struct job *j)
{
    if (j->staging)
        svc_file_remove_tree(j->staging);
    free(j->staging);
    if (j->lockfd >= 0)
        close(j->lockfd);
    for (size_t i = 0; i < j->n; i++) {
        json_object_put(j->c[i].msgs);
        if (j->summary)
            json_object_put(j->summary[i]);
    }
    free(j->c);
    free(j->summary);
    json_object_put(j->convs);
}

/* Read and check every conversation; mark those the root (or the file before) has. */
static int plan(struct job *j, const char *file, struct svc_err *err)
{
    if (read_conversations(file, &j->convs, err) != 0)
        return -1;
    j->n = json_object_array_length(j->convs);
    j->c = svc_xcalloc(j->n ? j->n : 1, sizeof *j->c);
    for (size_t i = 0; i < j->n; i++) {
        struct conv *c = &j->c[i];
        if (plan_conv(json_object_array_get_idx(j->convs, i), i, c, err) != 0)
            return -1;
        for (size_t k = 0; !c->reason && k < i; k++)
            if (strcmp(j->c[k].sid, c->sid) == 0)
                c->reason = "a conversation of the same id comes before it in the file";
        if (!c->reason && svc_store_session_exists(&j->st, c->sid))
            c->reason = "exists";
    }
    return 0;
}

static json_object *report_of(const struct job *j)
{
    json_object *r = json_object_new_object(), *imp = json_object_new_array(),
                *sk = json_object_new_array();
    int64_t msgs = 0, left = 0, branches = 0;
    for (size_t i = 0; i < j->n; i++) {
        const struct conv *c = &j->c[i];
        branches += c->branches;
        if (c->reason) {
            json_object_array_add(
                sk, svc_json_new_obj("session_id", c->sid, "reason", c->reason, NULL));
            continue;
        }
        json_object_array_add(imp, json_object_new_string(c->sid));
        msgs += (int64_t)json_object_array_length(c->msgs);
        left += c->left_out;
    }
    svc_json_set_int(r, "conversations", (int64_t)j->n);
    svc_json_set(r, "imported", imp);
    svc_json_set(r, "skipped", sk);
    svc_json_set_int(r, "messages", msgs);
    svc_json_set_int(r, "left_out", left);
    svc_json_set_int(r, "other_branches", branches);
    return r;
}

/* Stage every session (the progress counts them), sync, then rename each into place. */
static int write_sessions(struct job *j, size_t todo, struct svc_err *err)
{
    j->summary = svc_xcalloc(j->n ? j->n : 1, sizeof *j->summary);
    size_t done = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->c[i].reason)
            continue;
        if (stage_conv(&j->stg, &j->c[i], &j->summary[i], err) != 0)
            return -1;
        if (j->opt->progress.fn)
            j->opt->progress.fn(j->opt->progress.ctx, ++done, todo, 0);
    }
    /* the staged files reach the disk before any rename */
    if (j->st.durable && svc_sync_tree(j->staging, err) != 0)
        return -1;
    for (size_t i = 0; i < j->n; i++) {
        if (j->c[i].reason)
            continue;
        int rc = place(&j->st, &j->stg, j->c[i].sid, err);
        if (rc < 0)
            return -1;
        if (rc == 1)
            j->c[i].reason = "exists (created meanwhile)";
        else if (j->summary[i])
            svc_journal_note(&j->st, j->c[i].sid, j->summary[i]);
    }
    if (j->st.durable)
        svc_fsync_dir(j->st.root, NULL);
    return 0;
}

int svc_chatgpt_import(const struct svc_config *cfg, const char *file,
                       const struct svc_import_options *opt, json_object **report,
                       struct svc_err *err)
{
    *report = NULL;
    if (!cfg->sessions.enabled)
        return svc_err_set(err, SVC_E_SESSIONS_DISABLED, "sessions are disabled");
    if (opt->overwrite)
        return svc_err_set(err, SVC_E_INVALID_FIELD,
                           "a ChatGPT import does not overwrite: sessions it made are skipped");
    struct job j = {.opt = opt, .lockfd = -1};
    svc_store_from_config(cfg, &j.st);
    int rc = plan(&j, file, err);
    size_t todo = 0;
    for (size_t i = 0; rc == 0 && i < j.n; i++)
        todo += !j.c[i].reason;
    if (rc == 0 && todo && !opt->dry_run)
        rc = svc_import_staging(&j.st, &j.lockfd, &j.staging, &j.stg, err) == 0
                 ? write_sessions(&j, todo, err)
                 : -1;
    if (rc == 0)
        *report = report_of(&j);
    job_free(&j);
    return rc;
}
