/* model_openai: the `openai` model provider (SPEC 1 `model:`, 4.1, 9), over libcurl.
 * POSTs {model.base_url}/chat/completions with stream: true and include_usage, the system
 * prompt, the window projected to OpenAI messages, the tools as functions and the request's
 * settings unchanged (SPEC 15; max_tokens as the request spelled it); parses the SSE
 * answer as it arrives (content deltas go to on_delta at once, tool_calls pieces are joined by
 * index), and also accepts a plain JSON answer from servers that ignore `stream`.
 * Cancellation (should_cancel, on_delta/on_idle nonzero) aborts the transfer: SVC_E_CANCELLED.
 * Timeouts (model.timeout_s, whole request): SVC_E_UPSTREAM_TIMEOUT. HTTP errors and
 * unreachable servers: SVC_E_UPSTREAM with the server's message, the API key redacted; its
 * 400 or 422 (a request it refuses) SVC_E_UPSTREAM_REFUSED with the param it names.
 * Usage details (cached, reasoning tokens) and logprobs come back in the reply.
 * 429, 5xx and connection failures are retried up to model.max_retries times (backoff 0.5 s
 * doubling to at most 8 s, or Retry-After up to 30 s), never once a delta was delivered.
 * Without a usage chunk the token counts are estimated at 4 characters a token. */
#ifndef SVC_MODEL_OPENAI_H
#define SVC_MODEL_OPENAI_H

#include "model.h"

int svc_model_openai_invoke(const struct svc_model_call *call, struct svc_model_reply *out,
                            struct svc_err *err);

/* Exposed for unit tests: copy src to a heap string with every occurrence of secret
 * replaced by "***" (secret NULL or "" copies). NULL only when src is NULL. */
char *svc_openai_redact(const char *src, const char *secret);

/* Exposed for the fuzz harness (t/fuzz/sse_fuzz.c): run the SSE reader over p[0..n) as if
 * libcurl delivered it in pieces of at most step bytes (0: one piece), with no callbacks.
 * On success *text (heap) and *tool_uses (new reference) hold what a reply would; -1 when
 * the reader aborted (a stream error event, a line too long), nothing to free. */
int svc_openai_sse_parse(const char *p, size_t n, size_t step, char **text,
                         json_object **tool_uses);

#endif
