/* config: agents.yaml into struct svc_config, in two layers (cgit's manner): the walker
 * (cfgy.h) knows YAML syntax only and calls back with each key path; the settings layer here
 * knows meaning only: one table row per setting, read by loading, defaults, validation,
 * svc_config_to_json, redaction and svc_config_free (list items have tables of their own).
 * An unknown key's warning ends " (did you mean `<known key>`?)" when one is a few letters off. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "cfgy.h"
#include "cron.h"
#include "fsio.h"
#include "jsonx.h"
#include "layout.h"
#include "util.h"

/* The walker's visit for svc_config_yaml_to_json: each top-level key's subtree into ctx. */
static int cfgy_collect(void *ctx, const struct cfgy_node *n, struct svc_err *err)
{
    json_object *v = NULL;
    if (cfgy_to_json(n, &v, err) < 0)
        return -1;
    json_object_object_add(ctx, n->key, v);
    return CFGY_SKIP;
}

int svc_config_yaml_to_json(const char *name, const char *buf, size_t len, json_object **out,
                            struct svc_err *err)
{
    *out = json_object_new_object();
    if (cfgy_walk(name, buf, len, cfgy_collect, *out, err) == 0)
        return 0;
    json_object_put(*out);
    *out = NULL;
    return -1;
}

/* ---- The settings: one row each ---- */

enum cfg_type {
    CT_STR,         /* char *, any scalar; null is "" */
    CT_PATH,        /* char *, non-empty, `~` expanded */
    CT_INT,         /* int, plain decimal integer within [min, max] */
    CT_INT64,       /* int64_t, same */
    CT_BOOL,        /* bool: true/false/yes/no/on/off, any case */
    CT_DOUBLE_NULL, /* double + bool has_: a number in [dmin, dmax], or null */
    CT_INT64_NULL,  /* int64_t + bool has_: an integer in [min, max], or null */
    CT_ENUM,        /* int-sized enum: one of names[] */
    CT_PATHS,       /* char **, NULL-terminated, each `~` expanded */
    CT_STRS,        /* char **, NULL-terminated, each a non-empty string passing check;
                     * min = least count */
    CT_JSON,        /* json_object *, from a YAML mapping */
};

#define F_SECRET 1u   /* shown as "***" / "" and never echoed in messages */
#define F_HOMEREL 2u  /* CT_PATH: the default is relative to cfg->home */
#define F_REQUIRED 4u /* items: the key must be given (no default) */
#define F_HIDDEN 8u   /* left out of svc_config_to_json */

struct cfg_row {
    const char *name; /* "server.workers"; item rows: "schedule" */
    size_t off;       /* of the value in the struct the table describes */
    enum cfg_type type;
    size_t has_off;                      /* CT_*_NULL: of the bool has_ flag */
    int64_t min, max;                    /* integers: bounds; CT_STR: length bounds (max 0: none) */
    double dmin, dmax;                   /* CT_DOUBLE_NULL */
    const char *def;                     /* default, as YAML text; NULL for required item keys */
    const char *const *names;            /* CT_ENUM, in enum order, NULL-terminated */
    const char *(*check)(const char *s); /* strings: NULL when fine, else what is wrong */
    unsigned flags;
};

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/* Whether s is min to max characters of set. */
static bool of_chars(const char *s, size_t min, size_t max, const char *set)
{
    size_t n = strlen(s);
    return n >= min && n <= max && strspn(s, set) == n;
}

static const char *check_listen(const char *s)
{
    bool ok = (strncmp(s, "unix:", 5) == 0 && s[5]) || (strncmp(s, "tcp:", 4) == 0 && s[4]);
    return ok ? NULL : "must start with unix: or tcp: followed by an address";
}

static const char *check_id(const char *s)
{
    return svc_layout_id_valid(s) ? NULL
                                  : "not a valid id (1 to 128 characters of A-Za-z0-9._-, not "
                                    "starting with '.')";
}

static const char *check_env_name(const char *s)
{
    if (*s && (isdigit((unsigned char)s[0]) || !of_chars(s, 1, SIZE_MAX, ALNUM "_")))
        return "not a valid environment variable name";
    return NULL; /* "": no variable */
}

static const char *check_url(const char *s)
{
    bool ok = (strncmp(s, "http://", 7) == 0 && s[7]) || (strncmp(s, "https://", 8) == 0 && s[8]);
    return ok ? NULL : "must start with http:// or https://";
}

static const char *check_ext_name(const char *s)
{
    return of_chars(s, 1, 64, ALNUM "_-")
               ? NULL
               : "not a valid tool name (1 to 64 characters of A-Za-z0-9_-)";
}

static const char *check_kind(const char *s)
{
    return strcmp(s, "tool") == 0 ? NULL : "unknown value (expected tool)";
}

static const char *check_octal(const char *s)
{
    bool ok = of_chars(s, 1, 4, "01234567") && (strlen(s) < 4 || s[0] == '0');
    return ok ? NULL : "not an octal mode (up to 4 octal digits, e.g. \"0660\")";
}

static const char *check_group(const char *s)
{
    bool ok = s[0] != '-' && of_chars(s, 0, 32, ALNUM "._-");
    return ok ? NULL : "not a group name (up to 32 characters of A-Za-z0-9._-)";
}

static const char *check_base_path(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return NULL;
    if (s[0] != '/')
        return "must start with '/' (e.g. /svc), or be \"\" for none";
    if (n == 1 || s[n - 1] == '/')
        return "must not end with '/' (e.g. /svc)";
    if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../") ||
        (n >= 2 && strcmp(s + n - 2, "/.") == 0) || (n >= 3 && strcmp(s + n - 3, "/..") == 0))
        return "must not contain empty, '.' or '..' segments";
    if (!of_chars(s, 0, n, "/" ALNUM "._~-"))
        return "may only contain / and A-Za-z0-9._~-";
    return NULL;
}

unsigned svc_config_octal(const char *text)
{
    return text ? (unsigned)strtoul(text, NULL, 8) & 07777u : 0;
}

static const char *const session_providers[] = {"svc_repository", "native_file", NULL};
static const char *const model_providers[] = {"echo", "openai", NULL};
static const char *const cache_modes[] = {"auto", "off", NULL};
static const char *const conv_managers[] = {"sliding_window", "summarizing", NULL};
static const char *const shared_modes[] = {"auto", "on", "off", NULL};

