/* bar: the progress bar of the svc tool's long commands (export, import, fsck): sessions
 * done of total, and bytes when the command counts them, redrawn in place at most ten times
 * a second and once at the end, on a stream that is a terminal; nothing anywhere else, so
 * a pipe or a log file gets only the command's output. */
#ifndef SVC_CLI_BAR_H
#define SVC_CLI_BAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bar {
    FILE *to; /* NULL: not a terminal, nothing is drawn */
    const char *what;
    bool bytes; /* show the byte count */
    double last;
    bool shown;
};

/* A bar named what on to; false (and a bar that draws nothing) when to is not a terminal. */
bool bar_init(struct bar *b, FILE *to, const char *what, bool bytes);
/* The progress callback of core (struct svc_export_progress): ctx is the bar. total 0:
 * nothing to count sessions against yet: bytes alone (an import reading its bundle), or
 * the sessions done alone on a bar without bytes (an export applying its filters). */
void bar_draw(void *ctx, size_t done, size_t total, uint64_t bytes);
/* n bytes for a person: "512 B", "1.5 KB", "40.1 MB", "1.20 GB". */
void bar_human(uint64_t n, char *out, size_t outsz);
/* Clears the bar's line, so what follows starts on a clean line. */
void bar_end(struct bar *b);

#endif
