#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmgr.h"
#include "ctools.h"
#include "jsonx.h"
#include "metrics.h"
#include "model_openai.h"
#include "openai.h"
#include "parts.h"
#include "schema.h"
#include "util.h"

static int64_t tokens_of(size_t chars)
{
    return (int64_t)((chars + 3) / 4);
}

/* The prompt's size in tokens by the 4-characters rule (system prompt and window). */
static int64_t prompt_estimate(const struct svc_model_call *call)
{
    size_t sys = call->system_prompt ? strlen(call->system_prompt) : 0;
    return tokens_of(sys + svc_native_chars(call->messages));
}

/* The newest toolResult of msg (borrowed), or NULL. */
static json_object *last_tool_result(json_object *msg)
{
    json_object *content = svc_json_arr(msg, "content");
    for (size_t i = content ? json_object_array_length(content) : 0; i > 0; i--) {
        json_object *tr = svc_json_obj(json_object_array_get_idx(content, i - 1), "toolResult");
        if (tr)
            return tr;
    }
    return NULL;
}

static const char *tool_name_for(json_object *messages, const char *tool_use_id)
{
    for (size_t i = json_object_array_length(messages); i > 0; i--) {
        json_object *content = svc_json_arr(json_object_array_get_idx(messages, i - 1), "content");
        for (size_t k = 0; content && k < json_object_array_length(content); k++) {
            json_object *tu = svc_json_obj(json_object_array_get_idx(content, k), "toolUse");
            if (tu && strcmp(svc_json_str(tu, "toolUseId", ""), tool_use_id) == 0)
                return svc_json_str(tu, "name", "tool");
        }
    }
    return "tool";
}

/* The end of the word at p with its following spaces: echo streams a word at a time. */
static const char *word_end(const char *p)
{
    p += strcspn(p, " ");
    return p + strspn(p, " ");
}

static int echo_stream(const struct svc_model_call *call, const char *text, long delay_ms,
                       struct svc_model_reply *out, struct svc_err *err)
{
    for (const char *p = text, *e; *p; p = e) {
        e = word_end(p);
        for (long waited = 0; waited < delay_ms; waited += 50) {
            if (call->should_cancel && call->should_cancel(call->ctx))
                return svc_err_set(err, SVC_E_CANCELLED, "run cancelled");
            if (call->on_idle && waited % 1000 == 0 && waited > 0 && call->on_idle(call->ctx))
                return svc_err_set(err, SVC_E_CANCELLED, "client went away");
            svc_sleep_s((delay_ms - waited < 50 ? delay_ms - waited : 50) / 1000.0);
        }
        if (call->should_cancel && call->should_cancel(call->ctx))
            return svc_err_set(err, SVC_E_CANCELLED, "run cancelled");
        char *word = svc_xstrndup(p, (size_t)(e - p));
        int stop = call->on_delta ? call->on_delta(call->ctx, word) : 0;
        out->streamed += strlen(word);
        free(word);
        if (stop)
            return svc_err_set(err, SVC_E_CANCELLED, "client went away");
    }
    return 0;
}

/* SPEC 15, the echo model honouring the request's settings: the answer in the response
 * format asked for (json_schema: a value the schema accepts, its first string the input;
 * json_object: {"echo": answer}), cut before the first stop string, then at max_tokens
 * tokens of 4 characters (on a UTF-8 boundary; finish "length"). */
static void echo_shape(const struct svc_model_call *call, const char *input, char **answer,
                       struct svc_model_reply *out)
{
    json_object *fmt = svc_json_obj(call->settings, "response_format"), *v = NULL;
    const char *type = svc_json_str(fmt, "type", "text");
    if (strcmp(type, "text") != 0) {
        json_object *o = strcmp(type, "json_schema") == 0
                             ? svc_schema_example(
                                   svc_json_obj(svc_json_obj(fmt, "json_schema"), "schema"), input)
                             : svc_parts_wrap("echo", json_object_new_string(*answer));
        free(*answer);
        *answer = o ? svc_json_dump_compact(o) : svc_xstrdup("null");
        json_object_put(o);
    }
    json_object_object_get_ex(call->settings, "stop", &v);
    size_t nstop = json_object_is_type(v, json_type_array) ? json_object_array_length(v)
                   : v                                     ? 1
                                                           : 0;
    for (size_t i = 0; i < nstop; i++) {
        const char *stop = json_object_get_string(
            json_object_is_type(v, json_type_array) ? json_object_array_get_idx(v, i) : v);
        char *at = stop && *stop ? strstr(*answer, stop) : NULL;
        if (at)
            *at = '\0';
    }
    size_t len = strlen(*answer);
    if (call->has_max_tokens && call->max_tokens >= 0 && (int64_t)len > call->max_tokens * 4) {
        len = (size_t)call->max_tokens * 4;
        while (len > 0 && ((unsigned char)(*answer)[len] & 0xC0) == 0x80)
            len--;
        (*answer)[len] = '\0';
        snprintf(out->finish_reason, sizeof out->finish_reason, "length");
    }
}

