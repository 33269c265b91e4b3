#include "user.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonx.h"
#include "util.h"

bool svc_users_enabled(const struct svc_config *cfg)
{
    return cfg->server.nusers > 0 || (cfg->server.user_param && *cfg->server.user_param);
}

static void sha256_of(const char *s, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)s, strlen(s), out);
}

/* A hex digest into bytes; false when it is not 64 hex digits. */
static bool unhex(const char *hex, unsigned char out[SHA256_DIGEST_LENGTH])
{
    if (!hex || strlen(hex) != 2 * SHA256_DIGEST_LENGTH)
        return false;
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
            return false;
    return true;
}

/* The user whose token hashes to h; every user is compared, so the time does not say which
 * (or whether one) matched. */
static const struct svc_user_conf *user_of_hash(const struct svc_config *cfg,
                                                const unsigned char h[SHA256_DIGEST_LENGTH])
{
    const struct svc_user_conf *hit = NULL;
    for (size_t i = 0; i < cfg->server.nusers; i++) {
        const struct svc_user_conf *u = &cfg->server.users[i];
        unsigned char want[SHA256_DIGEST_LENGTH];
        bool ok;
        if (u->token_env && *u->token_env) {
            const char *t = getenv(u->token_env);
            ok = t && *t;
            sha256_of(ok ? t : "", want);
        } else {
            ok = unhex(u->token_sha256, want);
        }
        if (CRYPTO_memcmp(want, h, sizeof want) == 0 && ok && !hit)
            hit = u;
    }
    return hit;
}

static bool listed(char *const *v, const char *s)
{
    for (; v && *v; v++)
        if (strcmp(*v, s) == 0)
            return true;
    return false;
}

/* A name from the web server: 1..128 bytes, no control characters. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return n >= 1 && n <= 128;
}

int svc_user_authenticate(const struct svc_config *cfg, const char *authorization,
                          const char *param_user, struct svc_user *out, struct svc_err *err)
{
    const char *legacy = svc_config_api_token(cfg);
    out->id = NULL;
    out->admin = true;
    if (param_user && *param_user && cfg->server.user_param && *cfg->server.user_param) {
        if (!name_ok(param_user))
            return svc_err_set(err, SVC_E_INVALID_TOKEN, "the web server named an invalid user");
        out->id = param_user;
        out->admin = listed(cfg->server.admins, param_user);
        return 0;
    }
    if (!(legacy && *legacy) && !svc_users_enabled(cfg))
        return 0; /* auth off: everyone is the admin */
    out->admin = false;
    const char *given = authorization ? authorization : "";
    if (*given && strncasecmp(given, "Bearer ", 7) != 0)
        return svc_err_set(err, SVC_E_INVALID_TOKEN, "the Authorization header must be Bearer");
    if (*given)
        given += 7;
    while (*given == ' ')
        given++;
    if (!*given)
        return svc_err_set(err, SVC_E_MISSING_TOKEN, "an Authorization: Bearer token is required");
    unsigned char hash[SHA256_DIGEST_LENGTH];
    sha256_of(given, hash);
    const struct svc_user_conf *u = user_of_hash(cfg, hash);
    if (legacy && *legacy && svc_secret_equal(given, legacy)) {
        out->admin = true;
        return 0;
    }
    if (!u)
        return svc_err_set(err, SVC_E_INVALID_TOKEN, "invalid bearer token");
    out->id = u->id;
    out->admin = u->role == SVC_ROLE_ADMIN;
    return 0;
}

const char *svc_user_scope(const struct svc_user *u)
{
    return !u || u->admin ? NULL : (u->id ? u->id : "");
}

const char *svc_user_owner(json_object *summary)
{
    if (!summary || !svc_json_bool(summary, "user_verified", false))
        return NULL;
    const char *id = svc_json_str(summary, "user_id", NULL);
    return id && *id ? id : NULL;
}

bool svc_user_sees(const char *scope, json_object *summary)
{
    const char *owner = svc_user_owner(summary);
    return summary && (!scope || (owner && strcmp(owner, scope) == 0));
}

void svc_user_own(json_object *sc, const char *id)
{
    svc_json_set_str(sc, "user_id", id);
    svc_json_set_bool(sc, "user_verified", true);
}

char *svc_user_key(const struct svc_user *u, const char *key)
{
    char *out = NULL;
    if (u && u->id)
        svc_xasprintf(&out, "%s\n%s", u->id, key);
    else
        out = svc_xstrdup(key);
    return out;
}

void svc_user_of_job(const struct svc_config *cfg, const char *user, struct svc_user *out)
{
    out->id = user && *user ? user : NULL;
    out->admin = !out->id || listed(cfg->server.admins, user);
    for (size_t i = 0; out->id && i < cfg->server.nusers; i++)
        if (strcmp(cfg->server.users[i].id, user) == 0)
            out->admin = cfg->server.users[i].role == SVC_ROLE_ADMIN;
}
