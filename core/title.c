#include "title.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "util.h"

/* How much of the input is read: enough for the source text once link targets and markup
 * are gone, without reading a long first message whole. */
#define INPUT_MAX_CP (SVC_TITLE_SOURCE_MAX_CP * 5)

static bool is_word(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0';
}

/* Past a line's block markers: indentation, quote '>'s, a heading's '#'s, a list bullet
 * ("-", "*", "+", "1.", "1)"); a code fence's line is skipped whole. */
static const char *skip_block_markers(const char *p)
{
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '>')
            p++;
        const char *q = p;
        if (*q == '#') {
            while (*q == '#')
                q++;
            if (q - p > 6 || !is_space((unsigned char)*q))
                return p;
        } else if ((*q == '-' || *q == '*' || *q == '+') && (q[1] == ' ' || q[1] == '\t')) {
            q++;
        } else if (*q >= '0' && *q <= '9') {
            while (*q >= '0' && *q <= '9')
                q++;
            if ((*q != '.' && *q != ')') || (q[1] != ' ' && q[1] != '\t'))
                return p;
            q++;
        } else if (strncmp(q, "```", 3) == 0 || strncmp(q, "~~~", 3) == 0) {
            q = strchr(q, '\n');
            return q ? q : p + strlen(p);
        } else {
            return p;
        }
        p = q;
    }
}

/* Where a link's text at p ("[text](target)" or "[text][ref]") ends (its ']'), with *after
 * set past the target; NULL when p starts no link. */
static const char *link_close(const char *p, const char **after)
{
    const char *close = strpbrk(p + 1, "[]\n");
    if (!close || *close != ']')
        return NULL;
    char open = close[1], shut = open == '(' ? ')' : open == '[' ? ']' : 0;
    const char *end = shut ? strpbrk(close + 2, shut == ')' ? ")\n" : "]\n") : NULL;
    if (!end || *end != shut)
        return NULL;
    *after = end + 1;
    return close;
}

/* Whether the run of c at p..p+n is emphasis or strike markup: it touches text on one side
 * and is not inside a word ("snake_case", "2*3") nor between spaces ("2 * 3"). */
static bool is_emphasis(const char *start, const char *p, size_t n)
{
    if (p[0] == '~' && n < 2)
        return false;
    unsigned char before = p > start ? (unsigned char)p[-1] : ' ', after = (unsigned char)p[n];
    if (is_space(before) && is_space(after))
        return false;
    return !(is_word(before) && is_word(after));
}

/* The text of in without its Markdown markup (heap). */
static char *strip_markdown(const char *in)
{
    char *out = svc_xmalloc(strlen(in) + 1), *w = out;
    const char *link_end = NULL, *link_after = NULL;
    bool line_start = true;
    for (const char *p = in; *p;) {
        if (line_start) {
            p = skip_block_markers(p);
            line_start = false;
            continue;
        }
        size_t n = 1;
        while (p[n] == p[0])
            n++;
        if (p == link_end) {
            p = link_after;
            link_end = NULL;
        } else if (*p == '\\' && p[1] && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", p[1])) {
            *w++ = p[1];
            p += 2;
        } else if (*p == '`') {
            p += n;
        } else if (*p == '*' || *p == '_' || *p == '~') {
            if (!is_emphasis(in, p, n)) { /* the run is text: kept whole */
                memcpy(w, p, n);
                w += n;
            }
            p += n;
        } else if (*p == '[' && !link_end && (link_end = link_close(p, &link_after))) {
            p++;
        } else if (*p == '!' && p[1] == '[' && !link_end &&
                   (link_end = link_close(p + 1, &link_after))) {
            p += 2;
        } else {
            line_start = *p == '\n';
            *w++ = *p++;
        }
    }
    *w = '\0';
    return out;
}

/* Fold newlines and every other control character (C0, DEL, C1) to single spaces, as PATCH
 * refuses them in titles, and trim the ends; in place. */
static void fold_spaces(char *t)
{
    char *w = t;
    for (char *r = t; *r; r++) {
        char c = *r;
        unsigned char u = (unsigned char)c;
        if (u == 0xC2 && (unsigned char)r[1] >= 0x80 && (unsigned char)r[1] <= 0x9F) {
            r++; /* a C1 control, two bytes in UTF-8 */
            c = ' ';
        } else if (u < 0x20 || u == 0x7F) {
            c = ' ';
        }
        if (c != ' ' || (w > t && w[-1] != ' '))
            *w++ = c;
    }
    while (w > t && w[-1] == ' ')
        w--;
    *w = '\0';
}

/* s cut to at most max_cp code points (heap), at the last space if it is in the second half
 * (one long word is cut where it must), with an ellipsis when asked. */
static char *cut_words(const char *s, size_t max_cp, bool ellipsis)
{
    if (svc_utf8_len(s) <= max_cp)
        return svc_xstrdup(s);
    char *t = svc_utf8_prefix(s, ellipsis ? max_cp - 1 : max_cp);
    size_t len = strlen(t);
    if (s[len] != ' ') {
        char *sp = strrchr(t, ' ');
        if (sp && (size_t)(sp - t) >= len / 2)
            len = (size_t)(sp - t);
    }
    while (len > 0 && strchr(" ,;:", t[len - 1]))
        len--;
    t[len] = '\0';
    if (!ellipsis)
        return t;
    char *out = NULL;
    svc_xasprintf(&out, "%s\xE2\x80\xA6", t); /* U+2026 */
    free(t);
    return out;
}

/* The input as plain text, up to SVC_TITLE_SOURCE_MAX_CP (heap); markup alone (a rule, an
 * empty fence) keeps its characters rather than leave no title. */
static char *plain_text(const char *input)
{
    char *raw = svc_utf8_prefix(input ? input : "", INPUT_MAX_CP);
    char *t = strip_markdown(raw);
    fold_spaces(t);
    fold_spaces(raw);
    char *out = cut_words(*t ? t : raw, SVC_TITLE_SOURCE_MAX_CP, false);
    free(t);
    free(raw);
    return out;
}

void svc_title_derive(json_object *sc, const char *input)
{
    char *plain = plain_text(input);
    char *title = cut_words(plain, SVC_TITLE_MAX_CP, true);
    svc_json_set_str(sc, "title", title);
    if (strcmp(plain, title) != 0)
        svc_json_set_str(sc, "title_source", plain);
    else
        json_object_object_del(sc, "title_source");
    free(title);
    free(plain);
}

const char *svc_title_search_text(json_object *summary)
{
    const char *title = svc_json_str(summary, "title", "");
    const char *src = svc_json_str(summary, "title_source", NULL);
    if (!src)
        return title;
    size_t n = strlen(title);
    if (n >= 3 && strcmp(title + n - 3, "\xE2\x80\xA6") == 0)
        n -= 3;
    return strncmp(title, src, n) == 0 ? src : title;
}

int svc_title_check(const char *title, struct svc_err *err)
{
    size_t cp = svc_utf8_len(title);
    if (cp < 1 || cp > 200)
        return svc_err_setp(err, SVC_E_INVALID_FIELD, "title", "title must be 1..200 characters");
    for (const char *p = title; *p; p++)
        if ((unsigned char)*p < 0x20)
            return svc_err_setp(err, SVC_E_INVALID_FIELD, "title",
                                "title must not contain control characters");
    return 0;
}
