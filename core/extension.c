#include "extension.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsonx.h"
#include "util.h"

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define STDERR_KEEP 512

/* A descriptor of at least 3 with FD_CLOEXEC (so dup2 onto 0..2 in the child is never a
 * no-op that keeps the close-on-exec flag). Closes fd. Returns -1 on failure. */
static int high_fd(int fd)
{
    if (fd >= 3)
        return fd;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return nfd;
}

static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    p[0] = high_fd(p[0]);
    p[1] = high_fd(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* The environment of the child: only the entry's items. Heap array of heap strings. */
static char **child_env(const struct svc_extension *x, const char **path)
{
    size_t n = 0;
    while (x->env && x->env[n])
        n++;
    char **env = svc_xcalloc(n + 1, sizeof *env);
    size_t k = 0;
    *path = DEFAULT_PATH;
    for (size_t i = 0; i < n; i++) {
        const char *e = x->env[i];
        char *item = NULL;
        if (strchr(e, '=')) {
            item = svc_xstrdup(e);
        } else {
            const char *v = getenv(e);
            if (!v)
                continue;
            svc_xasprintf(&item, "%s=%s", e, v);
        }
        if (strncmp(item, "PATH=", 5) == 0)
            *path = item + 5; /* lives as long as env */
        env[k++] = item;
    }
    return env;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The program to execute: argv0 itself when it holds a '/', else the first executable
 * <dir>/<argv0> on path. Heap string; NULL with errno set when none. */
static char *resolve(const char *argv0, const char *path)
{
    if (strchr(argv0, '/'))
        return svc_xstrdup(argv0);
    int last = ENOENT;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char *cand = NULL;
        if (n > 0 && svc_xasprintf(&cand, "%.*s/%s", (int)n, p, argv0) >= 0) {
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
                return cand;
            if (errno == EACCES || (stat(cand, &st) == 0 && access(cand, X_OK) != 0))
                last = EACCES;
            free(cand);
        }
        p += n;
        if (*p == ':')
            p++;
    }
    errno = last;
    return NULL;
}

/* Replace invalid UTF-8 and NUL bytes with U+FFFD; drop one trailing newline. Heap. */
static char *utf8_clean(const char *s, size_t len)
{
    struct svc_buf b;
    svc_buf_init(&b);
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c != 0 && i + n <= len && svc_utf8_valid(s + i, n)) {
            svc_buf_add(&b, s + i, n);
            i += n;
        } else {
            svc_buf_adds(&b, "\xEF\xBF\xBD");
            i++;
        }
    }
    if (b.len > 0 && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    if (!b.data)
        svc_buf_adds(&b, "");
    return svc_buf_steal(&b);
}

/* The cut at most max bytes long that ends on a UTF-8 boundary. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static void set_error(struct svc_tool_result *out, const char *stderr_text, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(struct svc_tool_result *out, const char *stderr_text, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    svc_xvasprintf(&msg, fmt, ap);
    va_end(ap);
    out->ok = false;
    free(out->content);
    out->content = NULL;
    if (msg && stderr_text && *stderr_text) {
        char *full = NULL;
        if (svc_xasprintf(&full, "%s: %s", msg, stderr_text) >= 0) {
            free(msg);
            msg = full;
        }
    }
    out->content = msg ? msg : svc_xstrdup("extension failed");
}

/* Read what is there from *fd into buf (keeping at most keep bytes in total); on EOF or
 * error close *fd. Sets *over when bytes were dropped. */
static void drain(int *fd, struct svc_buf *buf, size_t keep, bool *over)
{
    char chunk[16384];
    for (;;) {
        ssize_t n = read(*fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t room = buf->len < keep ? keep - buf->len : 0;
            size_t take = (size_t)n < room ? (size_t)n : room;
            if (take)
                svc_buf_add(buf, chunk, take);
            if (take < (size_t)n && over)
                *over = true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        close_fd(fd); /* EOF or a real error */
        return;
    }
}

/* write(2) that cannot raise SIGPIPE in a program that did not ignore it (the svc tool): a
 * child that exits without reading its stdin is EPIPE here, nothing more. */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, buf, len);
    int e = errno;
    if (w < 0 && e == EPIPE) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

