/* user.t: who a request is (tokens by environment or SHA-256, server.api_token, the web
 * server's user) and which sessions each identity sees (SPEC 14). */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tap.h"
#include "user.h"

static struct svc_config cfg;
static struct svc_err err;

static int load(const char *yaml)
{
    svc_config_free(&cfg);
    return svc_config_load_buffer(&cfg, yaml, strlen(yaml), "t.yaml", &err);
}

static int auth(const char *header, const char *param, struct svc_user *u)
{
    svc_err_clear(&err);
    memset(u, 0, sizeof *u);
    return svc_user_authenticate(&cfg, header, param, u, &err);
}

static void test_tokens(void)
{
    ok(load("server:\n  api_token: tok-legacy\n  users:\n    - {id: alice, token_env: TOK_A}\n"
            "    - {id: bob, token_sha256: "
            "\"3c8d9d3b8a1f0b2fd1d4ae1e2a3e4e1d0a9f8e7d6c5b4a3928170f6e5d4c3b2a\"}\n"
            "    - {id: root, token_env: TOK_R, role: admin}\n") == 0,
       "users load: %s", err.message);
    setenv("TOK_A", "tok-alice", 1);
    setenv("TOK_R", "tok-root", 1);
    struct svc_user u;
    ok(auth("Bearer tok-alice", NULL, &u) == 0 && u.id && strcmp(u.id, "alice") == 0 && !u.admin,
       "alice's token from her environment variable");
    ok(auth("Bearer tok-root", NULL, &u) == 0 && u.id && strcmp(u.id, "root") == 0 && u.admin,
       "an admin by role");
    ok(auth("Bearer tok-legacy", NULL, &u) == 0 && !u.id && u.admin, "server.api_token: the admin");
    ok(auth("Bearer tok-alicf", NULL, &u) == -1 && err.code == SVC_E_INVALID_TOKEN,
       "a wrong token");
    ok(auth(NULL, NULL, &u) == -1 && err.code == SVC_E_MISSING_TOKEN, "no token");
    ok(auth("Bearer tok-alice", "mallory", &u) == 0 && strcmp(u.id, "alice") == 0,
       "a user parameter is ignored without server.user_param");
    unsetenv("TOK_A");
    ok(auth("Bearer tok-alice", NULL, &u) == -1, "an unset variable matches no token");
    ok(auth("Bearer ", NULL, &u) == -1 && err.code == SVC_E_MISSING_TOKEN, "an empty token");

    ok(load("server:\n  users:\n    - {id: bob, token_sha256: "
            "\"8e5e2c1f3d9b3a4e3f5a2b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f901\"}\n") == 0,
       "a digest loads");
    ok(auth("Bearer anything", NULL, &u) == -1, "only the digest's token matches");
    ok(load("") == 0 && auth(NULL, NULL, &u) == 0 && u.admin && !u.id,
       "no token, no users: everyone is the admin");
}

static void test_digest(void)
{
    char yaml[256];
    /* printf %s tok-bob | sha256sum */
    snprintf(yaml, sizeof yaml, "server:\n  users:\n    - {id: bob, token_sha256: \"%s\"}\n",
             "6bae0362848af71bf9dde2924116bee5375e8a4da437494e3588dfee8b35d0cc");
    ok(load(yaml) == 0, "a digest user");
    struct svc_user u;
    ok(auth("Bearer tok-bob", NULL, &u) == 0 && strcmp(u.id, "bob") == 0, "bob by his digest");
    ok(auth("Bearer tok-bob2", NULL, &u) == -1, "another token is refused");
}

static void test_param(void)
{
    ok(load("server:\n  user_param: REMOTE_USER\n  admins: [carol]\n") == 0, "user_param loads");
    struct svc_user u;
    ok(auth(NULL, "dave", &u) == 0 && strcmp(u.id, "dave") == 0 && !u.admin,
       "the web server's user");
    ok(auth(NULL, "carol", &u) == 0 && u.admin, "server.admins");
    ok(auth(NULL, NULL, &u) == -1 && err.code == SVC_E_MISSING_TOKEN, "no user, no token: 401");
    ok(auth(NULL, "bad\nname", &u) == -1, "a name with a control character is refused");
    svc_user_of_job(&cfg, "carol", &u);
    ok(u.admin && strcmp(u.id, "carol") == 0, "a job as a listed admin");
    svc_user_of_job(&cfg, "", &u);
    ok(u.admin && !u.id, "a job without user: the admin");
}

static void test_sees(void)
{
    json_object *mine = json_object_new_object(), *legacy = json_object_new_object();
    svc_user_own(mine, "alice");
    json_object_object_add(legacy, "user_id", json_object_new_string("alice")); /* OpenAI user */
    struct svc_user alice = {"alice", false}, bob = {"bob", false}, root = {"root", true};
    ok(svc_user_sees(svc_user_scope(&alice), mine), "alice sees her session");
    ok(!svc_user_sees(svc_user_scope(&bob), mine), "bob does not");
    ok(svc_user_sees(svc_user_scope(&root), mine), "an admin does");
    ok(!svc_user_sees(svc_user_scope(&alice), legacy),
       "a user_id without user_verified is no owner: the admins' session");
    ok(svc_user_sees(svc_user_scope(&root), legacy), "...which admins see");
    ok(!svc_user_owner(legacy) && strcmp(svc_user_owner(mine), "alice") == 0, "owners");
    ok(!svc_user_sees(NULL, NULL), "no summary: nothing to see");
    char *k1 = svc_user_key(&alice, "k"), *k2 = svc_user_key(&bob, "k");
    ok(strcmp(k1, k2) != 0, "each user's Idempotency-Keys are their own");
    free(k1);
    free(k2);
    json_object_put(mine);
    json_object_put(legacy);
}

int main(void)
{
    unsetenv("SVC_API_TOKEN");
    test_tokens();
    test_digest();
    test_param();
    test_sees();
    svc_config_free(&cfg);
    return done_testing();
}
