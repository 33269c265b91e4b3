/* svc: the command-line tool (SPEC 7). Parses arguments, calls core/, prints.
 * Exit codes: 0 ok, 1 failure, 2 usage. Errors go to stderr as one line:
 *   svc: <code>: <message>                                                        */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bar.h"
#include "cmds.h"
#include "config.h"
#include "erase.h"
#include "fsck.h"
#include "hostdb.h"
#include "index.h"
#include "jobs.h"
#include "jsonx.h"
#include "mcp.h"
#include "memory.h"
#include "query.h"
#include "retention.h"
#include "session.h"
#include "store.h"
#include "util.h"

static void print_usage(FILE *f, const char *cmd);

int svc_cli_root_missing(const struct svc_config *cfg)
{
    if (!cfg->sessions.enabled || svc_is_dir(cfg->sessions.root))
        return 0;
    struct stat sb;
    fprintf(stderr,
            "svc: not_found: the session root %s %s (is SVC_HOME, --config or sessions.root the "
            "service's?)\n",
            cfg->sessions.root,
            stat(cfg->sessions.root, &sb) == 0 ? "is not a directory" : "does not exist");
    return 1;
}

int svc_cli_usage(const char *cmd, const char *why)
{
    if (why)
        fprintf(stderr, "svc: %s\n", why);
    print_usage(stderr, cmd);
    return 2;
}

static int usage(const char *why)
{
    return svc_cli_usage(NULL, why);
}

int svc_cli_fail(const struct svc_err *err)
{
    fprintf(stderr, "svc: %s: %s\n", svc_err_name(err->code), err->message);
    return 1;
}

int svc_cli_print_json(json_object *o)
{
    char *s = svc_json_dump_native(o);
    printf("%s\n", s);
    free(s);
    json_object_put(o);
    return 0;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* `config check [--allow-unknown]`: the warnings, then ok; exit 1 when there is a warning
 * (an unknown key drops what it meant to set) unless --allow-unknown. `config show`. */
static int cmd_config(struct svc_config *cfg, int argc, char **argv)
{
    bool allow = argc == 2 && strcmp(argv[1], "--allow-unknown") == 0;
    const char *sub = argc == 1 || allow ? argv[0] : "";
    if (strcmp(sub, "check") == 0) {
        for (size_t i = 0; i < cfg->nwarnings; i++)
            fprintf(stderr, "svc: warning: %s\n", cfg->warnings[i]);
        const char *src = cfg->source ? cfg->source : "(defaults: no agents.yaml)";
        if (cfg->nwarnings > 0 && !allow) {
            fprintf(stderr,
                    "svc: %s: %zu warning%s (unknown keys are ignored; --allow-unknown accepts "
                    "them)\n",
                    src, cfg->nwarnings, cfg->nwarnings == 1 ? "" : "s");
            return 1;
        }
        printf("%s: ok\n", src);
        return 0;
    }
    if (strcmp(sub, "show") == 0 && argc == 1)
        return svc_cli_print_json(svc_config_to_json(cfg));
    /* one a line: the man page's list (agents.yaml(5)) */
    if (strcmp(sub, "keys") == 0 && argc == 1) {
        json_object *keys = svc_config_keys();
        for (size_t i = 0; i < json_object_array_length(keys); i++)
            printf("%s\n", json_object_get_string(json_object_array_get_idx(keys, i)));
        json_object_put(keys);
        return 0;
    }
    return usage("config needs check [--allow-unknown], show or keys");
}

/* `sessions delete ID...`: each one deleted or its error line; exit 1 when one failed, 2
 * (nothing deleted) when an id is not valid. */
static int sessions_delete(struct svc_config *cfg, int argc, char **argv)
{
    if (argc < 1)
        return usage("sessions delete needs at least one SESSION");
    int rc = 0;
    struct svc_err err;
    for (int i = 0; i < argc; i++) /* every id checked first: a bad one deletes nothing */
        if (svc_layout_id_check(argv[i], &err) != 0)
            return svc_cli_fail(&err), 2;
    for (int i = 0; i < argc; i++) {
        json_object *out = NULL;
        if (svc_session_delete(cfg, argv[i], &out, &err) != 0)
            rc = svc_cli_fail(&err);
        else
            printf("deleted %s\n", argv[i]);
        json_object_put(out);
    }
    return rc;
}

/* The options of `sessions list` (argv[0] is "list") into q, its tags into tags (room for
 * argc); 0, or the usage error's exit code. */
static int list_options(int argc, char **argv, struct svc_list_query *q, const char **tags)
{
    q->tags = tags;
    for (int i = 1; i < argc; i++) {
        long v;
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "--limit") == 0 && more) {
            if (parse_int(argv[++i], 1, 500, &v) != 0)
                return usage("--limit must be 1..500");
            q->limit = v;
        } else if (strcmp(argv[i], "--cursor") == 0 && more) {
            q->cursor = argv[++i];
        } else if (strcmp(argv[i], "--status") == 0 && more) {
            q->status = argv[++i];
        } else if (strcmp(argv[i], "--q") == 0 && more) {
            q->q = argv[++i];
        } else if (strcmp(argv[i], "--all") == 0) {
            q->include_archived = true;
        } else if (strcmp(argv[i], "--archived") == 0) {
            q->archived_only = true;
        } else if (strcmp(argv[i], "--user") == 0 && more) {
            q->owner = argv[++i];
        } else if (strcmp(argv[i], "--pinned") == 0 && more) {
            q->pinned = argv[++i];
        } else if (strcmp(argv[i], "--tag") == 0 && more) {
            tags[q->ntags++] = argv[++i];
        } else {
            return usage("unknown option for sessions list");
        }
    }
    return 0;
}

