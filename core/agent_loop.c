/* agent_loop: the agent loop of a run (SPEC 3 step 3): the sliding window, the model
 * request built from it, model calls, tool calls and the run's events. Its state and
 * contract are in runstate.h; the lifecycle around it is run.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmgr.h"
#include "ctools.h"
#include "jsonx.h"
#include "mcp.h"
#include "memory.h"
#include "model.h"
#include "openai.h"
#include "parts.h"
#include "runstate.h"
#include "tools.h"
#include "util.h"

/* ---- events ---- */

json_object *svc_event_new(const char *run_id, const char *sid, int64_t seq, const char *type)
{
    char now[SVC_TIME_LEN];
    json_object *ev = svc_json_new_obj("type", type, "run_id", run_id, NULL);
    svc_json_set_int(ev, "seq", seq);
    svc_json_set_str(ev, "session_id", sid);
    svc_json_set_str(ev, "schema_version", "2.0");
    svc_json_set_str(ev, "timestamp", svc_time_now_iso(now));
    return ev;
}

static json_object *loop_event_new(struct svc_loop *loop, const char *type)
{
    return svc_event_new(loop->run_id, loop->sid, ++loop->seq, type);
}

/* Record the event, hand it to the sink; returns nonzero when the sink wants to cancel. */
static int loop_event_emit(struct svc_loop *loop, json_object *ev)
{
    json_object_array_add(loop->events, ev);
    if (loop->sink && loop->sink->on_event && loop->sink->on_event(loop->sink->ctx, ev)) {
        loop->cancel = loop->cancel ? loop->cancel : 1;
        return 1;
    }
    return 0;
}

/* ---- cancellation ---- */

static int loop_should_cancel(void *ctx)
{
    struct svc_loop *loop = ctx;
    if (loop->cancel)
        return 1;
    if (loop->sink && loop->sink->should_cancel && loop->sink->should_cancel(loop->sink->ctx))
        loop->cancel = 1;
    else if (loop->cfg->server.run_timeout_s > 0 &&
             svc_time_monotonic() - loop->started_mono > loop->cfg->server.run_timeout_s)
        loop->cancel = 2;
    return loop->cancel != 0;
}

static int loop_on_idle(void *ctx)
{
    struct svc_loop *loop = ctx;
    if (loop->sink && loop->sink->on_idle && loop->sink->on_idle(loop->sink->ctx))
        loop->cancel = loop->cancel ? loop->cancel : 1;
    return loop_should_cancel(loop);
}

static int loop_on_delta(void *ctx, const char *text)
{
    struct svc_loop *loop = ctx;
    svc_buf_adds(&loop->content, text);
    json_object *ev = loop_event_new(loop, "delta");
    svc_json_set_str(ev, "text", text);
    return loop_event_emit(loop, ev) || loop_should_cancel(loop);
}

static void loop_on_retry(void *ctx, int attempt, int max_attempts, const char *text)
{
    struct svc_loop *loop = ctx;
    json_object *ev = loop_event_new(loop, "retry");
    svc_json_set_int(ev, "attempt", attempt);
    svc_json_set_int(ev, "max_attempts", max_attempts);
    svc_json_set_str(ev, "text", text);
    loop_event_emit(loop, ev);
}

/* ---- helpers ---- */

static bool window_start_ok(json_object *msgs, size_t i)
{
    json_object *m = json_object_array_get_idx(msgs, i);
    return strcmp(svc_json_str(m, "role", ""), "assistant") != 0 &&
           !svc_native_has(m, "toolResult");
}

void svc_loop_manager(struct svc_loop *loop, json_object *agent)
{
    loop->summarizing = agent ? svc_cm_summarizing(agent)
                              : loop->cfg->agent.conversation_manager == SVC_CM_SUMMARIZING;
    json_object *summary = agent ? svc_cm_summary(agent) : NULL;
    if (!summary)
        return;
    json_object *msgs = json_object_new_array();
    json_object_array_add(msgs, json_object_get(summary));
    for (size_t i = 0; i < json_object_array_length(loop->msgs); i++)
        json_object_array_add(msgs, json_object_get(json_object_array_get_idx(loop->msgs, i)));
    json_object_put(loop->msgs);
    loop->msgs = msgs;
    loop->summary = json_object_get(summary);
}

/* SPEC 17, Strands' SummarizingConversationManager: the window's oldest messages (its summary
 * among them) summarised by the model into one user message that heads the window from then
 * on; removed_message_count counts the stored messages it stands for. When none may go (the
 * newest preserve_recent_messages stay), the window stays whole. */
