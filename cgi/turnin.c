#include "turnin.h"

#include <stdlib.h>

void turn_in_free(struct turn_in *in)
{
    json_object_put(in->body);
    json_object_put(in->history);
    json_object_put(in->tools);
    json_object_put(in->results);
    json_object_put(in->input_content);
    free(in->input);
}

struct svc_run_request turn_in_request(const struct turn_in *in)
{
    struct svc_run_request req = {
        .session_id = in->sid,
        .input = in->input,
        .input_content = in->input_content,
        .compact_threshold = in->compact_threshold,
        .history = in->history,
        .user_id = in->user,
        .channel = in->channel,
        .locale = in->locale,
        .has_temperature = in->has_temperature,
        .temperature = in->temperature,
        .has_max_tokens = in->has_max_tokens,
        .max_tokens = in->max_tokens,
        .client_tools = in->tools,
        .tool_choice = in->tool_choice,
        .tool_results = in->results,
    };
    return req;
}
