/* handlers: every HTTP endpoint of svc-fcgi, one function each, listed in the route table
 * of routes.c. Signature and contract: see http_handler in http.h (return 0 after sending a
 * response, or -1 with err filled and nothing sent).
 *   h_base.c      base endpoints (SPEC 4.4)
 *   h_chat.c      /api/chat, /api/v1/chat/completions, tokens, /api/chat/runs (SPEC 4.1, 4.2)
 *   h_sessions.c  the dashboard session API (SPEC 4.3)
 *   h_export.c    POST /api/v1/chat/sessions/export (SPEC 5)
 *   h_models.c    /api/v1/models (SPEC 4.1)
 *   h_responses.c the Responses API (SPEC 4.1)
 *   h_conversations.c the Conversations API (SPEC 12.2)
 * What a route names (a session, run or response) the router has checked before its handler
 * runs (access.h): a handler never checks visibility. */
#ifndef SVC_HANDLERS_H
#define SVC_HANDLERS_H

#include "http.h"

/* h_base.c */
int h_health(struct http_req *r, struct svc_err *err);
int h_config(struct http_req *r, struct svc_err *err);
int h_me(struct http_req *r, struct svc_err *err);
int h_jobs(struct http_req *r, struct svc_err *err);
int h_extensions(struct http_req *r, struct svc_err *err);
int h_metrics(struct http_req *r, struct svc_err *err);
int h_openapi(struct http_req *r, struct svc_err *err);
/* docs/openapi.yaml's text (build/cgi/openapi_yaml.c, written by the Makefile). */
const char *h_openapi_yaml(void);
/* The pool's start: main.c says it once before forking (the master's time and pid, for
 * uptime_s, pid and a model's created); h_base_started tells it. */
void h_base_start(double at, int master_pid);
double h_base_started(void);

/* h_chat.c */
int h_chat(struct http_req *r, struct svc_err *err);
int h_session_tokens(struct http_req *r, struct svc_err *err);
int h_runs_create(struct http_req *r, struct svc_err *err);
int h_run_get(struct http_req *r, struct svc_err *err);
int h_run_events(struct http_req *r, struct svc_err *err);
int h_run_cancel(struct http_req *r, struct svc_err *err);

/* h_sessions.c */
int h_sessions_list(struct http_req *r, struct svc_err *err);
int h_sessions_search(struct http_req *r, struct svc_err *err);
int h_session_get(struct http_req *r, struct svc_err *err);
int h_session_patch(struct http_req *r, struct svc_err *err);
int h_session_messages(struct http_req *r, struct svc_err *err);
int h_session_archive(struct http_req *r, struct svc_err *err);
int h_session_unarchive(struct http_req *r, struct svc_err *err);
int h_session_delete(struct http_req *r, struct svc_err *err);
int h_session_fork(struct http_req *r, struct svc_err *err);
int h_message_feedback(struct http_req *r, struct svc_err *err);

/* h_export.c */
int h_sessions_export(struct http_req *r, struct svc_err *err);

/* h_models.c */
int h_models_list(struct http_req *r, struct svc_err *err);
int h_model_get(struct http_req *r, struct svc_err *err);

/* h_responses.c */
int h_responses_create(struct http_req *r, struct svc_err *err);
int h_response_get(struct http_req *r, struct svc_err *err);
int h_response_delete(struct http_req *r, struct svc_err *err);
int h_response_input_items(struct http_req *r, struct svc_err *err);
int h_response_cancel(struct http_req *r, struct svc_err *err);

/* h_conversations.c */
int h_conversations_create(struct http_req *r, struct svc_err *err);
int h_conversations_list(struct http_req *r, struct svc_err *err);
int h_conversation_get(struct http_req *r, struct svc_err *err);
int h_conversation_update(struct http_req *r, struct svc_err *err);
int h_conversation_delete(struct http_req *r, struct svc_err *err);
int h_conversation_items(struct http_req *r, struct svc_err *err);
int h_conversation_items_add(struct http_req *r, struct svc_err *err);
int h_conversation_item(struct http_req *r, struct svc_err *err);
int h_conversation_item_delete(struct http_req *r, struct svc_err *err);

#endif
