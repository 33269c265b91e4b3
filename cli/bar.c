/* bar: the progress bar of long commands. See bar.h. */
#include "bar.h"

#include <unistd.h>

#include "util.h"

void bar_human(uint64_t n, char *out, size_t outsz)
{
    if (n < 1024)
        snprintf(out, outsz, "%llu B", (unsigned long long)n);
    else if (n < 1024 * 1024)
        snprintf(out, outsz, "%.1f KB", n / 1024.0);
    else if (n < 1024ULL * 1024 * 1024)
        snprintf(out, outsz, "%.1f MB", n / 1048576.0);
    else
        snprintf(out, outsz, "%.2f GB", n / 1073741824.0);
}

bool bar_init(struct bar *b, FILE *to, const char *what, bool bytes)
{
    *b = (struct bar){.to = to && isatty(fileno(to)) ? to : NULL, .what = what, .bytes = bytes};
    return b->to != NULL;
}

void bar_draw(void *ctx, size_t done, size_t total, uint64_t bytes)
{
    struct bar *b = ctx;
    double now = svc_time_monotonic();
    if (!b->to || ((total == 0 || done < total) && now - b->last < 0.1))
        return;
    b->last = now;
    char hb[32];
    bar_human(bytes, hb, sizeof hb);
    if (total == 0 && b->bytes) {
        fprintf(b->to, "\r%s: %s   ", b->what, hb);
    } else if (total == 0) {
        fprintf(b->to, "\r%s: %zu sessions   ", b->what, done);
    } else {
        int width = 30, fill = (int)((double)done / (double)total * width);
        fprintf(b->to, "\r%s [", b->what);
        for (int i = 0; i < width; i++)
            fputc(i < fill ? '#' : '.', b->to);
        fprintf(b->to, "] %zu/%zu sessions%s%s   ", done, total, b->bytes ? ", " : "",
                b->bytes ? hb : "");
    }
    fflush(b->to);
    b->shown = true;
}

void bar_end(struct bar *b)
{
    if (b->to && b->shown) {
        fputs("\r\033[K", b->to);
        fflush(b->to);
    }
}