#define INT_SIZED(e) (sizeof(enum e) == sizeof(int))
_Static_assert(INT_SIZED(svc_session_provider) && INT_SIZED(svc_model_provider) &&
                   INT_SIZED(svc_cache_mode) && INT_SIZED(svc_conv_manager) &&
                   INT_SIZED(svc_shared_mode) && INT_SIZED(svc_role),
               "CT_ENUM stores an int");

#define OFF(f) offsetof(struct svc_config, f)
#define C(f) #f, OFF(f) /* a row's name is its field */

/* agents.yaml, in the order svc_config_to_json shows it. conf/agents.yaml documents it. */
static const struct cfg_row cfg_rows[] = {
    {C(server.listen), CT_STR, .min = 1, .def = "unix:/run/svc/svc.sock", .check = check_listen},
    {C(server.workers), CT_INT, .min = 1, .max = 256, .def = "4"},
    {C(server.max_requests), CT_INT64, .min = 1, .max = INT64_MAX, .def = "10000"},
    {C(server.max_body_bytes), CT_INT64, .min = 1024, .max = 1073741824, .def = "1048576"},
    {C(server.api_token_env), CT_STR, .def = "SVC_API_TOKEN", .check = check_env_name},
    {C(server.api_token), CT_STR, .def = "", .flags = F_SECRET},
    {C(server.run_timeout_s), CT_INT, .min = 1, .max = 86400, .def = "300"},
    {C(server.socket_mode), CT_STR, .def = "0660", .check = check_octal},
    {C(server.socket_group), CT_STR, .def = "", .check = check_group},
    {C(server.umask), CT_STR, .def = "027", .check = check_octal},
    {C(server.base_path), CT_STR, .def = "", .check = check_base_path},
    {C(server.user_param), CT_STR, .def = "", .check = check_env_name},
    {C(server.admins), CT_STRS, .def = "[]"},
    {C(server.fcgi_allow), CT_STRS, .def = "[]", .check = svc_acl_check},

    {C(sessions.enabled), CT_BOOL, .def = "true"},
    {C(sessions.provider), CT_ENUM, .def = "svc_repository", .names = session_providers},
    {C(sessions.root), CT_PATH, .def = "agents/native_sessions", .flags = F_HOMEREL},
    {C(sessions.agent_id), CT_STR, .def = "svc-agent", .check = check_id},
    {C(sessions.persist_openai_history), CT_BOOL, .def = "true"},
    {C(sessions.continue_stateless), CT_BOOL, .def = "true"},
    {C(sessions.sync_memory), CT_BOOL, .def = "true"},
    {C(sessions.export_default_dir), CT_PATH, .def = "~/Desktop/svc-chat-export"},
    {C(sessions.export_allowed_dirs), CT_PATHS, .def = "[]"},
    {C(sessions.fsync), CT_BOOL, .def = "true"},
    {C(sessions.cache), CT_ENUM, .def = "auto", .names = cache_modes},
    {C(sessions.index_db), CT_BOOL, .def = "true"},
    {C(sessions.shared), CT_ENUM, .def = "auto", .names = shared_modes},

    {C(model.provider), CT_ENUM, .def = "echo", .names = model_providers},
    {C(model.name), CT_STR, .min = 1, .def = "echo-1"},
    {C(model.base_url), CT_STR, .def = "https://api.openai.com/v1", .check = check_url},
    {C(model.api_key_env), CT_STR, .def = "OPENAI_API_KEY", .check = check_env_name},
    {C(model.api_key), CT_STR, .def = "", .flags = F_SECRET},
    {C(model.timeout_s), CT_INT, .min = 1, .max = 3600, .def = "120"},
    {C(model.max_retries), CT_INT, .min = 0, .max = 10, .def = "2"},
    {C(model.temperature), CT_DOUBLE_NULL, .has_off = OFF(model.has_temperature), .dmin = 0,
     .dmax = 2, .def = "null"},
    {C(model.max_tokens), CT_INT64_NULL, .has_off = OFF(model.has_max_tokens), .min = 1,
     .max = INT64_MAX, .def = "null"},
    {C(model.context_window), CT_INT64, .min = 1, .max = INT64_MAX, .def = "128000"},
    {C(model.system_prompt), CT_STR, .def = "You are a helpful assistant."},

    {C(agent.window_size), CT_INT, .min = 2, .max = 10000, .def = "40"},
    {C(agent.max_tool_iterations), CT_INT, .min = 1, .max = 100, .def = "8"},
    {C(agent.conversation_manager), CT_ENUM, .def = "sliding_window", .names = conv_managers},
    {C(agent.summary_ratio), CT_DOUBLE_NULL, .has_off = OFF(agent.has_summary_ratio), .dmin = 0.1,
     .dmax = 0.8, .def = "0.3"},
    {C(agent.preserve_recent_messages), CT_INT, .min = 0, .max = 10000, .def = "10"},
    {C(limits.max_image_bytes), CT_INT64, .min = 1, .max = 1073741824, .def = "5242880"},

    {C(memory.root), CT_PATH, .def = "memory", .flags = F_HOMEREL},
    {C(memory.recall), CT_INT, .min = 0, .max = 100, .def = "0"},

    {C(retention.archive_after_days), CT_INT, .min = 0, .max = 36500, .def = "0"},
    {C(retention.delete_archived_after_days), CT_INT, .min = 0, .max = 36500, .def = "0"},
    {C(retention.delete_after_days), CT_INT, .min = 0, .max = 36500, .def = "0"},
    {C(retention.keep_pinned), CT_BOOL, .def = "true"},
    {C(retention.export_before_delete), CT_STR, .def = ""},
    {C(retention.schedule), CT_STR, .def = "17 3 * * *", .check = svc_cron_check},
    {C(search.index_dir), CT_PATH, .def = "search", .flags = F_HOMEREL},
    {C(mcp.remote_allow), CT_STRS, .def = "[]", .check = check_url},
};
#undef C

#define NROWS (sizeof cfg_rows / sizeof cfg_rows[0])
_Static_assert(sizeof cfg_rows / sizeof cfg_rows[0] <= 62, "seen bits fit a uint64_t");

