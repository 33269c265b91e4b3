/* config.t: agents.yaml loading, validation messages, warnings, defaults, redaction. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "jsonx.h"
#include "tap.h"

static struct svc_config cfg;
static struct svc_err err;

static int load(const char *yaml)
{
    svc_err_clear(&err);
    return svc_config_load_buffer(&cfg, yaml, strlen(yaml), "t.yaml", &err);
}

static int is_zero(const struct svc_config *c)
{
    static const struct svc_config zero;
    return memcmp(c, &zero, sizeof zero) == 0;
}

/* The YAML is refused with exactly this message, and cfg is left zeroed. */
static void refuses(const char *yaml, const char *want, const char *what)
{
    int rc = load(yaml);
    ok(rc == -1 && err.code == SVC_E_CONFIG, "refused: %s", what);
    is_str(err.message, want, "message: %s", what);
    ok(is_zero(&cfg), "cfg zeroed after failure: %s", what);
    svc_config_free(&cfg);
}

static const char *jstr(json_object *o, const char *sec, const char *key)
{
    return svc_json_str(sec ? svc_json_obj(o, sec) : o, key, NULL);
}

static void test_defaults(void)
{
    ok(load("") == 0, "empty buffer loads");
    is_str(cfg.server.listen, "unix:/run/svc/svc.sock", "listen default");
    is_int(cfg.server.workers, 4, "workers default");
    is_int(cfg.server.max_requests, 10000, "max_requests default");
    is_int(cfg.server.max_body_bytes, 1048576, "max_body_bytes default");
    is_str(cfg.server.api_token_env, "SVC_API_TOKEN", "api_token_env default");
    is_str(cfg.server.api_token, "", "api_token default");
    is_int(cfg.server.run_timeout_s, 300, "run_timeout_s default");
    ok(cfg.sessions.enabled, "sessions.enabled default");
    is_int(cfg.sessions.provider, SVC_PROVIDER_SVC_REPOSITORY, "provider default");
    is_int(cfg.sessions.cache, SVC_CACHE_AUTO, "cache default auto");
    is_str(cfg.sessions.root, "/home/tester/.svc/agents/native_sessions", "root default");
    is_str(cfg.sessions.agent_id, "svc-agent", "agent_id default");
    ok(cfg.sessions.persist_openai_history && cfg.sessions.sync_memory && cfg.sessions.fsync,
       "session bools default true");
    is_str(cfg.sessions.export_default_dir, "/home/tester/Desktop/svc-chat-export",
           "export_default_dir default");
    ok(cfg.sessions.export_allowed_dirs && !cfg.sessions.export_allowed_dirs[0],
       "export_allowed_dirs empty, not NULL");
    is_int(cfg.model.provider, SVC_MODEL_ECHO, "model provider default");
    is_str(cfg.model.name, "echo-1", "model name default");
    is_str(cfg.model.base_url, "https://api.openai.com/v1", "base_url default");
    is_str(cfg.model.api_key_env, "OPENAI_API_KEY", "api_key_env default");
    is_str(cfg.model.api_key, "", "api_key default");
    is_int(cfg.model.timeout_s, 120, "timeout_s default");
    is_int(cfg.model.max_retries, 2, "max_retries default");
    ok(!cfg.model.has_temperature && !cfg.model.has_max_tokens, "temperature, max_tokens unset");
    is_int(cfg.model.context_window, 128000, "context_window default");
    is_str(cfg.model.system_prompt, "You are a helpful assistant.", "system_prompt default");
    is_int(cfg.agent.window_size, 40, "window_size default");
    is_int(cfg.agent.max_tool_iterations, 8, "max_tool_iterations default");
    is_str(cfg.memory.root, "/home/tester/.svc/memory", "memory.root default");
    is_int(cfg.memory.recall, 0, "recall default");
    is_int(cfg.njobs, 0, "no jobs");
    is_int(cfg.nextensions, 0, "no extensions");
    is_str(cfg.home, "/home/tester/.svc", "home default");
    is_str(cfg.source, "t.yaml", "source is the buffer's name");
    ok(cfg.warnings && !cfg.warnings[0] && cfg.nwarnings == 0, "no warnings");
    svc_config_free(&cfg);
    ok(is_zero(&cfg), "free zeroes");
    svc_config_free(&cfg);
    ok(1, "free twice is safe");

    ok(svc_config_load_buffer(&cfg, "", 0, NULL, &err) == 0, "unnamed buffer loads");
    ok(cfg.source == NULL, "unnamed buffer: source NULL");
    svc_config_free(&cfg);

    ok(load("# only a comment\n\n# another\n") == 0, "comments only load");
    is_int(cfg.server.workers, 4, "comments only: defaults");
    svc_config_free(&cfg);
    ok(load("---\n...\n") == 0 && cfg.server.workers == 4, "empty document loads");
    svc_config_free(&cfg);
    ok(load("server:\nsessions: ~\njobs:\nextensions: null\n") == 0, "null sections load");
    is_int(cfg.server.workers, 4, "null section: defaults");
    svc_config_free(&cfg);

    ok(svc_config_defaults(&cfg, &err) == 0, "svc_config_defaults");
    is_int(cfg.agent.window_size, 40, "defaults(): window_size");
    ok(cfg.source == NULL, "defaults(): no source");
    svc_config_free(&cfg);
}

