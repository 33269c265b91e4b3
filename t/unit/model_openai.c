/* model_openai.t: the openai provider against t/lib/FakeOpenAI.pm (started through perl from
 * the repository root): streamed text and usage, tool calls, plain JSON answers, windows with
 * tool results, cancellation through on_delta / should_cancel / on_idle (also during a retry
 * backoff), idle callbacks while the server is silent, and key redaction. */
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "jsonx.h"
#include "model.h"
#include "model_openai.h"
#include "parts.h"
#include "runstate.h"
#include "tap.h"
#include "util.h"

static char base_url[256];
static long fake_pid;

struct ctx {
    struct svc_buf deltas;
    int ndeltas;
    int stop_after_deltas; /* on_delta returns 1 at this count (0: never) */
    double cancel_at;      /* should_cancel true after this monotonic time (0: never) */
    int nidle;
    int idle_stop; /* on_idle returns 1 */
};

static int on_delta(void *p, const char *t)
{
    struct ctx *c = p;
    svc_buf_adds(&c->deltas, t);
    c->ndeltas++;
    return c->stop_after_deltas && c->ndeltas >= c->stop_after_deltas;
}

static int should_cancel(void *p)
{
    struct ctx *c = p;
    return c->cancel_at > 0 && svc_time_monotonic() >= c->cancel_at;
}

static int on_idle(void *p)
{
    struct ctx *c = p;
    c->nidle++;
    return c->idle_stop;
}

static int load_cfg(struct svc_config *cfg, int max_retries, int timeout_s)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "model:\n  provider: openai\n  name: fake-1\n  base_url: %s\n"
             "  api_key: sk-unit-KEY\n  timeout_s: %d\n  max_retries: %d\n",
             base_url, timeout_s, max_retries);
    struct svc_err err;
    memset(cfg, 0, sizeof *cfg);
    return svc_config_load_buffer(cfg, yaml, strlen(yaml), "unit.yaml", &err);
}

static json_object *window1(const char *text)
{
    json_object *a = json_object_new_array();
    json_object_array_add(a, svc_parts_message("user", svc_parts_text(text)));
    return a;
}

struct run {
    int rc;
    struct svc_err err;
    struct svc_model_reply reply;
    double secs;
};

static void invoke(struct svc_config *cfg, json_object *msgs, json_object *tools, struct ctx *c,
                   struct run *r)
{
    struct svc_model_call call = {
        .cfg = cfg,
        .system_prompt = "Unit system.",
        .messages = msgs,
        .tools = tools,
        .on_delta = on_delta,
        .should_cancel = should_cancel,
        .on_idle = on_idle,
        .ctx = c,
    };
    memset(&r->err, 0, sizeof r->err);
    double t0 = svc_time_monotonic();
    r->rc = svc_model_invoke(&call, &r->reply, &r->err);
    r->secs = svc_time_monotonic() - t0;
}

/* One user text through the model with a fresh ctx (its fields from init); the reply stays in r. */
static void say(struct svc_config *cfg, const char *text, struct ctx init, struct ctx *c,
                struct run *r)
{
    *c = init;
    json_object *w = window1(text);
    invoke(cfg, w, NULL, c, r);
    json_object_put(w);
}

static void release(struct ctx *c, struct run *r)
{
    svc_model_reply_free(&r->reply);
    svc_buf_free(&c->deltas);
}

static FILE *fake_pipe; /* perl's stdout; pclose waits for it to exit */

static int start_fake(void)
{
    FILE *p = fake_pipe =
        popen("perl -It/lib -MFakeOpenAI -e '$|=1; my $f = FakeOpenAI->start; "
              "print \"$$ \", $f->base_url, \"\\n\"; $SIG{TERM} = sub { $f->stop; exit 0 }; "
              "sleep 1 while 1' 2>/dev/null",
              "r");
    if (!p)
        return -1;
    char line[512];
    if (!fgets(line, sizeof line, p))
        return -1;
    if (sscanf(line, "%ld %255s", &fake_pid, base_url) != 2)
        return -1;
    /* the stream stays open; perl exits on SIGTERM at the end */
    return 0;
}