static int loop_summarize(struct svc_loop *loop, bool all, struct svc_err *err)
{
    size_t n = svc_cm_split(loop->cfg, loop->msgs, all);
    if (n == 0)
        return 0;
    json_object *req = svc_cm_request(loop->msgs, n);
    struct svc_model_call call = {
        .cfg = loop->cfg,
        .system_prompt = svc_cm_prompt(),
        .messages = req,
        .should_cancel = loop_should_cancel,
        .on_idle = loop_on_idle,
        .on_retry = loop_on_retry,
        .ctx = loop,
    };
    struct svc_model_reply reply;
    int rc = svc_model_invoke(&call, &reply, err);
    json_object_put(req);
    loop->prompt_tokens += reply.prompt_tokens;
    loop->completion_tokens += reply.completion_tokens;
    if (rc != 0)
        return -1;
    json_object *summary = svc_parts_message("user", svc_parts_text(reply.text ? reply.text : ""));
    svc_model_reply_free(&reply);
    loop->removed += (int64_t)n - (loop->summary ? 1 : 0);
    json_object_array_del_idx(loop->msgs, 1, n - 1);
    json_object_array_put_idx(loop->msgs, 0, json_object_get(summary));
    json_object_put(loop->summary);
    loop->summary = summary;
    loop->summary_new = true;
    json_object *ev = loop_event_new(loop, "context_compacted");
    svc_json_set_int(ev, "removed_message_count", loop->removed);
    svc_json_set_int(ev, "summarized_messages", (int64_t)n);
    loop_event_emit(loop, ev);
    return 0;
}

/* SPEC 15 context_management: past the request's threshold, every message but the newest
 * preserve_recent_messages is summarised, as /responses/compact does. */
static int loop_compact(struct svc_loop *loop, struct svc_err *err)
{
    if (loop->compact_threshold <= 0 || /* the window's tokens, 4 characters a token */
        (int64_t)((svc_native_chars(loop->msgs) + 3) / 4) <= loop->compact_threshold)
        return 0;
    return loop_summarize(loop, true, err);
}

/* Slide the window so that at most window_size messages stay, starting at a user message
 * that is not a tool result, or summarise its oldest ones (loop_summarize). Emits
 * context_compacted when it moved; with truncation disabled it may not move
 * (SVC_E_CONTEXT_LENGTH). */
static int loop_apply_window(struct svc_loop *loop, struct svc_err *err)
{
    size_t count = json_object_array_length(loop->msgs);
    size_t win = (size_t)loop->cfg->agent.window_size;
    if (count <= win)
        return 0;
    if (loop->no_truncation)
        return svc_err_setp(err, SVC_E_CONTEXT_LENGTH, "truncation",
                            "the run grew past the window of %zu messages and 'truncation' is "
                            "disabled",
                            win);
    for (size_t left = count; loop->summarizing && left > win;) {
        if (loop_summarize(loop, false, err) != 0)
            return -1;
        size_t now = json_object_array_length(loop->msgs);
        if (now >= left) /* nothing more may go */
            return 0;
        left = now;
    }
    if (loop->summarizing)
        return 0;
    /* the first valid start at or after count - win; failing that, the nearest one before
     * it (a window a little larger than asked beats one that starts mid tool exchange) */
    size_t trim = count - win;
    while (trim < count && !window_start_ok(loop->msgs, trim))
        trim++;
    if (trim == count) {
        trim = count - win;
        while (trim > 0 && !window_start_ok(loop->msgs, trim))
            trim--;
    }
    if (trim == 0)
        return 0;
    json_object_array_del_idx(loop->msgs, 0, trim);
    loop->removed += (int64_t)trim;
    json_object *ev = loop_event_new(loop, "context_compacted");
    svc_json_set_int(ev, "removed_message_count", loop->removed);
    loop_event_emit(loop, ev);
    return 0;
}

/* The messages the model is given: the window without a leading orphan toolResult, and with
 * a synthetic error result after any toolUse that has none. New reference. */