static const char *full_yaml =
    "server:\n"
    "  listen: tcp:127.0.0.1:9000\n"
    "  workers: 8\n"
    "  max_requests: 500\n"
    "  max_body_bytes: 2048\n"
    "  api_token_env: MY_TOKEN\n"
    "  api_token: \"\"\n"
    "  run_timeout_s: 60\n"
    "sessions:\n"
    "  enabled: no\n"
    "  provider: native_file\n"
    "  root: /srv/sessions\n"
    "  agent_id: agent.1\n"
    "  persist_openai_history: False\n"
    "  sync_memory: off\n"
    "  export_default_dir: ~/exports\n"
    "  export_allowed_dirs: [~/a, /b]\n"
    "  fsync: false\n"
    "  cache: off\n"
    "model:\n"
    "  provider: openai\n"
    "  name: gpt-4o-mini\n"
    "  base_url: http://127.0.0.1:8081/v1\n"
    "  api_key_env: MY_KEY\n"
    "  api_key: sk-secret-value\n"
    "  timeout_s: 30\n"
    "  max_retries: 0\n"
    "  temperature: 0.5\n"
    "  max_tokens: 256\n"
    "  context_window: 8192\n"
    "  system_prompt: |\n"
    "    Be brief.\n"
    "agent:\n"
    "  window_size: 10\n"
    "  max_tool_iterations: 3\n"
    "memory:\n"
    "  root: ~/mem\n"
    "  recall: 5\n"
    "jobs:\n"
    "  - id: morning\n"
    "    schedule: \"0 8 * * 1-5\"\n"
    "    session_id: sess-1\n"
    "    input: Good morning\n"
    "  - id: nightly\n"
    "    schedule: \"*/15 0-6 * * *\"\n"
    "    session_id: sess-2\n"
    "    input: Night run\n"
    "    enabled: false\n"
    "extensions:\n"
    "  - name: weather\n"
    "    description: Current weather\n"
    "    parameters:\n"
    "      type: object\n"
    "      properties:\n"
    "        city: {type: string, minLength: 1}\n"
    "        days: {type: integer, maximum: 7.5, default: null}\n"
    "        flag: {type: boolean, default: true, enum: [yes, \"1\", 2]}\n"
    "      required: [city]\n"
    "    command: [/usr/bin/weather, --json]\n"
    "    timeout_s: 30\n"
    "  - name: noop\n"
    "    kind: tool\n"
    "    command: [/bin/true]\n"
    "    enabled: false\n";

static void test_full(void)
{
    int rc = load(full_yaml);
    ok(rc == 0, "full file loads");
    if (rc != 0) {
        printf("# %s\n", err.message);
        return;
    }
    ok(cfg.nwarnings == 0, "full file: no warnings");
    is_str(cfg.server.listen, "tcp:127.0.0.1:9000", "listen");
    is_int(cfg.server.workers, 8, "workers");
    is_int(cfg.server.max_requests, 500, "max_requests");
    is_int(cfg.server.max_body_bytes, 2048, "max_body_bytes");
    is_str(cfg.server.api_token_env, "MY_TOKEN", "api_token_env");
    is_int(cfg.server.run_timeout_s, 60, "run_timeout_s");
    ok(!cfg.sessions.enabled, "enabled: no");
    is_int(cfg.sessions.provider, SVC_PROVIDER_NATIVE_FILE, "provider native_file");
    is_str(cfg.sessions.root, "/srv/sessions", "root");
    is_str(cfg.sessions.agent_id, "agent.1", "agent_id");
    ok(!cfg.sessions.persist_openai_history, "False");
    ok(!cfg.sessions.sync_memory, "off");
    ok(!cfg.sessions.fsync, "false");
    is_int(cfg.sessions.cache, SVC_CACHE_OFF, "cache off");
    is_str(cfg.sessions.export_default_dir, "/home/tester/exports", "export_default_dir ~");
    ok(cfg.sessions.export_allowed_dirs[0] && cfg.sessions.export_allowed_dirs[1] &&
           !cfg.sessions.export_allowed_dirs[2],
       "two allowed dirs");
    is_str(cfg.sessions.export_allowed_dirs[0], "/home/tester/a", "allowed dir ~ expanded");
    is_str(cfg.sessions.export_allowed_dirs[1], "/b", "allowed dir kept");
    is_int(cfg.model.provider, SVC_MODEL_OPENAI, "model provider openai");
    is_str(cfg.model.name, "gpt-4o-mini", "model name");
    is_str(cfg.model.base_url, "http://127.0.0.1:8081/v1", "base_url");
    is_str(cfg.model.api_key, "sk-secret-value", "api_key");
    is_int(cfg.model.timeout_s, 30, "model timeout");
    is_int(cfg.model.max_retries, 0, "max_retries 0");
    ok(cfg.model.has_temperature && cfg.model.temperature == 0.5, "temperature 0.5");
    ok(cfg.model.has_max_tokens && cfg.model.max_tokens == 256, "max_tokens 256");
    is_int(cfg.model.context_window, 8192, "context_window");
    is_str(cfg.model.system_prompt, "Be brief.\n", "block scalar prompt");
    is_int(cfg.agent.window_size, 10, "window_size");
    is_int(cfg.agent.max_tool_iterations, 3, "max_tool_iterations");
    is_str(cfg.memory.root, "/home/tester/mem", "memory.root ~");
    is_int(cfg.memory.recall, 5, "recall");

    is_int(cfg.njobs, 2, "two jobs");
    is_str(cfg.jobs[0].id, "morning", "job 0 id");
    is_str(cfg.jobs[0].schedule, "0 8 * * 1-5", "job 0 schedule");
    is_str(cfg.jobs[0].session_id, "sess-1", "job 0 session");
    is_str(cfg.jobs[0].input, "Good morning", "job 0 input");
    ok(cfg.jobs[0].enabled, "job 0 enabled by default");
    ok(!cfg.jobs[1].enabled, "job 1 disabled");
    is_str(cfg.jobs[1].schedule, "*/15 0-6 * * *", "job 1 schedule");

    is_int(cfg.nextensions, 2, "two extensions");
    struct svc_extension *x = &cfg.extensions[0];
    is_str(x->name, "weather", "ext name");
    is_str(x->kind, "tool", "ext kind default");
    is_str(x->description, "Current weather", "ext description");
    is_str(x->command[0], "/usr/bin/weather", "ext argv[0]");
    is_str(x->command[1], "--json", "ext argv[1]");
    ok(x->command[2] == NULL, "ext argv NULL-terminated");
    is_int(x->timeout_s, 30, "ext timeout");
    ok(x->enabled, "ext enabled default");
    char *params = svc_json_dump_compact(x->parameters);
    is_str(params,
           "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"minLength\":1},"
           "\"days\":{\"type\":\"integer\",\"maximum\":7.5,\"default\":null},"
           "\"flag\":{\"type\":\"boolean\",\"default\":true,\"enum\":[\"yes\",\"1\",2]}},"
           "\"required\":[\"city\"]}",
           "parameters converted to JSON");
    free(params);
    params = svc_json_dump_compact(cfg.extensions[1].parameters);
    is_str(params, "{\"type\":\"object\",\"properties\":{}}", "parameters default");
    free(params);
    is_str(cfg.extensions[1].description, "", "description default");
    is_int(cfg.extensions[1].timeout_s, 10, "timeout default");
    ok(!cfg.extensions[1].enabled, "ext 1 disabled");

    json_object *j = svc_config_to_json(&cfg);
    char *dump = svc_json_dump_compact(j);
    ok(dump && !strstr(dump, "sk-secret-value"), "api_key value never in to_json");
    ok(dump && !strstr(dump, "/usr/bin/weather"), "extension command not in to_json");
    is_str(jstr(j, "model", "api_key"), "***", "set secret shows ***");
    is_str(jstr(j, "server", "api_token"), "", "unset secret shows empty");
    is_str(jstr(j, "sessions", "provider"), "native_file", "enum by name");
    json_object *temp = NULL;
    ok(json_object_object_get_ex(svc_json_obj(j, "model"), "temperature", &temp) &&
           json_object_is_type(temp, json_type_double) && json_object_get_double(temp) == 0.5,
       "temperature in json");
    is_int(svc_json_int(svc_json_obj(j, "model"), "max_tokens", -1), 256, "max_tokens in json");
    json_object *jobs = svc_json_arr(j, "jobs");
    is_int(jobs ? json_object_array_length(jobs) : 0, 2, "jobs in json");
    char *jobdump = svc_json_dump_compact(json_object_array_get_idx(jobs, 1));
    is_str(jobdump,
           "{\"id\":\"nightly\",\"schedule\":\"*/15 0-6 * * *\",\"session_id\":\"sess-2\","
           "\"input\":\"Night run\",\"enabled\":false,\"user\":\"\"}",
           "job json shape");
    free(jobdump);
    json_object *exts = svc_json_arr(j, "extensions");
    char *extdump = svc_json_dump_compact(json_object_array_get_idx(exts, 1));
    is_str(extdump,
           "{\"name\":\"noop\",\"kind\":\"tool\",\"description\":\"\",\"parameters\":{\"type\":"
           "\"object\",\"properties\":{}},\"timeout_s\":10,\"enabled\":false}",
           "extension json shape (no command)");
    free(extdump);
    is_str(jstr(j, NULL, "source"), "t.yaml", "source in json");
    free(dump);
    json_object_put(j);
    svc_config_free(&cfg);
}

