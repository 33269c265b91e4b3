/* bench/gen_sessions.c: write bench sessions straight to a session root, fast.
 *   gen_sessions ROOT PREFIX FIRST COUNT MESSAGES [AGENT_ID]
 * Creates sessions PREFIX<FIRST> .. PREFIX<FIRST+COUNT-1> (ids zero-padded to 6 digits),
 * each with MESSAGES native messages (alternating user/assistant, MESSAGES/2 turns):
 * session.json, agent.json, message_<n>.json, svc_session.json and svc_turns.jsonl in the
 * shapes `build/svc chat` writes (Strands FileSessionManager layout plus svc sidecars).
 * With GEN_OWNER set, the sessions belong to that user (user_id, user_verified).
 * Nothing is fsynced: this is a throwaway bench root. Built and run by scripts/bench. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *agent = "svc-agent";

static void die(const char *what, const char *path)
{
    fprintf(stderr, "gen_sessions: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void mkdir1(const char *p)
{
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        die("mkdir", p);
}

static void mkdirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *s = tmp + 1; *s; s++) {
        if (*s == '/') {
            *s = 0;
            mkdir1(tmp);
            *s = '/';
        }
    }
    mkdir1(tmp);
}

/* UTC ISO 8601 with microseconds and +00:00, from microseconds since the epoch. */
static void ts(char out[64], long long us)
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 64, "%s.%06lld+00:00", b, us % 1000000);
}

static FILE *open_w(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die("open", path);
    return f;
}

static void close_w(FILE *f, const char *path)
{
    if (ferror(f) || fclose(f) != 0)
        die("write", path);
}