static json_object *loop_model_request(struct svc_loop *loop)
{
    json_object *req = json_object_new_array();
    size_t n = json_object_array_length(loop->msgs), start = 0;
    while (start < n && svc_native_has(json_object_array_get_idx(loop->msgs, start), "toolResult"))
        start++;
    for (size_t i = start; i < n; i++) {
        json_object *m = json_object_array_get_idx(loop->msgs, i);
        json_object_array_add(req, json_object_get(m));
        if (strcmp(svc_json_str(m, "role", ""), "assistant") != 0 || !svc_native_has(m, "toolUse"))
            continue;
        /* the last: the tool calls of this very run, about to be answered */
        if (i + 1 == n ||
            svc_native_has(json_object_array_get_idx(loop->msgs, i + 1), "toolResult"))
            continue;
        json_object *calls = svc_ctools_pending(m);
        json_object_array_add(req, svc_ctools_interrupted(calls));
        json_object_put(calls);
    }
    return req;
}

json_object *svc_loop_token_state(const struct svc_loop *loop, json_object *prev)
{
    json_object *ts = json_object_new_object();
    int64_t total = loop->prompt_tokens + loop->completion_tokens;
    svc_json_set_int(ts, "last_prompt_tokens", loop->prompt_tokens);
    svc_json_set_int(ts, "last_completion_tokens", loop->completion_tokens);
    svc_json_set_int(ts, "last_total_tokens", total);
    svc_json_set_int(ts, "cumulative_prompt_tokens",
                     svc_json_int(prev, "cumulative_prompt_tokens", 0) + loop->prompt_tokens);
    svc_json_set_int(ts, "cumulative_completion_tokens",
                     svc_json_int(prev, "cumulative_completion_tokens", 0) +
                         loop->completion_tokens);
    svc_json_set_int(ts, "cumulative_total_tokens",
                     svc_json_int(prev, "cumulative_total_tokens", 0) + total);
    int64_t cw = loop->cfg->model.context_window;
    svc_json_set_int(ts, "model_context_window", cw);
    double ratio = cw > 0 ? (double)loop->prompt_tokens / (double)cw : 0.0;
    svc_json_set(ts, "utilization_ratio", json_object_new_double(ratio));
    svc_json_set_int(ts, "loop_count", loop->loop_count);
    svc_json_set_int(ts, "removed_message_count", loop->removed);
    return ts;
}

/* ---- the agent loop ---- */

/* The run stores msg as its next message (loop->store), then the window keeps it. */
static int loop_store(struct svc_loop *loop, json_object *msg, struct svc_err *err)
{
    if (loop->store && loop->store(loop->store_ctx, msg, err) != 0)
        return -1;
    json_object_array_add(loop->msgs, json_object_get(msg));
    return 0;
}

/* ---- the request's remote MCP servers (SPEC 16) ---- */

/* The request's server a tool name ("<label>__<tool>") belongs to, or NULL; *tool is the
 * bare tool name. */
static struct svc_loop_mcp *loop_mcp_of(struct svc_loop *loop, const char *name, const char **tool)
{
    const char *sep = strstr(name, "__");
    for (size_t i = 0; sep && i < loop->nmcp; i++)
        if (strlen(loop->mcp[i].label) == (size_t)(sep - name) &&
            strncmp(loop->mcp[i].label, name, (size_t)(sep - name)) == 0) {
            *tool = sep + 2;
            return &loop->mcp[i];
        }
    return NULL;
}

/* Whether the request lets the model see tool of m (its allowed tools). */
static bool loop_mcp_allows(const struct svc_loop_mcp *m, const char *tool)
{
    json_object *allowed = svc_json_arr(m->spec, "allowed");
    return !allowed || svc_ctools_named(allowed, tool);
}

/* Whether a call of name waits for the client's approval (require_approval). */
static bool loop_needs_approval(struct svc_loop *loop, const char *name)
{
    const char *tool = NULL;
    struct svc_loop_mcp *m = loop_mcp_of(loop, name, &tool);
    json_object *ap = m ? svc_json_obj(m->spec, "approval") : NULL;
    if (!m || svc_ctools_named(svc_json_arr(ap, "never"), tool))
        return false;
    return svc_ctools_named(svc_json_arr(ap, "always"), tool) ||
           strcmp(svc_json_str(ap, "default", "always"), "never") != 0;
}

/* Connect and list each server of the request; an mcp_list_tools event for those the
 * conversation has not listed yet (with the error when the listing failed). */