static int cmd_sessions(struct svc_config *cfg, int argc, char **argv)
{
    struct svc_err err;
    json_object *out = NULL;
    int rc;
    if (argc < 1)
        return usage("sessions needs a subcommand");
    const char *sub = argv[0];
    if (strcmp(sub, "list") == 0) {
        struct svc_list_query q = {.limit = SVC_LIST_LIMIT_DEFAULT};
        const char **tags = svc_xcalloc((size_t)argc, sizeof *tags);
        int bad = list_options(argc, argv, &q, tags);
        rc = bad ? 0 : svc_sessions_list(cfg, &q, &out, &err);
        free(tags);
        if (bad)
            return bad;
    } else if (strcmp(sub, "messages") == 0) {
        if (argc < 2)
            return usage("sessions messages needs SESSION");
        struct svc_messages_query q = {.limit = SVC_MESSAGES_LIMIT_DEFAULT};
        for (int i = 2; i < argc; i++) {
            long v;
            if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
                if (parse_int(argv[++i], 1, 1000, &v) != 0)
                    return usage("--limit must be 1..1000");
                q.limit = v;
            } else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) {
                if (parse_int(argv[++i], 0, 1L << 40, &v) != 0)
                    return usage("--offset must be >= 0");
                q.offset = v;
            } else if (strcmp(argv[i], "--desc") == 0) {
                q.order = "desc";
            } else if (strcmp(argv[i], "--turns") == 0) {
                q.include_turns = true;
            } else {
                return usage("unknown option for sessions messages");
            }
        }
        rc = svc_session_messages(cfg, argv[1], &q, &out, &err);
    } else if (strcmp(sub, "show") == 0 || strcmp(sub, "archive") == 0 ||
               strcmp(sub, "unarchive") == 0) {
        if (argc != 2)
            return usage("this subcommand needs exactly one SESSION");
        if (strcmp(sub, "show") == 0) {
            rc = svc_session_get(cfg, argv[1], &out, &err);
            if (rc == 0) /* SPEC 17: with what Strands keeps there, as the API shows it */
                out = svc_session_with_strands(cfg, argv[1], out);
        } else {
            rc = svc_session_set_archived(cfg, argv[1], strcmp(sub, "archive") == 0, &out, &err);
        }
    } else if (strcmp(sub, "delete") == 0) {
        return sessions_delete(cfg, argc - 1, argv + 1);
    } else {
        return usage("unknown sessions subcommand");
    }
    if (rc != 0)
        return svc_cli_fail(&err);
    return svc_cli_print_json(out);
}

