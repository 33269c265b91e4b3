/* access: who may reach what a route names (SPEC 14), decided here once for svc-fcgi. Each
 * row of the route table (routes.c) carries one rule, and the router calls access_check with
 * it after authentication and before the body is read and the handler runs: no handler
 * checks visibility. A session, run or stored response the caller may not see is answered
 * exactly as a missing one. A session a body names is checked where the turn begins
 * (core/session.h's begin, and core/idem.h for a replay); a stored response a body names
 * (previous_response_id) is looked up through access_response, and a session a body names
 * outside a turn (POST /responses/compact) through access_session. */
#ifndef SVC_ACCESS_H
#define SVC_ACCESS_H

#include "http.h"

enum access_rule {
    ACCESS_UNSET,    /* a row that names no rule: never served (500) */
    ACCESS_PUBLIC,   /* anyone, no bearer token needed */
    ACCESS_ADMIN,    /* admins only: 403 permission_denied for a user */
    ACCESS_CALLER,   /* any caller: names nothing stored, or lists only what the caller owns */
    ACCESS_SESSION,  /* the route's first parameter is a session (a conversation) */
    ACCESS_RUN,      /* the route's first parameter is a run, seen through its session */
    ACCESS_RESPONSE, /* the route's first parameter is a stored response, the same */
};

/* 0 when r's caller may reach what the route names under rule a, else -1 with err: 403, the
 * answer of a missing session, run or response, or 500 for ACCESS_UNSET. */
int access_check(struct http_req *r, enum access_rule a, struct svc_err *err);
/* Stored response id (*out, a new reference) when the caller sees its session, else -1 with
 * what an unknown id answers (SVC_E_RESPONSE_NOT_FOUND) and *out NULL. */
int access_response(struct http_req *r, const char *id, json_object **out, struct svc_err *err);
/* 0 when the caller sees session sid a body names (a request that runs no turn), else -1 with
 * what a missing session answers. */
int access_session(struct http_req *r, const char *sid, struct svc_err *err);

#endif