static void loop_mcp_list(struct svc_loop *loop)
{
    for (size_t i = 0; i < loop->nmcp; i++) {
        struct svc_loop_mcp *m = &loop->mcp[i];
        json_object *tools = NULL;
        struct svc_err err;
        svc_err_clear(&err);
        if (m->conn && svc_mcp_list(m->conn, &tools, &err) == 0)
            m->tools = json_object_get(tools);
        else if (!m->conn)
            svc_err_set(&err, SVC_E_INVALID_FIELD, "no MCP server %s", m->label);
        if (svc_json_bool(m->spec, "listed", false))
            continue;
        json_object *shown = json_object_new_array();
        for (size_t k = 0; m->tools && k < json_object_array_length(m->tools); k++) {
            json_object *t = json_object_array_get_idx(m->tools, k), *row;
            if (!loop_mcp_allows(m, svc_json_str(t, "name", "")))
                continue;
            json_object_array_add(shown, row = json_object_new_object());
            svc_json_set_str(row, "name", svc_json_str(t, "name", ""));
            svc_json_set_str(row, "description", svc_json_str(t, "description", NULL));
            svc_json_set(row, "input_schema", json_object_get(svc_json_obj(t, "inputSchema")));
            svc_json_set(row, "annotations", json_object_get(svc_json_obj(t, "annotations")));
        }
        json_object *ev = loop_event_new(loop, "mcp_list_tools");
        svc_json_set_str(ev, "server_label", m->label);
        svc_json_set(ev, "tools", shown);
        svc_json_set_str(ev, "error", m->tools ? NULL : err.message);
        loop_event_emit(loop, ev);
    }
}

/* ---- tool calls ---- */

/* Whether a call of name ends the run: a client tool's (SPEC 12.1), or an MCP call that
 * awaits the client's approval (SPEC 16). */
static bool loop_ends_with(struct svc_loop *loop, const char *name)
{
    return svc_ctools_named(loop->client_tools, name) || loop_needs_approval(loop, name);
}

/* How a call is answered: run here, the client's output, declined, or no result (a client
 * tool or a call awaiting approval that the request did not answer). */
enum tool_kind { TK_RUN, TK_OUTPUT, TK_DECLINED, TK_NONE };

static enum tool_kind loop_tool_kind(struct svc_loop *loop, json_object *tu)
{
    json_object *ans = svc_json_obj(tu, "answer"), *ap = NULL;
    const char *name = svc_json_str(tu, "name", "");
    if (ans && !json_object_object_get_ex(ans, "approve", &ap))
        return TK_OUTPUT;
    if (ans)
        return json_object_get_boolean(ap) ? TK_RUN : TK_DECLINED;
    return loop_ends_with(loop, name) ? TK_NONE : TK_RUN;
}

static void loop_tool_result(struct svc_loop *loop, json_object *tu, enum tool_kind kind,
                             struct svc_tool_result *res)
{
    const char *name = svc_json_str(tu, "name", ""), *tool = NULL;
    json_object *input = json_object_object_get(tu, "input");
    memset(res, 0, sizeof *res);
    struct svc_loop_mcp *m = kind == TK_RUN ? loop_mcp_of(loop, name, &tool) : NULL;
    if (kind == TK_OUTPUT) {
        res->ok = true;
        res->content = svc_xstrdup(svc_json_str(svc_json_obj(tu, "answer"), "output", ""));
    } else if (kind != TK_RUN) {
        res->content =
            svc_xstrdup(kind == TK_DECLINED ? "The call was declined: it was not approved."
                                            : "No result was given.");
    } else if (m && !loop_mcp_allows(m, tool)) {
        svc_xasprintf(&res->content, "unknown tool: %s", name);
    } else if (m && m->remote) {
        svc_mcp_call(m->conn, tool, input, loop_should_cancel, loop, res);
    } else {
        svc_tools_call(loop->cfg, loop->user, name, input, loop_should_cancel, loop, res);
    }
}