static void test_to_json_defaults(void)
{
    ok(load("") == 0, "defaults for to_json");
    json_object *j = svc_config_to_json(&cfg);
    char *dump = svc_json_dump_compact(j);
    is_str(dump,
           "{\"server\":{\"listen\":\"unix:/run/svc/svc.sock\",\"workers\":4,\"max_requests\":"
           "10000,\"max_body_bytes\":1048576,\"api_token_env\":\"SVC_API_TOKEN\",\"api_token\":"
           "\"\",\"run_timeout_s\":300,\"socket_mode\":\"0660\",\"socket_group\":\"\","
           "\"umask\":\"027\",\"base_path\":\"\",\"user_param\":\"\",\"admins\":[],\"users\":[]},"
           "\"sessions\":{\"enabled\":true,\"provider\":"
           "\"svc_repository\",\"root\":\"/home/tester/.svc/agents/native_sessions\","
           "\"agent_id\":\"svc-agent\",\"persist_openai_history\":true,\"sync_memory\":true,"
           "\"export_default_dir\":\"/home/tester/Desktop/svc-chat-export\","
           "\"export_allowed_dirs\":[],\"fsync\":true,\"cache\":\"auto\",\"index_db\":true,"
           "\"shared\":\"auto\"},"
           "\"model\":{\"provider\":"
           "\"echo\","
           "\"name\":\"echo-1\",\"base_url\":\"https://api.openai.com/v1\",\"api_key_env\":"
           "\"OPENAI_API_KEY\",\"api_key\":\"\",\"timeout_s\":120,\"max_retries\":2,"
           "\"temperature\":null,\"max_tokens\":null,\"context_window\":128000,"
           "\"system_prompt\":\"You are a helpful assistant.\"},\"agent\":{\"window_size\":40,"
           "\"max_tool_iterations\":8},\"memory\":{\"root\":\"/home/tester/.svc/memory\","
           "\"recall\":0},\"retention\":{\"archive_after_days\":0,"
           "\"delete_archived_after_days\":0,\"delete_after_days\":0,\"keep_pinned\":true,"
           "\"export_before_delete\":\"\",\"schedule\":\"17 3 * * *\"},"
           "\"search\":{\"index_dir\":\"/home/tester/.svc/search\"},"
           "\"mcp\":{\"remote_allow\":[]},\"jobs\":[],"
           "\"extensions\":[],\"mcp_servers\":[],\"source\":\"t.yaml\"}",
           "to_json of the defaults, in table order");
    free(dump);
    json_object_put(j);
    svc_config_free(&cfg);

    ok(svc_config_load_buffer(&cfg, "", 0, NULL, &err) == 0, "unnamed");
    j = svc_config_to_json(&cfg);
    json_object *src = NULL;
    ok(json_object_object_get_ex(j, "source", &src) && src == NULL, "source null");
    json_object_put(j);
    svc_config_free(&cfg);
}

