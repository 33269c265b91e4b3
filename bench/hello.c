/* bench/hello.c: the baseline of `make bench`. A bare libfcgi hello world: preforks
 * N workers that loop on FCGX_Accept_r over one unix socket and answer a tiny JSON.
 *   hello SOCKET_PATH [WORKERS]
 * `?bytes=N` (N up to 1 MiB) pads the JSON answer to N bytes: a transport baseline for
 * endpoints with large bodies.
 * The master waits for its workers and stops them on SIGTERM/SIGINT. Built by
 * scripts/bench with `cc` into a temp dir; not part of svc. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

#define MAX_PAD (1 << 20)
static char big[MAX_PAD + 64];

static void worker(int fd)
{
    static const char body[] = "{\"status\":\"ok\"}\n";
    /* {"status":"ok","pad":"xxx...x"}\n */
    static const char pre[] = "{\"status\":\"ok\",\"pad\":\"";
    memcpy(big, pre, sizeof pre - 1);
    memset(big + sizeof pre - 1, 'x', MAX_PAD);
    FCGX_Request req;
    FCGX_InitRequest(&req, fd, 0);
    while (FCGX_Accept_r(&req) >= 0) {
        /* Drain a request body (POST baseline), as any real handler would read it. */
        char buf[4096];
        while (FCGX_GetStr(buf, sizeof buf, req.in) > 0) {
        }
        const char *out = body;
        int n = (int)(sizeof body - 1);
        const char *qs = FCGX_GetParam("QUERY_STRING", req.envp);
        const char *b = qs ? strstr(qs, "bytes=") : NULL;
        if (b) {
            long want = strtol(b + 6, NULL, 10);
            if (want > 30 && want <= MAX_PAD) {
                n = (int)want;
                memcpy(big + n - 3, "\"}\n", 3);
                out = big;
            }
        }
        char head[128];
        int hl = snprintf(head, sizeof head,
                          "Status: 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
                          "Content-Length: %d\r\n\r\n",
                          n);
        FCGX_PutStr(head, hl, req.out);
        FCGX_PutStr(out, n, req.out);
        if (out == big)
            memset(big + n - 3, 'x', 3);
        FCGX_Finish_r(&req);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: hello SOCKET_PATH [WORKERS]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 2;
    if (n < 1 || n > 64)
        n = 2;
    signal(SIGPIPE, SIG_IGN);
    if (FCGX_Init() != 0)
        return 1;
    unlink(argv[1]);
    int fd = FCGX_OpenSocket(argv[1], 128);
    if (fd < 0) {
        perror("FCGX_OpenSocket");
        return 1;
    }
    chmod(argv[1], 0666);
    pid_t kids[64];
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            signal(SIGTERM, SIG_DFL);
            worker(fd);
        }
        kids[i] = p;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int alive = n;
    while (!stop && alive > 0) {
        if (wait(NULL) > 0)
            alive--;
        else if (errno == ECHILD)
            break;
    }
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGTERM);
    while (wait(NULL) > 0 || errno == EINTR) {
    }
    unlink(argv[1]);
    return 0;
}
