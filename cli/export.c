/* export: `svc export` and `svc import` (SPEC 5, 7; --from chatgpt, SPEC 13.3). A progress bar
 * (sessions done / total, bytes) on stdout when it is a terminal, nothing of it otherwise; counts
 * at the end; every warning, skipped or failed session on stderr. Exit codes: 0 ok, 1 failure (an
 * import with any failed session included, an export that left out a session without
 * --allow-partial), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bar.h"
#include "bundle.h"
#include "chatgpt.h"
#include "cmds.h"
#include "import.h"
#include "jsonx.h"
#include "util.h"

/* The options of `svc export` into req (its id and status lists have room for argc): NULL,
 * or what is wrong with them. */
static const char *export_options(int argc, char **argv, struct svc_export_request *req)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--session") == 0 && has)
            req->session_ids[req->n_session_ids++] = argv[++i];
        else if (strcmp(a, "--status") == 0 && has)
            req->statuses[req->n_statuses++] = argv[++i];
        else if (strcmp(a, "--since") == 0 && has)
            req->updated_after = argv[++i];
        else if (strcmp(a, "--out") == 0 && has)
            req->output_dir = argv[++i];
        else if (strcmp(a, "--user") == 0 && has)
            req->owner = argv[++i];
        else if (strcmp(a, "--include-archived") == 0)
            req->include_archived = true;
        else if (strcmp(a, "--tar") == 0)
            req->tar = true;
        else if (strcmp(a, "--allow-partial") == 0)
            req->allow_partial = true;
        else
            return "unknown option for export";
    }
    double since;
    if (req->updated_after && svc_time_parse_iso(req->updated_after, &since) != 0)
        return "--since must be an ISO 8601 time, e.g. 2026-11-01T00:00:00Z";
    return NULL;
}

int cmd_export(struct svc_config *cfg, int argc, char **argv)
{
    struct svc_export_request req = {.output_dir_trusted = true};
    req.session_ids = svc_xcalloc((size_t)argc + 1, sizeof *req.session_ids);
    req.statuses = svc_xcalloc((size_t)argc + 1, sizeof *req.statuses);
    const char *bad = export_options(argc, argv, &req);
    if (bad || svc_cli_root_missing(cfg)) {
        free(req.session_ids);
        free(req.statuses);
        return bad ? svc_cli_usage("export", bad) : 1;
    }
    struct svc_err err;
    struct svc_export *ex = NULL;
    json_object *res = NULL;
    struct bar sb;
    struct svc_export_progress sp = {bar_draw, &sb};
    req.selecting = bar_init(&sb, stdout, "export: selecting", false) ? &sp : NULL;
    int rc = svc_export_prepare(cfg, &req, &ex, &err);
    bar_end(&sb);
    free(req.session_ids);
    free(req.statuses);
    if (rc != 0)
        return svc_cli_fail(&err);
    rc = svc_export_write(ex, bar_init(&sb, stdout, "export", true) ? &sp : NULL, &res, &err);
    bar_end(&sb);
    svc_export_free(ex);
    if (rc != 0)
        return svc_cli_fail(&err);
    json_object *warnings = svc_json_arr(res, "warnings");
    for (size_t i = 0; warnings && i < json_object_array_length(warnings); i++) {
        json_object *w = json_object_array_get_idx(warnings, i);
        fprintf(stderr, "svc: warning: session %s: %s: %s\n", svc_json_str(w, "session_id", "?"),
                svc_json_str(w, "file", "?"), svc_json_str(w, "message", "?"));
    }
    json_object *left = svc_json_arr(res, "left_out");
    for (size_t i = 0; left && i < json_object_array_length(left); i++)
        fprintf(stderr, "svc: left out (--allow-partial): session %s\n",
                json_object_get_string(json_object_array_get_idx(left, i)));
    const char *where = svc_json_str(res, "export_dir", svc_json_str(res, "export_file", "?"));
    char hb[32];
    bar_human((uint64_t)svc_json_int(res, "bytes", 0), hb, sizeof hb);
    printf("exported %lld sessions, %lld messages, %s, %zu warnings: %s\n",
           (long long)svc_json_int(res, "session_count", 0),
           (long long)svc_json_int(res, "message_count", 0), hb,
           warnings ? json_object_array_length(warnings) : 0, where);
    json_object_put(res);
    return 0;
}

