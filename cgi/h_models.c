/* h_models: GET /api/v1/models and GET /api/v1/models/{model_id} (SPEC 4.1), in OpenAI's
 * shapes, for clients that list models to check a key or pick one. svc serves one model,
 * the configured one; any request naming another model is answered by it, and the answer's
 * `model` says so. */
#include <string.h>

#include "handlers.h"
#include "jsonx.h"

static const char *configured_model(const struct svc_config *cfg)
{
    return cfg->model.name && *cfg->model.name ? cfg->model.name : "echo-1";
}

/* {"id", "object": "model", "created": <pool start>, "owned_by": "svc"} */
static json_object *model_object(const struct svc_config *cfg)
{
    json_object *m = svc_json_new_obj("id", configured_model(cfg), "object", "model", NULL);
    svc_json_set_int(m, "created", (int64_t)h_base_started());
    svc_json_set_str(m, "owned_by", "svc");
    return m;
}

int h_models_list(struct http_req *r, struct svc_err *err)
{
    json_object *o = svc_json_new_obj("object", "list", NULL);
    json_object *data = json_object_new_array();
    json_object_array_add(data, model_object(r->cfg));
    svc_json_set(o, "data", data);
    return http_reply(r, 200, o);
}

int h_model_get(struct http_req *r, struct svc_err *err)
{
    const char *id = http_param(r, "model_id");
    const char *name = configured_model(r->cfg);
    if (!id || strcmp(id, name) != 0)
        return svc_err_setp(err, SVC_E_MODEL_NOT_FOUND, "model",
                            "this server serves one model, %s; requests naming another model "
                            "are answered by it",
                            name);
    return http_reply(r, 200, model_object(r->cfg));
}
