/* h_chat: POST /api/chat and its alias /api/v1/chat/completions (SPEC 4.1), the tokens
 * compatibility route, and the asynchronous runs of SPEC 4.2 (core/runs.h). The OpenAI body
 * (turnin.h) becomes a run (core/session.h) answered as a chat.completion object or chunk
 * stream; a run that ends on the request's function tools (SPEC 12.1) answers tool_calls. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "held.h"
#include "idem.h"
#include "jsonx.h"
#include "labels.h"
#include "layout.h"
#include "parts.h"
#include "query.h"
#include "runs.h"
#include "session.h"
#include "toolsin.h"
#include "turnin.h"
#include "util.h"

struct chat_in {
    struct turn_in t; /* results: of the tool messages */
    bool include_usage;
};

/* OpenAI message content: a string, null, or parts (text; a user's images and files, parts.h). */
static int check_content(json_object *content, const char *param, bool media, int64_t max_bytes,
                         struct svc_err *err)
{
    if (!content)
        return 0;
    if (json_object_is_type(content, json_type_string))
        return turn_in_text(content, param, err);
    if (!json_object_is_type(content, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                            "'%s' must be a string or an array of content parts", param);
    for (size_t k = 0; k < json_object_array_length(content); k++) {
        json_object *part = json_object_array_get_idx(content, k);
        char pp[160];
        snprintf(pp, sizeof pp, "%s[%zu]", param, k);
        if (!json_object_is_type(part, json_type_object))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, pp, "'%s' must be an object", pp);
        json_object *type = json_object_object_get(part, "type");
        json_object *text = json_object_object_get(part, "text");
        char tp[176];
        snprintf(tp, sizeof tp, "%s.type", pp);
        if (type && !json_object_is_type(type, json_type_string))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, tp, "'%s' must be a string", tp);
        if (!type || strcmp(json_object_get_string(type), "text") == 0) {
            snprintf(tp, sizeof tp, "%s.text", pp);
            if (turn_in_text(text, tp, err) < 0)
                return -1;
        } else if (!media) {
            return svc_err_setp(err, SVC_E_INVALID_FIELD, tp,
                                "'%s': only a user message may carry images or files", tp);
        } else if (svc_parts_check(part, pp, max_bytes, err) < 0) {
            return -1;
        }
    }
    return 0;
}

/* o's key, a string without NUL bytes named "<at>.<key>"; absent: 0, or 422 when required. */
static int text_at(json_object *o, const char *key, const char *at, bool required,
                   struct svc_err *err)
{
    json_object *v = json_object_object_get(o, key);
    char p[160];
    snprintf(p, sizeof p, "%s.%s", at, key);
    if (!v)
        return required ? svc_err_setp(err, SVC_E_MISSING_FIELD, p, "'%s' is required", p) : 0;
    return turn_in_text(v, p, err);
}

/* One message of the request, whatever its place: role and the fields of that role are
 * checked, so that history imported into the session is never stored half-understood. */
