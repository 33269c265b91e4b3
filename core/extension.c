#include "extension.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsonx.h"
#include "util.h"

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define STDERR_KEEP 512

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* A close-on-exec pipe whose ends are at least 3 (so dup2 onto 0..2 in the child is never
 * a no-op that keeps the close-on-exec flag). */
static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (p[i] < 3) {
            int high = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
            close(p[i]);
            p[i] = high;
        }
    if (p[0] >= 0 && p[1] >= 0)
        return 0;
    close_fd(&p[0]);
    close_fd(&p[1]);
    return -1;
}

/* The environment of the child: only these items ("NAME=value", or "NAME" copied from ours
 * when set). Heap array of heap strings; *path is its PATH (or the default). */
static char **child_env(char *const *items, const char **path)
{
    size_t n = 0;
    while (items && items[n])
        n++;
    char **env = svc_xcalloc(n + 1, sizeof *env);
    size_t k = 0;
    *path = DEFAULT_PATH;
    for (size_t i = 0; i < n; i++) {
        const char *e = items[i];
        char *item = NULL;
        if (strchr(e, '='))
            item = svc_xstrdup(e);
        else if (getenv(e))
            svc_xasprintf(&item, "%s=%s", e, getenv(e));
        else
            continue; /* not set here */
        if (strncmp(item, "PATH=", 5) == 0)
            *path = item + 5; /* lives as long as env */
        env[k++] = item;
    }
    return env;
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
        p += n + (p[n] == ':');
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
    return svc_buf_steal(&b);
}

bool svc_ext_cap(struct svc_buf *b)
{
    if (b->len <= SVC_EXT_OUTPUT_MAX)
        return false;
    b->len = SVC_EXT_OUTPUT_MAX;
    while (b->len > 0 && ((unsigned char)b->data[b->len] & 0xC0) == 0x80)
        b->len--;
    b->data[b->len] = '\0';
    return true;
}

static void __attribute__((format(printf, 3, 4)))
set_error(struct svc_tool_result *out, const char *stderr_text, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    svc_xvasprintf(&msg, fmt, ap);
    va_end(ap);
    out->ok = false;
    free(out->content);
    out->content = msg;
    if (stderr_text && *stderr_text) {
        svc_xasprintf(&out->content, "%s: %s", msg, stderr_text);
        free(msg);
    }
}

void svc_ext_drain(int *fd, struct svc_buf *buf, size_t keep, bool *over)
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

ssize_t svc_ext_write(int fd, const void *buf, size_t len)
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

/* One running tool: the child, its pipes (svc_ext_spawn's fds) and what it has said. */
struct child {
    const struct svc_extension *x;
    pid_t pid;
    int fd[3];
    const char *input;
    size_t in_len, in_off;
    struct svc_buf obuf, ebuf;
    bool exited, truncated, timed_out, cancelled;
};

/* What stdout (i 1) or stderr (2) has, into its buffer. */
static void child_drain(struct child *c, int i)
{
    if (i == 1)
        svc_ext_drain(&c->fd[1], &c->obuf, SVC_EXT_OUTPUT_MAX + 4, &c->truncated);
    else
        svc_ext_drain(&c->fd[2], &c->ebuf, STDERR_KEEP, NULL);
}

/* Whether the child has exited, looked at without reaping: the pid (and so the group id)
 * stays ours. On exit, whatever it left in its group goes and *deadline shrinks to 1 s. */
static void child_check_exit(struct child *c, double *deadline)
{
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != c->pid)
        return;
    c->exited = true;
    kill(-c->pid, SIGKILL);
    double soon = svc_time_monotonic() + 1.0;
    if (soon < *deadline)
        *deadline = soon;
}

/* One poll over the open pipes: feed stdin, collect stdout and stderr; -1 when poll failed. */
static int child_poll_once(struct child *c, double left)
{
    struct pollfd pf[3];
    int npf = 0, which[3];
    for (int i = 0; i < 3; i++)
        if (c->fd[i] >= 0) {
            which[npf] = i;
            pf[npf++] = (struct pollfd){.fd = c->fd[i], .events = i == 0 ? POLLOUT : POLLIN};
        }
    int ms = (int)(left * 1000) + 1;
    if (ms > (npf ? 50 : 1)) /* the child's exit is noticed by child_check_exit: soon, */
        ms = npf ? 50 : 1;   /* once it closed its output (it is about to exit) */
    int pr = poll(pf, (nfds_t)npf, ms);
    if (pr < 0 && errno != EINTR)
        return -1;
    for (int k = 0; pr > 0 && k < npf; k++) {
        if (!pf[k].revents)
            continue;
        if (which[k] > 0) {
            child_drain(c, which[k]);
            continue;
        }
        ssize_t w = svc_ext_write(c->fd[0], c->input + c->in_off, c->in_len - c->in_off);
        if (w > 0)
            c->in_off += (size_t)w;
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || c->in_off == c->in_len)
            close_fd(&c->fd[0]); /* all sent, or the child does not read (EPIPE) */
    }
    return 0;
}

/* Kill the child's group and reap the child: its wait status. */
static int child_reap(struct child *c)
{
    int status = 0;
    kill(-c->pid, SIGKILL); /* a blocking reap: SIGKILL cannot be refused */
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->pid = -1;
    return status;
}

/* Run the child until it exits with its pipes closed, the deadline passes or the run is
 * cancelled; then kill its group and reap it. Returns its wait status. */
