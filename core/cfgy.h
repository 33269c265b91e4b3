/* cfgy: the YAML walker of the configuration loader (config.c), in cgit's manner: it knows
 * YAML syntax only. cfgy_walk composes the document with libyaml, walks mappings and
 * sequences, and calls fn back with the key path ("server.workers", "jobs[1].schedule"), the
 * node's kind, its scalar text and its 1-based line and column; fn answers CFGY_SKIP or
 * CFGY_DESCEND, and is called again (leaving set) when a descended node is left. Errors
 * have the one format of the loader, cfgy_fail's: "<file>:<line>:<col>: <key>: <what>"
 * (SVC_E_CONFIG, param = key). Only config.c includes this header. */
#ifndef SVC_CFGY_H
#define SVC_CFGY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "err.h"

enum cfgy_kind { CFGY_NULL, CFGY_SCALAR, CFGY_SEQ, CFGY_MAP };

#define CFGY_SKIP 0
#define CFGY_DESCEND 1

struct cfgy_node {
    const char *file; /* name used in messages */
    const char *path; /* "server.workers", "jobs[1].schedule", "sessions.export_allowed_dirs[0]" */
    const char *key;  /* the last mapping key; NULL for a sequence item */
    size_t index;     /* position in the parent sequence (items only) */
    int depth;        /* 1 for top-level keys */
    enum cfgy_kind kind;
    const char *text; /* scalars (and null): the value, NUL-terminated */
    size_t len;
    bool plain;            /* unquoted scalar */
    size_t count;          /* items of a sequence, pairs of a mapping */
    int line, col;         /* of the value, 1-based */
    int key_line, key_col; /* of the key (the value's own position for sequence items) */
    bool leaving;          /* second call, after the children of a descended node */
    yaml_document_t *doc;  /* for cfgy_to_json */
    yaml_node_t *node;
};

/* Return CFGY_SKIP, CFGY_DESCEND (entering only), or -1 after filling err. */
typedef int (*cfgy_fn)(void *ctx, const struct cfgy_node *n, struct svc_err *err);

/* The one error format of the loader. Returns -1. */
int cfgy_fail(struct svc_err *err, const char *file, int line, int col, const char *key,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Whether a plain scalar's text is YAML's null ("", "~", "null" in any case). */
bool cfgy_is_null(const char *s, size_t len);
/* Parse buf and walk its top-level mapping with fn. An empty stream, or one whose only
 * document is null, walks nothing. Returns 0 or -1 with err. */
int cfgy_walk(const char *file, const char *buf, size_t len, cfgy_fn fn, void *ctx,
              struct svc_err *err);
/* The subtree under n as JSON (new reference; NULL for a null node): YAML 1.2's core schema,
 * quoted scalars always strings, at most 64 deep and 100,000 nodes. */
int cfgy_to_json(const struct cfgy_node *n, json_object **out, struct svc_err *err);

#endif
