/* title: a derived title leaves Markdown markup out, is cut at a word boundary with an
 * ellipsis, and keeps the text it was cut from for the title search. */
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "tap.h"
#include "title.h"
#include "util.h"

static const char *title_of(json_object *sc, const char *input)
{
    svc_title_derive(sc, input);
    return svc_json_str(sc, "title", NULL);
}

int main(void)
{
    json_object *sc = json_object_new_object();
    static const char *const cases[][2] = {
        {"Plan a trip to **Lisbon**", "Plan a trip to Lisbon"},
        {"# Heading\n\n> quoted *text* and __more__", "Heading quoted text and more"},
        {"use `make test` and ~~not~~ this", "use make test and not this"},
        {"see [the docs](https://example.com/a_b) or ![a cat](c.png)", "see the docs or a cat"},
        {"- one\n- two\n1. three", "one two three"},
        {"```sh\nls -l\n```", "ls -l"},
        {"snake_case and 2 * 3 and a*b", "snake_case and 2 * 3 and a*b"},
        {"a \\*literal\\* star", "a *literal* star"},
        {"line one\r\n\tline\x01two", "line one line two"},
        {"***", "***"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        is_str(title_of(sc, cases[i][0]), cases[i][1], "title of '%s'", cases[i][0]);
        ok(!json_object_object_get_ex(sc, "title_source", NULL), "no source when not cut (%zu)", i);
    }
    const char *in = "Please plan a **week-long** trip to Lisbon and Porto with lots of food";
    const char *t = title_of(sc, in);
    is_str(t, "Please plan a week-long trip to Lisbon and\xE2\x80\xA6", "cut at a word, ellipsis");
    ok(svc_utf8_len(t) <= SVC_TITLE_MAX_CP, "at most %d code points", SVC_TITLE_MAX_CP);
    is_str(svc_json_str(sc, "title_source", NULL),
           "Please plan a week-long trip to Lisbon and Porto with lots of food", "the source");
    is_str(svc_title_search_text(sc), svc_json_str(sc, "title_source", NULL),
           "searched: the source");
    svc_json_set_str(sc, "title", "Renamed");
    is_str(svc_title_search_text(sc), "Renamed",
           "a renamed title (source left by another "
           "program) is searched as it is");
    char word[128];
    memset(word, 'x', 100);
    word[100] = '\0';
    t = title_of(sc, word);
    is_int(svc_utf8_len(t), SVC_TITLE_MAX_CP, "one long word is cut where it must");
    t = title_of(sc, "日本語のテキストはスペースがないのでどこでも切れますがタイトルは四十八文字ま"
                     "でにします。さらに続きます");
    is_int(svc_utf8_len(t), SVC_TITLE_MAX_CP, "text without spaces: 48 code points");
    json_object_put(sc);
    return done_testing();
}