static void test_errors(void)
{
    refuses("server:\n  workers: \"abc\"\n",
            "t.yaml:2:12: server.workers: expected an integer, got 'abc'", "string for int");
    is_str(err.param, "server.workers", "param names the key");
    refuses("server:\n  workers: [1]\n",
            "t.yaml:2:12: server.workers: expected an integer, got a sequence", "list for int");
    refuses("server:\n  workers: \"4\"\n",
            "t.yaml:2:12: server.workers: expected an integer, got '4'", "quoted int");
    refuses("server:\n  workers: 0\n", "t.yaml:2:12: server.workers: 0 is out of range (1..256)",
            "workers 0");
    refuses("server:\n  workers: 257\n",
            "t.yaml:2:12: server.workers: 257 is out of range (1..256)", "workers 257");
    refuses("server:\n  workers: 99999999999999999999999\n",
            "t.yaml:2:12: server.workers: expected an integer, got '99999999999999999999999'",
            "int overflow");
    refuses("server:\n  max_requests: 0\n",
            "t.yaml:2:17: server.max_requests: 0 is out of range (at least 1)",
            "unbounded max in message");
    refuses("sessions:\n  cache: on\n",
            "t.yaml:2:10: sessions.cache: unknown value 'on' (expected auto or off)",
            "sessions.cache is auto or off");
    refuses("model:\n  provider: foo\n",
            "t.yaml:2:13: model.provider: unknown value 'foo' (expected echo or openai)",
            "unknown enum");
    refuses("sessions:\n  provider: {a: 1}\n",
            "t.yaml:2:13: sessions.provider: expected svc_repository or native_file, got a "
            "mapping",
            "mapping for enum");
    refuses("sessions:\n  enabled: maybe\n",
            "t.yaml:2:12: sessions.enabled: expected true or false, got 'maybe'", "bad bool");
    refuses("sessions:\n  enabled: \"true\"\n",
            "t.yaml:2:12: sessions.enabled: expected true or false, got 'true'", "quoted bool");
    refuses("model:\n  temperature: 2.5\n",
            "t.yaml:2:16: model.temperature: 2.5 is out of range (0..2)", "temperature range");
    refuses("model:\n  temperature: hot\n",
            "t.yaml:2:16: model.temperature: expected a number or null, got 'hot'",
            "temperature type");
    refuses("model:\n  temperature: .nan\n",
            "t.yaml:2:16: model.temperature: expected a number or null, got '.nan'", "nan");
    refuses("model:\n  max_tokens: 0\n",
            "t.yaml:2:15: model.max_tokens: 0 is out of range (at least 1)", "max_tokens 0");
    refuses("model:\n  max_tokens: 1.5\n",
            "t.yaml:2:15: model.max_tokens: expected an integer or null, got '1.5'",
            "max_tokens float");
    refuses("model:\n  name: \"\"\n", "t.yaml:2:9: model.name: must not be empty", "empty name");
    refuses("model:\n  base_url: ftp://x\n",
            "t.yaml:2:13: model.base_url: must start with http:// or https://", "bad url");
    refuses("model:\n  api_key: [secret]\n",
            "t.yaml:2:12: model.api_key: expected a string, got a sequence", "secret type");
    refuses("server:\n  listen: http://x\n",
            "t.yaml:2:11: server.listen: must start with unix: or tcp: followed by an address",
            "bad listen");
    refuses("server:\n  listen: \"unix:\"\n",
            "t.yaml:2:11: server.listen: must start with unix: or tcp: followed by an address",
            "listen without address");
    refuses("server:\n  api_token_env: \"BAD NAME\"\n",
            "t.yaml:2:18: server.api_token_env: not a valid environment variable name",
            "bad env name");
    refuses("sessions:\n  agent_id: .hidden\n",
            "t.yaml:2:13: sessions.agent_id: not a valid id (1 to 128 characters of "
            "A-Za-z0-9._-, not starting with '.')",
            "agent_id starting with a dot");
    refuses("sessions:\n  agent_id: a/b\n",
            "t.yaml:2:13: sessions.agent_id: not a valid id (1 to 128 characters of "
            "A-Za-z0-9._-, not starting with '.')",
            "agent_id with a slash");
    char longid[200] = "sessions:\n  agent_id: ";
    memset(longid + strlen(longid), 'a', 129);
    ok(load(longid) == -1 && strstr(err.message, "t.yaml:2:13: sessions.agent_id: not a valid id"),
       "agent_id of 129 characters refused");
    svc_config_free(&cfg);
    refuses("sessions:\n  agent_id: \"a\\0b\"\n",
            "t.yaml:2:13: sessions.agent_id: contains a NUL character", "NUL in string");
    refuses("sessions:\n  root: \"\"\n",
            "t.yaml:2:9: sessions.root: expected a path, got an empty string", "empty path");
    refuses("sessions:\n  root:\n  fsync: true\n",
            "t.yaml:2:8: sessions.root: expected a path, got null", "null path");
    refuses("sessions:\n  export_allowed_dirs: /tmp\n",
            "t.yaml:2:24: sessions.export_allowed_dirs: expected a sequence of paths, got '/tmp'",
            "scalar for a list");
    refuses("sessions:\n  export_allowed_dirs:\n    - /a\n    - [x]\n",
            "t.yaml:4:7: sessions.export_allowed_dirs[1]: expected a path, got a sequence",
            "list item type");
    refuses("server: 5\n", "t.yaml:1:9: server: expected a mapping", "section not a mapping");
    refuses("- a\n- b\n", "t.yaml:1:1: the top level must be a mapping", "top-level list");
    refuses("server:\n  workers: 2\nserver:\n  listen: tcp:x\n",
            "t.yaml:3:1: server: duplicate key", "duplicate section");
    refuses("server:\n  workers: 2\n  workers: 3\n", "t.yaml:3:3: server.workers: duplicate key",
            "duplicate key");
    refuses("a: 1\n---\nb: 2\n", "t.yaml:2:1: a second YAML document is not supported",
            "two documents");
    refuses("? [a]\n: 1\n", "t.yaml:1:3: keys must be scalars", "complex top-level key");
    refuses("server:\n  ? {a: 1}\n  : 2\n", "t.yaml:2:5: server: keys must be scalars",
            "complex key in a section");
    refuses("agent: {window_size: *nope}\n", "t.yaml:1:22: syntax error: found undefined alias",
            "undefined alias");

    /* Syntax errors carry the line and column libyaml reports. */
    ok(load("server:\n  workers: 4\n listen: x\n") == -1 && err.code == SVC_E_CONFIG,
       "bad indentation refused");
    is_str(err.message,
           "t.yaml:3:2: syntax error: did not find expected key (while parsing a block "
           "mapping)",
           "syntax error message");
    ok(is_zero(&cfg), "syntax error leaves cfg zeroed");
    svc_config_free(&cfg);
    ok(load("server: [1, 2\n") == -1 && strncmp(err.message, "t.yaml:2:1: syntax error: ", 26) == 0,
       "unterminated flow sequence: %s", err.message);
    svc_config_free(&cfg);
    ok(load("a: \"\x01\"\n") == -1 && strncmp(err.message, "t.yaml:1:5: syntax error: ", 26) == 0,
       "control character: %s", err.message);
    svc_config_free(&cfg);
    ok(load("a: \xff\n") == -1 && strncmp(err.message, "t.yaml:1:4: syntax error: ", 26) == 0,
       "invalid UTF-8: %s", err.message);
    svc_config_free(&cfg);
}