/* logprobs asked for: one entry a streamed word, each as likely as can be (logprob 0). */
static json_object *echo_logprobs(const struct svc_model_call *call, const char *text)
{
    if (!svc_json_bool(call->settings, "logprobs", false))
        return NULL;
    bool top = svc_json_int(call->settings, "top_logprobs", 0) > 0;
    json_object *out = json_object_new_array();
    for (const char *p = text, *e; *p; p = e) {
        e = word_end(p);
        json_object *lp = json_object_new_object(), *bytes = json_object_new_array();
        for (const char *b = p; b < e; b++)
            json_object_array_add(bytes, json_object_new_int((unsigned char)*b));
        svc_json_set(lp, "token", json_object_new_string_len(p, (int)(e - p)));
        svc_json_set(lp, "logprob", json_object_new_double(0));
        svc_json_set(lp, "bytes", bytes);
        json_object *tops = json_object_new_array();
        if (top)
            json_object_array_add(tops, svc_json_copy(lp));
        svc_json_set(lp, "top_logprobs", tops);
        json_object_array_add(out, lp);
    }
    return out;
}

/* The tool the echo model calls, or NULL: "/tool <name> <json>" (its input: the JSON
 * object, else {}), or a tool_choice that names one of the tools offered or is "required"
 * (the first client tool): its input then what its parameters' schema accepts (schema.h),
 * so that a client forcing a function for structured output gets one offline. */
static char *echo_tool_asked(const struct svc_model_call *call, const char *text,
                             json_object **input)
{
    const char *choice = call->tool_choice;
    *input = NULL;
    if (choice && strcmp(choice, "none") == 0)
        return NULL;
    if (strncmp(text, "/tool ", 6) == 0) {
        const char *name = text + 6 + strspn(text + 6, " ");
        *input = svc_openai_args(word_end(name));
        return svc_xstrndup(name, strcspn(name, " "));
    }
    if (!choice || strcmp(choice, "auto") == 0)
        return NULL;
    bool any = strcmp(choice, "required") == 0;
    for (size_t i = 0; call->tools && i < json_object_array_length(call->tools); i++) {
        json_object *t = json_object_array_get_idx(call->tools, i);
        const char *name = svc_json_str(t, "name", "");
        if (any ? svc_ctools_named(call->client_tools, name) : strcmp(name, choice) == 0) {
            *input = svc_schema_example(svc_json_obj(t, "parameters"), text);
            if (!json_object_is_type(*input, json_type_object)) {
                json_object_put(*input);
                *input = json_object_new_object();
            }
            return svc_xstrdup(name);
        }
    }
    return NULL;
}