static int child_pump(struct child *c, double deadline, int (*should_cancel)(void *ctx), void *ctx)
{
    for (;;) {
        if (!c->exited)
            child_check_exit(c, &deadline);
        if (c->exited && c->fd[1] < 0 && c->fd[2] < 0)
            break;
        if (!c->exited && should_cancel && should_cancel(ctx)) {
            c->cancelled = true;
            break;
        }
        double left = deadline - svc_time_monotonic();
        if (left <= 0) {
            c->timed_out = !c->exited;
            break;
        }
        if (child_poll_once(c, left) < 0)
            break;
    }
    int status = child_reap(c);
    for (int i = 1; i < 3; i++)
        if (c->fd[i] >= 0)
            child_drain(c, i);
    return status;
}

/* The tool result from how the child ended and what it printed. */
static void child_result(struct child *c, int status, struct svc_tool_result *out)
{
    const struct svc_extension *x = c->x;
    if (svc_ext_cap(&c->obuf))
        c->truncated = true;
    char *errtext = utf8_clean(c->ebuf.data ? c->ebuf.data : "", c->ebuf.len);
    errtext[strcspn(errtext, "\n")] = '\0'; /* one line */
    if (c->cancelled) {
        set_error(out, NULL, "%s was stopped: the run was cancelled", x->name);
    } else if (c->timed_out) {
        set_error(out, errtext, "%s timed out after %d s and was stopped", x->name, x->timeout_s);
    } else if (WIFSIGNALED(status)) {
        set_error(out, errtext, "%s was killed by signal %d", x->name, WTERMSIG(status));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        set_error(out, errtext, "%s exited with status %d", x->name, WEXITSTATUS(status));
    } else {
        out->ok = true;
        out->content = utf8_clean(c->obuf.data ? c->obuf.data : "", c->obuf.len);
    }
    out->truncated = c->truncated;
    free(errtext);
}

/* In the child of svc_ext_spawn's fork: only async-signal-safe calls, then exec. */
static void __attribute__((noreturn))
spawned_child(pid_t parent, const char *prog, char *const argv[], char **env, const int p[4][2])
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the parent is already gone */
    setpgid(0, 0);
    if (dup2(p[0][0], 0) < 0 || dup2(p[1][1], 1) < 0 || dup2(p[2][1], 2) < 0)
        _exit(127);
    unsigned status_fd = (unsigned)p[3][1]; /* at least 3, close-on-exec: kept to the exec */
    if (status_fd > 3)
        close_range(3, status_fd - 1, 0);
    close_range(status_fd + 1, ~0U, 0);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(prog, argv, env);
    int e = errno;
    if (write((int)status_fd, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

pid_t svc_ext_spawn(char *const argv[], char *const env_items[], int fds[3], struct svc_err *err)
{
    int p[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    const char *path = NULL;
    char **env = child_env(env_items, &path);
    char *prog = resolve(argv[0], path);
    pid_t pid = -1, parent = getpid();
    int e = 0;
    if (!prog) {
        svc_err_set(err, SVC_E_INTERNAL, "cannot run %s: %s", argv[0], strerror(errno));
        goto out;
    }
    for (int i = 0; i < 4; i++)
        if (make_pipe(p[i]) != 0) {
            svc_err_set(err, SVC_E_INTERNAL, "cannot make pipes: %s", strerror(errno));
            goto out;
        }
    pid = fork();
    if (pid == 0)
        spawned_child(parent, prog, argv, env, (const int(*)[2])p);
    if (pid < 0) {
        svc_err_set(err, SVC_E_INTERNAL, "cannot fork: %s", strerror(errno));
        goto out;
    }
    close_fd(&p[3][1]);
    ssize_t got; /* the exec's verdict: EOF when it worked, its errno when not */
    while ((got = read(p[3][0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    if (got == (ssize_t)sizeof e) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        svc_err_set(err, SVC_E_INTERNAL, "cannot run %s: %s", argv[0], strerror(e));
        pid = -1;
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        fds[i] = i == 0 ? p[0][1] : p[i][0];
        p[i][i == 0 ? 1 : 0] = -1;
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
    }
out:
    for (int i = 0; i < 4; i++) {
        close_fd(&p[i][0]);
        close_fd(&p[i][1]);
    }
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
    free(prog);
    return pid;
}

void svc_ext_run(const struct svc_extension *x, json_object *args, int (*should_cancel)(void *ctx),
                 void *ctx, struct svc_tool_result *out)
{
    double t0 = svc_time_monotonic();
    memset(out, 0, sizeof *out);
    struct child c = {.x = x, .pid = -1, .fd = {-1, -1, -1}}; /* and empty buffers */
    char *json = args ? svc_json_dump_compact(args) : svc_xstrdup("{}"), *input = NULL;
    svc_xasprintf(&input, "%s\n", json);
    c.input = input;
    c.in_len = strlen(input);
    struct svc_err e;
    c.pid = svc_ext_spawn(x->command, x->env, c.fd, &e);
    if (c.pid < 0)
        set_error(out, NULL, "%s: %s", x->name, e.message);
    else
        child_result(&c, child_pump(&c, t0 + x->timeout_s, should_cancel, ctx), out);
    for (int i = 0; i < 3; i++)
        close_fd(&c.fd[i]);
    svc_buf_free(&c.obuf);
    svc_buf_free(&c.ebuf);
    free(input);
    free(json);
    out->latency_ms = (long)((svc_time_monotonic() - t0) * 1000);
}