#define J(f) #f, offsetof(struct svc_job, f)
static const struct cfg_row job_rows[] = {
    {J(id), CT_STR, .min = 1, .max = SVC_ID_MAX, .check = check_id, .flags = F_REQUIRED},
    {J(schedule), CT_STR, .check = svc_cron_check, .flags = F_REQUIRED},
    {J(session_id), CT_STR, .check = check_id, .flags = F_REQUIRED},
    {J(input), CT_STR, .min = 1, .flags = F_REQUIRED},
    {J(enabled), CT_BOOL, .def = "true"},
    {J(user), CT_STR, .max = 128, .def = ""},
};
#undef J

#define X(f) #f, offsetof(struct svc_extension, f)
static const struct cfg_row ext_rows[] = {
    {X(name), CT_STR, .check = check_ext_name, .flags = F_REQUIRED},
    {X(kind), CT_STR, .def = "tool", .check = check_kind},
    {X(description), CT_STR, .def = ""},
    {X(parameters), CT_JSON, .def = "{\"type\":\"object\",\"properties\":{}}"},
    {X(command), CT_STRS, .min = 1, .flags = F_REQUIRED | F_HIDDEN},
    {X(timeout_s), CT_INT, .min = 1, .max = 600, .def = "10"},
    {X(env), CT_STRS, .def = "[]", .flags = F_HIDDEN},
    {X(enabled), CT_BOOL, .def = "true"},
};
#undef X

static const char *check_mcp_name(const char *s)
{
    if (!of_chars(s, 1, 32, "abcdefghijklmnopqrstuvwxyz0123456789_-") || strstr(s, "__"))
        return "not a valid server name (1 to 32 characters of a-z0-9_-, without \"__\")";
    return NULL;
}

/* Each value of a mapping: a scalar (env) or a variable's name (headers_env). */
static const char *check_mcp_map(json_object *m, bool names)
{
    json_object_object_foreach(m, k, v)
    {
        if (!*k || (names ? !of_chars(k, 1, SIZE_MAX, ALNUM "-_") : check_env_name(k) != NULL))
            return names ? "headers_env: a header name is letters, digits, - and _"
                         : "env: not a valid environment variable name";
        if (names && (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v) ||
                      check_env_name(json_object_get_string(v))))
            return "headers_env: each value names an environment variable";
        if (!names && (!v || json_object_is_type(v, json_type_object) ||
                       json_object_is_type(v, json_type_array)))
            return "env: each value is a string";
    }
    return NULL;
}

/* A server is stdio (command) or Streamable HTTP (url), with well-formed maps. */
static const char *check_mcp(const void *item)
{
    const struct svc_mcp_server *m = item;
    if ((m->command != NULL) == (m->url && *m->url))
        return "give exactly one of command (stdio) and url (Streamable HTTP)";
    if (m->command && json_object_object_length(m->headers_env) > 0)
        return "headers_env is for a url server";
    const char *why = check_mcp_map(m->env, false);
    return why ? why : check_mcp_map(m->headers_env, true);
}

static const char *check_opt_url(const char *s)
{
    return *s ? check_url(s) : NULL;
}

#define M(f) #f, offsetof(struct svc_mcp_server, f)
static const struct cfg_row mcp_rows[] = {
    {M(name), CT_STR, .check = check_mcp_name, .flags = F_REQUIRED},
    {M(command), CT_STRS, .min = 1},
    {M(url), CT_STR, .def = "", .check = check_opt_url},
    {M(env), CT_JSON, .def = "{}", .flags = F_SECRET},
    {M(env_pass), CT_STRS, .def = "[]", .check = check_env_name},
    {M(headers_env), CT_JSON, .def = "{}", .flags = F_SECRET},
    {M(timeout_s), CT_INT, .min = 1, .max = 600, .def = "30"},
    {M(allowed_tools), CT_STRS, .def = "[]"},
    {M(users), CT_STRS, .def = "[]", .check = check_id},
    {M(enabled), CT_BOOL, .def = "true"},
};
#undef M

static const char *const user_roles[] = {"user", "admin", NULL};

static const char *check_sha256(const char *s)
{
    if (!*s || of_chars(s, 64, 64, "0123456789abcdefABCDEF"))
        return NULL; /* "": none */
    return "not a SHA-256 digest (64 hex digits, e.g. from `printf %s TOKEN | sha256sum`)";
}

static const char *refuse_clear_token(const char *s)
{
    (void)s;
    return "a token is never written in clear here: give token_env (the name of an "
           "environment variable holding it) or token_sha256 (its SHA-256 in hex)";
}

/* A user names its token one way: token_env or token_sha256, exactly one. */
static const char *check_user(const void *item)
{
    const struct svc_user_conf *u = item;
    bool env = u->token_env && *u->token_env, sha = u->token_sha256 && *u->token_sha256;
    return env == sha ? "give exactly one of token_env and token_sha256" : NULL;
}

#define U(f) #f, offsetof(struct svc_user_conf, f)
static const struct cfg_row user_rows[] = {
    {U(id), CT_STR, .min = 1, .max = 128, .check = check_id, .flags = F_REQUIRED},
    {U(token_env), CT_STR, .def = "", .check = check_env_name},
    {U(token_sha256), CT_STR, .def = "", .check = check_sha256, .flags = F_SECRET},
    {"token", offsetof(struct svc_user_conf, token_refused), CT_STR, .check = refuse_clear_token,
     .flags = F_SECRET | F_HIDDEN},
    {U(role), CT_ENUM, .def = "user", .names = user_roles},
};
#undef U

/* A sequence of items, each read by a table of its own ("jobs", "server.users"). */
struct cfg_list {
    const char *name; /* "jobs" */
    const struct cfg_row *rows;
    size_t nrows;
    size_t size;                            /* of one item */
    size_t arr_off, n_off;                  /* of the array pointer and its count in svc_config */
    const char *unique;                     /* the row that must differ between items */
    const char *(*check)(const void *item); /* NULL when the item is fine, else what is wrong */
};

/* name, rows, the item's type, the array and its count in svc_config */
#define L(name, rows, type, arr, n)                                                                \
    name, rows, sizeof rows / sizeof rows[0], sizeof(type), OFF(arr), OFF(n)
