#include "turnin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "erase.h"
#include "fork.h"
#include "http.h"
#include "jsonx.h"
#include "layout.h"
#include "log.h"
#include "openai.h"
#include "runs.h"

void turn_in_free(struct turn_in *in)
{
    json_object_put(in->body);
    json_object_put(in->req.history);
    json_object_put(in->req.client_tools);
    json_object_put(in->req.tool_results);
    json_object_put(in->req.input_content);
    json_object_put(in->req.settings);
    json_object_put(in->req.metadata);
    free(in->input);
    free(in->continued);
}

int turn_in_sid(json_object *o, const char *key, const char *param, const char **out,
                struct svc_err *err)
{
    if (http_field_str(o, key, param, false, out, err) == 0) {
        if (!*out || svc_layout_id_check(*out, err) == 0)
            return 0;
        snprintf(err->param, sizeof err->param, "%s", param ? param : key); /* as sent */
        return -1;
    }
    if (json_object_is_type(json_object_object_get(o, key), json_type_string))
        return svc_err_setp(err, SVC_E_INVALID_SESSION_ID, param ? param : key,
                            "invalid session id");
    return -1;
}

int turn_in_conversation(json_object *b, const char **out, struct svc_err *err)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(b, "conversation", &v) || !v)
        return 0;
    bool obj = json_object_is_type(v, json_type_object);
    if (obj ? http_field_str(v, "id", "conversation.id", true, out, err) < 0
            : turn_in_text(v, "conversation", err) < 0)
        return -1;
    if (!obj)
        *out = json_object_get_string(v);
    if (svc_layout_id_check(*out, err) < 0) { /* it names session_id, which was not sent */
        snprintf(err->param, sizeof err->param, "%s", obj ? "conversation.id" : "conversation");
        return -1;
    }
    return 0;
}

struct svc_run_request turn_in_request(const struct turn_in *in)
{
    struct svc_run_request req = in->req;
    req.input = in->input;
    return req;
}

json_object *turn_svc_block(const char *run_id, json_object *events)
{
    json_object *svc = svc_json_new_obj("schema_version", "2.0", "run_id", run_id, NULL);
    svc_json_set(svc, "events", events ? svc_json_copy(events) : json_object_new_array());
    return svc;
}

/* Wait (at most 5 s) for run_id's record to say it ended: its end event comes a moment
 * before. */
static void wait_recorded(const struct svc_config *cfg, const char *run_id)
{
    double until = svc_time_monotonic() + 5.0;
    while (svc_time_monotonic() < until) {
        json_object *rec = NULL;
        bool running = svc_runs_get(cfg, run_id, &rec, NULL) == 0 &&
                       strcmp(svc_json_str(rec, "status", ""), "running") == 0;
        json_object_put(rec);
        if (!running)
            return;
        if (svc_runs_wait(cfg, run_id, 100) < 0)
            usleep(20 * 1000);
    }
}

int turn_follow(struct http_req *r, const char *run_id, long cursor,
                int (*each)(void *ctx, json_object *ev), void *ctx, struct svc_err *err)
{
    for (;;) {
        json_object *events = NULL;
        bool finished = false, ended = false;
        long next = cursor;
        if (svc_runs_events(r->cfg, run_id, cursor, &events, &next, &finished, err) < 0)
            return -1;
        size_t n = json_object_array_length(events);
        int rc = 0;
        for (size_t i = 0; i < n && !ended && rc == 0; i++) {
            json_object *ev = json_object_array_get_idx(events, i);
            const char *type = svc_json_str(ev, "type", "");
            ended = strcmp(type, "done") == 0 || strcmp(type, "error") == 0;
            if (ended && !finished)
                wait_recorded(r->cfg, run_id);
            rc = each(ctx, ev);
        }
        json_object_put(events);
        cursor = next;
        if (rc < 0 || ended || (finished && n == 0))
            return 0;
        if (finished)
            continue; /* read what was appended before the end was recorded */
        if (svc_runs_wait(r->cfg, run_id, 1000) < 0) /* inotify, else a short sleep */
            usleep(200 * 1000);
        if (svc_time_monotonic() - r->last_write >= http_ping_after() && http_sse_ping(r) < 0)
            return 0;
    }
}

/* ---- generation settings (SPEC 15): honoured, passed on to the model, or refused ---- */

enum gkind {
    G_SVC,    /* read by the handler itself */
    G_NUM,    /* a number in [min, max], passed on */
    G_INT,    /* an integer in [min, max], passed on */
    G_BOOL,   /* passed on */
    G_STR,    /* passed on */
    G_OBJ,    /* passed on */
    G_STOP,   /* a string or at most 4 strings, passed on */
    G_REFUSE, /* svc cannot honour it */
};