static int cmd_chat(struct svc_config *cfg, int argc, char **argv)
{
    if (argc != 2)
        return usage("chat needs SESSION and TEXT");
    struct svc_err err;
    struct svc_run_request req = {.session_id = argv[0], .input = argv[1], .channel = "cli"};
    struct svc_run *run = NULL;
    if (svc_run_begin(cfg, &req, &run, &err) != 0)
        return svc_cli_fail(&err);
    int rc = svc_run_execute(run, NULL, &err);
    struct svc_run_answer a;
    svc_run_answer(run, &a);
    if (rc == 0)
        printf("%s\n", a.content);
    svc_run_free(run);
    return rc == 0 ? 0 : svc_cli_fail(&err);
}

/* fsck's progress through the bar (bar.h): sessions checked, no bytes. */
static void fsck_progress(void *ctx, size_t done, size_t total)
{
    bar_draw(ctx, done, total, 0);
}

static int cmd_fsck(struct svc_config *cfg, int argc, char **argv)
{
    struct svc_fsck_opts o = {0};
    bool json = false;
    const char **ids = svc_xcalloc((size_t)argc + 1, sizeof *ids);
    bool bad = false;
    for (int i = 0; i < argc && !bad; i++) {
        if (strcmp(argv[i], "--repair") == 0)
            o.repair = true;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--session") == 0 && i + 1 < argc)
            ids[o.nsessions++] = argv[++i];
        else
            bad = true;
    }
    if (bad || svc_cli_root_missing(cfg)) {
        free(ids);
        return bad ? usage("unknown option for fsck") : 1;
    }
    o.sessions = ids;
    struct bar b; /* on stderr: stdout carries the findings */
    if (bar_init(&b, stderr, "fsck", false)) {
        o.progress = fsck_progress;
        o.ctx = &b;
    }
    struct svc_err err;
    json_object *rep = NULL;
    int rc = svc_fsck(cfg, &o, &rep, &err);
    bar_end(&b);
    free(ids);
    if (rc != 0)
        return err.code == SVC_E_INVALID_SESSION_ID ? (svc_cli_fail(&err), 2) : svc_cli_fail(&err);
    json_object *counts = svc_json_obj(rep, "counts");
    int64_t left = svc_json_int(counts, "left", 0);
    if (json) {
        svc_cli_print_json(json_object_get(rep));
    } else {
        json_object *probs = svc_json_arr(rep, "problems"), *busy = svc_json_arr(rep, "busy");
        for (size_t i = 0; probs && i < json_object_array_length(probs); i++) {
            json_object *p = json_object_array_get_idx(probs, i);
            json_object *off = json_object_object_get(p, "offset");
            printf("%s", svc_json_str(p, "file", ""));
            if (json_object_is_type(off, json_type_int))
                printf(" @%lld", (long long)json_object_get_int64(off));
            printf(": %s: %s%s\n", svc_json_str(p, "kind", ""), svc_json_str(p, "message", ""),
                   svc_json_bool(p, "repaired", false) ? " [repaired]" : "");
        }
        size_t nbusy = busy ? json_object_array_length(busy) : 0;
        printf("fsck: %lld sessions checked, %lld problems, %lld repaired, %lld left "
               "(%lld stale runs repaired)%s\n",
               (long long)svc_json_int(rep, "sessions_checked", 0),
               (long long)svc_json_int(counts, "problems", 0),
               (long long)svc_json_int(counts, "repaired", 0), (long long)left,
               (long long)svc_json_int(counts, "stale_runs_repaired", 0),
               nbusy ? "; sessions with a live run were checked in part" : "");
    }
    json_object_put(rep);
    return left > 0 ? 1 : 0;
}

/* The sessions to sync, in a temporary database (one id a row, kept in id order). */
static int note_sid(struct svc_hostdb *ids, const char *sid)
{
    return svc_hostdb_run(ids, "INSERT OR IGNORE INTO ids VALUES (?1)", "s", sid);
}