static int check_message(json_object *m, size_t i, int64_t max_bytes, struct svc_err *err)
{
    char at[96], p[128];
    snprintf(at, sizeof at, "messages[%zu]", i);
    if (!json_object_is_type(m, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, at, "'%s' must be an object", at);
    const char *role = NULL;
    snprintf(p, sizeof p, "%s.role", at);
    if (http_field_str(m, "role", p, true, &role, err) < 0)
        return -1;
    static const char *roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
    bool known = false;
    for (int k = 0; roles[k]; k++)
        known = known || strcmp(role, roles[k]) == 0;
    if (!known)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s' must be system, developer, user, assistant or tool", p);
    json_object *content = json_object_object_get(m, "content");
    snprintf(p, sizeof p, "%s.content", at);
    if (check_content(content, p, strcmp(role, "user") == 0, max_bytes, err) < 0)
        return -1;
    if (strcmp(role, "tool") == 0)
        return text_at(m, "tool_call_id", at, true, err);
    json_object *calls = json_object_object_get(m, "tool_calls");
    if (!calls || strcmp(role, "assistant") != 0)
        return 0;
    snprintf(p, sizeof p, "%s.tool_calls", at);
    if (!json_object_is_type(calls, json_type_array))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be an array", p);
    for (size_t k = 0; k < json_object_array_length(calls); k++) {
        json_object *c = json_object_array_get_idx(calls, k), *fn = NULL;
        snprintf(at, sizeof at, "messages[%zu].tool_calls[%zu]", i, k);
        if (!json_object_is_type(c, json_type_object))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, at, "'%s' must be an object", at);
        const char *type = NULL; /* any other was taken for a function */
        snprintf(p, sizeof p, "%s.type", at);
        if (text_at(c, "id", at, true, err) < 0 ||
            http_field_str(c, "type", p, false, &type, err) < 0)
            return -1;
        if (type && strcmp(type, "function") != 0)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be function", p);
        snprintf(p, sizeof p, "%s.function", at);
        json_object_object_get_ex(c, "function", &fn);
        if (!json_object_is_type(fn, json_type_object))
            return svc_err_setp(err, fn ? SVC_E_INVALID_FIELD : SVC_E_MISSING_FIELD, p,
                                "'%s' must be an object with name and arguments", p);
        if (text_at(fn, "name", p, true, err) < 0 || text_at(fn, "arguments", p, false, err) < 0 ||
            turn_in_call(svc_json_str(fn, "name", NULL), svc_json_str(fn, "arguments", NULL), p,
                         err) < 0)
            return -1;
    }
    return 0;
}

/* The metadata keys svc does not read itself, kept in the session's metadata (NULL: none). */
static json_object *meta_kept(json_object *meta)
{
    static const char *const ours[] = {"session_id", "event_format", "locale", "channel",
                                       "turn_id"};
    json_object *out = svc_json_copy(meta);
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
        json_object_object_del(out, ours[i]);
    if (json_object_object_length(out) > 0)
        return out;
    json_object_put(out);
    return NULL;
}

static int parse_chat(struct http_req *r, struct chat_in *in, struct svc_err *err)
{
    memset(in, 0, sizeof *in);
    if (http_body_json(r, false, &in->t.body, err) < 0)
        return -1;
    json_object *b = in->t.body, *meta = NULL, *sopts = NULL, *msgs = NULL;
    const char *model = NULL, *fmt = NULL, *legacy = NULL, *msid = NULL, *turn_id = NULL;
    bool store = true;
    if (turn_in_sid(b, "session_id", NULL, &in->t.req.session_id, err) < 0 ||
        http_field_obj(b, "metadata", NULL, false, &meta, err) < 0 ||
        (meta && svc_labels_check_metadata(meta, err) < 0) ||
        turn_in_sid(meta, "session_id", "metadata.session_id", &msid, err) < 0 ||
        http_field_str(meta, "event_format", "metadata.event_format", false, &fmt, err) < 0 ||
        http_field_str(meta, "locale", "metadata.locale", false, &in->t.req.locale, err) < 0 ||
        http_field_str(meta, "channel", "metadata.channel", false, &in->t.req.channel, err) < 0 ||
        http_field_str(meta, "turn_id", "metadata.turn_id", false, &turn_id, err) < 0 ||
        http_field_str(b, "model", NULL, false, &model, err) < 0 ||
        http_field_str(b, "user", NULL, false, &in->t.req.user_id, err) < 0 ||
        http_field_bool(b, "stream", NULL, false, &in->t.stream, err) < 0 ||
        http_field_obj(b, "stream_options", NULL, false, &sopts, err) < 0 ||
        http_field_bool(sopts, "include_usage", "stream_options.include_usage", false,
                        &in->include_usage, err) < 0 ||
        http_field_arr(b, "messages", NULL, false, &msgs, err) < 0 ||
        http_field_str(b, "message", NULL, false, &legacy, err) < 0 ||
        http_field_number_opt(b, "temperature", NULL, &in->t.req.has_temperature,
                              &in->t.req.temperature, err) < 0 ||
        http_field_int_opt(b, "max_tokens", NULL, &in->t.req.has_max_tokens, &in->t.req.max_tokens,
                           err) < 0 ||
        toolsin_parse(b, true, &in->t.req.client_tools, &in->t.req.tool_choice, err) < 0 ||
        http_field_bool(b, "store", NULL, true, &store, err) < 0 ||
        turn_in_settings(&in->t, TURN_CHAT, err) < 0)
        return -1;
    in->t.req.stateless = !store; /* as the Responses API's store: false (SPEC 12.3) */
    in->t.req.metadata = meta ? meta_kept(meta) : NULL;
    in->t.req.max_tokens_param = "max_tokens";
    in->t.req.user = &r->user;
    bool mct = false; /* OpenAI's newer name, which wins */
    if (http_field_int_opt(b, "max_completion_tokens", NULL, &mct, &in->t.req.max_tokens, err) < 0)
        return -1;
    if (mct) {
        in->t.req.has_max_tokens = true;
        in->t.req.max_tokens_param = "max_completion_tokens";
    }
    if (fmt && strcmp(fmt, "openai.v1") != 0 && strcmp(fmt, "svc.v2") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "metadata.event_format",
                            "'metadata.event_format' must be openai.v1 or svc.v2");
    in->t.svc_v2 = fmt && strcmp(fmt, "svc.v2") == 0;
    if (!in->t.req.session_id)
        in->t.req.session_id = msid;
    if (!in->t.req.session_id && http_session_header(r, &in->t.req.session_id, err) < 0)
        return -1;
    if (msgs) { /* every message checked, then the list split (turnin.h) */
        for (size_t i = 0; i < json_object_array_length(msgs); i++)
            if (check_message(json_object_array_get_idx(msgs, i), i, r->cfg->limits.max_image_bytes,
                              err) < 0)
                return -1;
        return turn_in_split(&in->t, msgs, "messages", err);
    }
    if (legacy && *legacy) {
        in->t.input = svc_xstrdup(legacy);
        return 0;
    }
    if (legacy)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "message", "'message' must not be empty");
    return svc_err_setp(err, SVC_E_MISSING_FIELD, "messages", "'messages' is required");
}