struct gfield {
    const char *name;
    unsigned apis; /* TURN_CHAT, TURN_RESP */
    enum gkind kind;
    double min, max;
};

#define BOTH (TURN_CHAT | TURN_RESP)
static const struct gfield gfields[] = {
    {"model", BOTH, G_SVC, 0, 0},
    {"messages", TURN_CHAT, G_SVC, 0, 0},
    {"message", TURN_CHAT, G_SVC, 0, 0},
    {"input", TURN_RESP, G_SVC, 0, 0},
    {"instructions", TURN_RESP, G_SVC, 0, 0},
    {"session_id", BOTH, G_SVC, 0, 0},
    {"metadata", BOTH, G_SVC, 0, 0},
    {"stream", BOTH, G_SVC, 0, 0},
    {"stream_options", BOTH, G_SVC, 0, 0},
    {"store", BOTH, G_SVC, 0, 0},
    {"tools", BOTH, G_SVC, 0, 0},
    {"tool_choice", BOTH, G_SVC, 0, 0},
    {"temperature", BOTH, G_SVC, 0, 0},
    {"max_tokens", TURN_CHAT, G_SVC, 0, 0},
    {"max_completion_tokens", TURN_CHAT, G_SVC, 0, 0},
    {"max_output_tokens", TURN_RESP, G_SVC, 0, 0},
    {"previous_response_id", TURN_RESP, G_SVC, 0, 0},
    {"conversation", TURN_RESP, G_SVC, 0, 0},
    {"background", TURN_RESP, G_SVC, 0, 0},
    {"truncation", TURN_RESP, G_SVC, 0, 0},
    {"n", TURN_CHAT, G_SVC, 0, 0},
    {"modalities", TURN_CHAT, G_SVC, 0, 0},
    {"response_format", TURN_CHAT, G_SVC, 0, 0},
    {"text", TURN_RESP, G_SVC, 0, 0},
    {"reasoning", TURN_RESP, G_SVC, 0, 0},
    {"include", TURN_RESP, G_SVC, 0, 0},
    {"user", BOTH, G_STR, 0, 0}, /* read by the handler and passed on */
    {"top_p", BOTH, G_NUM, 0, 1},
    {"seed", BOTH, G_INT, (double)INT64_MIN, (double)INT64_MAX},
    {"presence_penalty", BOTH, G_NUM, -2, 2},
    {"frequency_penalty", BOTH, G_NUM, -2, 2},
    {"logit_bias", BOTH, G_OBJ, 0, 0},
    {"logprobs", TURN_CHAT, G_BOOL, 0, 0},
    {"top_logprobs", BOTH, G_INT, 0, 20},
    {"stop", BOTH, G_STOP, 0, 0},
    {"reasoning_effort", TURN_CHAT, G_STR, 0, 0},
    {"verbosity", TURN_CHAT, G_STR, 0, 0},
    {"parallel_tool_calls", BOTH, G_BOOL, 0, 0},
    {"safety_identifier", BOTH, G_STR, 0, 0},
    {"service_tier", BOTH, G_STR, 0, 0},
    {"prompt_cache_key", BOTH, G_STR, 0, 0},
    {"prediction", TURN_CHAT, G_OBJ, 0, 0},
    {"audio", TURN_CHAT, G_REFUSE, 0, 0},
    {"web_search_options", TURN_CHAT, G_REFUSE, 0, 0},
    {"functions", TURN_CHAT, G_REFUSE, 0, 0},
    {"function_call", TURN_CHAT, G_REFUSE, 0, 0},
    {"prompt", TURN_RESP, G_REFUSE, 0, 0},
    {"max_tool_calls", TURN_RESP, G_REFUSE, 0, 0},
    {"context_management", TURN_RESP, G_SVC, 0, 0},
};
#undef BOTH

static const struct gfield *gfield_of(const char *name, unsigned api)
{
    for (size_t i = 0; i < sizeof gfields / sizeof *gfields; i++)
        if ((gfields[i].apis & api) && strcmp(gfields[i].name, name) == 0)
            return &gfields[i];
    return NULL;
}

