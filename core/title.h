/* title: a session's title derived from its first user input (SPEC 2.2).
 * The input is read as Markdown: headings, quote and list markers, emphasis, code ticks and
 * fences, and link targets are left out (a link keeps its text); whitespace and control
 * characters fold to single spaces. The title is at most SVC_TITLE_MAX_CP code points, cut
 * at a word boundary with an ellipsis; "title_source" keeps the plain text it was cut from
 * (up to SVC_TITLE_SOURCE_MAX_CP), so the title search (q) finds the words the cut left out. */
#ifndef SVC_TITLE_H
#define SVC_TITLE_H

#include <json-c/json.h>

#include "err.h"

#define SVC_TITLE_MAX_CP 48
#define SVC_TITLE_SOURCE_MAX_CP 200

/* Set sc's "title" ("" without text) and "title_source" (removed when the title is all). */
void svc_title_derive(json_object *sc, const char *input);
/* The text q matches in a summary (borrowed): title_source while the title is derived from
 * it, else the title (a rename). */
const char *svc_title_search_text(json_object *summary);

/* A title a person gives: 1..200 characters, no control character, else invalid_field. */
int svc_title_check(const char *title, struct svc_err *err);

#endif