static void note_listed(void *ctx, const char *sid, double updated, int64_t msgs, bool archived)
{
    note_sid(ctx, sid); /* a failed insert shows as a count short; the next run syncs it */
}

/* Sync one session with what the memory file holds (have); its error on stderr. */
static int sync_one(struct svc_config *cfg, const char *sid, struct svc_hostdb *have)
{
    struct svc_err err;
    struct svc_sess s;
    int rc = svc_sess_open(cfg, sid, &s, &err) == 0 ? svc_memory_sync(cfg, &s, have, &err) : -1;
    svc_sess_close(&s);
    if (rc != 0)
        fprintf(stderr, "svc: %s: %s: %s\n", sid, svc_err_name(err.code), err.message);
    return rc;
}

/* One session's memory state as svc memory sync left it. */
static void print_memory_state(struct svc_config *cfg, const char *sid)
{
    struct svc_err err;
    struct svc_sess s;
    char *path = svc_sess_open(cfg, sid, &s, &err) == 0
                     ? svc_sess_path(&s, SVC_F_MEMORY, SVC_FROM_ABS)
                     : NULL;
    svc_sess_close(&s);
    json_object *o = NULL;
    if (path && svc_json_read_file(path, &o, NULL) == 0)
        svc_cli_print_json(o);
    else
        printf("{}\n"); /* no pair to sync yet */
    free(path);
}

/* `memory sync [SESSION...]`: each session's newest pair synced now (after a failure was
 * fixed), and a pair synced already whose digest the memory file lacks written again (a
 * root restored without its memory); every session when none is named. One session prints
 * its svc_memory.json; more print the counts. Exit 1 when one failed. */
static int cmd_memory(struct svc_config *cfg, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "sync") != 0)
        return usage("memory needs: sync [SESSION...]");
    struct svc_err err;
    struct svc_hostdb *have = svc_memory_have(cfg, &err);
    struct svc_hostdb ids = {0};
    if (!have || svc_hostdb_temp(&ids, "CREATE TABLE ids(id TEXT PRIMARY KEY) WITHOUT ROWID", 256,
                                 &err) != 0) {
        svc_memory_have_free(have);
        return svc_cli_fail(&err);
    }
    struct svc_store st;
    svc_store_from_config(cfg, &st);
    struct svc_list_mark mark = {0};
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc; i++)
        rc = note_sid(&ids, argv[i]);
    if (rc == 0 && argc == 1 && svc_index_each(&st, &mark, note_listed, &ids) < 0)
        rc = svc_err_errno(&err, "list the sessions");
    else if (rc != 0)
        svc_err_set(&err, SVC_E_IO, "temporary database: %s", svc_hostdb_errmsg(&ids));
    size_t done = 0, failed = 0;
    sqlite3_stmt *walk = rc == 0 ? svc_hostdb_stmt(&ids, "SELECT id FROM ids ORDER BY id") : NULL;
    while (walk && sqlite3_step(walk) == SQLITE_ROW) {
        failed += sync_one(cfg, (const char *)sqlite3_column_text(walk, 0), have) != 0;
        done++;
    }
    svc_memory_have_free(have);
    svc_hostdb_close(&ids);
    if (rc < 0)
        return svc_cli_fail(&err);
    if (argc == 2 && failed == 0)
        print_memory_state(cfg, argv[1]);
    else if (argc != 2)
        printf("memory sync: %zu sessions, %zu failed\n", done, failed);
    return failed ? 1 : 0;
}

/* `jobs list` prints every job with its state; `jobs run-due` (cron, a systemd timer)
 * runs the due ones and prints what it did. Exit 1 when a job's run failed. */
