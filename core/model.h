/* model: one model call over a window of native messages.
 * The `echo` provider (SPEC 9) is built in and offline: it quotes the latest user input and
 * says how many earlier messages it was given and which images and documents the input
 * carries ("(Attached: image png of 68 bytes.)"), and answers a summarization request
 * (cmgr.h) with a deterministic summary; it streams word by word, counts 4 characters a
 * token, and on "/tool <name> <json>" asks for that tool, then answers with its result
 * ("Tool <name> returned: ..."; a client tool's: "Echo: tool <name> returned <text>"); with
 * tool_choice "none" it calls no tool, with one naming a tool (or "required": the first
 * client tool) it calls that one with what its parameters' schema accepts. It honours the
 * settings it can (SPEC 15): response_format (schema.h makes a json_schema's value, its
 * first string the input), stop, max_tokens (4 characters a token, finish "length") and
 * logprobs (0 a word).
 * Testing aid: an input starting with "/slow <ms> " makes echo pause <ms> milliseconds
 * (at most 10000) before each word, so tests can catch a run in flight.
 * Deltas go to on_delta as they are produced; a nonzero return cancels the call with
 * SVC_E_CANCELLED. svc_model_reply_free releases what the reply owns.
 * A call cancelled after it streamed text still reports usage in *out (estimated by the
 * 4-characters rule: the provider's own count never arrived); other failures report 0. */
#ifndef SVC_MODEL_H
#define SVC_MODEL_H

#include <json-c/json.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

struct svc_model_call {
    const struct svc_config *cfg;
    const char *system_prompt; /* may be NULL */
    /* the request's settings over model.temperature / model.max_tokens when has_ is set */
    bool has_temperature, has_max_tokens;
    double temperature;
    int64_t max_tokens;
    const char *max_tokens_param; /* the request's spelling of max_tokens, NULL: max_tokens */
    json_object *settings;        /* borrowed generation settings (session.h), or NULL */
    json_object *messages;        /* borrowed array of native messages (the window) */
    json_object *tools;           /* borrowed array of {name, description, parameters} */
    json_object *client_tools;    /* borrowed names of the tools the client runs (SPEC 12.1) */
    const char *tool_choice;      /* NULL (auto), "auto", "none", "required" or a tool's name */
    int (*on_delta)(void *ctx, const char *text); /* may be NULL */
    int (*should_cancel)(void *ctx);              /* may be NULL; polled between chunks */
    int (*on_idle)(void *ctx);                    /* may be NULL; while waiting */
    /* may be NULL; told before a retry (attempt from 1, of max_attempts, and why) */
    void (*on_retry)(void *ctx, int attempt, int max_attempts, const char *text);
    void *ctx;
};

struct svc_model_reply {
    char *text;             /* heap, "" when the reply is only tool calls */
    json_object *tool_uses; /* array of {toolUseId, name, input}; new reference, maybe empty */
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t cached_tokens, reasoning_tokens; /* usage details the server gave, else 0 */
    json_object *logprobs;  /* chat's logprobs.content entries when asked for, or NULL */
    char finish_reason[16]; /* "stop", "tool_calls", "length" */
    int64_t latency_ms;
    size_t streamed; /* characters streamed (a failed call's usage estimate) */
};

int svc_model_invoke(const struct svc_model_call *call, struct svc_model_reply *out,
                     struct svc_err *err);
void svc_model_reply_free(struct svc_model_reply *r);

#endif
