/* svc search (SPEC 13.3): a page of full-text matches as JSON, or the index rebuilt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "search.h"
#include "util.h"

static int rebuild(struct svc_config *cfg)
{
    struct svc_err err;
    int64_t sessions = 0, messages = 0;
    double t0 = svc_time_monotonic();
    if (svc_search_rebuild(cfg, &sessions, &messages, &err) != 0)
        return svc_cli_fail(&err);
    printf("search index rebuilt: %lld sessions, %lld messages in %.2f s\n", (long long)sessions,
           (long long)messages, svc_time_monotonic() - t0);
    return 0;
}

int cmd_search(struct svc_config *cfg, int argc, char **argv)
{
    struct svc_search_query q = {.limit = SVC_SEARCH_LIMIT_DEFAULT};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--rebuild") == 0 && argc == 1)
            return svc_cli_root_missing(cfg) ? 1 : rebuild(cfg);
        if (strcmp(a, "--limit") == 0 && i + 1 < argc) {
            char *end;
            q.limit = strtoll(argv[++i], &end, 10);
            if (*end || !*argv[i])
                return svc_cli_usage("search", "--limit needs a number");
        } else if (strcmp(a, "--cursor") == 0 && i + 1 < argc) {
            q.cursor = argv[++i];
        } else if (strcmp(a, "--role") == 0 && i + 1 < argc) {
            q.role = argv[++i];
        } else if (strcmp(a, "--all") == 0) {
            q.include_archived = true;
        } else if (a[0] == '-' && a[1] == '-') {
            return svc_cli_usage("search", "unknown option for search");
        } else if (q.q) {
            return svc_cli_usage("search", "search takes one QUERY (quote it)");
        } else {
            q.q = a;
        }
    }
    if (!q.q)
        return svc_cli_usage("search", "search needs a QUERY");
    struct svc_err err;
    json_object *out = NULL;
    return svc_search(cfg, &q, &out, &err) != 0 ? svc_cli_fail(&err) : svc_cli_print_json(out);
}