static const struct cfg_list cfg_lists[] = {
    {L("jobs", job_rows, struct svc_job, jobs, njobs), "id", NULL},
    {L("extensions", ext_rows, struct svc_extension, extensions, nextensions), "name", NULL},
    {L("mcp_servers", mcp_rows, struct svc_mcp_server, mcp_servers, nmcp_servers), "name",
     check_mcp},
    {L("server.users", user_rows, struct svc_user_conf, server.users, server.nusers), "id",
     check_user},
};
#undef L
#undef OFF
#define NLISTS (sizeof cfg_lists / sizeof cfg_lists[0])

#define FIELD(base, off, type) ((type *)(void *)((char *)(base) + (off)))
#define CFIELD(base, off, type) ((type const *)(const void *)((const char *)(base) + (off)))

static void *list_array(const struct svc_config *cfg, const struct cfg_list *l)
{
    void *p;
    memcpy(&p, (const char *)cfg + l->arr_off, sizeof p);
    return p;
}

static size_t list_count(const struct svc_config *cfg, const struct cfg_list *l)
{
    return *CFIELD(cfg, l->n_off, size_t);
}

static void strv_free(char **v)
{
    if (v)
        for (char **p = v; *p; p++)
            free(*p);
    free(v);
}

/* Release the value of one row, leaving NULL (the struct itself is the caller's). */
static void row_free(const struct cfg_row *r, void *base)
{
    if (r->type == CT_STR || r->type == CT_PATH)
        free(*FIELD(base, r->off, char *));
    else if (r->type == CT_PATHS || r->type == CT_STRS)
        strv_free(*FIELD(base, r->off, char **));
    else if (r->type == CT_JSON)
        json_object_put(*FIELD(base, r->off, json_object *));
    else
        return;
    memset((char *)base + r->off, 0, sizeof(void *));
}

/* Replace the pointer (a string, list or JSON value) row r holds in base with v. */
static void row_set(const struct cfg_row *r, void *base, void *v)
{
    row_free(r, base);
    memcpy((char *)base + r->off, &v, sizeof v);
}

/* ---- Storing values ---- */

struct cfg_load {
    struct svc_config *cfg;
    uint64_t seen;          /* cfg_rows given */
    uint64_t sections_seen; /* by index of the section's first row */
    uint64_t lists_seen;    /* by index in cfg_lists */
    struct cfg_frame {
        enum { FR_ROOT, FR_SECTION, FR_ITEMS, FR_ITEM, FR_LIST } kind;
        const char *section; /* FR_SECTION: "server" */
        size_t seclen;
        const struct cfg_list *list; /* FR_ITEMS, FR_ITEM */
        void *base;                  /* FR_ITEM, FR_LIST: the struct the row points into */
        uint64_t seen;               /* FR_ITEM: rows given */
        int line[16], col[16];       /* FR_ITEM: where each row was given */
        const struct cfg_row *row;   /* FR_LIST: the list's row */
        size_t n;                    /* FR_LIST: items stored */
    } fr[6];
};

static bool parse_int64(const char *s, int64_t *out)
{
    const char *p = s + (*s == '+' || *s == '-');
    if (!isdigit((unsigned char)*p) || strspn(p, "0123456789") != strlen(p))
        return false;
    errno = 0;
    *out = strtoll(s, NULL, 10);
    return errno != ERANGE; /* *out is the caller's only when true */
}

static bool parse_double(const char *s, double *out)
{
    size_t n = strlen(s);
    if (n == 0 || strspn(s, "0123456789+-.eE") != n || !strpbrk(s, "0123456789"))
        return false;
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !*end && errno != ERANGE && isfinite(*out);
}

static int parse_bool(const char *s)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* What a value is, for "expected X, got Y": the text itself unless secret. */
static void describe(const struct cfg_row *r, const struct cfgy_node *n, char *buf, size_t sz)
{
    static const char *const kinds[] = {
        [CFGY_NULL] = "null", [CFGY_SEQ] = "a sequence", [CFGY_MAP] = "a mapping"};
    if (n->kind != CFGY_SCALAR || (r->flags & F_SECRET))
        snprintf(buf, sz, "%s", n->kind != CFGY_SCALAR ? kinds[n->kind] : "a string");
    else if (n->len > 60)
        snprintf(buf, sz, "'%.57s...'", n->text);
    else
        snprintf(buf, sz, "'%s'", n->text);
}

/* Store a scalar (or null) node into row r of base: 0, or -1 with err naming n->path. */
#define FAIL(...) cfgy_fail(err, n->file, n->line, n->col, n->path, __VA_ARGS__)

static int store_str(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                     const char *got, struct svc_err *err)
{
    bool scalar = n->kind == CFGY_SCALAR || n->kind == CFGY_NULL;
    if (!scalar || (r->type == CT_PATH && n->kind == CFGY_NULL))
        return FAIL("expected %s, got %s", r->type == CT_PATH ? "a path" : "a string", got);
    const char *text = n->kind == CFGY_NULL ? "" : n->text;
    size_t len = n->kind == CFGY_NULL ? 0 : n->len;
    if (r->type == CT_PATH && len == 0)
        return FAIL("expected a path, got an empty string");
    if ((int64_t)len < r->min)
        return FAIL("must not be empty");
    if (r->max > 0 && (int64_t)svc_utf8_len(text) > r->max)
        return FAIL("longer than %lld characters", (long long)r->max);
    const char *why = r->check ? r->check(text) : NULL;
    if (why)
        return FAIL("%s", why);
    row_set(r, base, r->type == CT_PATH ? svc_path_expand(text) : svc_xstrdup(text));
    return 0;
}