static void test_warnings(void)
{
    ok(load("server:\n  wrkers: 4\n  workers: 5\nfoo:\n  bar: 1\nmodel:\n  name: x\n  "
            "extra: [1]\n") == 0,
       "unknown keys are not errors");
    is_int(cfg.nwarnings, 3, "three warnings");
    is_str(cfg.warnings[0], "t.yaml:2:3: unknown key 'server.wrkers'", "nested unknown key");
    is_str(cfg.warnings[1], "t.yaml:4:1: unknown key 'foo'", "unknown section");
    is_str(cfg.warnings[2], "t.yaml:8:3: unknown key 'model.extra'", "unknown key with a list");
    ok(cfg.warnings[3] == NULL, "warnings NULL-terminated");
    is_int(cfg.server.workers, 5, "known keys still applied");
    svc_config_free(&cfg);
}

static void test_secrets(void)
{
    unsetenv("MY_TOK");
    ok(load("server:\n  api_token_env: MY_TOK\n") == 0, "token env config");
    ok(svc_config_api_token(&cfg) == NULL, "no token: auth off");
    setenv("MY_TOK", "", 1);
    ok(svc_config_api_token(&cfg) == NULL, "empty env var: auth off");
    setenv("MY_TOK", "from-env", 1);
    is_str(svc_config_api_token(&cfg), "from-env", "token from env var");
    json_object *j = svc_config_to_json(&cfg);
    is_str(jstr(j, "server", "api_token"), "***", "a token in force through the env shows as ***");
    ok(!strstr(json_object_to_json_string(j), "from-env"), "the env token's value is never shown");
    json_object_put(j);
    svc_config_free(&cfg);

    ok(load("server:\n  api_token_env: MY_TOK\n  api_token: from-file\n") == 0, "token in file");
    is_str(svc_config_api_token(&cfg), "from-file", "api_token wins over env");
    j = svc_config_to_json(&cfg);
    is_str(jstr(j, "server", "api_token"), "***", "api_token redacted");
    char *dump = svc_json_dump_compact(j);
    ok(dump && !strstr(dump, "from-file"), "token value not in to_json");
    free(dump);
    json_object_put(j);
    svc_config_free(&cfg);
    unsetenv("MY_TOK");

    ok(load("server:\n  api_token_env: \"\"\n") == 0, "empty api_token_env");
    setenv("SVC_API_TOKEN", "x", 1);
    ok(svc_config_api_token(&cfg) == NULL, "empty env name: no lookup");
    unsetenv("SVC_API_TOKEN");
    svc_config_free(&cfg);

    ok(load("") == 0, "model key defaults");
    setenv("OPENAI_API_KEY", "sk-env", 1);
    is_str(svc_config_model_api_key(&cfg), "sk-env", "model key from OPENAI_API_KEY");
    unsetenv("OPENAI_API_KEY");
    ok(svc_config_model_api_key(&cfg) == NULL, "no model key");
    svc_config_free(&cfg);
    ok(load("model:\n  api_key: sk-file\n") == 0, "model key in file");
    setenv("OPENAI_API_KEY", "sk-env", 1);
    is_str(svc_config_model_api_key(&cfg), "sk-file", "file key wins");
    unsetenv("OPENAI_API_KEY");
    svc_config_free(&cfg);

    /* A secret is never echoed in an error message either. */
    ok(load("model:\n  api_key: {k: sk-in-a-map}\n") == -1 && !strstr(err.message, "sk-in"),
       "secret not echoed: %s", err.message);
    svc_config_free(&cfg);
}

