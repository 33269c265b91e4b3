// index_fuzz: libFuzzer harness for the root index as found on disk. The input's first
// line is a list cursor and a q (separated by a tab), the rest becomes
// <root>/.svc_index.jsonl, half the time with a stamp that makes it trusted (so the line
// reader and the page builder see hostile lines) and half the time without (a rebuild from
// the directories). Two real sessions sit in the root. Listing must answer or fail cleanly,
// never crash or leak. The root is on /dev/shm when there is one (speed).
// Built by `make fuzz` (build-fuzz/index_fuzz); run: build-fuzz/index_fuzz -max_total_time=600
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "query.h"
#include "session.h"
#include "util.h"

#include "sandbox.h"

static struct svc_config cfg;
static char root[256];

static void setup(void)
{
    fuzz_sandbox("index");
    svc_config_defaults(&cfg, NULL);
    fuzz_sandbox_config(&cfg, root, sizeof root);
    for (int i = 0; i < 2; i++) {
        struct svc_run_request req = {.session_id = i ? "b" : "a", .input = "hello"};
        struct svc_run *run = NULL;
        if (svc_run_begin(&cfg, &req, &run, NULL) == 0)
            svc_run_execute(run, NULL, NULL);
        svc_run_free(run);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.sessions.root)
        setup();
    const uint8_t *nl = memchr(data, '\n', size);
    size_t head = nl ? (size_t)(nl - data) : size;
    char *first = strndup((const char *)data, head);
    const char *body = nl ? (const char *)nl + 1 : "";
    size_t blen = nl ? size - head - 1 : 0;
    char *tab = first ? strchr(first, '\t') : NULL;
    if (tab)
        *tab = '\0';
    char path[512];
    snprintf(path, sizeof path, "%s/.svc_index.jsonl", root);
    svc_file_write_atomic(path, body, blen, false, NULL);
    if (size > 0 && (data[0] & 1)) {
        /* a stamp matching the file as written: the index is trusted */
        struct stat sb;
        char lp[512], gen[17] = "0000000000000000", st[128];
        snprintf(lp, sizeof lp, "%s/.svc_index.lock", root);
        if (stat(path, &sb) == 0) {
            static const char key[] = "{\"svc_index_generation\":\"";
            if (blen > sizeof key + 16 && memcmp(body, key, sizeof key - 1) == 0)
                memcpy(gen, body + sizeof key - 1, 16);
            memset(st, ' ', sizeof st);
            int n = snprintf(st, sizeof st, "svc-index-stamp 1 %.16s %llu %lld %lld", gen,
                             (unsigned long long)sb.st_ino, (long long)sb.st_size,
                             (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec);
            if (n > 0 && n < (int)sizeof st)
                st[n] = ' ';
            st[sizeof st - 1] = '\n';
            int fd = open(lp, O_WRONLY | O_CREAT, 0644);
            if (fd >= 0) {
                if (pwrite(fd, st, sizeof st, 0) < 0)
                    abort();
                close(fd);
            }
        }
    }
    svc_index_reset();
    struct svc_list_query q = {.limit = 1 + (size ? data[size - 1] % 5 : 0),
                               .cursor = first && *first ? first : NULL,
                               .q = tab ? tab + 1 : NULL,
                               .include_archived = size > 1 && (data[1] & 1)};
    json_object *out = NULL;
    for (int page = 0; page < 4; page++) {
        if (svc_sessions_list(&cfg, &q, &out, NULL) != 0)
            break;
        json_object *nc = NULL;
        json_object_object_get_ex(out, "next_cursor", &nc);
        static char cur[512];
        snprintf(cur, sizeof cur, "%s", nc ? json_object_get_string(nc) : "");
        json_object_put(out);
        out = NULL;
        if (!*cur)
            break;
        q.cursor = cur;
    }
    if (size > 0 && (data[0] & 2)) {
        char why[200];
        svc_index_verify(&(struct svc_store){.root = root, .agent_id = "svc-agent"}, why,
                         sizeof why, NULL, NULL);
    }
    free(first);
    return 0;
}