static void gen_one(const char *root, const char *sid, long idx, int nmsg, long long t0)
{
    char dir[4096], p[4200], c0[64], cN[64];
    snprintf(dir, sizeof dir, "%s/session_%s/agents/agent_%s/messages", root, sid, agent);
    mkdirs(dir);
    snprintf(dir, sizeof dir, "%s/session_%s", root, sid);
    mkdir1(strcat(strcpy(p, dir), "/multi_agents"));
    long long step = 2000; /* 2 ms between messages */
    long long tend = t0 + step * (nmsg > 0 ? nmsg : 1);
    ts(c0, t0);
    ts(cN, tend);

    snprintf(p, sizeof p, "%s/session.json", dir);
    FILE *f = open_w(p);
    fprintf(
        f,
        "{\n  \"session_id\": \"%s\",\n  \"session_type\": \"AGENT\",\n  \"created_at\": \"%s\",\n"
        "  \"updated_at\": \"%s\"\n}",
        sid, c0, c0);
    close_w(f, p);

    int turns = nmsg / 2;
    long removed = nmsg > 40 ? nmsg - 40 : 0;
    snprintf(p, sizeof p, "%s/agents/agent_%s/agent.json", dir, agent);
    f = open_w(p);
    fprintf(
        f,
        "{\n  \"agent_id\": \"%s\",\n  \"state\": {},\n  \"conversation_manager_state\": {\n"
        "    \"__name__\": \"SlidingWindowConversationManager\",\n    \"removed_message_count\": "
        "%ld,\n"
        "    \"model_call_count\": %d\n  },\n  \"_internal_state\": {\n    \"interrupt_state\": {\n"
        "      \"interrupts\": {},\n      \"context\": {},\n      \"activated\": false\n    },\n"
        "    \"model_state\": {}\n  },\n  \"created_at\": \"%s\",\n  \"updated_at\": \"%s\"\n}",
        agent, removed, turns, c0, cN);
    close_w(f, p);

    long long cum_in = 0, cum_out = 0;
    int last_in = 0, last_out = 0;
    char tp[4200];
    snprintf(tp, sizeof tp, "%s/svc_turns.jsonl", dir);
    FILE *tf = open_w(tp);
    for (int m = 0; m < nmsg; m++) {
        char at[64], text[256];
        ts(at, t0 + step * m);
        int user = (m % 2) == 0;
        if (user)
            snprintf(text, sizeof text, "Bench session %ld, question %d: how is the market today?",
                     idx, m / 2 + 1);
        else
            snprintf(
                text, sizeof text,
                "Echo: Bench session %ld, question %d: how is the market today? (I was given %d "
                "earlier messages.)",
                idx, m / 2 + 1, m - 1);
        snprintf(p, sizeof p, "%s/agents/agent_%s/messages/message_%d.json", dir, agent, m);
        f = open_w(p);
        fprintf(f,
                "{\n  \"message\": {\n    \"role\": \"%s\",\n    \"content\": [\n      {\n"
                "        \"text\": \"%s\"\n      }\n    ]",
                user ? "user" : "assistant", text);
        if (!user) {
            last_out = (int)(strlen(text) + 3) / 4;
            last_in = (int)(m * 60 + 40) / 4;
            cum_in += last_in;
            cum_out += last_out;
            fprintf(f,
                    ",\n    \"metadata\": {\n      \"usage\": {\n        \"inputTokens\": %d,\n"
                    "        \"outputTokens\": %d,\n        \"totalTokens\": %d\n      },\n"
                    "      \"metrics\": {\n        \"latencyMs\": 0\n      }\n    }",
                    last_in, last_out, last_in + last_out);
        }
        fprintf(f,
                "\n  },\n  \"message_id\": %d,\n  \"redact_message\": null,\n  \"created_at\": "
                "\"%s\",\n"
                "  \"updated_at\": \"%s\"\n}",
                m, at, at);
        close_w(f, p);
        if (!user) {
            char rs[64];
            ts(rs, t0 + step * (m - 1));
            fprintf(
                tf,
                "{\"schema_version\":1,\"turn_id\":\"turn-%08lx%08x\",\"run_id\":\"run-%08lx%08x\","
                "\"status\":\"done\",\"input_message_id\":%d,\"output_message_ids\":[%d],"
                "\"events\":["
                "{\"type\":\"phase\",\"run_id\":\"run-%08lx%08x\",\"seq\":1,\"session_id\":\"%s\","
                "\"schema_version\":\"2.0\",\"timestamp\":\"%s\",\"phase\":\"start\"},"
                "{\"type\":\"delta\",\"run_id\":\"run-%08lx%08x\",\"seq\":2,\"session_id\":\"%s\","
                "\"schema_version\":\"2.0\",\"timestamp\":\"%s\",\"text\":\"%s\"},"
                "{\"type\":\"done\",\"run_id\":\"run-%08lx%08x\",\"seq\":3,\"session_id\":\"%s\","
                "\"schema_version\":\"2.0\",\"timestamp\":\"%s\",\"model_id\":\"echo-1\","
                "\"tool_steps\":0}],\"tool_trace\":[],\"usage\":{\"prompt_tokens\":%d,"
                "\"completion_tokens\":%d,\"total_tokens\":%d},\"error\":null,\"created_at\":\"%"
                "s\","
                "\"updated_at\":\"%s\"}\n",
                idx, m, idx, m, m - 1, m, idx, m, sid, rs, idx, m, sid, at, text, idx, m, sid, at,
                last_in, last_out, last_in + last_out, rs, at);
        }
    }
    close_w(tf, tp);

    const char *owner = getenv("GEN_OWNER"); /* sessions of this user (SPEC 14) */
    char last_run[40] = "null";
    if (turns > 0)
        snprintf(last_run, sizeof last_run, "\"run-%08lx%08x\"", idx, nmsg - 1);
    snprintf(p, sizeof p, "%s/svc_session.json", dir);
    f = open_w(p);
    fprintf(f,
            "{\n  \"schema_version\": 1,\n  \"session_id\": \"%s\",\n  \"agent_id\": \"%s\",\n"
            "  \"title\": \"Bench session %ld, question 1: how is the ma\",\n"
            "  \"user_id\": \"%s\",%s\n  \"channel\": \"bench\",\n  \"model\": \"echo-1\",\n"
            "  \"locale\": \"en\",\n  \"created_at\": \"%s\",\n  \"updated_at\": \"%s\",\n"
            "  \"message_count\": %d,\n  \"turn_count\": %d,\n  \"run_count\": %d,\n"
            "  \"last_run_id\": %s,\n  \"status\": \"idle\",\n  \"archived\": false,\n"
            "  \"archived_at\": null,\n  \"current_run\": null,\n  \"last_error\": null,\n"
            "  \"token_state\": {\n    \"last_prompt_tokens\": %d,\n    "
            "\"last_completion_tokens\": %d,\n"
            "    \"last_total_tokens\": %d,\n    \"cumulative_prompt_tokens\": %lld,\n"
            "    \"cumulative_completion_tokens\": %lld,\n    \"cumulative_total_tokens\": %lld,\n"
            "    \"model_context_window\": 128000,\n    \"utilization_ratio\": %.6g,\n"
            "    \"loop_count\": 1,\n    \"removed_message_count\": %ld\n  },\n  \"memory_state\": "
            "{}\n}\n",
            sid, agent, idx, owner ? owner : "anonymous",
            owner ? "\n  \"user_verified\": true," : "", c0, cN, nmsg, turns, turns, last_run,
            last_in, last_out, last_in + last_out, cum_in, cum_out, cum_in + cum_out,
            (double)(last_in + last_out) / 128000.0, removed);
    close_w(f, p);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: gen_sessions ROOT PREFIX FIRST COUNT MESSAGES [AGENT_ID]\n");
        return 2;
    }
    const char *root = argv[1], *prefix = argv[2];
    long first = atol(argv[3]), count = atol(argv[4]);
    int nmsg = atoi(argv[5]);
    if (argc > 6)
        agent = argv[6];
    if (count < 0 || nmsg < 0 || strlen(prefix) > 100)
        return 2;
    mkdirs(root);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* Spread sessions over the last days, one second apart, newest = highest index. */
    long long base = (long long)now.tv_sec * 1000000LL - (first + count + 10) * 1000000LL -
                     (long long)nmsg * 2000LL;
    for (long i = first; i < first + count; i++) {
        char sid[160];
        snprintf(sid, sizeof sid, "%s%06ld", prefix, i);
        gen_one(root, sid, i, nmsg, base + i * 1000000LL);
    }
    return 0;
}