static void test_home(const char *tmp)
{
    setenv("SVC_HOME", "/srv/svc", 1);
    ok(load("") == 0, "SVC_HOME set");
    is_str(cfg.home, "/srv/svc", "home follows SVC_HOME");
    is_str(cfg.sessions.root, "/srv/svc/agents/native_sessions", "root follows SVC_HOME");
    is_str(cfg.memory.root, "/srv/svc/memory", "memory.root follows SVC_HOME");
    is_str(cfg.sessions.export_default_dir, "/home/tester/Desktop/svc-chat-export",
           "export_default_dir does not follow SVC_HOME");
    svc_config_free(&cfg);

    ok(load("sessions:\n  root: ~/elsewhere\n") == 0, "explicit root");
    is_str(cfg.sessions.root, "/home/tester/elsewhere", "explicit root wins, ~ expanded");
    is_str(cfg.memory.root, "/srv/svc/memory", "memory.root still follows SVC_HOME");
    svc_config_free(&cfg);

    setenv("SVC_HOME", "~/svchome", 1);
    ok(load("") == 0, "SVC_HOME with ~");
    is_str(cfg.home, "/home/tester/svchome", "SVC_HOME ~ expanded");
    is_str(cfg.sessions.root, "/home/tester/svchome/agents/native_sessions", "root under it");
    svc_config_free(&cfg);

    /* svc_config_load: $SVC_HOME/agents.yaml missing => defaults, source NULL. */
    setenv("SVC_HOME", tmp, 1);
    unsetenv("SVC_CONFIG");
    ok(svc_config_load(&cfg, &err) == 0, "missing agents.yaml loads: %s", err.message);
    ok(cfg.source == NULL, "missing file: source NULL");
    is_int(cfg.server.workers, 4, "missing file: defaults");
    char want[1024];
    snprintf(want, sizeof want, "%s/agents/native_sessions", tmp);
    is_str(cfg.sessions.root, want, "missing file: root under SVC_HOME");
    svc_config_free(&cfg);

    char path[256];
    snprintf(path, sizeof path, "%s/agents.yaml", tmp);
    FILE *f = fopen(path, "w");
    ok(f != NULL, "write agents.yaml");
    if (f) {
        fputs("server:\n  workers: 7\n  bogus: 1\n", f);
        fclose(f);
    }
    ok(svc_config_load(&cfg, &err) == 0, "SVC_HOME/agents.yaml loads");
    is_str(cfg.source, path, "source is the file");
    is_int(cfg.server.workers, 7, "file value applied");
    snprintf(want, sizeof want, "%s:3:3: unknown key 'server.bogus'", path);
    is_str(cfg.warnings[0], want, "warning names the file");
    svc_config_free(&cfg);

    f = fopen(path, "w");
    if (f) {
        fputs("server:\n  workers: 0\n", f);
        fclose(f);
    }
    ok(svc_config_load(&cfg, &err) == -1, "invalid file refused");
    snprintf(want, sizeof want, "%s:2:12: server.workers: 0 is out of range (1..256)", path);
    is_str(err.message, want, "file error names the path");
    ok(is_zero(&cfg), "failed load: zeroed");
    svc_config_free(&cfg);

    f = fopen(path, "w");
    if (f) {
        fputs("# nothing but a comment\n", f);
        fclose(f);
    }
    ok(svc_config_load(&cfg, &err) == 0, "comment-only file loads");
    is_str(cfg.source, path, "comment-only file: source set");
    svc_config_free(&cfg);

    /* $SVC_CONFIG wins; a missing one is an error. */
    setenv("SVC_CONFIG", "/nonexistent/agents.yaml", 1);
    ok(svc_config_load(&cfg, &err) == -1 && err.code == SVC_E_CONFIG, "missing SVC_CONFIG refused");
    is_str(err.message, "/nonexistent/agents.yaml: no such file", "missing file message");
    ok(is_zero(&cfg), "missing SVC_CONFIG: zeroed");
    svc_config_free(&cfg);
    setenv("SVC_CONFIG", path, 1);
    ok(svc_config_load(&cfg, &err) == 0, "SVC_CONFIG names a file");
    is_str(cfg.source, path, "SVC_CONFIG source");
    svc_config_free(&cfg);
    ok(svc_config_load_file(&cfg, tmp, &err) == -1 && err.code == SVC_E_CONFIG,
       "a directory is refused: %s", err.message);
    svc_config_free(&cfg);
    unsetenv("SVC_CONFIG");
    unlink(path);
    unsetenv("SVC_HOME");
}

static void test_jobs(void)
{
    refuses("jobs:\n  - id: a\n    session_id: s\n    input: hi\n",
            "t.yaml:2:5: jobs[0].schedule: missing required key", "job without schedule");
    is_str(err.param, "jobs[0].schedule", "param names the job key");
    refuses("jobs:\n  - id: a\n    schedule: \"* * * *\"\n    session_id: s\n    input: hi\n",
            "t.yaml:3:15: jobs[0].schedule: not a 5-field cron schedule (minute hour day "
            "month weekday)",
            "four cron fields");
    refuses("jobs:\n  - {id: a, schedule: \"* * * * *\", session_id: s, input: x}\n"
            "  - {id: b, schedule: \"@daily x y z w\", session_id: s, input: x}\n",
            "t.yaml:3:23: jobs[1].schedule: cron minute field '@daily': not a number or name",
            "bad cron characters in jobs[1]");
    refuses("jobs:\n  - {id: a, schedule: \"* * * * *\", session_id: ../x, input: x}\n",
            "t.yaml:2:48: jobs[0].session_id: not a valid id (1 to 128 characters of "
            "A-Za-z0-9._-, not starting with '.')",
            "bad job session id");
    refuses("jobs:\n  - {id: a, schedule: \"* * * * *\", session_id: s, input: x, enabled: 2}\n",
            "t.yaml:2:70: jobs[0].enabled: expected true or false, got '2'", "bad job bool");
    refuses("jobs:\n  - {id: a, schedule: \"* * * * *\", session_id: s, input: x}\n"
            "  - {id: a, schedule: \"* * * * *\", session_id: s, input: y}\n",
            "t.yaml:3:10: jobs[1].id: 'a' is already used by jobs[0]", "duplicate job id");
    refuses("jobs:\n  id: a\n", "t.yaml:2:3: jobs: expected a sequence of mappings",
            "jobs not a sequence");
    refuses("jobs:\n  - a\n", "t.yaml:2:5: jobs[0]: expected a mapping", "job not a mapping");
    refuses("jobs:\n  - {id: a, schedule: \"* * * * *\", session_id: s, input: \"\"}\n",
            "t.yaml:2:58: jobs[0].input: must not be empty", "empty job input");

    ok(load("jobs:\n  - {id: a, schedule: \"1,2 */3 1-5 * 0\", session_id: s, input: x, when: "
            "now}\n") == 0,
       "job with an unknown key loads");
    is_str(cfg.warnings[0], "t.yaml:2:67: unknown key 'jobs[0].when'", "unknown job key warns");
    svc_config_free(&cfg);
    /* A long key grows the walker's path buffer under a job; the job's own path must
     * still be right when it is left (a use-after-free the fuzzer found). */
    char yaml[1024] = "jobs:\n  - id: a\n    ";
    memset(yaml + strlen(yaml), 'k', 600);
    strcat(yaml, ": 1\n");
    refuses(yaml, "t.yaml:2:5: jobs[0].schedule: missing required key", "path after long key");
    ok(load("jobs: []\n") == 0 && cfg.njobs == 0 && cfg.jobs == NULL, "jobs: []");
    svc_config_free(&cfg);
}