/* What a completed run answers with (from a live run or a replayed record: borrowed) and
 * its usage in chat's shape ({prompt_tokens, completion_tokens, total_tokens}, owned). */
struct answer {
    struct svc_run_answer r;
    json_object *usage;
};

/* choices[0].logprobs: {"content", "refusal"} when they were asked for, else null. */
static json_object *logprobs_of(const struct answer *a)
{
    if (!a->r.logprobs)
        return NULL;
    json_object *o = json_object_new_object();
    svc_json_set(o, "content", svc_json_copy(a->r.logprobs));
    svc_json_set(o, "refusal", NULL);
    return o;
}

static bool has_calls(const struct answer *a)
{
    return a->r.client_calls && json_object_array_length(a->r.client_calls) > 0;
}

/* The fields every completion object and chunk carries. */
static json_object *completion_base(const struct answer *a, const char *object, int64_t created)
{
    char id[160];
    snprintf(id, sizeof id, "chatcmpl-%s", a->r.run_id);
    json_object *o = svc_json_new_obj("id", id, "object", object, NULL);
    svc_json_set_int(o, "created", created);
    svc_json_set_str(o, "model", a->r.model);
    svc_json_set_str(o, "session_id", a->r.session_id);
    svc_json_set_str(o, "run_id", a->r.run_id);
    return o;
}

/* The non-streaming chat.completion object. */
static int send_completion(struct http_req *r, const struct chat_in *in, const struct answer *a)
{
    json_object *o = completion_base(a, "chat.completion", (int64_t)svc_time_now());
    json_object *choices = json_object_new_array();
    json_object *choice = json_object_new_object();
    svc_json_set_int(choice, "index", 0);
    json_object *msg = svc_json_new_obj("role", "assistant", "content",
                                        has_calls(a) && !*a->r.content ? NULL : a->r.content, NULL);
    svc_json_set(msg, "refusal", NULL);
    if (has_calls(a))
        svc_json_set(msg, "tool_calls", svc_json_copy(a->r.client_calls));
    svc_json_set(choice, "message", msg);
    svc_json_set(choice, "logprobs", logprobs_of(a));
    svc_json_set_str(choice, "finish_reason", a->r.finish_reason);
    json_object_array_add(choices, choice);
    svc_json_set(o, "choices", choices);
    svc_json_set(o, "usage", a->usage ? svc_json_copy(a->usage) : json_object_new_object());
    svc_json_set_str(o, "content", a->r.content);
    if (in->t.svc_v2)
        svc_json_set(o, "svc", turn_svc_block(a->r.run_id, a->r.events));
    return http_reply(r, 200, o);
}