static int store_int(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                     const char *got, struct svc_err *err)
{
    int64_t v;
    if (r->type == CT_INT64_NULL && n->kind == CFGY_NULL) {
        *FIELD(base, r->has_off, bool) = false;
        *FIELD(base, r->off, int64_t) = 0;
        return 0;
    }
    if (n->kind != CFGY_SCALAR || !n->plain || !parse_int64(n->text, &v))
        return FAIL("expected an integer%s, got %s", r->type == CT_INT64_NULL ? " or null" : "",
                    got);
    if (v < r->min || v > r->max) {
        if (r->max == INT64_MAX || (r->type == CT_INT && r->max == INT32_MAX))
            return FAIL("%lld is out of range (at least %lld)", (long long)v, (long long)r->min);
        return FAIL("%lld is out of range (%lld..%lld)", (long long)v, (long long)r->min,
                    (long long)r->max);
    }
    if (r->type == CT_INT) {
        *FIELD(base, r->off, int) = (int)v;
    } else {
        *FIELD(base, r->off, int64_t) = v;
        if (r->type == CT_INT64_NULL)
            *FIELD(base, r->has_off, bool) = true;
    }
    return 0;
}

static int store_double(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                        const char *got, struct svc_err *err)
{
    double d;
    if (n->kind == CFGY_NULL) {
        *FIELD(base, r->has_off, bool) = false;
        *FIELD(base, r->off, double) = 0;
        return 0;
    }
    if (n->kind != CFGY_SCALAR || !n->plain || !parse_double(n->text, &d))
        return FAIL("expected a number or null, got %s", got);
    if (d < r->dmin || d > r->dmax)
        return FAIL("%g is out of range (%g..%g)", d, r->dmin, r->dmax);
    *FIELD(base, r->off, double) = d;
    *FIELD(base, r->has_off, bool) = true;
    return 0;
}

static int store_enum(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                      const char *got, struct svc_err *err)
{
    if (n->kind == CFGY_SCALAR)
        for (int i = 0; r->names[i]; i++)
            if (strcmp(r->names[i], n->text) == 0) {
                *FIELD(base, r->off, int) = i;
                return 0;
            }
    char expected[128] = "";
    for (int i = 0; r->names[i]; i++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s%s",
                 i == 0            ? ""
                 : r->names[i + 1] ? ", "
                                   : " or ",
                 r->names[i]);
    if (n->kind == CFGY_SCALAR)
        return FAIL("unknown value %s (expected %s)", got, expected);
    return FAIL("expected %s, got %s", expected, got);
}

/* A scalar where a sequence or mapping belongs: only null, for a list that may be empty. */
static int store_list(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                      const char *got, struct svc_err *err)
{
    if (r->type == CT_JSON)
        return FAIL("expected a mapping, got %s", got);
    if (n->kind == CFGY_NULL && r->min == 0) {
        row_set(r, base, svc_xcalloc(1, sizeof(char *)));
        return 0;
    }
    return FAIL("expected a sequence of %s, got %s", r->type == CT_PATHS ? "paths" : "strings",
                got);
}

static int row_store(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                     struct svc_err *err)
{
    char got[96];
    describe(r, n, got, sizeof got);
    if (n->kind == CFGY_SCALAR && strlen(n->text) != n->len)
        return FAIL("contains a NUL character");
    switch (r->type) {
    case CT_STR:
    case CT_PATH:
        return store_str(r, base, n, got, err);
    case CT_INT:
    case CT_INT64:
    case CT_INT64_NULL:
        return store_int(r, base, n, got, err);
    case CT_DOUBLE_NULL:
        return store_double(r, base, n, got, err);
    case CT_BOOL: {
        int b = n->kind == CFGY_SCALAR && n->plain ? parse_bool(n->text) : -1;
        if (b < 0)
            return FAIL("expected true or false, got %s", got);
        *FIELD(base, r->off, bool) = b;
        return 0;
    }
    case CT_ENUM:
        return store_enum(r, base, n, got, err);
    case CT_PATHS:
    case CT_STRS:
    case CT_JSON:
        return store_list(r, base, n, got, err);
    }
    return svc_err_set(err, SVC_E_INTERNAL, "config: bad table row %s", r->name);
}

/* Put row r's default into base. */
static int row_default(const struct cfg_row *r, void *base, const char *home, struct svc_err *err)
{
    if (!r->def)
        return 0;
    if (r->type == CT_PATH && (r->flags & F_HOMEREL)) {
        row_set(r, base, svc_path_join(home, r->def));
        return 0;
    }
    if (r->type == CT_JSON) {
        json_object *j = json_tokener_parse(r->def);
        if (!j) /* a default that is not JSON: a bug in the table */
            return svc_err_set(err, SVC_E_INTERNAL, "config: bad default for %s", r->name);
        row_set(r, base, j);
        return 0;
    }
    struct cfgy_node n = {.file = "<defaults>",
                          .path = r->name,
                          .text = r->def,
                          .len = strlen(r->def),
                          .plain = true,
                          .line = 1,
                          .col = 1};
    /* "[]": an empty list */
    n.kind = strcmp(r->def, "[]") == 0 || cfgy_is_null(n.text, n.len) ? CFGY_NULL : CFGY_SCALAR;
    if (row_store(r, base, &n, err) < 0) {
        if (err && err->code == SVC_E_CONFIG)
            err->code = SVC_E_INTERNAL; /* a bad default is a bug in the table */
        return -1;
    }
    return 0;
}

static int rows_default(const struct cfg_row *rows, size_t nrows, void *base, const char *home,
                        struct svc_err *err)
{
    for (size_t i = 0; i < nrows; i++)
        if (row_default(&rows[i], base, home, err) < 0)
            return -1;
    return 0;
}

/* ---- The walker's callback: meaning ---- */