static int cmd_jobs(struct svc_config *cfg, int argc, char **argv)
{
    const char *sub = argc == 1 ? argv[0] : "";
    struct svc_err err;
    json_object *out = NULL;
    int rc = 0;
    if (strcmp(sub, "list") == 0) {
        out = json_object_new_object();
        json_object_object_add(out, "jobs", svc_jobs_list(cfg, svc_jobs_now()));
    } else if (strcmp(sub, "run-due") == 0) {
        if (svc_jobs_run_due(cfg, svc_jobs_now(), &out, &err) != 0)
            return svc_cli_fail(&err);
        json_object *arr = svc_json_arr(out, "jobs");
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
            if (strcmp(svc_json_str(json_object_array_get_idx(arr, i), "result", ""), "error") == 0)
                rc = 1;
    } else {
        return usage("jobs needs list or run-due");
    }
    svc_cli_print_json(out);
    return rc;
}

/* `retention [--dry-run]`: one line per session and action, then the counts. */
static int cmd_retention(struct svc_config *cfg, int argc, char **argv)
{
    bool dry = argc == 1 && strcmp(argv[0], "--dry-run") == 0;
    if (argc > 1 || (argc == 1 && !dry))
        return usage("retention takes only --dry-run");
    struct svc_err err;
    json_object *rep = NULL;
    if (svc_retention_apply(cfg, svc_jobs_now(), dry, &rep, &err) != 0)
        return svc_cli_fail(&err);
    json_object *acts = svc_json_arr(rep, "actions"), *c = svc_json_obj(rep, "counts");
    for (size_t i = 0; acts && i < json_object_array_length(acts); i++) {
        json_object *a = json_object_array_get_idx(acts, i);
        printf("%s %s: %s\n", svc_json_str(a, "action", ""), svc_json_str(a, "session_id", ""),
               svc_json_str(a, "reason", ""));
    }
    const char *file = svc_json_str(svc_json_obj(rep, "export"), "export_file", NULL);
    printf("retention%s: %lld archived, %lld deleted, %lld skipped%s%s%s\n",
           dry ? " (dry run, nothing changed)" : "", (long long)svc_json_int(c, "archived", 0),
           (long long)svc_json_int(c, "deleted", 0), (long long)svc_json_int(c, "skipped", 0),
           file ? "; exported first to " : "", file ? file : "",
           svc_retention_enabled(cfg) ? "" : " (retention: sets no age)");
    json_object_put(rep);
    return 0;
}

/* `mcp list [NAME]` (exit 1 when a server listed failed), `mcp call NAME TOOL JSON` (exit 1
 * when the result is an error): SPEC 16, as an admin sees the servers. */
static int cmd_mcp(struct svc_config *cfg, int argc, char **argv)
{
    bool list = argc >= 1 && argc <= 2 && strcmp(argv[0], "list") == 0;
    if (!list && !(argc == 4 && strcmp(argv[0], "call") == 0))
        return usage("mcp needs list [NAME] or call NAME TOOL JSON");
    struct svc_mcp_conn *c = argc > 1 ? svc_mcp_configured(cfg, argv[1]) : NULL;
    if (argc > 1 && !c) {
        fprintf(stderr, "svc: not_found: no MCP server named '%s' in mcp_servers\n", argv[1]);
        return 1;
    }
    json_object *out = json_object_new_object(), *args = NULL;
    int rc = 0;
    if (list) {
        json_object *all = c ? NULL : svc_tools_list(cfg, NULL, true);
        json_object *rows =
            c ? json_object_new_array() : json_object_get(svc_json_arr(all, "mcp_servers"));
        if (c)
            json_object_array_add(rows, svc_mcp_status(c, true));
        for (size_t i = 0; i < json_object_array_length(rows); i++)
            rc |= strcmp(svc_json_str(json_object_array_get_idx(rows, i), "state", ""), "failed") ==
                  0;
        json_object_object_add(out, "mcp_servers", rows);
        json_object_put(all);
    } else if (svc_json_parse(argv[3], strlen(argv[3]), &args, NULL) != 0 ||
               !json_object_is_type(args, json_type_object)) {
        json_object_put(args);
        json_object_put(out);
        return usage("mcp call: JSON must be an object of the tool's arguments");
    } else {
        struct svc_tool_result res;
        svc_mcp_call(c, argv[2], args, NULL, NULL, &res);
        svc_json_set_bool(out, "ok", res.ok);
        svc_json_set_str(out, "text", res.content);
        svc_json_set(out, "content", json_object_get(res.blocks));
        svc_json_set_int(out, "latency_ms", res.latency_ms);
        rc = !res.ok;
        svc_tool_result_free(&res);
        json_object_put(args);
    }
    svc_cli_print_json(out);
    return rc;
}