int main(void)
{
    /* redaction needs no server */
    char *s = svc_openai_redact("key sk-1 and sk-1!", "sk-1");
    is_str(s, "key *** and ***!", "redact every occurrence");
    free(s);
    s = svc_openai_redact("nothing", NULL);
    is_str(s, "nothing", "redact without a secret copies");
    free(s);
    s = svc_openai_redact("", "k");
    is_str(s, "", "redact empty");
    free(s);
    /* a text cut short that ends in the start of the key: the tail is masked too */
    s = svc_openai_redact("error: bad key sk-SUPERSE", "sk-SUPERSECRET-123");
    is_str(s, "error: bad key ***", "a key cut in two is still masked");
    free(s);
    s = svc_openai_redact("ends in sk-", "sk-SUPERSECRET-123");
    is_str(s, "ends in sk-", "a tail shorter than 4 characters is left (too common to mean a key)");
    free(s);

    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    setenv("no_proxy", "127.0.0.1", 1);
    if (start_fake() != 0) {
        printf("# could not start t/lib/FakeOpenAI.pm (run from the repository root)\n");
        return done_testing();
    }

    struct svc_config cfg;
    ok(load_cfg(&cfg, 1, 5) == 0, "config loads");
    struct ctx c;
    struct run r;

    /* streamed text with usage */
    say(&cfg, "hello unit", (struct ctx){0}, &c, &r);
    is_int(r.rc, 0, "stream: ok");
    is_str(r.reply.text, "You said: hello unit (2 messages)", "stream: text");
    is_str(c.deltas.data, r.reply.text, "stream: deltas add up to the text");
    ok(c.ndeltas >= 5, "stream: word by word (%d deltas)", c.ndeltas);
    is_int(r.reply.prompt_tokens, 11, "stream: prompt tokens from usage");
    is_int(r.reply.completion_tokens, 7, "stream: completion tokens from usage");
    is_str(r.reply.finish_reason, "stop", "stream: finish_reason");
    is_int(json_object_array_length(r.reply.tool_uses), 0, "stream: no tool uses");
    release(&c, &r);

    /* a tool call */
    say(&cfg, "call tool clock {\"a\": 1, \"b\": \"xyz\"}", (struct ctx){0}, &c, &r);
    is_int(r.rc, 0, "tool: ok");
    is_str(r.reply.finish_reason, "tool_calls", "tool: finish_reason");
    is_int(json_object_array_length(r.reply.tool_uses), 1, "tool: one tool use");
    json_object *tu = json_object_array_get_idx(r.reply.tool_uses, 0);
    is_str(svc_json_str(tu, "name", NULL), "clock", "tool: name");
    ok(strncmp(svc_json_str(tu, "toolUseId", ""), "call_", 5) == 0, "tool: id");
    char *in = svc_json_dump_compact(svc_json_obj(tu, "input"));
    is_str(in, "{\"a\":1,\"b\":\"xyz\"}", "tool: input parsed from the joined pieces");
    free(in);
    is_str(r.reply.text, "", "tool: no text");
    is_int(c.ndeltas, 0, "tool: no deltas");
    svc_model_reply_free(&r.reply);

    /* a window with a tool round trip */
    memset(&c, 0, sizeof c);
    const char *win = "[{\"role\":\"user\",\"content\":[{\"text\":\"what time\"}]},"
                      "{\"role\":\"assistant\",\"content\":[{\"toolUse\":{\"toolUseId\":\"call_7\","
                      "\"name\":\"clock\",\"input\":{}}}]},"
                      "{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":\"call_7\","
                      "\"status\":\"success\",\"content\":[{\"text\":\"noon\"}]}}]}]";
    json_object *w = NULL;
    svc_json_parse(win, strlen(win), &w, NULL);
    invoke(&cfg, w, NULL, &c, &r);
    is_int(r.rc, 0, "tool result window: ok");
    is_str(r.reply.text, "Tool clock said: noon", "tool result went back as a tool message");
    release(&c, &r);
    json_object_put(w);

    /* plain JSON answer, estimate without usage */
    say(&cfg, "nostream x", (struct ctx){0}, &c, &r);
    is_int(r.rc, 0, "json: ok");
    is_str(r.reply.text, "You said: nostream x (2 messages)", "json: text");
    is_str(c.deltas.data, r.reply.text, "json: delivered as one delta");
    release(&c, &r);

    say(&cfg, "nousage y", (struct ctx){0}, &c, &r);
    is_int(r.rc, 0, "nousage: ok");
    is_int(r.reply.prompt_tokens, (long)(strlen("Unit system.nousage y") + 3) / 4,
           "nousage: prompt estimate");
    is_int(r.reply.completion_tokens, (long)(strlen(r.reply.text) + 3) / 4,
           "nousage: completion estimate");
    release(&c, &r);

    /* on_delta asks to stop */
    say(&cfg, "stop me please now", (struct ctx){.stop_after_deltas = 2}, &c, &r);
    is_int(r.rc, -1, "on_delta stop: fails");
    is_int(r.err.code, SVC_E_CANCELLED, "on_delta stop: cancelled");
    is_int(c.ndeltas, 2, "on_delta stop: no delta after the stop");
    ok(r.reply.text == NULL && r.reply.tool_uses == NULL, "on_delta stop: reply freed");
    svc_buf_free(&c.deltas);

    /* should_cancel while the server is silent */
    say(&cfg, "slow 4", (struct ctx){.cancel_at = svc_time_monotonic() + 0.3}, &c, &r);
    is_int(r.err.code, SVC_E_CANCELLED, "should_cancel: cancelled");
    ok(r.secs < 1.5, "should_cancel: promptly (%.2f s)", r.secs);

    /* on_idle while the server is silent */
    say(&cfg, "slow 2.5", (struct ctx){0}, &c, &r);
    is_int(r.rc, 0, "idle: answer after a silence");
    ok(c.nidle >= 1 && c.nidle <= 4, "idle: on_idle about once a second (%d)", c.nidle);
    release(&c, &r);

    say(&cfg, "slow 4", (struct ctx){.idle_stop = 1}, &c, &r);
    is_int(r.err.code, SVC_E_CANCELLED, "idle stop: cancelled");
    ok(r.secs < 2.5, "idle stop: at the first idle call (%.2f s)", r.secs);

    /* timeout */
    svc_config_free(&cfg);
    load_cfg(&cfg, 3, 1);
    say(&cfg, "slow 3", (struct ctx){0}, &c, &r);
    is_int(r.err.code, SVC_E_UPSTREAM_TIMEOUT, "timeout: upstream_timeout");
    is_str(svc_err_name(r.err.code), "upstream_timeout", "timeout: name");
    ok(r.secs < 2.0, "timeout: after about timeout_s, not retried (%.2f s)", r.secs);

    /* cancel during a retry backoff (Retry-After: 1, max_retries: 3) */
    say(&cfg, "fail 429", (struct ctx){.cancel_at = svc_time_monotonic() + 0.3}, &c, &r);
    is_int(r.err.code, SVC_E_CANCELLED, "backoff cancel: cancelled");
    ok(r.secs < 0.9, "backoff cancel: did not wait out Retry-After (%.2f s)", r.secs);

    /* 401: key redacted from the echoed message */
    say(&cfg, "fail 401", (struct ctx){0}, &c, &r);
    is_int(r.err.code, SVC_E_UPSTREAM, "401: upstream_error");
    ok(strstr(r.err.message, "sk-unit-KEY") == NULL && strstr(r.err.message, "***"),
       "401: key redacted (%s)", r.err.message);

    svc_config_free(&cfg);
    if (fake_pid > 0)
        kill((pid_t)fake_pid, SIGTERM);
    if (fake_pipe)
        pclose(fake_pipe); /* perl's exit removes its log file: wait for it */
    return done_testing();
}