/* The tool_start / tool_result events and the trace entry of a call run here. */
static void loop_tool_report(struct svc_loop *loop, json_object *tu,
                             const struct svc_tool_result *res, bool start)
{
    const char *id = svc_json_str(tu, "toolUseId", ""), *name = svc_json_str(tu, "name", "");
    json_object *input = svc_json_obj(tu, "input");
    json_object *ev = loop_event_new(loop, start ? "tool_start" : "tool_result");
    svc_json_set_str(ev, "call_id", id);
    svc_json_set_str(ev, "tool", name);
    if (svc_json_obj(tu, "answer"))
        svc_json_set_bool(ev, "approved", true);
    if (start) {
        svc_json_set(ev, "arguments", input ? svc_json_copy(input) : json_object_new_object());
        loop_event_emit(loop, ev);
        return;
    }
    svc_json_set_bool(ev, "ok", res->ok);
    svc_json_set_str(ev, "content", res->ok ? res->content : NULL);
    svc_json_set_str(ev, "error", res->ok ? NULL : res->content);
    svc_json_set_int(ev, "latency_ms", res->latency_ms);
    svc_json_set_bool(ev, "truncated", res->truncated);
    loop_event_emit(loop, ev);
    json_object *tr = svc_json_new_obj("call_id", id, "tool", name, NULL);
    svc_json_set(tr, "arguments", input ? svc_json_copy(input) : json_object_new_object());
    svc_json_set_bool(tr, "ok", res->ok);
    svc_json_set_int(tr, "latency_ms", res->latency_ms);
    svc_json_set_bool(tr, "truncated", res->truncated);
    svc_json_set_str(tr, "error", res->ok ? NULL : res->content);
    json_object_array_add(loop->tool_trace, tr);
}

/* The toolResult block of a result: its blocks (text when it has none), structuredContent. */
static json_object *loop_result_block(const char *id, const struct svc_tool_result *res)
{
    json_object *trb =
        svc_json_new_obj("toolUseId", id, "status", res->ok ? "success" : "error", NULL);
    json_object *items = res->blocks ? json_object_get(res->blocks) : json_object_new_array();
    if (json_object_array_length(items) == 0)
        json_object_array_add(items, svc_parts_text(res->content ? res->content : ""));
    svc_json_set(trb, "content", items);
    if (res->structured)
        svc_json_set(trb, "structuredContent", json_object_get(res->structured));
    return svc_parts_wrap("toolResult", trb);
}

static int loop_tools(struct svc_loop *loop, json_object *tool_uses, struct svc_err *err)
{
    json_object *content = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(tool_uses); i++) {
        json_object *tu = json_object_array_get_idx(tool_uses, i);
        struct svc_tool_result res;
        enum tool_kind kind = loop_tool_kind(loop, tu);
        if (kind == TK_RUN)
            loop_tool_report(loop, tu, NULL, true);
        loop_tool_result(loop, tu, kind, &res);
        if (kind == TK_RUN) {
            loop_tool_report(loop, tu, &res, false);
            loop->tool_steps++;
        }
        json_object_array_add(content, loop_result_block(svc_json_str(tu, "toolUseId", ""), &res));
        svc_tool_result_free(&res);
    }
    json_object *msg = svc_parts_message("user", content);
    int rc = loop_store(loop, msg, err);
    json_object_put(msg);
    return rc;
}

/* The system prompt of the run's model calls (heap, or NULL for the configured one): the
 * memory recall prompt or the operator's, then the request's own (session.h). */
static char *loop_system_prompt(struct svc_loop *loop)
{
    char *recall = svc_memory_system_prompt(loop->cfg, loop->sid, loop->owner); /* memory.recall */
    if (!loop->request_system)
        return recall;
    const char *base = recall ? recall : loop->cfg->model.system_prompt;
    char *joined = NULL;
    if (base && *base)
        svc_xasprintf(&joined, "%s\n\n%s", base, loop->request_system);
    else
        joined = svc_xstrdup(loop->request_system);
    free(recall);
    return joined;
}

/* The assistant message of a model reply, as Strands stores it (text, toolUse blocks, usage
 * and latency in metadata). New reference. */
static json_object *loop_reply_message(const struct svc_model_reply *reply)
{
    json_object *content = json_object_new_array();
    if (reply->text && *reply->text)
        json_object_array_add(content, svc_parts_text(reply->text));
    for (size_t i = 0; i < json_object_array_length(reply->tool_uses); i++)
        json_object_array_add(
            content, svc_parts_wrap("toolUse",
                                    svc_json_copy(json_object_array_get_idx(reply->tool_uses, i))));
    json_object *msg = svc_parts_message("assistant", content);
    json_object *usage = json_object_new_object();
    svc_json_set_int(usage, "inputTokens", reply->prompt_tokens);
    svc_json_set_int(usage, "outputTokens", reply->completion_tokens);
    svc_json_set_int(usage, "totalTokens", reply->prompt_tokens + reply->completion_tokens);
    json_object *meta = svc_parts_wrap("usage", usage);
    svc_json_set(meta, "metrics",
                 svc_parts_wrap("latencyMs", json_object_new_int64(reply->latency_ms)));
    svc_json_set(msg, "metadata", meta);
    return msg;
}

