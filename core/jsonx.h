/* jsonx: JSON in the exact shapes svc stores, on top of json-c.
 * svc_json_dump_native renders like Python's json.dumps(obj, indent=2, ensure_ascii=False)
 * (what Strands writes): 2-space indent, ", " never at line ends, ": " after keys, "{}"/"[]"
 * for empty containers, non-ASCII unescaped, "/" unescaped, no trailing newline.
 * svc_json_dump_compact is one line with no spaces (svc_turns.jsonl, API bodies).
 * Dump functions return heap strings the caller frees (never NULL: err.h aborts on OOM).
 * Getters borrow: they return pointers into the object, valid while it lives. */
#ifndef SVC_JSONX_H
#define SVC_JSONX_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

char *svc_json_dump_native(json_object *o);
char *svc_json_dump_compact(json_object *o);

/* A node the dumpers write verbatim (json: one compact JSON value, as svc_json_dump_compact
 * made it), so a list page reuses stored JSON unparsed; json-c reads it as a string, so it
 * belongs only in objects headed for output. _len: from len bytes, no NUL needed. */
json_object *svc_json_new_raw(const char *json);
json_object *svc_json_new_raw_len(const char *json, size_t len);

/* Parse a buffer into *out (new reference); SVC_E_INVALID_JSON with the tokener's message,
 * NaN/Infinity and trailing garbage refused. Numbers keep their text: a float is written
 * back as read, an integer beyond 64 bits a double node keeping its digits (getters see its
 * rounded value; svc_json_int its default). */
int svc_json_parse(const char *buf, size_t len, json_object **out, struct svc_err *err);
/* The same, then floats are written as Python writes what json.loads read (shortest text
 * that reads back, 1E+2 as 100.0; integers keep their digits): bodies and tool arguments. */
int svc_json_parse_python(const char *buf, size_t len, json_object **out, struct svc_err *err);
/* Read and parse a file (SVC_E_NOT_FOUND when missing, SVC_E_IO when not JSON). */
int svc_json_read_file(const char *path, json_object **out, struct svc_err *err);
/* Same, and the document must be an object (SVC_E_IO "damaged <name>" otherwise). */
int svc_json_read_object_file(const char *path, json_object **out, struct svc_err *err);
/* Append o as one compact line (JSONL) with a single write; after a torn last line (no
 * newline) the new line starts on a fresh line, so the torn one stays apart. */
int svc_json_append_line(const char *path, json_object *o, bool durable, struct svc_err *err);
/* JSON lines, the one reader of svc_turns.jsonl, run events and the listing index:
 * each(ctx, line, n, off) for every non-empty line of buf ending in '\n' (n without it, off
 * its offset); returns the bytes up to just after the last newline (a tail without one is
 * torn or still being written). svc_jsonl_object: a line as an object (new ref) or NULL. */
size_t svc_jsonl_lines(const char *buf, size_t len,
                       void (*each)(void *ctx, const char *line, size_t n, size_t off), void *ctx);
json_object *svc_jsonl_object(const char *line, size_t n);
/* dump_native written atomically with an SVC_SYNC_* mask (fsio.h), without a newline. */
int svc_json_write_native_sync(const char *path, json_object *o, int sync, struct svc_err *err);
int svc_json_write_pretty_sync(const char *path, json_object *o, int sync, struct svc_err *err);
/* Sidecar: dump_native plus a trailing newline. */
int svc_json_write_pretty(const char *path, json_object *o, bool durable, struct svc_err *err);

/* Borrowed getters; fall back to def when the key is absent or of another type. */
const char *svc_json_str(json_object *o, const char *key, const char *def);
int64_t svc_json_int(json_object *o, const char *key, int64_t def);
bool svc_json_bool(json_object *o, const char *key, bool def);
json_object *svc_json_obj(json_object *o, const char *key); /* object or NULL */
json_object *svc_json_arr(json_object *o, const char *key); /* array or NULL */
/* Setters take ownership of the value (json-c semantics); string versions copy. */
void svc_json_set_str(json_object *o, const char *key, const char *val); /* NULL -> null */
void svc_json_set_int(json_object *o, const char *key, int64_t val);
void svc_json_set_bool(json_object *o, const char *key, bool val);
void svc_json_set(json_object *o, const char *key, json_object *val);
/* A new object of string members: key, value pairs up to a NULL key (a NULL value is null). */
json_object *svc_json_new_obj(const char *key, ...) __attribute__((sentinel));
/* A double in the shortest form that round-trips (Python's repr): 0.1, 1.0, 1e+20. */
void svc_json_format_double(double d, char *out, size_t outsz);
/* Add every key of src to dst (values shared, references taken). */
void svc_json_merge(json_object *dst, json_object *src);
/* Deep copy (new reference). */
json_object *svc_json_copy(json_object *o);

#endif