/* One passed-on field (v, of body b) checked against its kind. */
static int gfield_check(const struct gfield *f, json_object *b, json_object *v, struct svc_err *err)
{
    const char *n = f->name;
    double x = json_object_get_double(v);
    bool set = false, flag = false;
    int64_t whole = 0;
    json_object *o = NULL;
    switch (f->kind) {
    case G_NUM:
    case G_INT:
        if ((f->kind == G_INT ? http_field_int_opt(b, n, NULL, &set, &whole, err)
                              : http_field_number_opt(b, n, NULL, &set, &x, err)) < 0)
            return -1;
        if (x < f->min || x > f->max)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, n, "'%s' must be between %g and %g", n,
                                f->min, f->max);
        return 0;
    case G_BOOL:
        return http_field_bool(b, n, NULL, false, &flag, err);
    case G_STR:
        return json_object_is_type(v, json_type_string)
                   ? 0
                   : svc_err_setp(err, SVC_E_INVALID_FIELD, n, "'%s' must be a string", n);
    case G_OBJ:
        return http_field_obj(b, n, NULL, false, &o, err);
    case G_STOP: {
        size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 9;
        bool str = json_object_is_type(v, json_type_string), ok = str || len <= 4;
        for (size_t i = 0; ok && !str && i < len; i++)
            ok = json_object_is_type(json_object_array_get_idx(v, i), json_type_string);
        return ok ? 0
                  : svc_err_setp(err, SVC_E_INVALID_FIELD, n,
                                 "'%s' must be a string or a list of at most 4 strings", n);
    }
    case G_REFUSE:
        return svc_err_setp(err, SVC_E_INVALID_FIELD, n, "'%s' is not supported by this service",
                            n);
    case G_SVC:
        break;
    }
    return 0;
}

/* s's response_format in chat's shape ({"type", "json_schema": {name, schema, strict}}) from
 * f, chat's response_format (flat false) or the Responses API's text.format (flat true). */
static int format_of(json_object *f, bool flat, const char *param, json_object *s,
                     struct svc_err *err)
{
    /* chat's response_format: the first two; text.format: the last five; json_schema: 4 */
    static const char *const keys[] = {"json_schema", "type",   "name",
                                       "description", "schema", "strict"};
    const char *type = NULL, *str = NULL;
    char p[48], q[64];
    bool strict = false;
    snprintf(p, sizeof p, "%s.type", param);
    if (!f)
        return 0;
    if (!json_object_is_type(f, json_type_object))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must be an object", param);
    if (http_field_str(f, "type", p, true, &type, err) < 0 ||
        http_known_fields(f, param, keys + flat, flat ? 5 : 2, err) < 0)
        return -1;
    if (strcmp(type, "text") != 0 && strcmp(type, "json_object") != 0 &&
        strcmp(type, "json_schema") != 0)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p,
                            "'%s' must be text, json_object or json_schema", p);
    json_object *js = f, *schema = NULL;
    snprintf(p, sizeof p, flat ? "%s" : "%s.json_schema", param);
    if (strcmp(type, "json_schema") == 0 && !flat &&
        (http_field_obj(f, "json_schema", p, true, &js, err) < 0 ||
         http_known_fields(js, p, keys + 2, 4, err) < 0))
        return -1;
    for (int k = 2; k < 6 && strcmp(type, "json_schema") == 0; k++) { /* name {} was lost */
        snprintf(q, sizeof q, "%s.%s", p, keys[k]);
        if ((k == 4   ? http_field_obj(js, keys[k], q, true, &schema, err)
             : k == 5 ? http_field_bool(js, keys[k], q, false, &strict, err)
                      : http_field_str(js, keys[k], q, false, &str, err)) < 0)
            return -1;
    }
    json_object *out = svc_json_new_obj("type", type, NULL);
    svc_json_set(s, "response_format", out);
    if (strcmp(type, "json_schema") != 0)
        return 0;
    json_object *inner = json_object_new_object();
    for (size_t i = 2; i < 6; i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(js, keys[i], &v))
            svc_json_set(inner, keys[i], json_object_get(v));
    }
    if (!svc_json_str(inner, "name", NULL))
        svc_json_set_str(inner, "name", "response");
    svc_json_set(out, "json_schema", inner);
    return 0;
}