void svc_ext_run(const struct svc_extension *x, json_object *args, int (*should_cancel)(void *ctx),
                 void *ctx, struct svc_tool_result *out)
{
    double t0 = svc_time_monotonic();
    memset(out, 0, sizeof *out);
    int in[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1};
    pid_t pid = -1;
    const char *path = NULL;
    char **env = child_env(x, &path);
    char *prog = NULL, *input = NULL, *errtext = NULL;
    struct svc_buf obuf, ebuf;
    svc_buf_init(&obuf);
    svc_buf_init(&ebuf);
    bool truncated = false, timed_out = false, cancelled = false;
    int status = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    bool fa_init = false, attr_init = false;

    json_object *empty = args ? NULL : json_object_new_object();
    char *json = svc_json_dump_compact(args ? args : empty);
    json_object_put(empty);
    svc_xasprintf(&input, "%s\n", json);
    prog = resolve(x->command[0], path);
    if (!prog) {
        set_error(out, NULL, "%s: cannot run %s: %s", x->name, x->command[0], strerror(errno));
        goto out;
    }
    if (make_pipe(in) != 0 || make_pipe(op) != 0 || make_pipe(ep) != 0) {
        set_error(out, NULL, "%s: cannot make pipes: %s", x->name, strerror(errno));
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0 || !(fa_init = true) ||
        posix_spawnattr_init(&attr) != 0 || !(attr_init = true)) {
        set_error(out, NULL, "%s: out of memory", x->name);
        goto out;
    }
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, op[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    static const int sigs[] = {SIGPIPE, SIGCHLD, SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                               SIGUSR1, SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&deflt, sigs[i]);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &deflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    int src = posix_spawn(&pid, prog, &fa, &attr, x->command, env);
    if (src != 0) {
        pid = -1;
        set_error(out, NULL, "%s: cannot run %s: %s", x->name, x->command[0], strerror(src));
        goto out;
    }
    close_fd(&in[0]);
    close_fd(&op[1]);
    close_fd(&ep[1]);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(op[0], F_SETFL, O_NONBLOCK);
    fcntl(ep[0], F_SETFL, O_NONBLOCK);

    size_t in_len = strlen(input), in_off = 0;
    double deadline = t0 + x->timeout_s;
    bool exited = false;
    for (;;) {
        if (!exited) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            /* look without reaping: the pid (and so the group id) stays ours */
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                si.si_pid == pid) {
                exited = true;
                kill(-pid, SIGKILL); /* anything it left behind in its group */
                deadline =
                    svc_time_monotonic() + 1.0 < deadline ? svc_time_monotonic() + 1.0 : deadline;
            }
        }
        if (exited && op[0] < 0 && ep[0] < 0)
            break;
        if (!exited && should_cancel && should_cancel(ctx)) {
            cancelled = true;
            break;
        }
        double left = deadline - svc_time_monotonic();
        if (left <= 0) {
            if (!exited)
                timed_out = true;
            break;
        }
        struct pollfd pf[3];
        int npf = 0, iin = -1, iout = -1, ierr = -1;
        if (in[1] >= 0) {
            iin = npf;
            pf[npf++] = (struct pollfd){.fd = in[1], .events = POLLOUT};
        }
        if (op[0] >= 0) {
            iout = npf;
            pf[npf++] = (struct pollfd){.fd = op[0], .events = POLLIN};
        }
        if (ep[0] >= 0) {
            ierr = npf;
            pf[npf++] = (struct pollfd){.fd = ep[0], .events = POLLIN};
        }
        int ms = (int)(left * 1000) + 1;
        if (ms > 50)
            ms = 50; /* the child's exit is noticed by waitid above */
        int pr = poll(pf, (nfds_t)npf, ms);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        if (iin >= 0 && pf[iin].revents) {
            ssize_t w = write_nosigpipe(in[1], input + in_off, in_len - in_off);
            if (w > 0)
                in_off += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len)
                close_fd(&in[1]); /* all sent, or the child does not read (EPIPE) */
        }
        if (iout >= 0 && pf[iout].revents)
            drain(&op[0], &obuf, SVC_EXT_OUTPUT_MAX + 4, &truncated);
        if (ierr >= 0 && pf[ierr].revents)
            drain(&ep[0], &ebuf, STDERR_KEEP, NULL);
    }
    /* the group goes in every case; then reap (blocking: SIGKILL cannot be refused) */
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (op[0] >= 0)
        drain(&op[0], &obuf, SVC_EXT_OUTPUT_MAX + 4, &truncated);
    if (ep[0] >= 0)
        drain(&ep[0], &ebuf, STDERR_KEEP, NULL);
    if (obuf.len > SVC_EXT_OUTPUT_MAX) {
        obuf.len = utf8_cut(obuf.data, obuf.len, SVC_EXT_OUTPUT_MAX);
        obuf.data[obuf.len] = '\0';
        truncated = true;
    }
    errtext = utf8_clean(ebuf.data ? ebuf.data : "", ebuf.len);
    if (errtext) {
        char *nl = strchr(errtext, '\n');
        if (nl)
            *nl = '\0'; /* one line */
    }
    if (cancelled) {
        set_error(out, NULL, "%s was stopped: the run was cancelled", x->name);
    } else if (timed_out) {
        set_error(out, errtext, "%s timed out after %d s and was stopped", x->name, x->timeout_s);
    } else if (WIFSIGNALED(status)) {
        set_error(out, errtext, "%s was killed by signal %d", x->name, WTERMSIG(status));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        set_error(out, errtext, "%s exited with status %d", x->name, WEXITSTATUS(status));
    } else {
        out->ok = true;
        out->content = utf8_clean(obuf.data ? obuf.data : "", obuf.len);
    }
    out->truncated = truncated;
out:
    if (pid > 0) {
        kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    close_fd(&in[0]);
    close_fd(&in[1]);
    close_fd(&op[0]);
    close_fd(&op[1]);
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    svc_buf_free(&obuf);
    svc_buf_free(&ebuf);
    strv_free(env);
    free(prog);
    free(input);
    free(json);
    free(errtext);
    out->latency_ms = (long)((svc_time_monotonic() - t0) * 1000);
}
