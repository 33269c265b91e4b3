/* cmgr: the conversation manager states as Strands writes them, and the split of
 * SummarizingConversationManager._summarize_oldest (summary_ratio of the window, never the
 * newest preserve_recent_messages, never a toolUse apart from its result). The expected
 * numbers are what Strands' code computes for the same windows. */
#include <stdlib.h>
#include <string.h>

#include "cmgr.h"
#include "jsonx.h"
#include "tap.h"

static json_object *msg(const char *role, const char *block)
{
    json_object *m = json_object_new_object(), *c = json_object_new_array();
    json_object *b = json_object_new_object();
    json_object_object_add(b, block, json_object_new_object());
    json_object_array_add(c, b);
    json_object_object_add(m, "role", json_object_new_string(role));
    json_object_object_add(m, "content", c);
    return m;
}

/* A window from a pattern: t = text, u = toolUse (assistant), r = toolResult (user). */
static json_object *window(const char *pat)
{
    json_object *w = json_object_new_array();
    for (const char *p = pat; *p; p++)
        json_object_array_add(w, *p == 'u'   ? msg("assistant", "toolUse")
                                 : *p == 'r' ? msg("user", "toolResult")
                                             : msg((p - pat) % 2 ? "assistant" : "user", "text"));
    return w;
}

static size_t split(double ratio, int keep, const char *pat)
{
    struct svc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.agent.has_summary_ratio = true;
    cfg.agent.summary_ratio = ratio;
    cfg.agent.preserve_recent_messages = keep;
    json_object *w = window(pat);
    size_t n = svc_cm_split(&cfg, w, false);
    json_object_put(w);
    return n;
}

int main(void)
{
    json_object *st = svc_cm_new_state(SVC_CM_SUMMARIZING);
    char *s = svc_json_dump_compact(st);
    /* Python: SummarizingConversationManager().get_state() */
    is_str(s,
           "{\"summary_message\":null,\"__name__\":\"SummarizingConversationManager\","
           "\"removed_message_count\":0}",
           "summarizing state as Strands writes it");
    free(s);
    json_object *agent = json_object_new_object();
    json_object_object_add(agent, "conversation_manager_state", st);
    ok(svc_cm_summarizing(agent), "summarizing named");
    ok(svc_cm_summary(agent) == NULL, "no summary yet");
    json_object *sum = msg("user", "text");
    svc_cm_set_summary(agent, sum);
    ok(svc_cm_summary(agent) == sum, "summary set");
    s = svc_json_dump_compact(st);
    ok(strncmp(s, "{\"summary_message\":{", 20) == 0, "set in place: still the first key");
    free(s);
    json_object_put(sum);
    json_object_put(agent);
    st = svc_cm_new_state(SVC_CM_SLIDING_WINDOW);
    s = svc_json_dump_compact(st);
    is_str(s,
           "{\"__name__\":\"SlidingWindowConversationManager\",\"removed_message_count\":0,"
           "\"model_call_count\":0}",
           "sliding window state as Strands writes it");
    free(s);
    json_object_put(st);

    /* int(len * ratio), at least 1, at most len - keep */
    is_int(split(0.3, 10, "tttttttttttttttttttt"), 6, "20 messages, 0.3: 6");
    is_int(split(0.3, 10, "ttttttttttttttt"), 4, "15 messages: int(4.5) = 4");
    is_int(split(0.3, 10, "tttttttttttt"), 2, "12 messages, keep 10: 2");
    is_int(split(0.3, 10, "tttttttttt"), 0, "10 messages, keep 10: none");
    is_int(split(0.1, 0, "ttt"), 1, "at least one");
    /* the split moves past a toolResult, and past a toolUse whose result does not follow */
    is_int(split(0.3, 2, "ttrtttt"), 3, "a toolResult is not the oldest kept");
    is_int(split(0.3, 2, "tturtttt"), 2, "a toolUse followed by its result may be");
    is_int(split(0.3, 2, "ttutrtttt"), 3, "a toolUse without its result next is not");
    is_int(split(0.5, 0, "ttrrrr"), 0, "no valid split: none");
    return done_testing();
}
