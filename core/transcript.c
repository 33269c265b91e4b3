#include "transcript.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonx.h"
#include "parts.h"
#include "util.h"

/* "2026-05-16T08:15:30.123456+00:00" -> "2026-05-16 08:15:30 UTC" (as given otherwise). */
static void nice_time(const char *iso, char *out, size_t outsz)
{
    double t;
    if (!iso || svc_time_parse_iso(iso, &t) != 0) {
        snprintf(out, outsz, "%s", iso ? iso : "unknown time");
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, outsz, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* A fence of backticks longer than any run inside text (at least 3). */
static void fenced(struct svc_buf *b, const char *lang, const char *text)
{
    static const char ticks[] = "```````````````````````````````````````````````````````````````";
    size_t run = 0, best = 2;
    for (const char *p = text; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        best = run > best ? run : best;
    }
    int n = best + 1 < sizeof ticks ? (int)best + 1 : (int)sizeof ticks - 1;
    size_t tl = strlen(text);
    svc_buf_printf(b, "%.*s%s\n%s%s%.*s\n\n", n, ticks, lang, text,
                   tl && text[tl - 1] == '\n' ? "" : "\n", n, ticks);
}

/* o as fenced json, or its member key when key is not NULL (absent: null). */
static void fenced_json(struct svc_buf *b, json_object *o, const char *key)
{
    if (key && !json_object_object_get_ex(o, key, &o))
        o = NULL;
    char *s = svc_json_dump_native(o);
    fenced(b, "json", s);
    free(s);
}

static void human_bytes(long long n, char *out, size_t outsz)
{
    if (n < 0)
        snprintf(out, outsz, "size unknown");
    else if (n < 1024)
        snprintf(out, outsz, "%lld bytes", n);
    else if (n < 1024 * 1024)
        snprintf(out, outsz, "%.1f KB (%lld bytes)", n / 1024.0, n);
    else
        snprintf(out, outsz, "%.1f MB (%lld bytes)", n / 1048576.0, n);
}

static void block(struct svc_buf *b, json_object *blk)
{
    json_object *v;
    char size[64];
    if (json_object_object_get_ex(blk, "text", &v) && json_object_is_type(v, json_type_string)) {
        svc_buf_printf(b, "%s\n\n", json_object_get_string(v));
    } else if ((v = svc_json_obj(blk, "toolUse"))) {
        const char *name = svc_json_str(v, "name", "?"), *sep = strstr(name, "__");
        svc_buf_printf(b, "**Tool call** `%s` (id `%s`", name, svc_json_str(v, "toolUseId", "?"));
        if (sep && sep > name) /* "<server>__<tool>": an MCP server answers it (SPEC 16) */
            svc_buf_printf(b, ", MCP server `%.*s`", (int)(sep - name), name);
        svc_buf_adds(b, ")\n\n");
        fenced_json(b, v, "input");
    } else if ((v = svc_json_obj(blk, "toolResult"))) {
        svc_buf_printf(b, "**Tool result** (id `%s`, %s)\n\n", svc_json_str(v, "toolUseId", "?"),
                       svc_json_str(v, "status", "success"));
        fenced_json(b, v, "content");
    } else if ((v = svc_json_obj(blk, "image")) || (v = svc_json_obj(blk, "document"))) {
        bool doc = v != svc_json_obj(blk, "image");
        const char *name = doc ? svc_json_str(v, "name", NULL) : NULL;
        json_object *bytes = NULL; /* {"__bytes_encoded__": true, "data": "<base64>"} */
        json_object_object_get_ex(svc_json_obj(v, "source"), "bytes", &bytes);
        human_bytes(svc_parts_bytes_size(bytes), size, sizeof size);
        svc_buf_printf(b, "*[%s%s%s%s: %s, %s]*\n\n", doc ? "document" : "image", name ? " \"" : "",
                       name ? name : "", name ? "\"" : "",
                       svc_json_str(v, "format", "unknown format"), size);
    } else if ((v = svc_json_obj(blk, "reasoningContent"))) {
        const char *t = svc_json_str(svc_json_obj(v, "reasoningText"), "text", NULL);
        if (!t) {
            svc_buf_adds(b, "*[reasoning, not shown]*\n\n");
            return;
        }
        svc_buf_adds(b, "> *Reasoning:*\n>\n> ");
        for (const char *p = t; *p; p++) {
            svc_buf_add(b, p, 1);
            if (*p == '\n')
                svc_buf_adds(b, "> ");
        }
        svc_buf_adds(b, "\n\n");
    } else {
        fenced_json(b, blk, NULL);
    }
}

char *svc_transcript_markdown(const char *sid, const char *agent_id, json_object *summary,
                              json_object *rows)
{
    struct svc_buf b;
    svc_buf_init(&b);
    const char *title = svc_json_str(summary, "title", "");
    char created[64], updated[64];
    nice_time(svc_json_str(summary, "created_at", NULL), created, sizeof created);
    nice_time(svc_json_str(summary, "updated_at", NULL), updated, sizeof updated);
    size_t n = rows ? json_object_array_length(rows) : 0;
    svc_buf_printf(&b, "# %s\n\n", title && *title ? title : sid);
    svc_buf_printf(&b,
                   "Session `%s` · agent `%s` · created %s · updated %s · %zu message%s · "
                   "status %s%s\n\n",
                   sid, svc_json_str(summary, "agent_id", agent_id), created, updated, n,
                   n == 1 ? "" : "s", svc_json_str(summary, "status", "idle"),
                   svc_json_bool(summary, "archived", false) ? " · archived" : "");
    for (size_t i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        char when[64];
        nice_time(svc_json_str(row, "created_at", NULL), when, sizeof when);
        svc_buf_printf(&b, "## %s · %s\n\n", svc_json_str(row, "role", "unknown"), when);
        json_object *content = svc_json_arr(svc_json_obj(row, "raw_native"), "content");
        size_t nb = content ? json_object_array_length(content) : 0;
        for (size_t k = 0; k < nb; k++)
            block(&b, json_object_array_get_idx(content, k));
        if (nb == 0)
            svc_buf_adds(&b, "*(no content)*\n\n");
    }
    return svc_buf_steal(&b);
}