/* ---- streaming ---- */

struct stream_ctx {
    struct http_req *r; /* first: the sink's http_sink_gone and http_sink_idle read it */
    const struct chat_in *in;
    struct answer ids; /* run_id, session_id, model: known from the start (borrowed) */
    int64_t created;
};
_Static_assert(offsetof(struct stream_ctx, r) == 0, "the sink's helpers read r first");

static json_object *chunk_new(struct stream_ctx *s, json_object *delta, const char *finish)
{
    json_object *o = completion_base(&s->ids, "chat.completion.chunk", s->created);
    json_object *choices = json_object_new_array();
    json_object *choice = json_object_new_object();
    svc_json_set_int(choice, "index", 0);
    svc_json_set(choice, "delta", delta ? delta : json_object_new_object());
    svc_json_set_str(choice, "finish_reason", finish);
    json_object_array_add(choices, choice);
    svc_json_set(o, "choices", choices);
    return o;
}

static int send_chunk(struct stream_ctx *s, json_object *chunk)
{
    int rc = http_sse_json(s->r, chunk);
    json_object_put(chunk);
    return rc;
}

/* Headers and the role chunk. -1 when the client is already gone. */
static int stream_begin(struct stream_ctx *s)
{
    if (http_sse_begin(s->r) < 0)
        return -1;
    return send_chunk(
        s, chunk_new(s, svc_json_new_obj("role", "assistant", "content", "", NULL), NULL));
}

/* One run event as a chunk: content and tool reports always, everything else in svc.v2. */
static int on_event(void *ctx, json_object *ev)
{
    struct stream_ctx *s = ctx;
    if (s->r->client_gone)
        return 1;
    const char *type = svc_json_str(ev, "type", "");
    json_object *delta = NULL;
    if (strcmp(type, "delta") == 0) {
        delta = svc_json_new_obj("content", svc_json_str(ev, "text", ""), NULL);
    } else if (strcmp(type, "tool_start") == 0 || strcmp(type, "tool_result") == 0) {
        /* svc runs its tools itself: never delta.tool_calls (a client would take them as
         * calls it must answer); an empty delta carrying the svc_event reports them */
        json_object *chunk = chunk_new(s, NULL, NULL);
        svc_json_set(chunk, "svc_event", json_object_get(ev));
        return send_chunk(s, chunk) < 0 ? 1 : 0;
    } else if (!s->in->t.svc_v2 || strcmp(type, "done") == 0 || strcmp(type, "error") == 0) {
        /* openai.v1 shows content and tool reports only; the end is rendered after the run */
        return 0;
    }
    json_object *chunk = chunk_new(s, delta, NULL);
    if (s->in->t.svc_v2)
        svc_json_set(chunk, "svc_event", json_object_get(ev));
    return send_chunk(s, chunk) < 0 ? 1 : 0;
}

/* The client tool calls as one delta.tool_calls chunk (each with its index). */
static int send_tool_calls(struct stream_ctx *s, json_object *calls)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *tc = svc_json_copy(json_object_array_get_idx(calls, i));
        svc_json_set_int(tc, "index", (int64_t)i);
        json_object_array_add(arr, tc);
    }
    json_object *delta = json_object_new_object();
    svc_json_set(delta, "tool_calls", arr);
    return send_chunk(s, chunk_new(s, delta, NULL));
}