/* Store the reply's assistant message, keep its OpenAI tool_calls, and emit token_usage. */
static int loop_store_reply(struct svc_loop *loop, const struct svc_model_reply *reply,
                            struct svc_err *err)
{
    json_object *msg = loop_reply_message(reply);
    int src = loop_store(loop, msg, err);
    if (src == 0 && json_object_array_length(reply->tool_uses) > 0) {
        json_object *proj = svc_openai_project(msg);
        json_object *tcs = svc_json_arr(json_object_array_get_idx(proj, 0), "tool_calls");
        for (size_t i = 0; tcs && i < json_object_array_length(tcs); i++)
            json_object_array_add(loop->tool_calls,
                                  json_object_get(json_object_array_get_idx(tcs, i)));
        json_object_put(proj);
    }
    json_object_put(msg);
    if (src != 0)
        return -1;
    json_object *ev = loop_event_new(loop, "token_usage");
    json_object *ts = svc_loop_token_state(loop, loop->prev_tokens); /* the session's */
    svc_json_merge(ev, ts);
    json_object_put(ts);
    loop_event_emit(loop, ev);
    return 0;
}

/* One model call over the current window. 0 with *reply filled (the caller frees it), or
 * -1 with err set and the call's token estimate counted. */
static int loop_call_model(struct svc_loop *loop, const char *system, json_object *tools,
                           struct svc_model_reply *reply, struct svc_err *err)
{
    if (loop_apply_window(loop, err) != 0 || loop_compact(loop, err) != 0) {
        memset(reply, 0, sizeof *reply);
        return -1;
    }
    json_object *ev = loop_event_new(loop, "phase");
    svc_json_set_str(ev, "phase", "model");
    loop_event_emit(loop, ev);
    json_object *req = loop_model_request(loop);
    struct svc_model_call call = {
        .cfg = loop->cfg,
        .system_prompt = system ? system : loop->cfg->model.system_prompt,
        .has_temperature = loop->has_temperature,
        .temperature = loop->temperature,
        .has_max_tokens = loop->has_max_tokens,
        .max_tokens = loop->max_tokens,
        .max_tokens_param = loop->max_tokens_param,
        .settings = loop->settings,
        .messages = req,
        .tools = tools,
        .client_tools = loop->client_names,
        .tool_choice = loop->tool_choice,
        .on_delta = loop_on_delta,
        .should_cancel = loop_should_cancel,
        .on_idle = loop_on_idle,
        .on_retry = loop_on_retry,
        .ctx = loop,
    };
    int mrc = svc_model_invoke(&call, reply, err);
    json_object_put(req);
    loop->prompt_tokens += reply->prompt_tokens; /* a failed call's is its estimate, or 0 */
    loop->completion_tokens += reply->completion_tokens;
    loop->cached_tokens += reply->cached_tokens;
    loop->reasoning_tokens += reply->reasoning_tokens;
    for (size_t i = 0; reply->logprobs && i < json_object_array_length(reply->logprobs); i++) {
        if (!loop->logprobs)
            loop->logprobs = json_object_new_array();
        json_object_array_add(loop->logprobs,
                              json_object_get(json_object_array_get_idx(reply->logprobs, i)));
    }
    if (mrc != 0) {
        if (err && err->code == SVC_E_CANCELLED && loop->cancel == 2)
            svc_err_set(err, SVC_E_RUN_TIMEOUT, "the run took longer than run_timeout_s");
        return -1;
    }
    loop->loop_count++;
    snprintf(loop->finish_reason, sizeof loop->finish_reason, "%s", reply->finish_reason);
    return 0;
}

/* Whether the loop may go on: not past agent.max_tool_iterations, not cancelled. */
static int loop_may_continue(struct svc_loop *loop, int iter, struct svc_err *err)
{
    if (iter > loop->cfg->agent.max_tool_iterations)
        return svc_err_set(err, SVC_E_TOOL_LOOP, "the model kept calling tools past %d iterations",
                           loop->cfg->agent.max_tool_iterations);
    if (loop_should_cancel(loop))
        return svc_err_set(err, loop->cancel == 2 ? SVC_E_RUN_TIMEOUT : SVC_E_CANCELLED,
                           loop->cancel == 2 ? "the run took longer than run_timeout_s"
                                             : "run cancelled");
    return 0;
}

/* A reply with a call that ends the run: its OpenAI tool_calls (the newest of
 * loop->tool_calls) go to the client. Returns whether it does. */