/* The commands: a new one is a row here (its usage lines and its handler). */
static const struct command {
    const char *name;
    const char *usage; /* one or more "  svc ...\n" lines */
    int (*run)(struct svc_config *cfg, int argc, char **argv);
} commands[] = {
    {"config", "  svc config check|show|keys\n  svc config check [--allow-unknown]\n", cmd_config},
    {"sessions",
     "  svc sessions list [--limit N] [--cursor C] [--all] [--archived] [--status S] [--q TEXT]\n"
     "                    [--user ID] [--pinned true|false] [--tag T]...\n"
     "  svc sessions show|archive|unarchive SESSION\n"
     "  svc sessions delete SESSION...\n"
     "  svc sessions messages SESSION [--limit N] [--offset N] [--desc] [--turns]\n",
     cmd_sessions},
    {"chat", "  svc chat SESSION TEXT\n", cmd_chat},
    {"export",
     "  svc export [--session ID]... [--include-archived] [--status S]... [--since TIME]\n"
     "             [--out DIR] [--tar] [--allow-partial] [--user ID]\n",
     cmd_export},
    {"import",
     "  svc import BUNDLE [--overwrite] [--dry-run]\n"
     "  svc import --from chatgpt FILE [--dry-run]\n",
     cmd_import},
    {"search",
     "  svc search QUERY [--limit N] [--cursor C] [--all] [--role user|assistant|tool]\n"
     "  svc search --rebuild\n",
     cmd_search},
    {"memory", "  svc memory sync [SESSION...]\n", cmd_memory},
    {"jobs", "  svc jobs list|run-due\n", cmd_jobs},
    {"retention", "  svc retention [--dry-run]\n", cmd_retention},
    {"fsck", "  svc fsck [--repair] [--session ID]... [--json]\n", cmd_fsck},
    {"mcp", "  svc mcp list [NAME]\n  svc mcp call NAME TOOL JSON\n", cmd_mcp},
    {"help", "  svc help\n", NULL}, /* handled in main, before the configuration is read */
};

/* The usage of every command, or of cmd only. */
static void print_usage(FILE *f, const char *cmd)
{
    fputs("usage: svc [--config FILE] COMMAND ...\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!cmd || strcmp(cmd, commands[i].name) == 0)
            fputs(commands[i].usage, f);
}

/* The out-of-memory policy (err.h): one line, then abort. */
static void oom_abort(size_t n)
{
    fprintf(stderr, "svc: out of memory allocating %zu bytes\n", n);
    abort();
}

int main(int argc, char **argv)
{
    const char *config_path = NULL;
    svc_oom_set_handler(oom_abort);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config_path = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_usage(stdout, NULL);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("svc %s\n", SVC_VERSION);
            return 0;
        } else
            return usage("unknown option");
    }
    if (i >= argc)
        return usage(NULL);
    if (strcmp(argv[i], "help") == 0) { /* before the configuration: help works with a bad one */
        print_usage(stdout, NULL);
        return 0;
    }
    struct svc_config cfg = {0};
    struct svc_err err;
    int rc =
        config_path ? svc_config_load_file(&cfg, config_path, &err) : svc_config_load(&cfg, &err);
    if (rc != 0)
        return svc_cli_fail(&err);
    umask((mode_t)svc_config_octal(cfg.server.umask)); /* files as svc-fcgi makes them */
    const char *cmd = argv[i++];
    const struct command *c = NULL;
    for (size_t k = 0; k < sizeof commands / sizeof commands[0] && !c; k++)
        if (strcmp(cmd, commands[k].name) == 0)
            c = &commands[k];
    rc = c && c->run ? c->run(&cfg, argc - i, argv + i) : usage("unknown command");
    svc_mcp_stop_all(); /* the MCP servers a command started end with it */
    svc_config_free(&cfg);
    return rc;
}