/* The client tool calls, the finish chunk, the usage chunk when asked for, then [DONE]. */
static void stream_finish(struct stream_ctx *s, const struct answer *a)
{
    if (has_calls(a) && send_tool_calls(s, a->r.client_calls) < 0)
        return;
    json_object *last = chunk_new(s, NULL, a->r.finish_reason), *lp = logprobs_of(a);
    if (lp) /* the whole answer's, with its last chunk */
        svc_json_set(json_object_array_get_idx(svc_json_arr(last, "choices"), 0), "logprobs", lp);
    if (send_chunk(s, last) < 0)
        return;
    if (s->in->include_usage) {
        json_object *u = completion_base(a, "chat.completion.chunk", s->created);
        svc_json_set(u, "choices", json_object_new_array());
        svc_json_set(u, "usage", a->usage ? svc_json_copy(a->usage) : json_object_new_object());
        if (send_chunk(s, u) < 0)
            return;
    }
    http_sse_data(s->r, "[DONE]");
}

static void stream_ctx_init(struct stream_ctx *s, struct http_req *r, const struct chat_in *in,
                            const struct svc_run_answer *ids)
{
    *s = (struct stream_ctx){
        .r = r, .in = in, .ids = {.r = *ids}, .created = (int64_t)svc_time_now()};
}

/* Run it, record it (idem.h) and answer (a failure once the stream began is the router's
 * final error event). */
static int chat_run(struct http_req *r, struct chat_in *in, struct svc_run *run,
                    struct svc_err *err)
{
    struct stream_ctx s;
    struct answer a;
    svc_run_answer(run, &a.r);
    stream_ctx_init(&s, r, in, &a.r);
    if (in->t.stream && stream_begin(&s) < 0)
        return 0; /* client gone: svc_run_free ends the run */
    struct svc_run_sink sink = {on_event, http_sink_gone, http_sink_idle, &s};
    int rc = svc_run_execute(run, in->t.stream ? &sink : NULL, err);
    svc_idem_record_sync(r->cfg, run, r->idempotency_key, rc < 0 ? err : NULL);
    if (rc < 0)
        return -1;
    svc_run_answer(run, &a.r);
    a.usage = svc_usage_of(&a.r);
    if (in->t.stream)
        stream_finish(&s, &a);
    else
        send_completion(r, in, &a);
    json_object_put(a.usage);
    return 0;
}

/* Answer again from a stored, completed run (Idempotency-Key seen before), or its stream. */
static int idem_replay(struct http_req *r, struct chat_in *in, json_object *rec)
{
    struct answer a = {
        .r = {.run_id = svc_json_str(rec, "run_id", ""),
              .session_id = svc_json_str(rec, "session_id", ""),
              .model = svc_json_str(rec, "model", ""),
              .content = svc_json_str(rec, "content", ""),
              .finish_reason = svc_json_str(rec, "finish_reason", "stop"),
              .client_calls = svc_json_arr(rec, "client_tool_calls")},
        .usage = svc_json_copy(svc_json_obj(rec, "usage")),
    };
    if (!a.usage)
        a.usage = svc_usage_new(0, 0);
    bool finished;
    json_object *events = NULL;
    if (svc_runs_events(r->cfg, a.r.run_id, 0, &events, NULL, &finished, NULL) < 0)
        events = json_object_new_array();
    a.r.events = events;
    http_set_session(r, a.r.session_id, true);
    http_set_header(r, "Idempotent-Replayed", "true");
    if (!in->t.stream) {
        send_completion(r, in, &a);
    } else {
        struct stream_ctx s;
        stream_ctx_init(&s, r, in, &a.r);
        if (stream_begin(&s) == 0) {
            size_t n = json_object_array_length(events);
            bool gone = false;
            for (size_t i = 0; i < n && !gone; i++)
                gone = on_event(&s, json_object_array_get_idx(events, i)) != 0;
            if (!gone)
                stream_finish(&s, &a);
        }
    }
    json_object_put(events);
    json_object_put(a.usage);
    return 0;
}