static bool loop_client_calls(struct svc_loop *loop, json_object *tool_uses)
{
    size_t n = json_object_array_length(tool_uses),
           total = json_object_array_length(loop->tool_calls);
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any = any || loop_ends_with(
                         loop, svc_json_str(json_object_array_get_idx(tool_uses, i), "name", ""));
    for (size_t i = total >= n ? total - n : 0; any && i < total; i++) {
        json_object *tc = json_object_array_get_idx(loop->tool_calls, i);
        if (loop_ends_with(loop, svc_json_str(svc_json_obj(tc, "function"), "name", "")))
            json_object_array_add(loop->client_calls, json_object_get(tc));
    }
    if (any)
        snprintf(loop->finish_reason, sizeof loop->finish_reason, "tool_calls");
    return any;
}

/* svc's tools (those of a server the request names as it allows them), the request's
 * remote MCP servers' tools, then its client tools (new reference). */
static json_object *loop_tools_offered(struct svc_loop *loop)
{
    json_object *all = svc_tools_spec(loop->cfg, loop->user), *tools = json_object_new_array();
    const char *tool = NULL;
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        json_object *t = json_object_array_get_idx(all, i);
        struct svc_loop_mcp *m = loop_mcp_of(loop, svc_json_str(t, "name", ""), &tool);
        if (!m || loop_mcp_allows(m, tool))
            json_object_array_add(tools, json_object_get(t));
    }
    json_object_put(all);
    for (size_t i = 0; i < loop->nmcp; i++) {
        struct svc_loop_mcp *m = &loop->mcp[i];
        for (size_t k = 0; m->remote && m->tools && k < json_object_array_length(m->tools); k++) {
            json_object *t = json_object_array_get_idx(m->tools, k), *o;
            char name[128];
            snprintf(name, sizeof name, "%s__%s", m->label, svc_json_str(t, "name", ""));
            if (!loop_mcp_allows(m, svc_json_str(t, "name", "")) || strlen(name) > 64)
                continue;
            json_object_array_add(tools, o = json_object_new_object());
            svc_json_set_str(o, "name", name);
            svc_json_set_str(o, "description", svc_json_str(t, "description", ""));
            svc_json_set(o, "parameters", json_object_get(svc_json_obj(t, "inputSchema")));
        }
    }
    for (size_t i = 0; loop->client_tools && i < json_object_array_length(loop->client_tools); i++)
        json_object_array_add(tools,
                              json_object_get(json_object_array_get_idx(loop->client_tools, i)));
    return tools;
}

json_object *svc_loop_final_event(struct svc_loop *loop, const struct svc_err *failure)
{
    json_object *ev = loop_event_new(loop, failure ? "error" : "done");
    if (!failure) {
        svc_json_set_str(ev, "model_id", loop->model);
        svc_json_set_int(ev, "tool_steps", loop->tool_steps);
    } else {
        svc_json_set_str(ev, "message", failure->message);
        svc_json_set_str(ev, "code", svc_err_name(failure->code));
    }
    json_object_array_add(loop->events, ev);
    return ev;
}

int svc_loop_run(struct svc_loop *loop, struct svc_err *err)
{
    svc_err_clear(err);
    json_object *ev = loop_event_new(loop, "phase");
    svc_json_set_str(ev, "phase", "start");
    loop_event_emit(loop, ev);
    loop_mcp_list(loop);
    json_object *tools = loop_tools_offered(loop);
    char *system = loop_system_prompt(loop);
    int rc = -1;
    /* calls the request answered or approved: their results first (ctools.h) */
    bool go = !loop->resume || loop_tools(loop, loop->resume, err) == 0;
    for (int iter = 0; go && loop_may_continue(loop, iter, err) == 0; iter++) {
        struct svc_model_reply reply;
        if (loop_call_model(loop, system, tools, &reply, err) != 0)
            break;
        int step = loop_store_reply(loop, &reply, err);
        if (step == 0 && (json_object_array_length(reply.tool_uses) == 0 ||
                          loop_client_calls(loop, reply.tool_uses)))
            rc = 0;
        else if (step == 0)
            step = loop_tools(loop, reply.tool_uses, err) == 0 ? 1 : -1;
        svc_model_reply_free(&reply);
        if (step != 1)
            break;
    }
    json_object_put(tools);
    free(system);
    if (rc != 0 && err->code == SVC_OK)
        svc_err_set(err, SVC_E_INTERNAL, "run failed");
    loop->final = svc_loop_final_event(loop, rc == 0 ? NULL : err);
    return rc;
}

