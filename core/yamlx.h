/* yamlx: agents.yaml's syntax, in cgit's manner apart from its meaning (config.h's settings
 * table). svc_yaml_walk composes a document with libyaml, walks its mappings and
 * sequences, and calls back with the key path ("server.workers", "jobs[1].schedule"), the
 * node's kind, its scalar text and its 1-based line and column; the callback answers
 * SVC_YAML_SKIP or SVC_YAML_DESCEND and is called again when a descended node is left.
 * svc_yaml_to_json turns a free-form subtree (extension parameters) into JSON, within caps
 * (aliases can make a small document describe a huge or cyclic tree). Errors have one
 * format: "<file>:<line>:<col>: <key>: <what is wrong>" (SVC_E_CONFIG, param = key). */
#ifndef SVC_YAMLX_H
#define SVC_YAMLX_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "err.h"

enum svc_yaml_kind { SVC_YAML_NULL, SVC_YAML_SCALAR, SVC_YAML_SEQ, SVC_YAML_MAP };

#define SVC_YAML_SKIP 0
#define SVC_YAML_DESCEND 1

struct svc_yaml_node {
    const char *file; /* name used in messages */
    const char *path; /* "server.workers", "jobs[1].schedule", "sessions.export_allowed_dirs[0]" */
    const char *key;  /* the last mapping key; NULL for a sequence item */
    size_t index;     /* position in the parent sequence (items only) */
    int depth;        /* 1 for top-level keys */
    enum svc_yaml_kind kind;
    const char *text; /* scalars (and null): the value, NUL-terminated */
    size_t len;
    bool plain;            /* unquoted scalar */
    size_t count;          /* items of a sequence, pairs of a mapping */
    int line, col;         /* of the value, 1-based */
    int key_line, key_col; /* of the key (the value's own position for sequence items) */
    bool leaving;          /* second call, after the children of a descended node */
    yaml_document_t *doc;  /* for svc_yaml_to_json */
    yaml_node_t *node;
};

/* Return SVC_YAML_SKIP, SVC_YAML_DESCEND (entering only), or -1 after filling err. */
typedef int (*svc_yaml_fn)(void *ctx, const struct svc_yaml_node *n, struct svc_err *err);

int svc_yaml_walk(const char *file, const char *buf, size_t len, svc_yaml_fn fn, void *ctx,
                  struct svc_err *err);
/* The subtree at n as JSON (new reference): 0, or -1 with err. */
int svc_yaml_to_json(const struct svc_yaml_node *n, json_object **out, struct svc_err *err);
/* Whether a plain scalar says null ("", "~", "null"). */
bool svc_yaml_is_null(const char *s, size_t len);
/* The error format above. Returns -1. */
int svc_yaml_fail(struct svc_err *err, const char *file, int line, int col, const char *key,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A whole document's top-level keys as one JSON object (new reference in *out; docs that
 * are served, such as docs/openapi.yaml): 0, or -1 with err. */
int svc_yaml_json(const char *name, const char *buf, size_t len, json_object **out,
                  struct svc_err *err);

#endif