static void test_extensions(void)
{
    refuses("extensions:\n  - name: t\n", "t.yaml:2:5: extensions[0].command: missing required key",
            "extension without command");
    refuses("extensions:\n  - name: t\n    command: []\n",
            "t.yaml:3:14: extensions[0].command: must not be empty", "empty command");
    refuses("extensions:\n  - name: t\n    command:\n",
            "t.yaml:3:13: extensions[0].command: expected a sequence of strings, got null",
            "null command");
    refuses("extensions:\n  - name: t\n    command: /bin/true\n",
            "t.yaml:3:14: extensions[0].command: expected a sequence of strings, got '/bin/true'",
            "scalar command");
    refuses("extensions:\n  - name: t\n    command: [/bin/x, {a: 1}]\n",
            "t.yaml:3:23: extensions[0].command[1]: expected a string, got a mapping",
            "command item type");
    refuses("extensions:\n  - name: t\n    command: [\"\"]\n",
            "t.yaml:3:15: extensions[0].command[0]: must not be empty", "empty argv[0]");
    refuses("extensions:\n  - name: \"bad name\"\n    command: [x]\n",
            "t.yaml:2:11: extensions[0].name: not a valid tool name (1 to 64 characters of "
            "A-Za-z0-9_-)",
            "bad extension name");
    refuses("extensions:\n  - name: t\n    kind: agent\n    command: [x]\n",
            "t.yaml:3:11: extensions[0].kind: unknown value (expected tool)", "bad kind");
    refuses("extensions:\n  - name: t\n    timeout_s: 601\n    command: [x]\n",
            "t.yaml:3:16: extensions[0].timeout_s: 601 is out of range (1..600)", "timeout range");
    refuses("extensions:\n  - name: t\n    parameters: [1]\n    command: [x]\n",
            "t.yaml:3:17: extensions[0].parameters: expected a mapping, got a sequence",
            "parameters not a mapping");
    refuses("extensions:\n  - {name: t, command: [x]}\n  - {name: t, command: [y]}\n",
            "t.yaml:3:12: extensions[1].name: 't' is already used by extensions[0]",
            "duplicate extension name");
    /* Aliases that loop or explode are cut off, not followed forever. */
    ok(load("extensions:\n  - name: t\n    command: [x]\n    parameters: &p {a: *p}\n") == -1 &&
           strstr(err.message, "extensions[0].parameters: nested too deeply or too large"),
       "recursive alias refused: %s", err.message);
    svc_config_free(&cfg);
    ok(load("extensions:\n  - name: t\n    command: [x]\n    parameters:\n"
            "      a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
            "      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n") == -1 &&
           strstr(err.message, "nested too deeply or too large"),
       "alias bomb refused: %s", err.message);
    svc_config_free(&cfg);
    ok(load("defaults: &d {name: t, command: [x]}\nextensions:\n  - *d\n") == 0 &&
           cfg.nextensions == 1 && strcmp(cfg.extensions[0].name, "t") == 0,
       "plain aliases work");
    svc_config_free(&cfg);
}

/* server.socket_mode, socket_group, umask, base_path (SPEC 1, issue 12). */
static void test_ops_settings(void)
{
    ok(load("") == 0, "defaults");
    is_str(cfg.server.socket_mode, "0660", "socket_mode default");
    ok(svc_config_octal(cfg.server.socket_mode) == 0660, "socket_mode 0660 as a number");
    is_str(cfg.server.socket_group, "", "socket_group default");
    ok(svc_config_octal(cfg.server.umask) == 027, "umask default 027");
    is_str(cfg.server.base_path, "", "base_path default");
    svc_config_free(&cfg);
    ok(load("server:\n  socket_mode: 0600\n  umask: \"077\"\n  socket_group: www-data\n"
            "  base_path: /svc/v2\n") == 0,
       "ops settings load: %s", err.message);
    ok(svc_config_octal(cfg.server.socket_mode) == 0600, "plain 0600 is octal");
    ok(svc_config_octal(cfg.server.umask) == 077, "quoted 077 is octal");
    is_str(cfg.server.socket_group, "www-data", "socket_group");
    is_str(cfg.server.base_path, "/svc/v2", "base_path");
    svc_config_free(&cfg);
    refuses("server:\n  socket_mode: \"0966\"\n",
            "t.yaml:2:16: server.socket_mode: not an octal mode (up to 4 octal digits, e.g. "
            "\"0660\")",
            "socket_mode with a 9");
    refuses("server:\n  umask: 17777\n",
            "t.yaml:2:10: server.umask: not an octal mode (up to 4 octal digits, e.g. \"0660\")",
            "umask too long");
    refuses("server:\n  socket_group: \"www data\"\n",
            "t.yaml:2:17: server.socket_group: not a group name (up to 32 characters of "
            "A-Za-z0-9._-)",
            "group with a space");
    refuses("server:\n  base_path: svc\n",
            "t.yaml:2:14: server.base_path: must start with '/' (e.g. /svc), or be \"\" for none",
            "base path without a leading slash");
    refuses("server:\n  base_path: /svc/\n",
            "t.yaml:2:14: server.base_path: must not end with '/' (e.g. /svc)",
            "base path with a trailing slash");
    refuses("server:\n  base_path: /a/../b\n",
            "t.yaml:2:14: server.base_path: must not contain empty, '.' or '..' segments",
            "base path with ..");
    refuses("server:\n  base_path: \"/a b\"\n",
            "t.yaml:2:14: server.base_path: may only contain / and A-Za-z0-9._~-",
            "base path with a space");
}

static void test_users(void)
{
    const char *sha = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "server:\n  users:\n    - {id: alice, token_env: TOK_A}\n"
             "    - {id: ops, token_sha256: \"%s\", role: admin}\n"
             "  user_param: REMOTE_USER\n  admins: [root]\n",
             sha);
    ok(load(yaml) == 0, "server.users loads: %s", err.message);
    ok(cfg.server.nusers == 2, "two users");
    is_str(cfg.server.users[0].id, "alice", "first id");
    ok(cfg.server.users[0].role == SVC_ROLE_USER, "role defaults to user");
    ok(cfg.server.users[1].role == SVC_ROLE_ADMIN, "admin role");
    is_str(cfg.server.user_param, "REMOTE_USER", "user_param");
    is_str(cfg.server.admins[0], "root", "admins");
    json_object *j = svc_config_to_json(&cfg);
    char *dump = svc_json_dump_compact(j);
    ok(dump && !strstr(dump, sha) && strstr(dump, "\"users\":[{\"id\":\"alice\""),
       "users under server, the digest redacted: %s", dump);
    free(dump);
    json_object_put(j);
    svc_config_free(&cfg);

    refuses("server:\n  users:\n    - {id: bob, token: s3cret-value}\n",
            "t.yaml:3:24: server.users[0].token: a token is never written in clear here: give "
            "token_env (the name of an environment variable holding it) or token_sha256 (its "
            "SHA-256 in hex)",
            "a token in clear");
    ok(!strstr(err.message, "s3cret"), "the clear token is not echoed");
    refuses("server:\n  users:\n    - {id: bob}\n",
            "t.yaml:3:7: server.users[0]: give exactly one of token_env and token_sha256",
            "no token");
    refuses("server:\n  users:\n    - {id: bob, token_sha256: abc}\n",
            "t.yaml:3:31: server.users[0].token_sha256: not a SHA-256 digest (64 hex digits, e.g. "
            "from `printf %s TOKEN | sha256sum`)",
            "short digest");
    refuses("server:\n  users:\n    - {id: a, token_env: X}\n    - {id: a, token_env: Y}\n",
            "t.yaml:4:12: server.users[1].id: 'a' is already used by server.users[0]",
            "duplicate id");
    refuses("server:\n  users:\n    - {id: a, token_env: X, role: root}\n",
            "t.yaml:3:35: server.users[0].role: unknown value 'root' (expected user or admin)",
            "unknown role");
}