/* ---- the loop's life ---- */

/* The request's system prompt (session.h): heap, or NULL when it has none. */
static char *request_system_of(const struct svc_run_request *req)
{
    struct svc_buf b;
    svc_buf_init(&b);
    if (req->instructions && *req->instructions)
        svc_buf_adds(&b, req->instructions);
    size_t n = req->history ? json_object_array_length(req->history) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(req->history, i);
        const char *role = svc_json_str(m, "role", "");
        if (strcmp(role, "system") != 0 && strcmp(role, "developer") != 0)
            continue;
        char *text = svc_openai_content_text(json_object_object_get(m, "content"));
        if (text && *text) {
            if (b.len)
                svc_buf_adds(&b, "\n\n");
            svc_buf_adds(&b, text);
        }
        free(text);
    }
    return b.len ? svc_buf_steal(&b) : (svc_buf_free(&b), NULL);
}

void svc_loop_init(struct svc_loop *loop, const struct svc_config *cfg, const char *run_id,
                   const char *sid, const struct svc_run_request *req)
{
    memset(loop, 0, sizeof *loop); /* loop->content empty */
    loop->cfg = cfg;
    loop->run_id = run_id;
    loop->sid = sid;
    loop->user = req->user ? req->user->id : NULL;
    loop->started_mono = svc_time_monotonic();
    loop->request_system = request_system_of(req);
    loop->no_truncation = req->no_truncation;
    loop->compact_threshold = req->compact_threshold;
    loop->has_temperature = req->has_temperature;
    loop->temperature = req->temperature;
    loop->has_max_tokens = req->has_max_tokens;
    loop->max_tokens = req->max_tokens;
    loop->max_tokens_param = req->max_tokens_param ? svc_xstrdup(req->max_tokens_param) : NULL;
    loop->settings = req->settings ? svc_json_copy(req->settings) : NULL;
    loop->client_tools = req->client_tools ? svc_json_copy(req->client_tools) : NULL;
    loop->client_names = json_object_new_array();
    for (size_t i = 0; loop->client_tools && i < json_object_array_length(loop->client_tools); i++)
        json_object_array_add(loop->client_names,
                              json_object_new_string(svc_json_str(
                                  json_object_array_get_idx(loop->client_tools, i), "name", "")));
    loop->tool_choice = req->tool_choice ? svc_xstrdup(req->tool_choice) : NULL;
    loop->nmcp = req->mcp_tools ? json_object_array_length(req->mcp_tools) : 0;
    loop->mcp = svc_xcalloc(loop->nmcp + 1, sizeof *loop->mcp);
    for (size_t i = 0; i < loop->nmcp; i++) {
        struct svc_loop_mcp *m = &loop->mcp[i];
        m->spec = json_object_array_get_idx(req->mcp_tools, i);
        m->label = svc_json_str(m->spec, "label", "");
        const char *url = svc_json_str(m->spec, "url", NULL);
        m->remote = url != NULL;
        m->conn = url ? svc_mcp_remote_open(m->label, url, svc_json_obj(m->spec, "headers"),
                                            SVC_MCP_REMOTE_TIMEOUT_S)
                      : svc_mcp_configured(cfg, m->label);
    }
    loop->msgs = json_object_new_array();
    loop->events = json_object_new_array();
    loop->tool_trace = json_object_new_array();
    loop->tool_calls = json_object_new_array();
    loop->client_calls = json_object_new_array();
}

void svc_loop_free(struct svc_loop *loop)
{
    free(loop->request_system);
    free(loop->max_tokens_param);
    json_object_put(loop->settings);
    json_object_put(loop->logprobs);
    json_object_put(loop->client_tools);
    json_object_put(loop->client_names);
    free(loop->tool_choice);
    for (size_t i = 0; loop->mcp && i < loop->nmcp; i++) {
        if (loop->mcp[i].remote)
            svc_mcp_remote_close(loop->mcp[i].conn);
        json_object_put(loop->mcp[i].tools);
    }
    free(loop->mcp);
    json_object_put(loop->resume);
    json_object_put(loop->msgs);
    json_object_put(loop->summary);
    json_object_put(loop->prev_tokens);
    json_object_put(loop->events);
    json_object_put(loop->tool_trace);
    json_object_put(loop->tool_calls);
    json_object_put(loop->client_calls);
    svc_buf_free(&loop->content);
}