/* Edit distance of a and b (case folded), at most 64 characters each; larger beyond. */
static size_t key_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            bool same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            size_t best = diag + (same ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Keep name (len bytes) in *best when it is nearer key than what is there. */
static void key_nearer(const char *key, const char *name, size_t len, char *best, size_t *dist)
{
    char cand[128];
    snprintf(cand, sizeof cand, "%.*s", (int)len, name);
    size_t d = key_distance(key, cand);
    if (d < *dist) {
        *dist = d;
        snprintf(best, 128, "%s", cand);
    }
}

/* The known key nearest to n's key in its place (a section, a setting of the section, a
 * key of a list item), into best ("" when none is near: at most a third of its letters
 * off, and at least one). */
static void cfg_closest(const struct cfg_frame *parent, const struct cfgy_node *n, char best[128])
{
    size_t dist = SIZE_MAX;
    best[0] = '\0';
    if (parent->kind == FR_ITEM) {
        for (size_t i = 0; i < parent->list->nrows; i++)
            key_nearer(n->key, parent->list->rows[i].name, strlen(parent->list->rows[i].name), best,
                       &dist);
    } else if (parent->kind == FR_ROOT) {
        for (size_t i = 0; i < NROWS; i++)
            key_nearer(n->key, cfg_rows[i].name, strcspn(cfg_rows[i].name, "."), best, &dist);
        for (size_t i = 0; i < NLISTS; i++)
            if (!strchr(cfg_lists[i].name, '.'))
                key_nearer(n->key, cfg_lists[i].name, strlen(cfg_lists[i].name), best, &dist);
    } else if (parent->kind == FR_SECTION) {
        size_t sl = parent->seclen;
        for (size_t i = 0; i < NROWS + NLISTS; i++) {
            const char *name = i < NROWS ? cfg_rows[i].name : cfg_lists[i - NROWS].name;
            if (strncmp(name, parent->section, sl) == 0 && name[sl] == '.')
                key_nearer(n->key, name + sl + 1, strlen(name + sl + 1), best, &dist);
        }
    }
    size_t len = strlen(n->key);
    if (dist > (len / 3 > 1 ? len / 3 : 1))
        best[0] = '\0';
}

static int cfg_warn_unknown(struct cfg_load *c, const struct cfgy_node *n)
{
    struct svc_config *cfg = c->cfg;
    char **w = svc_xrealloc(cfg->warnings, (cfg->nwarnings + 2) * sizeof *w);
    cfg->warnings = w;
    char near[128];
    cfg_closest(&c->fr[n->depth - 1], n, near);
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_printf(&b, "%s:%d:%d: unknown key '%s'", n->file, n->key_line, n->key_col, n->path);
    if (near[0]) {
        size_t keep = strlen(n->path) - strlen(n->key); /* the path up to the key */
        svc_buf_printf(&b, " (did you mean `%.*s%s`?)", (int)keep, n->path, near);
    }
    char *s = svc_buf_steal(&b);
    w[cfg->nwarnings++] = s;
    w[cfg->nwarnings] = NULL;
    return CFGY_SKIP;
}

/* Apply node n to row r of base; lists descend into a FR_LIST frame at fr. */
static int cfg_apply(const struct cfg_row *r, void *base, const struct cfgy_node *n,
                     struct cfg_frame *fr, struct svc_err *err)
{
    if ((r->type == CT_PATHS || r->type == CT_STRS) && n->kind == CFGY_SEQ) {
        char **v = svc_xcalloc(n->count + 1, sizeof *v);
        row_set(r, base, v);
        *fr = (struct cfg_frame){.kind = FR_LIST, .row = r, .base = base};
        return CFGY_DESCEND;
    }
    if (r->type == CT_JSON && n->kind == CFGY_MAP) {
        json_object *j;
        if (cfgy_to_json(n, &j, err) < 0)
            return -1;
        row_set(r, base, j);
        return CFGY_SKIP;
    }
    return row_store(r, base, n, err) < 0 ? -1 : CFGY_SKIP;
}

static int cfg_dup(const struct cfgy_node *n, struct svc_err *err)
{
    return cfgy_fail(err, n->file, n->key_line, n->key_col, n->path, "duplicate key");
}

/* The list named name ("jobs", "server.users"), or NULL. */
static const struct cfg_list *list_named(const char *name)
{
    for (size_t i = 0; i < NLISTS; i++)
        if (strcmp(name, cfg_lists[i].name) == 0)
            return &cfg_lists[i];
    return NULL;
}

/* Enter the sequence of list l at node n; its items are read into frame fr. */
static int cfg_enter_list(struct cfg_load *c, const struct cfg_list *l, const struct cfgy_node *n,
                          struct cfg_frame *fr, struct svc_err *err)
{
    uint64_t bit = 1ull << (size_t)(l - cfg_lists);
    if (c->lists_seen & bit)
        return cfg_dup(n, err);
    c->lists_seen |= bit;
    if (n->kind == CFGY_NULL)
        return CFGY_SKIP;
    if (n->kind != CFGY_SEQ)
        return FAIL("expected a sequence of mappings");
    if (n->count > 0) {
        void *arr = svc_xcalloc(n->count, l->size);
        memcpy((char *)c->cfg + l->arr_off, &arr, sizeof arr);
        *FIELD(c->cfg, l->n_off, size_t) = n->count;
    }
    *fr = (struct cfg_frame){.kind = FR_ITEMS, .list = l};
    return CFGY_DESCEND;
}

static int cfg_enter_root(struct cfg_load *c, const struct cfgy_node *n, struct svc_err *err)
{
    struct cfg_frame *fr = &c->fr[1];
    const struct cfg_list *l = list_named(n->key);
    if (l)
        return cfg_enter_list(c, l, n, fr, err);
    size_t klen = strlen(n->key);
    for (size_t i = 0; i < NROWS; i++) {
        if (strncmp(cfg_rows[i].name, n->key, klen) != 0 || cfg_rows[i].name[klen] != '.')
            continue;
        if (c->sections_seen & (1ull << i))
            return cfg_dup(n, err);
        c->sections_seen |= 1ull << i;
        if (n->kind == CFGY_NULL)
            return CFGY_SKIP;
        if (n->kind != CFGY_MAP)
            return FAIL("expected a mapping");
        *fr = (struct cfg_frame){.kind = FR_SECTION, .section = cfg_rows[i].name, .seclen = klen};
        return CFGY_DESCEND;
    }
    return cfg_warn_unknown(c, n);
}

/* Leaving a jobs[i] / extensions[i] mapping: required keys, unique key. */
static int cfg_leave_item(struct cfg_load *c, struct cfg_frame *fr, const struct cfgy_node *n,
                          struct svc_err *err)
{
    const struct cfg_list *l = fr->list;
    const char *why = l->check ? l->check(fr->base) : NULL;
    if (why)
        return FAIL("%s", why);
    for (size_t i = 0; i < l->nrows; i++) {
        const struct cfg_row *r = &l->rows[i];
        char key[256];
        snprintf(key, sizeof key, "%s.%s", n->path, r->name);
        if ((r->flags & F_REQUIRED) && !(fr->seen & (1ull << i)))
            return cfgy_fail(err, n->file, n->line, n->col, key, "missing required key");
        if (strcmp(r->name, l->unique) != 0)
            continue;
        const char *mine = *FIELD(fr->base, r->off, char *);
        char *arr = list_array(c->cfg, l);
        for (size_t k = 0; k < n->index; k++) {
            const char *other = *FIELD(arr + k * l->size, r->off, char *);
            if (other && mine && strcmp(other, mine) == 0)
                return cfgy_fail(err, n->file, fr->line[i], fr->col[i], key,
                                 "'%s' is already used by %s[%zu]", mine, l->name, k);
        }
    }
    return CFGY_SKIP;
}

static int cfg_visit(void *vctx, const struct cfgy_node *n, struct svc_err *err)
{
    struct cfg_load *c = vctx;
    if (n->depth < 1 || n->depth >= (int)(sizeof c->fr / sizeof c->fr[0]))
        return svc_err_set(err, SVC_E_INTERNAL, "config: walked too deep");
    struct cfg_frame *parent = &c->fr[n->depth - 1];
    struct cfg_frame *self = &c->fr[n->depth];

    if (n->leaving) {
        if (self->kind == FR_ITEM)
            return cfg_leave_item(c, self, n, err);
        if (self->kind == FR_LIST && (int64_t)self->n < self->row->min)
            return FAIL("must not be empty");
        return CFGY_SKIP;
    }

    switch (parent->kind) {
    case FR_ROOT:
        return cfg_enter_root(c, n, err);
    case FR_SECTION: {
        char lname[64];
        snprintf(lname, sizeof lname, "%.*s.%s", (int)parent->seclen, parent->section, n->key);
        const struct cfg_list *l = list_named(lname);
        if (l)
            return cfg_enter_list(c, l, n, self, err);
        for (size_t i = 0; i < NROWS; i++) {
            const char *name = cfg_rows[i].name;
            if (strncmp(name, parent->section, parent->seclen) != 0 ||
                name[parent->seclen] != '.' || strcmp(name + parent->seclen + 1, n->key) != 0)
                continue;
            if (c->seen & (1ull << i))
                return cfg_dup(n, err);
            c->seen |= 1ull << i;
            return cfg_apply(&cfg_rows[i], c->cfg, n, self, err);
        }
        return cfg_warn_unknown(c, n);
    }
    case FR_ITEMS: {
        const struct cfg_list *l = parent->list;
        if (n->kind != CFGY_MAP)
            return FAIL("expected a mapping");
        *self = (struct cfg_frame){
            .kind = FR_ITEM, .list = l, .base = (char *)list_array(c->cfg, l) + n->index * l->size};
        if (rows_default(l->rows, l->nrows, self->base, c->cfg->home, err) < 0)
            return -1;
        return CFGY_DESCEND;
    }
    case FR_ITEM:
        for (size_t i = 0; i < parent->list->nrows; i++) {
            if (strcmp(parent->list->rows[i].name, n->key) != 0)
                continue;
            if (parent->seen & (1ull << i))
                return cfg_dup(n, err);
            parent->seen |= 1ull << i;
            parent->line[i] = n->line;
            parent->col[i] = n->col;
            return cfg_apply(&parent->list->rows[i], parent->base, n, self, err);
        }
        return cfg_warn_unknown(c, n);
    case FR_LIST: {
        const struct cfg_row *r = parent->row;
        char got[96];
        describe(r, n, got, sizeof got);
        if (n->kind != CFGY_SCALAR)
            return FAIL("expected %s, got %s", r->type == CT_PATHS ? "a path" : "a string", got);
        if (strlen(n->text) != n->len)
            return FAIL("contains a NUL character");
        if (n->len == 0)
            return FAIL("must not be empty");
        const char *why = r->check ? r->check(n->text) : NULL;
        if (why)
            return FAIL("%s", why);
        char *v = r->type == CT_PATHS ? svc_path_expand(n->text) : svc_xstrdup(n->text);
        (*FIELD(parent->base, r->off, char **))[parent->n++] = v;
        return CFGY_SKIP;
    }
    }
    return svc_err_set(err, SVC_E_INTERNAL, "config: bad walker state");
}

/* ---- Public API ---- */

void svc_config_free(struct svc_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < NROWS; i++)
        row_free(&cfg_rows[i], cfg);
    for (size_t li = 0; li < NLISTS; li++) {
        const struct cfg_list *l = &cfg_lists[li];
        char *arr = list_array(cfg, l); /* NULL when its count is 0 */
        for (size_t k = 0; k < list_count(cfg, l); k++)
            for (size_t i = 0; i < l->nrows; i++)
                row_free(&l->rows[i], arr + k * l->size);
        free(arr);
    }
    strv_free(cfg->warnings);
    free(cfg->home);
    free(cfg->source);
    memset(cfg, 0, sizeof *cfg);
}