/* The Responses API's text, reasoning and include, in chat's spelling into s. */
static int resp_only(json_object *b, json_object *s, struct svc_err *err)
{
    json_object *text = NULL, *reasoning = NULL, *include = NULL;
    const char *verb = NULL, *effort = NULL, *summary = NULL;
    static const char *const tkeys[] = {"format", "verbosity"}, *const rkeys[] = {"effort",
                                                                                  "summary"};
    if (http_field_obj(b, "text", NULL, false, &text, err) < 0 ||
        http_known_fields(text, "text", tkeys, 2, err) < 0 ||
        http_field_str(text, "verbosity", "text.verbosity", false, &verb, err) < 0 ||
        http_field_obj(b, "reasoning", NULL, false, &reasoning, err) < 0 ||
        http_known_fields(reasoning, "reasoning", rkeys, 2, err) < 0 ||
        http_field_str(reasoning, "effort", "reasoning.effort", false, &effort, err) < 0 ||
        http_field_str(reasoning, "summary", "reasoning.summary", false, &summary, err) < 0 ||
        http_field_arr(b, "include", NULL, false, &include, err) < 0)
        return -1;
    if (summary)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "reasoning.summary",
                            "'reasoning.summary' is not supported: the model server is asked "
                            "through chat completions, which has no reasoning summaries");
    if (format_of(json_object_object_get(text, "format"), true, "text.format", s, err) < 0)
        return -1;
    if (verb)
        svc_json_set_str(s, "verbosity", verb);
    if (effort)
        svc_json_set_str(s, "reasoning_effort", effort);
    static const char *const known[] = {"message.output_text.logprobs",
                                        "reasoning.encrypted_content",
                                        "file_search_call.results",
                                        "web_search_call.results",
                                        "web_search_call.action.sources",
                                        "message.input_image.image_url",
                                        "computer_call_output.output.image_url",
                                        "code_interpreter_call.outputs",
                                        NULL};
    for (size_t i = 0; include && i < json_object_array_length(include); i++) {
        const char *v = json_object_get_string(json_object_array_get_idx(include, i));
        size_t k = 0;
        while (known[k] && !(v && strcmp(v, known[k]) == 0))
            k++;
        char p[32];
        snprintf(p, sizeof p, "include[%zu]", i);
        if (!known[k] ||
            !json_object_is_type(json_object_array_get_idx(include, i), json_type_string))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' is not a known include", p);
        if (k == 0)
            svc_json_set_bool(s, "logprobs", true);
    }
    return 0;
}

/* Chat's n, modalities and response_format into s. */
static int chat_only(json_object *b, json_object *s, struct svc_err *err)
{
    json_object *nv = json_object_object_get(b, "n"), *mods = NULL;
    if (nv && !(json_object_is_type(nv, json_type_int) && json_object_get_int64(nv) == 1))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "n", "'n' must be 1: svc answers one choice");
    if (http_field_arr(b, "modalities", NULL, false, &mods, err) < 0)
        return -1;
    for (size_t i = 0; mods && i < json_object_array_length(mods); i++) {
        json_object *m = json_object_array_get_idx(mods, i); /* [null] killed the worker */
        if (!json_object_is_type(m, json_type_string) || strcmp(json_object_get_string(m), "text"))
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "modalities",
                                "'modalities' may only hold \"text\"");
    }
    return format_of(json_object_object_get(b, "response_format"), false, "response_format", s,
                     err);
}

int turn_in_settings(struct turn_in *in, unsigned api, struct svc_err *err)
{
    json_object *s = json_object_new_object();
    in->req.settings = s;
    json_object_object_foreach(in->body, key, v)
    {
        const struct gfield *f = gfield_of(key, api);
        if (!f)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, key,
                                "'%.64s' is not a field of this request", key);
        if (f->kind == G_SVC || !v)
            continue;
        if (gfield_check(f, in->body, v, err) < 0)
            return -1;
        svc_json_set(s, key, json_object_get(v));
    }
    return api == TURN_CHAT ? chat_only(in->body, s, err) : resp_only(in->body, s, err);
}

/* ---- the request's messages (SPEC 15: the whole list, whatever it ends with) ---- */

static const char *role_at(json_object *msgs, size_t i)
{
    return svc_json_str(json_object_array_get_idx(msgs, i), "role", "");
}

static bool has_text(json_object *msgs, size_t i)
{
    json_object *content = json_object_object_get(json_object_array_get_idx(msgs, i), "content");
    char *text = content ? svc_openai_content_text(content) : NULL;
    bool some = (text && *text) || svc_openai_has_media(content); /* images say something */
    free(text);
    return some;
}