/* The counts of a ChatGPT import, its skipped conversations on stderr. */
static int chatgpt_report(json_object *rep, bool dry_run)
{
    json_object *sk = svc_json_arr(rep, "skipped"), *imp = svc_json_arr(rep, "imported");
    for (size_t i = 0; sk && i < json_object_array_length(sk); i++) {
        json_object *e = json_object_array_get_idx(sk, i);
        fprintf(stderr, "svc: skipped %s: %s\n", svc_json_str(e, "session_id", "?"),
                svc_json_str(e, "reason", "?"));
    }
    printf("%s %zu sessions (%lld messages) of %lld conversations, skipped %zu; left out: "
           "other branches %lld, messages that are not user or assistant text %lld\n",
           dry_run ? "would import" : "imported", imp ? json_object_array_length(imp) : 0,
           (long long)svc_json_int(rep, "messages", 0),
           (long long)svc_json_int(rep, "conversations", 0), sk ? json_object_array_length(sk) : 0,
           (long long)svc_json_int(rep, "other_branches", 0),
           (long long)svc_json_int(rep, "left_out", 0));
    json_object_put(rep);
    return 0;
}

static void print_outcome(void *ctx, const char *sid, const char *reason)
{
    fprintf(stderr, "svc: %s %s: %s\n", (const char *)ctx, sid, reason);
}

/* The counts of a bundle's import, its skipped then failed sessions on stderr as the report
 * reads them back from its temporary file. */
static int bundle_report(struct svc_import_report *rep, bool dry_run)
{
    struct svc_err err;
    if (rep->note)
        fprintf(stderr, "svc: note: %s\n", rep->note);
    if (svc_import_each(rep, SVC_IMPORT_SKIPPED, print_outcome, "skipped", &err) != 0 ||
        svc_import_each(rep, SVC_IMPORT_FAILED, print_outcome, "failed", &err) != 0) {
        svc_import_report_free(rep);
        return svc_cli_fail(&err);
    }
    printf("%s %zu sessions, skipped %zu, failed %zu (bundle %s)\n",
           dry_run ? "would import" : "imported", rep->imported, rep->skipped, rep->failed,
           rep->export_id ? rep->export_id : "?");
    int rc = rep->failed ? 1 : 0;
    svc_import_report_free(rep);
    return rc;
}

int cmd_import(struct svc_config *cfg, int argc, char **argv)
{
    struct svc_import_options opt = {0};
    const char *bundle = NULL, *from = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--overwrite") == 0)
            opt.overwrite = true;
        else if (strcmp(argv[i], "--dry-run") == 0)
            opt.dry_run = true;
        else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
            from = argv[++i];
        else if (argv[i][0] == '-' || bundle)
            return svc_cli_usage(
                "import", "import takes one BUNDLE and --overwrite, --dry-run, --from chatgpt");
        else
            bundle = argv[i];
    }
    if (from && strcmp(from, "chatgpt") != 0)
        return svc_cli_usage("import", "import --from takes chatgpt");
    if (from && opt.overwrite)
        return svc_cli_usage(
            "import", "import --from chatgpt skips the sessions it made before: no --overwrite");
    if (!bundle)
        return svc_cli_usage(
            "import", from ? "import --from chatgpt needs a FILE (conversations.json or the .zip)"
                           : "import needs a BUNDLE (a directory or a .tar.gz)");
    struct bar b;
    if (bar_init(&b, stdout, "import", true)) {
        opt.progress.fn = bar_draw;
        opt.progress.ctx = &b;
    }
    struct svc_err err;
    json_object *rep = NULL;
    struct svc_import_report brep;
    int rc = from ? svc_chatgpt_import(cfg, bundle, &opt, &rep, &err)
                  : svc_import(cfg, bundle, &opt, &brep, &err);
    bar_end(&b);
    if (rc != 0)
        return svc_cli_fail(&err);
    return from ? chatgpt_report(rep, opt.dry_run) : bundle_report(&brep, opt.dry_run);
}