/* $SVC_HOME or ~/.svc, expanded; heap, never NULL. */
static char *config_home(void)
{
    const char *h = getenv("SVC_HOME");
    return svc_path_expand(h && *h ? h : "~/.svc");
}

int svc_config_defaults(struct svc_config *cfg, struct svc_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->home = config_home();
    cfg->warnings = svc_xcalloc(1, sizeof *cfg->warnings);
    if (rows_default(cfg_rows, NROWS, cfg, cfg->home, err) == 0)
        return 0;
    svc_config_free(cfg);
    return -1;
}

/* Defaults, then buf on top; source (may be NULL) is recorded. */
static int config_load(struct svc_config *cfg, const char *buf, size_t len, const char *file,
                       const char *source, struct svc_err *err)
{
    struct cfg_load c = {.cfg = cfg}; /* fr[0]: FR_ROOT */
    if (svc_config_defaults(cfg, err) < 0)
        return -1;
    if (source)
        cfg->source = svc_xstrdup(source);
    if (cfgy_walk(file, buf ? buf : "", buf ? len : 0, cfg_visit, &c, err) == 0)
        return 0;
    svc_config_free(cfg);
    return -1;
}

int svc_config_load_buffer(struct svc_config *cfg, const char *buf, size_t len, const char *name,
                           struct svc_err *err)
{
    return config_load(cfg, buf, len, name ? name : "<buffer>", name, err);
}