/* mcp_servers and mcp.remote_allow (SPEC 16): rows like the rest, secrets redacted. */
static void test_mcp(void)
{
    ok(load(
           "mcp_servers:\n  - {name: files, command: [node, fs.js, /srv], env: {A: s3cret, N: 3}}\n"
           "  - {name: web, url: \"http://127.0.0.1:3001/mcp\", headers_env: {X-Key: KEY_VAR},"
           " users: [alice], allowed_tools: [echo]}\n"
           "mcp:\n  remote_allow: [\"https://mcp.example.com/\"]\n") == 0,
       "mcp_servers loads: %s", err.message);
    ok(cfg.nmcp_servers == 2, "two servers");
    is_str(cfg.mcp_servers[0].command[1], "fs.js", "command");
    is_str(cfg.mcp_servers[0].url, "", "url defaults to \"\"");
    ok(cfg.mcp_servers[0].timeout_s == 30 && cfg.mcp_servers[0].enabled, "defaults");
    is_str(cfg.mcp_servers[1].users[0], "alice", "users");
    is_str(cfg.mcp.remote_allow[0], "https://mcp.example.com/", "remote_allow");
    json_object *j = svc_config_to_json(&cfg);
    char *dump = svc_json_dump_compact(svc_json_arr(j, "mcp_servers"));
    ok(dump && strstr(dump, "\"env\":{\"A\":\"***\",\"N\":\"***\"}") &&
           strstr(dump, "\"headers_env\":{\"X-Key\":\"***\"}") && !strstr(dump, "s3cret") &&
           !strstr(dump, "KEY_VAR"),
       "env and header values are ***: %s", dump);
    free(dump);
    json_object_put(j);
    svc_config_free(&cfg);
    refuses("mcp_servers:\n  - {name: a, command: [x], url: \"http://h/\"}\n",
            "t.yaml:2:5: mcp_servers[0]: give exactly one of command (stdio) and url (Streamable "
            "HTTP)",
            "both transports");
    refuses("mcp_servers:\n  - {name: a}\n",
            "t.yaml:2:5: mcp_servers[0]: give exactly one of command (stdio) and url (Streamable "
            "HTTP)",
            "no transport");
    refuses("mcp_servers:\n  - {name: a__b, command: [x]}\n",
            "t.yaml:2:12: mcp_servers[0].name: not a valid server name (1 to 32 characters of "
            "a-z0-9_-, without \"__\")",
            "a name with __");
    refuses("mcp_servers:\n  - {name: a, command: [x]}\n  - {name: a, url: \"http://h/\"}\n",
            "t.yaml:3:12: mcp_servers[1].name: 'a' is already used by mcp_servers[0]",
            "two servers of one name");
    refuses("mcp_servers:\n  - {name: a, command: [x], env: {A: [1]}}\n",
            "t.yaml:2:5: mcp_servers[0]: env: each value is a string", "env value a list");
    refuses("mcp_servers:\n  - {name: a, url: \"http://h/\", headers_env: {X: \"not a var\"}}\n",
            "t.yaml:2:5: mcp_servers[0]: headers_env: each value names an environment variable",
            "headers_env value not a variable name");
    refuses("mcp:\n  remote_allow: [\"ftp://x/\"]\n",
            "t.yaml:2:18: mcp.remote_allow[0]: must start with http:// or https://",
            "remote_allow not http(s)");
}

static void test_reference_file(void)
{
    int rc = svc_config_load_file(&cfg, "conf/agents.yaml", &err);
    ok(rc == 0, "conf/agents.yaml loads: %s", rc ? err.message : "ok");
    if (rc != 0)
        return;
    ok(cfg.nwarnings == 0, "conf/agents.yaml: no warnings%s%s", cfg.nwarnings ? ": " : "",
       cfg.nwarnings ? cfg.warnings[0] : "");
    json_object *ref = svc_config_to_json(&cfg);
    svc_config_free(&cfg);
    ok(load("") == 0, "defaults");
    json_object *def = svc_config_to_json(&cfg);
    svc_config_free(&cfg);
    json_object_object_del(ref, "source");
    json_object_object_del(def, "source");
    char *a = svc_json_dump_compact(ref), *b = svc_json_dump_compact(def);
    is_str(a, b, "conf/agents.yaml states exactly the defaults");
    free(a);
    free(b);
    json_object_put(ref);
    json_object_put(def);
}

int main(void)
{
    setenv("HOME", "/home/tester", 1);
    unsetenv("SVC_HOME");
    unsetenv("SVC_CONFIG");
    unsetenv("SVC_API_TOKEN");
    unsetenv("OPENAI_API_KEY");
    char tmp[] = "/tmp/svc-config-t-XXXXXX";
    if (!mkdtemp(tmp)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    test_defaults();
    test_full();
    test_to_json_defaults();
    test_errors();
    test_warnings();
    test_secrets();
    test_home(tmp);
    test_jobs();
    test_extensions();
    test_ops_settings();
    test_users();
    test_mcp();
    test_reference_file();

    rmdir(tmp);
    return done_testing();
}
