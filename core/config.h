/* config: agents.yaml, read with libyaml into struct svc_config.
 * Every setting is one row of a table (name, type, bounds, default, secret): the loader,
 * the validation messages, svc_config_to_json (the effective dump) and redaction all read
 * that table. Errors name file, line, column and key; unknown keys are warnings kept in
 * cfg->warnings. A missing or empty file gives the defaults. Paths have `~` expanded and
 * follow $SVC_HOME where SPEC 1 says so. svc_config_free releases everything the config owns. */
#ifndef SVC_CONFIG_H
#define SVC_CONFIG_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

enum svc_session_provider { SVC_PROVIDER_SVC_REPOSITORY, SVC_PROVIDER_NATIVE_FILE };
enum svc_model_provider { SVC_MODEL_ECHO, SVC_MODEL_OPENAI };
/* agent.conversation_manager: the manager a new session's agent.json names (cmgr.h). */
enum svc_conv_manager { SVC_CM_SLIDING_WINDOW, SVC_CM_SUMMARIZING };
enum svc_cache_mode { SVC_CACHE_AUTO, SVC_CACHE_OFF }; /* sessions.cache (cache.h) */
/* sessions.shared: auto decides by the root's filesystem (svc_fs_shared, fsio.h). */
enum svc_shared_mode { SVC_SHARED_AUTO, SVC_SHARED_ON, SVC_SHARED_OFF };

struct svc_job {
    char *id;
    char *schedule; /* 5-field cron */
    char *session_id;
    char *input;
    bool enabled;
    char *user; /* who the job runs as (SPEC 14); "": an admin */
};

struct svc_extension {
    char *name;
    char *kind; /* "tool" */
    char *description;
    json_object *parameters; /* JSON Schema, owned */
    char **command;          /* argv, NULL-terminated, owned */
    int timeout_s;
    char **env; /* "NAME=value" or "NAME" (copied from ours), NULL-terminated */
    bool enabled;
};

/* One of mcp_servers (SPEC 16): stdio (command) or Streamable HTTP (url), never both. */
struct svc_mcp_server {
    char *name;               /* [a-z0-9_-]{1,32} without "__": its tools are <name>__<tool> */
    char **command;           /* argv, NULL-terminated, or NULL for an HTTP server */
    char *url;                /* "" for a stdio server */
    json_object *env;         /* {NAME: value} added to the child's PATH, HOME and LANG */
    char **env_pass;          /* names copied from our environment when set */
    json_object *headers_env; /* {Header: VARIABLE}: each header's value from a variable */
    int timeout_s;            /* one call (and the start) */
    char **allowed_tools;     /* empty: every tool the server lists */
    char **users;             /* empty: every user; else these user ids (SPEC 14) */
    bool enabled;
};

enum svc_role { SVC_ROLE_USER, SVC_ROLE_ADMIN };

/* One of server.users (SPEC 14): its token is named, never given in clear. */
struct svc_user_conf {
    char *id;
    char *token_env;     /* the environment variable holding the token, or "" */
    char *token_sha256;  /* the token's SHA-256 in hex, or "" */
    char *token_refused; /* a `token:` key is refused; always NULL */
    enum svc_role role;
};