/* The file at path; a missing one is the defaults when missing_ok. */
static int load_path(struct svc_config *cfg, const char *path, bool missing_ok, struct svc_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct svc_err e = {0};
    memset(cfg, 0, sizeof *cfg);
    if (svc_file_read_follow(path, &buf, &len, &e) < 0) {
        if (e.code == SVC_E_NOT_FOUND)
            return missing_ok ? svc_config_defaults(cfg, err)
                              : svc_err_set(err, SVC_E_CONFIG, "%s: no such file", path);
        return svc_err_set(err, SVC_E_CONFIG, "%s: cannot read: %s", path, e.message);
    }
    int rc = config_load(cfg, buf, len, path, path, err);
    free(buf);
    return rc;
}

int svc_config_load_file(struct svc_config *cfg, const char *path, struct svc_err *err)
{
    return load_path(cfg, path, false, err);
}

int svc_config_load(struct svc_config *cfg, struct svc_err *err)
{
    const char *env = getenv("SVC_CONFIG");
    char *home = config_home();
    char *path = env && *env ? svc_path_expand(env) : svc_path_join(home, "agents.yaml");
    free(home);
    int rc = load_path(cfg, path, !(env && *env), err);
    free(path);
    return rc;
}

json_object *svc_config_keys(void)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < NROWS; i++)
        json_object_array_add(a, json_object_new_string(cfg_rows[i].name));
    for (size_t li = 0; li < NLISTS; li++) {
        json_object_array_add(a, json_object_new_string(cfg_lists[li].name));
        for (size_t i = 0; i < cfg_lists[li].nrows; i++) {
            char key[128];
            snprintf(key, sizeof key, "%s[].%s", cfg_lists[li].name, cfg_lists[li].rows[i].name);
            json_object_array_add(a, json_object_new_string(key));
        }
    }
    return a;
}

static json_object *row_to_json(const struct cfg_row *r, const void *base)
{
    switch (r->type) {
    case CT_STR:
    case CT_PATH: {
        const char *s = *CFIELD(base, r->off, char *);
        if (r->flags & F_SECRET)
            return json_object_new_string(s && *s ? "***" : "");
        return s ? json_object_new_string(s) : NULL;
    }
    case CT_INT:
        return json_object_new_int(*CFIELD(base, r->off, int));
    case CT_INT64:
        return json_object_new_int64(*CFIELD(base, r->off, int64_t));
    case CT_BOOL:
        return json_object_new_boolean(*CFIELD(base, r->off, bool));
    case CT_DOUBLE_NULL:
        return *CFIELD(base, r->has_off, bool)
                   ? json_object_new_double(*CFIELD(base, r->off, double))
                   : NULL;
    case CT_INT64_NULL:
        return *CFIELD(base, r->has_off, bool)
                   ? json_object_new_int64(*CFIELD(base, r->off, int64_t))
                   : NULL;
    case CT_ENUM: {
        int v = *CFIELD(base, r->off, int), n = 0;
        while (r->names[n])
            n++;
        return v >= 0 && v < n ? json_object_new_string(r->names[v]) : NULL;
    }
    case CT_PATHS:
    case CT_STRS: {
        json_object *a = json_object_new_array();
        for (char *const *p = *CFIELD(base, r->off, char **); p && *p; p++)
            json_object_array_add(a, json_object_new_string(*p));
        return a;
    }
    case CT_JSON: {
        json_object *j = *CFIELD(base, r->off, json_object *), *o = j ? svc_json_copy(j) : NULL;
        if (o && (r->flags & F_SECRET)) { /* every value is a secret, the keys are not */
            json_object_object_foreach(o, k, v)
            {
                (void)v;
                json_object_object_add(o, k, json_object_new_string("***"));
            }
        }
        return o;
    }
    }
    return NULL;
}

/* Add v under name in root: "jobs" at the top, "server.listen" in its section's object. */
static void put_at(json_object *root, const char *name, json_object *v)
{
    const char *dot = strchr(name, '.');
    json_object *sec = root;
    if (dot) {
        char sname[32];
        snprintf(sname, sizeof sname, "%.*s", (int)(dot - name), name);
        if (!json_object_object_get_ex(root, sname, &sec))
            json_object_object_add(root, sname, sec = json_object_new_object());
    }
    json_object_object_add(sec, dot ? dot + 1 : name, v);
}

json_object *svc_config_to_json(const struct svc_config *cfg)
{
    json_object *root = json_object_new_object();
    for (size_t i = 0; i < NROWS; i++)
        put_at(root, cfg_rows[i].name, row_to_json(&cfg_rows[i], cfg));
    for (size_t li = 0; li < NLISTS; li++) {
        const struct cfg_list *l = &cfg_lists[li];
        json_object *arr = json_object_new_array();
        const char *items = list_array(cfg, l);
        for (size_t k = 0; items && k < list_count(cfg, l); k++) {
            json_object *o = json_object_new_object();
            for (size_t i = 0; i < l->nrows; i++)
                if (!(l->rows[i].flags & F_HIDDEN))
                    json_object_object_add(o, l->rows[i].name,
                                           row_to_json(&l->rows[i], items + k * l->size));
            json_object_array_add(arr, o);
        }
        put_at(root, l->name, arr);
    }
    /* a secret in force through its environment variable is set too: say so */
    if (svc_config_api_token(cfg))
        put_at(root, "server.api_token", json_object_new_string("***"));
    if (svc_config_model_api_key(cfg))
        put_at(root, "model.api_key", json_object_new_string("***"));
    json_object_object_add(root, "source",
                           cfg->source ? json_object_new_string(cfg->source) : NULL);
    return root;
}

static const char *secret_in_force(const char *value, const char *env_name)
{
    if (value && *value)
        return value;
    if (env_name && *env_name) {
        const char *e = getenv(env_name);
        if (e && *e)
            return e;
    }
    return NULL;
}

const char *svc_config_api_token(const struct svc_config *cfg)
{
    return secret_in_force(cfg->server.api_token, cfg->server.api_token_env);
}

const char *svc_config_model_api_key(const struct svc_config *cfg)
{
    return secret_in_force(cfg->model.api_key, cfg->model.api_key_env);
}
