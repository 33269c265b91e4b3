// session_fuzz: libFuzzer harness for the session-file readers. The input becomes a message
// file, agent.json and svc_session.json of a throwaway session (same bytes in each); then
// the dashboard reads (detail, messages, list) and the derived summary must cope: they may
// fail with an error, never crash or leak. The root is on /dev/shm when there is one.
// Built by `make fuzz` (build-fuzz/session_fuzz); run: build-fuzz/session_fuzz -max_total_time=60
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fsio.h"
#include "index.h"
#include "jsonx.h"
#include "query.h"
#include "util.h"

#include "sandbox.h"

static struct svc_config cfg;
static char root[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.sessions.root) {
        fuzz_sandbox("session"); /* tmpfs when there is one: the harness is file-bound */
        svc_config_defaults(&cfg, NULL);
        fuzz_sandbox_config(&cfg, root, sizeof root);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/session_f/agents/agent_svc-agent/messages", root);
    svc_mkdirs(path, 0755, NULL);
    static const char *files[] = {"agents/agent_svc-agent/messages/message_0.json",
                                  "agents/agent_svc-agent/agent.json", "svc_session.json",
                                  "session.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/session_f/%s", root, files[i]);
        svc_file_write_atomic(path, data, size, false, NULL);
    }
    json_object *out = NULL;
    if (svc_session_get(&cfg, "f", &out, NULL) == 0)
        json_object_put(out);
    struct svc_messages_query mq = {.limit = 10, .include_turns = true};
    if (svc_session_messages(&cfg, "f", &mq, &out, NULL) == 0)
        json_object_put(out);
    struct svc_list_query lq = {.limit = 10};
    /* a fresh index each time, so the listing derives this input's summary (hostile index
     * lines are index_fuzz's) */
    svc_index_reset();
    snprintf(path, sizeof path, "%s/.svc_index.jsonl", root);
    unlink(path);
    if (svc_sessions_list(&cfg, &lq, &out, NULL) == 0)
        json_object_put(out);
    return 0;
}
