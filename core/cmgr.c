#include "cmgr.h"

#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "openai.h"
#include "parts.h"
#include "util.h"

#define SUMMARIZING "SummarizingConversationManager"

/* Strands' DEFAULT_SUMMARIZATION_PROMPT (SummarizingConversationManager), word for word. */
static const char prompt[] =
    "You are a conversation summarizer. Provide a concise summary of the conversation "
    "history.\n\nFormat Requirements:\n- You MUST create a structured and concise summary in "
    "bullet-point format.\n- You MUST NOT respond conversationally.\n- You MUST NOT address the "
    "user directly.\n- You MUST NOT comment on tool availability.\n\nAssumptions:\n- You MUST "
    "NOT assume tool executions failed unless otherwise stated.\n\nTask:\nYour task is to create "
    "a structured summary document:\n- It MUST contain bullet points with key topics and "
    "questions covered\n- It MUST contain bullet points for all significant tools executed and "
    "their results\n- It MUST contain bullet points for any code or technical information "
    "shared\n- It MUST contain a section of key insights gained\n- It MUST format the summary "
    "in the third person\n\nExample format:\n\n## Conversation Summary\n* Topic 1: Key "
    "information\n* Topic 2: Key information\n*\n## Tools Executed\n* Tool X: Result Y";

const char *svc_cm_prompt(void)
{
    return prompt;
}

bool svc_cm_is_request(const char *system_prompt)
{
    return system_prompt && strcmp(system_prompt, prompt) == 0;
}

json_object *svc_cm_new_state(enum svc_conv_manager kind)
{
    return json_tokener_parse(kind == SVC_CM_SUMMARIZING
                                  ? "{\"summary_message\": null, \"__name__\": \"" SUMMARIZING
                                    "\", \"removed_message_count\": 0}"
                                  : "{\"__name__\": \"SlidingWindowConversationManager\", "
                                    "\"removed_message_count\": 0, \"model_call_count\": 0}");
}

bool svc_cm_summarizing(json_object *agent)
{
    const char *name =
        svc_json_str(svc_json_obj(agent, "conversation_manager_state"), "__name__", "");
    return strcmp(name, SUMMARIZING) == 0;
}

json_object *svc_cm_summary(json_object *agent)
{
    json_object *s =
        svc_json_obj(svc_json_obj(agent, "conversation_manager_state"), "summary_message");
    return s && svc_json_arr(s, "content") ? s : NULL;
}

void svc_cm_set_summary(json_object *agent, json_object *summary)
{
    json_object *cm = svc_json_obj(agent, "conversation_manager_state");
    if (cm && summary && svc_cm_summarizing(agent)) /* never into another manager's state */
        svc_json_set(cm, "summary_message", json_object_get(summary)); /* in place */
}

size_t svc_cm_split(const struct svc_config *cfg, json_object *window, bool all)
{
    size_t n = json_object_array_length(window);
    double ratio = all ? 1.0 : cfg->agent.has_summary_ratio ? cfg->agent.summary_ratio : 0.3;
    size_t keep = (size_t)cfg->agent.preserve_recent_messages;
    size_t count = (size_t)((double)n * ratio); /* Python's int(): toward zero */
    if (count < 1)
        count = 1;
    if (keep >= n)
        return 0;
    if (count > n - keep)
        count = n - keep;
    /* the oldest message kept is no toolResult, nor a toolUse whose result does not follow */
    while (count < n) {
        json_object *m = json_object_array_get_idx(window, count);
        json_object *next = count + 1 < n ? json_object_array_get_idx(window, count + 1) : NULL;
        if (svc_native_has(m, "toolResult") ||
            (svc_native_has(m, "toolUse") && next && !svc_native_has(next, "toolResult")))
            count++;
        else
            break;
    }
    return count < n ? count : 0;
}

json_object *svc_cm_request(json_object *window, size_t count)
{
    json_object *req = json_object_new_array();
    for (size_t i = 0; i < count; i++)
        json_object_array_add(req, json_object_get(json_object_array_get_idx(window, i)));
    json_object_array_add(
        req, svc_parts_message("user", svc_parts_text("Please summarize this conversation.")));
    return req;
}

/* One bullet of the echo summary: the message's role and text (the first 80 code points),
 * its tool calls and results by name and status. */
static void echo_line(struct svc_buf *b, json_object *msg)
{
    char *text = svc_native_text(msg), *cut = svc_utf8_prefix(text, 80);
    svc_buf_printf(b, "\n* %s: ", svc_openai_role(msg));
    for (char *c = cut; *c; c++)
        if (*c == '\n')
            *c = ' ';
    svc_buf_adds(b, cut);
    if (strlen(cut) < strlen(text))
        svc_buf_adds(b, "\xe2\x80\xa6");
    free(cut);
    free(text);
    json_object *c = svc_json_arr(msg, "content");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *blk = json_object_array_get_idx(c, i);
        json_object *tu = svc_json_obj(blk, "toolUse"), *tr = svc_json_obj(blk, "toolResult");
        if (tu)
            svc_buf_printf(b, " [called %s]", svc_json_str(tu, "name", "?"));
        else if (tr)
            svc_buf_printf(b, " [result %s]", svc_json_str(tr, "status", "success"));
    }
}

char *svc_cm_echo_summary(json_object *messages)
{
    struct svc_buf b;
    svc_buf_init(&b);
    svc_buf_adds(&b, "## Conversation Summary");
    for (size_t i = 0; i + 1 < json_object_array_length(messages); i++) /* the last: the request */
        echo_line(&b, json_object_array_get_idx(messages, i));
    return svc_buf_steal(&b);
}