int h_chat(struct http_req *r, struct svc_err *err)
{
    struct chat_in in;
    struct svc_run *run = NULL;
    char new_sid[SVC_ID_MAX + 1];
    int rc = -1;
    if (parse_chat(r, &in, err) < 0)
        goto out;
    http_set_session(r, in.t.req.session_id, false);
    if (!in.t.req.stateless && turn_in_continue(&in.t, r->cfg, &r->user) == 1)
        http_set_session(r, in.t.req.session_id, false);
    json_object *rec = NULL;
    if (svc_idem_sync_decide(r->cfg, &r->user, in.t.req.session_id, r->idempotency_key, &rec) ==
        SVC_IDEM_REPLAY) {
        rc = idem_replay(r, &in, rec);
        json_object_put(rec);
        goto out;
    }
    /* The master repairs the session if this worker dies in the run: named before the run
     * begins, since the sidecar says `running` from inside svc_run_begin (a repair finds
     * nothing to do while the sidecar is not `running` or another process holds the run
     * lock); so a new session's id is chosen here, not by the run. */
    if (!in.t.req.session_id) {
        svc_random_id("sess", new_sid, sizeof new_sid);
        in.t.req.session_id = new_sid;
    }
    held_set(in.t.req.session_id);
    struct svc_run_request req = turn_in_request(&in.t);
    if (svc_run_begin(r->cfg, &req, &run, err) < 0) {
        turn_in_unfork(&in.t, r->cfg);
        goto out;
    }
    http_mark_run_began(r);
    http_set_session(r, in.t.req.session_id, true);
    rc = chat_run(r, &in, run, err);
out:
    svc_run_free(run);
    held_clear();
    turn_in_free(&in.t);
    return rc;
}

int h_session_tokens(struct http_req *r, struct svc_err *err)
{
    json_object *o = NULL;
    if (svc_session_tokens(r->cfg, http_param(r, "session_id"), &o, err) < 0)
        return -1;
    return http_reply(r, 200, o);
}

/* ---- asynchronous runs (SPEC 4.2) ---- */

int h_runs_create(struct http_req *r, struct svc_err *err)
{
    struct chat_in in;
    json_object *out = NULL;
    int rc = -1;
    if (parse_chat(r, &in, err) < 0)
        goto done;
    http_set_session(r, in.t.req.session_id, false);
    struct svc_run_request req = turn_in_request(&in.t);
    bool replayed = false;
    if (svc_runs_spawn(r->cfg, &req, r->idempotency_key, &out, &replayed, err) < 0)
        goto done;
    if (replayed)
        http_set_header(r, "Idempotent-Replayed", "true");
    http_mark_run_began(r);
    http_set_session(r, svc_json_str(out, "session_id", ""), true);
    http_send_json(r, 202, out);
    rc = 0;
done:
    json_object_put(out);
    turn_in_free(&in.t);
    return rc;
}

int h_run_get(struct http_req *r, struct svc_err *err)
{
    static const char *fields[] = {"run_id",     "session_id",  "status", "event_count",
                                   "model",      "content",     "usage",  "error",
                                   "created_at", "finished_at", NULL};
    json_object *rec = NULL;
    if (svc_runs_get(r->cfg, http_param(r, "run_id"), &rec, err) < 0)
        return -1;
    http_set_session(r, svc_json_str(rec, "session_id", ""), false);
    json_object *o = json_object_new_object();
    for (int i = 0; fields[i]; i++)
        svc_json_set(o, fields[i], json_object_get(json_object_object_get(rec, fields[i])));
    json_object_put(rec);
    return http_reply(r, 200, o);
}

static int send_event(void *r, json_object *ev)
{
    return http_sse_json(r, ev);
}

int h_run_events(struct http_req *r, struct svc_err *err)
{
    const char *run_id = http_param(r, "run_id");
    int64_t cursor = 0;
    json_object *rec = NULL;
    if (http_query_int(r, "cursor", 0, 0, INT32_MAX, &cursor, err) < 0)
        return -1;
    if (svc_runs_get(r->cfg, run_id, &rec, err) < 0) /* 404 before the stream starts */
        return -1;
    http_set_session(r, svc_json_str(rec, "session_id", ""), false);
    json_object_put(rec);
    if (http_sse_begin(r) < 0)
        return 0;
    /* an error reading the events: the router ends the stream with its error event */
    return turn_follow(r, run_id, (long)cursor, send_event, r, err);
}

int h_run_cancel(struct http_req *r, struct svc_err *err)
{
    json_object *o = NULL;
    return svc_runs_cancel(r->cfg, http_param(r, "run_id"), &o, err) < 0 ? -1
                                                                         : http_reply(r, 200, o);
}