int turn_in_split(struct turn_in *in, json_object *msgs, const char *param, struct svc_err *err)
{
    size_t n = json_object_array_length(msgs), end = n, last = n;
    while (end > 0 && strcmp(role_at(msgs, end - 1), "tool") == 0)
        end--;
    while (last > 0 &&
           (strcmp(role_at(msgs, last - 1), "system") == 0 ||
            strcmp(role_at(msgs, last - 1), "developer") == 0 ||
            (strcmp(role_at(msgs, last - 1), "user") == 0 && !has_text(msgs, last - 1))))
        last--;         /* a trailing user message without text says nothing: left out */
    bool asked = false; /* a conversation begins with someone's input */
    for (size_t i = 0; i < n && !asked; i++)
        asked = strcmp(role_at(msgs, i), "user") == 0 || strcmp(role_at(msgs, i), "tool") == 0;
    if (!asked || (last == 0 && end == n))
        return svc_err_setp(err, SVC_E_MISSING_FIELD, param, "'%s' holds no user message with text",
                            param);
    size_t hist = end; /* messages before the new input */
    if (end < n) {     /* trailing tool results answer the pending calls */
        in->req.tool_results = json_object_new_array();
        for (size_t i = end; i < n; i++) {
            json_object *m = json_object_array_get_idx(msgs, i), *content = NULL;
            json_object_object_get_ex(m, "content", &content);
            char *text = content ? svc_openai_content_text(content) : NULL;
            char p[96];
            snprintf(p, sizeof p, "%s[%zu].tool_call_id", param, i);
            json_object *res =
                svc_json_new_obj("call_id", svc_json_str(m, "tool_call_id", ""), "output",
                                 text ? text : "", "param", svc_json_str(m, "param", p), NULL);
            json_object *approve = NULL; /* an MCP call's approval (SPEC 16) */
            if (json_object_object_get_ex(m, "approve", &approve))
                svc_json_set(res, "approve", json_object_get(approve));
            json_object_array_add(in->req.tool_results, res);
            free(text);
        }
    } else if (strcmp(role_at(msgs, last - 1), "user") == 0) {
        json_object *content =
            json_object_object_get(json_object_array_get_idx(msgs, last - 1), "content");
        in->input = content ? svc_openai_content_text(content) : NULL;
        if (svc_openai_has_media(content)) /* images and files (SPEC 17) */
            in->req.input_content = json_object_get(content);
        else if (!in->input || !*in->input)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, param,
                                "the last user message of '%s' has no text", param);
        hist = last - 1;
    } else {
        in->req.no_input = true; /* ends with the assistant: the model goes on from there */
    }
    in->req.history = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        if (i < hist || (i >= last && i < end && strcmp(role_at(msgs, i), "user") != 0))
            json_object_array_add(in->req.history,
                                  json_object_get(json_object_array_get_idx(msgs, i)));
    return 0;
}

int turn_in_continue(struct turn_in *in, const struct svc_config *cfg, const struct svc_user *user)
{
    if (in->req.session_id || !cfg->sessions.enabled || !cfg->sessions.continue_stateless ||
        !in->req.history || json_object_array_length(in->req.history) == 0)
        return 0;
    char *sid = NULL;
    size_t used = 0;
    struct svc_err e;
    if (svc_session_continued(cfg, user ? user->id : NULL, in->req.history, &sid, &used,
                              &in->req.expect_count, &e) < 0) {
        svc_logf("continue_stateless: no lookup (%s): a new session", e.message);
        return 0;
    }
    if (!sid)
        return 0;
    json_object *rest = json_object_new_array();
    for (size_t i = used; i < json_object_array_length(in->req.history); i++)
        json_object_array_add(rest, json_object_get(json_object_array_get_idx(in->req.history, i)));
    json_object_put(in->req.history);
    in->req.history = rest;
    in->req.append_history = true;
    in->continued = sid;
    in->req.session_id = sid;
    return 1;
}

void turn_in_unfork(struct turn_in *in, const struct svc_config *cfg)
{
    json_object *o = NULL;
    struct svc_err e;
    if (in->continued && in->req.expect_count == 0 && /* 0: a fork (fork.h) */
        svc_session_delete(cfg, in->continued, &o, &e) < 0)
        svc_logf("continue_stateless: the fork %s stays (%s)", in->continued, e.message);
    json_object_put(o);
}

int turn_in_call(const char *name, const char *args, const char *param, struct svc_err *err)
{
    json_object *v = NULL;
    char p[192];
    snprintf(p, sizeof p, "%s.name", param);
    if (name && !*name)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must not be empty", p);
    if (!args || !*args)
        return 0;
    bool ok = svc_json_parse_python(args, strlen(args), &v, NULL) == 0 &&
              json_object_is_type(v, json_type_object);
    json_object_put(v);
    snprintf(p, sizeof p, "%s.arguments", param);
    return ok ? 0
              : svc_err_setp(err, SVC_E_INVALID_FIELD, p, "'%s' must be a JSON object's text", p);
}

int turn_in_text(json_object *v, const char *param, struct svc_err *err)
{
    if (!json_object_is_type(v, json_type_string))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must be a string", param);
    if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
        return svc_err_setp(err, SVC_E_INVALID_FIELD, param, "'%s' must not contain NUL", param);
    return 0;
}