struct svc_config {
    struct {
        char *listen;           /* "unix:/run/svc/svc.sock" or "tcp:127.0.0.1:9000" */
        int workers;            /* 1..256, default 4 */
        int64_t max_requests;   /* 1.., default 10000 */
        int64_t max_body_bytes; /* 1024..1073741824, default 1048576 */
        char *api_token_env;    /* default "SVC_API_TOKEN" */
        char *api_token;        /* secret, default "" */
        int run_timeout_s;      /* 1..86400, default 300 */
        char *socket_mode;      /* octal text, default "0660" (svc_config_octal reads it) */
        char *socket_group;     /* group name of a created socket, "" keeps the process group */
        char *umask;            /* octal text, default "027" */
        char *base_path;        /* "" or "/prefix" (no trailing '/'): routes mounted under it */
        char *user_param;       /* "" or a FastCGI parameter naming the user (REMOTE_USER) */
        char **admins;          /* which users of user_param are admins, NULL-terminated */
        char **fcgi_allow; /* FastCGI peers (acl.h), NULL-terminated; none: loopback (SPEC 19) */
        struct svc_user_conf *users;
        size_t nusers;
    } server;
    struct {
        bool enabled;
        enum svc_session_provider provider;
        char *root;     /* expanded; default $SVC_HOME/agents/native_sessions */
        char *agent_id; /* default "svc-agent"; validated like a session id */
        bool persist_openai_history;
        bool continue_stateless; /* SPEC 15: one session per conversation (chain.h) */
        bool sync_memory;
        enum svc_shared_mode shared; /* auto, on or off; default auto */
        char *export_default_dir;    /* expanded; default ~/Desktop/svc-chat-export */
        char **export_allowed_dirs;  /* expanded, NULL-terminated (never NULL itself) */
        bool fsync;
        enum svc_cache_mode cache; /* auto: caches on where the root is local */
        bool index_db; /* list from this host's SQLite copy of the index (default true) */
    } sessions;
    struct {
        enum svc_model_provider provider;
        char *name; /* default "echo-1" */
        char *base_url;
        char *api_key_env;    /* default "OPENAI_API_KEY" */
        char *api_key;        /* secret */
        int timeout_s;        /* 1..3600, default 120 */
        int max_retries;      /* 0..10, default 2 */
        bool has_temperature; /* temperature: null unless set */
        double temperature;   /* 0..2 */
        bool has_max_tokens;
        int64_t max_tokens;     /* 1.. */
        int64_t context_window; /* 1.., default 128000 */
        char *system_prompt;
    } model;
    struct {
        int window_size;                            /* 2..10000, default 40 */
        int max_tool_iterations;                    /* 1..100, default 8 */
        enum svc_conv_manager conversation_manager; /* default sliding_window */
        bool has_summary_ratio;                     /* null: the default */
        double summary_ratio;                       /* 0.1..0.8, default 0.3 (Strands') */
        int preserve_recent_messages;               /* 0..10000, default 10 (Strands') */
    } agent;
    struct {
        int64_t max_image_bytes; /* one image or file of a request, decoded; default 5 MB */
    } limits;
    struct {
        char *root; /* expanded; default $SVC_HOME/memory */
        int recall; /* 0..100, default 0 */
    } memory;
    struct {
        int archive_after_days;         /* 0..36500, 0 = never (SPEC 13.2) */
        int delete_archived_after_days; /* 0..36500, 0 = never */
        int delete_after_days;          /* 0..36500, 0 = never */
        bool keep_pinned;               /* default true */
        char *export_before_delete;     /* "" or a directory (`~` expanded at use) */
        char *schedule;                 /* 5-field cron, default "17 3 * * *" */
    } retention;
    struct {
        char *index_dir; /* expanded; default $SVC_HOME/search (per host, never the root) */
    } search;
    struct svc_job *jobs;
    size_t njobs;
    struct svc_extension *extensions;
    size_t nextensions;
    struct svc_mcp_server *mcp_servers;
    size_t nmcp_servers;
    struct {
        char **remote_allow; /* URL prefixes a Responses "type": "mcp" tool may name */
    } mcp;

    char *home;      /* $SVC_HOME or ~/.svc, expanded */
    char *source;    /* path of the file read, or NULL when none existed */
    char **warnings; /* "file:line:col: unknown key 'x'" ..., NULL-terminated */
    size_t nwarnings;
};

/* Every loader overwrites *cfg unfreed (uninitialised is fine); a failure leaves it zeroed.
 * Errors are SVC_E_CONFIG "<file>:<line>:<col>: <key>: <what is wrong>" (1-based; key as
 * "jobs[1].schedule", also in err->param) or "<file>:<line>:<col>: syntax error: <libyaml's
 * problem>". cfg->warnings is never NULL after a successful load. */

/* Defaults only (no file). */
int svc_config_defaults(struct svc_config *cfg, struct svc_err *err);
/* $SVC_CONFIG, else $SVC_HOME/agents.yaml (SVC_HOME: ~/.svc); missing: the defaults, with
 * source NULL. */
int svc_config_load(struct svc_config *cfg, struct svc_err *err);
/* A named file (missing is SVC_E_CONFIG here: it was asked for). */
int svc_config_load_file(struct svc_config *cfg, const char *path, struct svc_err *err);
/* From memory; name is used in messages ("<buffer>" when NULL). */
int svc_config_load_buffer(struct svc_config *cfg, const char *buf, size_t len, const char *name,
                           struct svc_err *err);
void svc_config_free(struct svc_config *cfg);

/* Effective configuration as SPEC 4.4 /api/config shows it: every key with defaults applied,
 * secrets as "***" when set and "" when unset, plus "source". New reference. */
json_object *svc_config_to_json(const struct svc_config *cfg);
/* Every key of the tables in order ("server.listen", ..., "jobs", "jobs[].id"). New ref. */
json_object *svc_config_keys(void);
/* The bearer token in force: server.api_token, else $api_token_env; NULL: auth off. */
const char *svc_config_api_token(const struct svc_config *cfg);
/* An octal setting (server.socket_mode, server.umask), checked by the loader, as a number. */
unsigned svc_config_octal(const char *text);
/* A YAML mapping document (docs/openapi.yaml) as JSON, typed by YAML 1.2's core schema
 * (quoted scalars are strings). 0, or -1 with err (SVC_E_CONFIG "<name>:<line>:<col>: ..."). */
int svc_config_yaml_to_json(const char *name, const char *buf, size_t len, json_object **out,
                            struct svc_err *err);
/* The model API key in force (model.api_key, else env api_key_env); NULL when unset. */
const char *svc_config_model_api_key(const struct svc_config *cfg);

#endif
