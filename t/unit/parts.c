/* parts: OpenAI content parts to Strands blocks and back (SPEC 17). Bytes are stored as
 * Python's base64.b64encode writes them (an unpadded data URL comes back padded), formats
 * follow Strands' ImageFormat and DocumentFormat, limits and bad parts are refused by name,
 * and the session API's view names every block kind. */
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "parts.h"
#include "tap.h"

static json_object *j(const char *s)
{
    json_object *o = NULL;
    svc_json_parse(s, strlen(s), &o, NULL);
    return o;
}

static char *block_of(const char *part)
{
    json_object *p = j(part), *b = svc_parts_block(p);
    char *s = svc_json_dump_compact(b);
    json_object_put(p);
    json_object_put(b);
    return s;
}

static int check(const char *part, int64_t max, struct svc_err *e)
{
    json_object *p = j(part);
    int rc = svc_parts_check(p, "m", max, e);
    json_object_put(p);
    return rc;
}

int main(void)
{
    struct svc_err e;
    char *s =
        block_of("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAEC\"}}");
    is_str(s,
           "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":{\"__bytes_encoded__\":true,"
           "\"data\":\"AAEC\"}}}}",
           "a data URL image as Strands' block");
    free(s);
    s = block_of(
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/jpeg;base64,AAECAw\"}}");
    ok(s && strstr(s, "\"data\":\"AAECAw==\"") && strstr(s, "\"jpeg\""), "unpadded base64 padded");
    free(s);
    s = block_of("{\"type\":\"image_url\",\"image_url\":\"https://x.test/a/cat.WEBP?s=1\"}");
    is_str(s,
           "{\"image\":{\"format\":\"webp\",\"source\":{\"location\":{\"type\":\"url\",\"url\":"
           "\"https://x.test/a/cat.WEBP?s=1\"}}}}",
           "a URL image kept as its location, the format from its extension");
    free(s);
    s = block_of("{\"type\":\"image_url\",\"image_url\":\"https://x.test/img\"}");
    ok(s && strstr(s, "\"format\":\"png\""), "no extension: png");
    free(s);
    s = block_of("{\"type\":\"file\",\"file\":{\"filename\":\"notes.md\",\"file_data\":"
                 "\"data:application/octet-stream;base64,aGk=\"}}");
    is_str(s,
           "{\"document\":{\"format\":\"md\",\"name\":\"notes.md\",\"source\":{\"bytes\":{"
           "\"__bytes_encoded__\":true,\"data\":\"aGk=\"}}}}",
           "a file by its name's extension");
    free(s);

    ok(check("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAECAw==\"}}",
             4, &e) == 0,
       "4 bytes within a limit of 4");
    ok(check("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAECAwQ=\"}}",
             4, &e) == -1 &&
           e.code == SVC_E_BODY_TOO_LARGE,
       "5 bytes past it: 413");
    is_str(e.param, "m.image_url.url", "named");
    ok(check("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,A=B=\"}}", 99,
             &e) == -1 &&
           e.code == SVC_E_INVALID_FIELD,
       "not base64: 422");
    ok(check("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png,AAEC\"}}", 99, &e) ==
           -1,
       "not a base64 data URL: 422");
    ok(check("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/tiff;base64,AAEC\"}}", 99,
             &e) == -1,
       "tiff: 422");
    ok(check("{\"type\":\"file\",\"file\":{\"file_data\":\"data:text/csv;base64,YSxi\"}}", 99,
             &e) == 0,
       "a csv file without a name");
    ok(check("{\"type\":\"file\",\"file\":{\"filename\":\"\",\"file_data\":\"data:text/csv;base64,"
             "YSxi\"}}",
             99, &e) == -1 &&
           strcmp(e.param, "m.file.filename") == 0,
       "an empty filename: 422");
    ok(check("{\"type\":\"input_audio\"}", 99, &e) == -1 && strcmp(e.param, "m.type") == 0,
       "another part type: 422");

    json_object *img =
        j("{\"image\":{\"format\":\"gif\",\"source\":{\"bytes\":{\"__bytes_encoded__\":"
          "true,\"data\":\"AAECAw==\"}}}}");
    json_object *v = svc_parts_view(img, false);
    s = svc_json_dump_compact(v);
    is_str(s, "{\"type\":\"image\",\"format\":\"gif\",\"size\":4}", "the view: no data");
    free(s);
    json_object_put(v);
    v = svc_parts_view(img, true);
    is_str(svc_json_str(v, "url", NULL),
           "data:image/gif;base64,AAECAw==", "with bytes: the data URL");
    json_object_put(v);
    v = svc_parts_openai(img);
    s = svc_json_dump_compact(v);
    is_str(s, "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/gif;base64,AAECAw==\"}}",
           "to the chat wire");
    free(s);
    json_object_put(v);
    v = svc_parts_responses(img);
    is_str(svc_json_str(v, "type", NULL), "input_image", "to the Responses wire");
    json_object_put(v);
    json_object_put(img);
    static const char *const kinds[][2] = {
        {"{\"reasoningContent\":{\"reasoningText\":{\"text\":\"t\",\"signature\":\"s\"}}}",
         "reasoning"},
        {"{\"citationsContent\":{\"content\":[]}}", "citations"},
        {"{\"cachePoint\":{\"type\":\"default\"}}", "cache_point"},
        {"{\"guardContent\":{\"text\":{\"text\":\"g\"}}}", "guard"},
        {"{\"newThing\":{}}", "other"},
        {"{\"toolUse\":{\"toolUseId\":\"a\",\"name\":\"n\",\"input\":{}}}", "tool_use"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        json_object *b = j(kinds[i][0]);
        v = svc_parts_view(b, false);
        is_str(svc_json_str(v, "type", NULL), kinds[i][1], "the view of %s", kinds[i][1]);
        json_object_put(v);
        json_object_put(b);
    }
    json_object *m =
        j("{\"role\":\"user\",\"content\":[{\"text\":\"x\"},{\"document\":{\"format\":"
          "\"pdf\",\"name\":\"r.pdf\",\"source\":{\"bytes\":{\"__bytes_encoded__\":true,"
          "\"data\":\"aGk=\"}}}}]}");
    s = svc_parts_describe(m);
    is_str(s, "document pdf \"r.pdf\" of 2 bytes", "what the echo model says it was given");
    free(s);
    json_object_put(m);
    return done_testing();
}