static int echo_invoke(const struct svc_model_call *call, struct svc_model_reply *out,
                       struct svc_err *err)
{
    json_object *msgs = call->messages;
    size_t n = json_object_array_length(msgs);
    json_object *last = n ? json_object_array_get_idx(msgs, n - 1) : NULL;
    json_object *tr = last ? last_tool_result(last) : NULL;
    char *input = last ? svc_native_text(last) : svc_xstrdup("");
    char *answer = NULL, *tname = NULL;
    json_object *input_obj = NULL;
    long delay = 0;
    int rc = -1;
    out->tool_uses = json_object_new_array();
    const char *text = input;
    if (strncmp(text, "/slow ", 6) == 0) {
        char *end;
        delay = strtol(text + 6, &end, 10);
        delay = delay < 0 ? 0 : delay > 10000 ? 10000 : delay;
        text = *end == ' ' ? end + 1 : end;
    }
    if (svc_cm_is_request(call->system_prompt)) {
        answer = svc_cm_echo_summary(msgs); /* SPEC 17: deterministic, offline */
    } else if (tr) {
        char *res = svc_native_text(tr); /* its text items */
        const char *status = svc_json_str(tr, "status", "success");
        const char *used = tool_name_for(msgs, svc_json_str(tr, "toolUseId", ""));
        bool client = svc_ctools_named(call->client_tools, used);
        svc_xasprintf(&answer, "%s %s %s%s %s", client ? "Echo: tool" : "Tool", used,
                      strcmp(status, "success") == 0 ? "returned" : "failed", client ? "" : ":",
                      res);
        free(res);
    } else if ((tname = echo_tool_asked(call, text, &input_obj)) != NULL) {
        char id[32] = "call_";
        svc_random_hex(id + 5, 12);
        json_object *tu = svc_json_new_obj("toolUseId", id, "name", tname, NULL);
        svc_json_set(tu, "input", input_obj);
        json_object_array_add(out->tool_uses, tu);
        free(tname);
        out->text = svc_xstrdup("");
        snprintf(out->finish_reason, sizeof out->finish_reason, "tool_calls");
        out->prompt_tokens = prompt_estimate(call);
        out->completion_tokens = 1;
        rc = 0;
        goto done;
    } else {
        char *att = last ? svc_parts_describe(last) : NULL; /* SPEC 17 */
        svc_xasprintf(&answer, "Echo: %s (I was given %zu earlier messages.)%s%s%s", text,
                      n > 0 ? n - 1 : 0, att ? " (Attached: " : "", att ? att : "",
                      att ? ".)" : "");
        free(att);
    }
    snprintf(out->finish_reason, sizeof out->finish_reason, "stop");
    echo_shape(call, tr ? answer : text, &answer, out);
    if (echo_stream(call, answer, delay, out, err) != 0)
        goto done;
    out->logprobs = echo_logprobs(call, answer);
    out->text = answer;
    answer = NULL;
    out->prompt_tokens = prompt_estimate(call);
    out->completion_tokens = tokens_of(strlen(out->text));
    rc = 0;
done:
    free(answer);
    free(input);
    return rc;
}

/* The window without the messages redacted to nothing (deleted conversation items, which
 * leave the model's context): a new array of borrowed messages, or NULL when none is. */
static json_object *without_erased(json_object *msgs)
{
    size_t n = msgs ? json_object_array_length(msgs) : 0, i = 0;
    while (i < n && !svc_native_erased(json_object_array_get_idx(msgs, i)))
        i++;
    if (i == n)
        return NULL;
    json_object *kept = json_object_new_array();
    for (i = 0; i < n; i++)
        if (!svc_native_erased(json_object_array_get_idx(msgs, i)))
            json_object_array_add(kept, json_object_get(json_object_array_get_idx(msgs, i)));
    return kept;
}

int svc_model_invoke(const struct svc_model_call *call, struct svc_model_reply *out,
                     struct svc_err *err)
{
    memset(out, 0, sizeof *out);
    double t0 = svc_time_monotonic();
    struct svc_model_call c = *call;
    json_object *kept = without_erased(call->messages);
    if (kept)
        c.messages = kept;
    enum svc_model_provider p = call->cfg->model.provider;
    int rc = p == SVC_MODEL_ECHO     ? echo_invoke(&c, out, err)
             : p == SVC_MODEL_OPENAI ? svc_model_openai_invoke(&c, out, err)
                                     : svc_err_set(err, SVC_E_CONFIG, "unknown model provider");
    json_object_put(kept);
    out->latency_ms = (int64_t)((svc_time_monotonic() - t0) * 1000);
    svc_metrics_model(svc_time_monotonic() - t0, rc == 0 || !err ? SVC_OK : err->code);
    if (rc != 0) {
        svc_model_reply_free(out);
        out->prompt_tokens = out->completion_tokens = 0;
        if (err && (err->code == SVC_E_CANCELLED || err->code == SVC_E_RUN_TIMEOUT) &&
            out->streamed > 0) {
            /* cut short after producing text: what it used, by the 4-characters rule */
            out->prompt_tokens = prompt_estimate(call);
            out->completion_tokens = tokens_of(out->streamed);
        }
    }
    return rc;
}

void svc_model_reply_free(struct svc_model_reply *r)
{
    free(r->text);
    r->text = NULL;
    json_object_put(r->tool_uses);
    r->tool_uses = NULL;
    json_object_put(r->logprobs);
    r->logprobs = NULL;
}
