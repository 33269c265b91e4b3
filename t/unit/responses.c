/* responses.t: the stored Responses API objects (core/responses.h): id shapes, put/get,
 * refused ids never reach the file system, a damaged or linked store is an error. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "config.h"
#include "jsonx.h"
#include "responses.h"
#include "tap.h"

static char root[64];

int main(void)
{
    struct svc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (svc_config_defaults(&cfg, NULL) != 0)
        return 1;
    snprintf(root, sizeof root, "/tmp/svc-responses-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    free(cfg.sessions.root);
    cfg.sessions.root = strdup(root);
    cfg.sessions.fsync = false;

    char id[SVC_RESPONSE_ID_LEN], id2[SVC_RESPONSE_ID_LEN];
    svc_responses_new_id("resp_", id, sizeof id);
    svc_responses_new_id("resp_", id2, sizeof id2);
    ok(svc_responses_id_valid(id), "a new id is valid: %s", id);
    ok(strcmp(id, id2) != 0, "two new ids differ");
    ok(!svc_responses_id_valid("resp_") && !svc_responses_id_valid("resp_../../x") &&
           !svc_responses_id_valid("resp_0123456789ABCDEF0123456789abcdef") &&
           !svc_responses_id_valid("run-0123456789abcdef") && !svc_responses_id_valid(NULL),
       "other shapes are refused");

    json_object *o = NULL;
    struct svc_err e;
    is_int(svc_responses_get(&cfg, id, &o, &e), -1, "nothing stored yet");
    is_int(e.code, SVC_E_RESPONSE_NOT_FOUND, "response_not_found before the directory exists");
    char dir[128];
    snprintf(dir, sizeof dir, "%s/.svc_responses", root);
    struct stat st;
    ok(stat(dir, &st) != 0, "a lookup creates nothing");

    json_object *resp = json_object_new_object();
    svc_json_set_str(resp, "id", id);
    svc_json_set_str(resp, "session_id", "s-1");
    svc_json_set_str(resp, "text", "h\xc3\xa9llo");
    is_int(svc_responses_put(&cfg, resp, &e), 0, "put");
    is_int(svc_responses_get(&cfg, id, &o, &e), 0, "get");
    is_str(svc_json_str(o, "session_id", NULL), "s-1", "the session mapping");
    is_str(svc_json_str(o, "text", NULL), "h\xc3\xa9llo", "the object as stored");
    json_object_put(o);
    o = NULL;
    is_int(svc_responses_get(&cfg, id2, &o, &e), -1, "another id: not found");
    is_int(e.code, SVC_E_RESPONSE_NOT_FOUND, "another id: response_not_found");

    /* pruning: an old stored response goes, a recent one stays, once an hour at most */
    char old_id[SVC_RESPONSE_ID_LEN], opath[256], rpath[256];
    svc_responses_new_id("resp_", old_id, sizeof old_id);
    svc_json_set_str(resp, "id", old_id);
    is_int(svc_responses_put(&cfg, resp, &e), 0, "put a second response");
    svc_json_set_str(resp, "id", id);
    snprintf(opath, sizeof opath, "%s/%s.json", dir, old_id);
    snprintf(rpath, sizeof rpath, "%s/%s.json", dir, id);
    struct utimbuf ago = {time(NULL) - 31 * 24 * 3600, time(NULL) - 31 * 24 * 3600};
    ok(utime(opath, &ago) == 0, "aged 31 days");
    is_int(svc_responses_prune(&cfg, SVC_RESPONSES_KEEP_S), 0, "pruned within the hour: nothing");
    char stamp[256];
    snprintf(stamp, sizeof stamp, "%s/.pruned.json", dir);
    struct utimbuf hour = {time(NULL) - 7200, time(NULL) - 7200};
    ok(utime(stamp, &hour) == 0, "the stamp is two hours old");
    is_int(svc_responses_prune(&cfg, SVC_RESPONSES_KEEP_S), 1, "one old response removed");
    ok(access(opath, F_OK) != 0, "the old one is gone");
    ok(access(rpath, F_OK) == 0, "the recent one stays");

    json_object *bad = json_object_new_object();
    svc_json_set_str(bad, "id", "../../etc/x");
    is_int(svc_responses_put(&cfg, bad, &e), -1, "put refuses an object without a valid id");
    json_object_put(bad);

    /* a damaged file is an io_error, not a crash or a not-found */
    char path[256];
    snprintf(path, sizeof path, "%s/%s.json", dir, id2);
    FILE *f = fopen(path, "w");
    fputs("[1, 2", f);
    fclose(f);
    is_int(svc_responses_get(&cfg, id2, &o, &e), -1, "damaged file: error");
    ok(e.code != SVC_E_RESPONSE_NOT_FOUND && e.code != SVC_OK, "damaged file: not a not-found");
    /* a JSON value that is not an object */
    f = fopen(path, "w");
    fputs("[1, 2]", f);
    fclose(f);
    is_int(svc_responses_get(&cfg, id2, &o, &e), -1, "an array: error");
    is_int(e.code, SVC_E_IO, "an array: io_error");

    /* a symlink in place of the directory is refused, both ways */
    tap_rm_rf(dir);
    char outside[128];
    snprintf(outside, sizeof outside, "%s-outside", root);
    mkdir(outside, 0755);
    if (symlink(outside, dir) != 0)
        return 1;
    is_int(svc_responses_put(&cfg, resp, &e), -1, "put through a symlinked directory: refused");
    is_int(e.code, SVC_E_IO, "symlinked directory: io_error");
    is_int(svc_responses_get(&cfg, id, &o, &e), -1, "get through a symlinked directory: refused");
    snprintf(path, sizeof path, "%s/%s.json", outside, id);
    ok(access(path, F_OK) != 0, "nothing written outside the root");

    json_object_put(resp);
    tap_rm_rf(root);
    tap_rm_rf(outside);
    svc_config_free(&cfg);
    return done_testing();
}
