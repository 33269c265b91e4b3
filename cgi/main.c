/* svc-fcgi: the FastCGI worker pool (SPEC 6), or one plain CGI request.
 *
 * Socket, in this order: --listen unix:PATH|tcp:[HOST:]PORT; a listening socket on fd 0
 * (spawn-fcgi, systemd StandardInput=socket, mod_fcgid); LISTEN_FDS (fd 3, systemd socket
 * activation); plain CGI when none of those and REQUEST_METHOD is set (one request from the
 * environment and stdin, then exit); else server.listen from the configuration.
 *
 * Master: forks `workers` workers sharing the socket (all wait in accept(2) at once; the
 * kernel hands each connection to one), respawns dead ones at once (only a crash loop,
 * workers dying within a second of their start, is slowed down, with a growing delay, and
 * logged), reloads on SIGHUP (a config that fails validation is refused, old workers go on;
 * a valid one replaces the workers gracefully), reopens --log FILE on SIGUSR1 (and has the
 * workers do the same), and
 * on SIGTERM/SIGINT drains: a socket it created is unlinked and its listener closed at once
 * (new connections are refused, so the web server tries its next upstream; for TCP the
 * listener is shut down), the workers finish in-flight requests and the connections already
 * queued, then exit. An inherited socket (fd 0, LISTEN_FDS) is left to its owner: the
 * workers only stop accepting. Signals are handled synchronously with sigtimedwait.
 *
 * Permissions (SPEC 6): the process umask is server.umask; a unix socket it creates gets
 * server.socket_mode and server.socket_group; started as root with --user/--group it drops
 * privileges after binding (and before reading any session). Refusals at start are one line
 * naming the setting, with the exit codes below (README, "Ops guide").
 *
 * Worker: the SIGTERM/SIGINT/SIGHUP/SIGUSR1 handler only sets a flag, seen between requests.
 * A signal must stop a worker blocked in accept(2) but never break a request's socket reads
 * or writes (libfcgi does not retry on EINTR), nor libfcgi's wait for a new connection's
 * first records and its read of them (poll, select and read below). On a unix socket the pool
 * created (the usual case) that costs no system call per request: the handlers restart interrupted
 * calls (SA_RESTART), and the listener has a receive timeout (SO_RCVTIMEO, ACCEPT_WAKE_S), under
 * which accept(2) is not restarted: a signal ends it with EINTR, and a signal landing
 * between the flag check and accept(2) is seen at the next timeout. Sockets accepted from a
 * unix listener do not inherit the timeout. Calls that are never restarted (poll, nanosleep)
 * can see EINTR during a request: code on a worker's request path retries them (lock.c,
 * runs.c, extension.c, the models, curl). Elsewhere the signals are blocked while a request
 * runs and unblocked only around FCGX_Accept_r (FCGI_FAIL_ACCEPT_ON_INTR): on TCP, where
 * accepted sockets inherit a listener's timeout, and on an inherited socket, whose options
 * belong to its owner (a timeout left on it would outlive the pool). The master also repeats
 * SIGTERM every second while stopping. A worker exits after max_requests. Runs it forks
 * reset their handlers and mask (core/runs.c); programs it spawns get them reset. */
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "handlers.h"
#include "held.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "query.h"
#include "session.h"
#include "util.h"

#define BACKLOG 256
#define MAX_CHILDREN 1024

/* Exit codes (README, "Ops guide"). */
#define EXIT_FAIL 1  /* a runtime failure */
#define EXIT_USAGE 2 /* bad command line */
#define EXIT_CONFIG                                                                                \
    3                 /* a setting refused: agents.yaml invalid, unknown user or group,            \
                       * socket directory missing, bad --listen */
#define EXIT_SOCKET 4 /* the socket could not be created (in use, permission denied) */

/* A worker that dies sooner than this after its start counts toward a crash loop. */
#define QUICK_DEATH_S 1.0
#define CRASH_LOOP_DEATHS 3
#define CRASH_BACKOFF_MAX_S 30.0

struct opts {
    const char *listen;
    const char *config;
    const char *user;      /* --user: drop to this user after binding */
    const char *group;     /* --group: and this group (default: the user's) */
    const char *log;       /* --log FILE: stderr goes there, reopened on SIGUSR1 */
    int workers;           /* 0: from config */
    const char *inherited; /* "fd:0" / "fd:3" when the socket was handed to us, else NULL */
};

/* Reopen --log FILE onto stderr. Return 0, or -1 with errno. */
static int log_reopen(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0)
        return -1;
    if (fd != STDERR_FILENO) {
        if (dup2(fd, STDERR_FILENO) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        close(fd);
    }
    return 0;
}

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
    char ts[SVC_TIME_LEN], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s svc-fcgi[%d]: %s\n", svc_time_now_iso(ts), (int)getpid(), line);
}

/* core/ speaks through svc_logf: give its lines the same prefix as ours. */
static void core_log_sink(const char *line, void *ctx)
{
    (void)ctx;
    logmsg("%s", line);
}

static int load_config(struct svc_config *cfg, const char *path, struct svc_err *err)
{
    return path ? svc_config_load_file(cfg, path, err) : svc_config_load(cfg, err);
}

/* The command line wins over agents.yaml: put the values the pool really runs with into
 * the configuration, so GET /api/config shows them. */
static void apply_overrides(struct svc_config *cfg, const struct opts *o)
{
    if (o->workers > 0)
        cfg->server.workers = o->workers;
    const char *listen = o->listen ? o->listen : o->inherited;
    char *copy = listen ? svc_xstrdup(listen) : NULL;
    if (copy) {
        free(cfg->server.listen);
        cfg->server.listen = copy;
    }
}

static void log_warnings(const struct svc_config *cfg)
{
    for (size_t i = 0; i < cfg->nwarnings && cfg->warnings && cfg->warnings[i]; i++)
        logmsg("config warning: %s", cfg->warnings[i]);
}

/* ---- listening socket ---- */

/* socket, bind, listen on addr (libfcgi's FCGX_OpenSocket exits the process when bind or
 * listen fails, with errno as its status and a perror line: svc opens its sockets itself so
 * that a refusal is its own one line and exit code 4). Returns the fd, or -1 with errno. */
static int listen_on(int family, const struct sockaddr *addr, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if ((family != AF_UNIX && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) ||
        bind(fd, addr, len) != 0 || listen(fd, BACKLOG) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The listening socket for host and port ("127.0.0.1", "::1", a name, "*" for every IPv4
 * address). IPv4, as libfcgi's was (a name such as localhost, which /etc/hosts also gives
 * ::1, must keep meaning 127.0.0.1 for a web server pointed at it), unless host is an IPv6
 * address; the first address that takes the bind. -1 with *why set (the first failure). */
static int listen_tcp(const char *host, const char *port, const char **why)
{
    struct addrinfo hints = {.ai_family = strchr(host, ':') ? AF_INET6 : AF_INET,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    bool any = strcmp(host, "*") == 0 || !*host;
    int gr = getaddrinfo(any ? NULL : host, port, &hints, &res);
    if (gr != 0) {
        *why = gai_strerror(gr);
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = listen_on(ai->ai_family, ai->ai_addr, ai->ai_addrlen);
        if (fd < 0 && e == 0)
            e = errno;
    }
    freeaddrinfo(res);
    if (fd < 0)
        *why = strerror(e);
    return fd;
}

/* Open "unix:PATH" or "tcp:[HOST:]PORT" (what names the setting in messages: "server.listen"
 * or "--listen"). A unix socket gets mode `mode` and, when gid is not -1, group gid.
 * Returns the fd, or -1 after logging one line with *exit_code set (EXIT_CONFIG, EXIT_SOCKET). */
static int open_listen(const char *spec, const char *what, mode_t mode, gid_t gid, char **unix_path,
                       int *exit_code)
{
    *unix_path = NULL;
    *exit_code = EXIT_CONFIG;
    if (strncmp(spec, "unix:", 5) == 0) {
        const char *path = spec + 5;
        struct sockaddr_un sun;
        if (!*path || strlen(path) >= sizeof sun.sun_path || strchr(path, ':')) {
            logmsg("%s: bad unix socket path '%s' (empty, too long or with ':')", what, path);
            return -1;
        }
        char *dir = svc_xstrdup(path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        bool dir_ok = !dir || !slash || svc_is_dir(dir);
        if (!dir_ok)
            logmsg("%s: the directory %s of socket %s does not exist (create it, e.g. with "
                   "systemd RuntimeDirectory=, or choose another path)",
                   what, dir, path);
        free(dir);
        if (!dir_ok)
            return -1;
        *exit_code = EXIT_SOCKET;
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                logmsg("%s: %s exists and is not a socket", what, path);
                return -1;
            }
            /* Refuse to steal the socket of a live instance. */
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            memset(&sun, 0, sizeof sun);
            sun.sun_family = AF_UNIX;
            memcpy(sun.sun_path, path, strlen(path));
            if (s >= 0 && connect(s, (struct sockaddr *)&sun, sizeof sun) == 0) {
                close(s);
                logmsg("%s: %s is in use by another process", what, path);
                return -1;
            }
            if (s >= 0)
                close(s);
        }
        memset(&sun, 0, sizeof sun);
        sun.sun_family = AF_UNIX;
        memcpy(sun.sun_path, path, strlen(path));
        unlink(path); /* a socket nobody answers on: a dead instance's */
        int fd = listen_on(AF_UNIX, (struct sockaddr *)&sun, sizeof sun);
        if (fd < 0) {
            logmsg("%s: cannot listen on %s: %s", what, path, strerror(errno));
            return -1;
        }
        /* The web server (www-data, nobody) connects through server.socket_group or the
         * mode; nobody else should (they would bypass its deny and limit_req). */
        if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) || chmod(path, mode) < 0) {
            logmsg("%s: cannot set the owner or mode of %s: %s", what, path, strerror(errno));
            close(fd);
            unlink(path);
            return -1;
        }
        *unix_path = svc_xstrdup(path);
        return fd;
    }
    if (strncmp(spec, "tcp:", 4) == 0) {
        const char *hp = spec + 4;
        const char *colon = strrchr(hp, ':');
        const char *port = colon ? colon + 1 : hp;
        char host[256] = "127.0.0.1";
        if (colon) {
            if ((size_t)(colon - hp) >= sizeof host || colon == hp) {
                logmsg("%s: bad host in '%s'", what, spec);
                return -1;
            }
            snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
        }
        char *end;
        long p = strtol(port, &end, 10);
        if (!*port || *end || p < 1 || p > 65535) {
            logmsg("%s: bad port in '%s'", what, spec);
            return -1;
        }
        size_t hl = strlen(host);
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [::1]:9000 */
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = '\0';
        }
        *exit_code = EXIT_SOCKET;
        const char *why = NULL;
        int fd = listen_tcp(host, port, &why);
        if (fd < 0) {
            logmsg("%s: cannot listen on %s%s%s:%s: %s", what, strchr(host, ':') ? "[" : "", host,
                   strchr(host, ':') ? "]" : "", port, why);
            return -1;
        }
        return fd;
    }
    logmsg("%s: '%s' must be unix:PATH or tcp:[HOST:]PORT", what, spec);
    return -1;
}

/* Whether fd is a listening socket. */
static bool is_listening_socket(int fd)
{
    int v = 0;
    socklen_t len = sizeof v;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v;
}

/* ---- worker ---- */

static volatile sig_atomic_t worker_stop, worker_reopen, worker_nodrain;

/* Set while the worker is in FCGX_Accept_r (see poll, select and read below). */
static volatile sig_atomic_t in_fcgi_accept;

#if __SIZEOF_LONG__ == 8 /* the raw calls below take the C library's struct timespec */

/* libfcgi's OS_Accept, once it has accepted a unix-socket connection, waits up to 2 s for
 * the connection's first bytes (in poll(2) in Debian's 2.4.2, in select(2) upstream) and
 * closes it when that wait fails, EINTR included: a reopen or stop signal landing then cost
 * the web server a 502 (t/50-ops-pool.t, "keeper"). These definitions of poll and select
 * are the ones libfcgi's calls bind to (the executable's symbols come first). While
 * FCGX_Accept_r runs, an interrupted wait goes on for the time left (the kernel leaves it
 * in the timeout it was given; the sets are restored first): that wait, and the up to 2 s
 * drain of a connection libfcgi drops for a protocol error, which a stop then no longer
 * cuts short. On TCP and on an inherited socket the signals are unblocked around
 * FCGX_Accept_r without SA_RESTART (see the header comment), so that accept(2) ends at a
 * signal; libfcgi's read(2) of a new connection's first records would end too, and it drops
 * the connection: read goes on after a signal in the same way (accept is left alone).
 * Otherwise each is the plain call, whose EINTR svc's own callers handle. Only on 64-bit
 * Linux, where the kernel's timespec is the C library's; elsewhere libfcgi keeps the C
 * library's calls. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SVC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SVC_ASAN)
#define SVC_ASAN 1
#endif
#ifdef SVC_ASAN
#include <sanitizer/asan_interface.h>
/* These definitions take the place of AddressSanitizer's interceptors for the three calls
 * (`make asan`): the check each interceptor made of the memory the kernel wrote is made
 * here instead, so an overflow through them is still reported. */
static void asan_check_written(const void *p, size_t n)
{
    void *bad = n ? __asan_region_is_poisoned((void *)p, n) : NULL;
    if (bad)
        __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0),
                            __builtin_frame_address(0), bad, 1, n);
}
#else
static inline void asan_check_written(const void *p, size_t n)
{
    (void)p;
    (void)n;
}
#endif

/* A stopping worker inside FCGX_Accept_r gives a new connection what libfcgi gives a
 * unix-socket one: up to 2 s for its next bytes (a client that connects and sends nothing
 * must not hold a stop forever; on TCP libfcgi's read has no time limit). 0 when fd has
 * something to read, -1 (EINTR, the connection is dropped) when the 2 s pass. The wait is
 * poll below, which resumes after a signal for the time left. */
static int stopping_wait(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 2000) > 0)
        return 0;
    errno = EINTR;
    return -1;
}

ssize_t read(int fd, void *buf, size_t len)
{
    for (;;) {
        if (in_fcgi_accept && worker_stop && stopping_wait(fd) != 0)
            return -1;
        long rc = syscall(SYS_read, fd, buf, len);
        if (rc > 0)
            asan_check_written(buf, (size_t)rc);
        if (rc >= 0 || errno != EINTR || !in_fcgi_accept)
            return (ssize_t)rc;
    }
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout_ms)
{
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = timeout_ms % 1000 * 1000000L};
    for (;;) {
        long rc = syscall(SYS_ppoll, fds, nfds, timeout_ms < 0 ? NULL : &ts, NULL, (size_t)0);
        asan_check_written(fds, nfds * sizeof *fds);
        if (rc >= 0 || errno != EINTR || !in_fcgi_accept)
            return (int)rc;
    }
}

int select(int nfds, fd_set *restrict rd, fd_set *restrict wr, fd_set *restrict ex,
           struct timeval *restrict tv)
{
    fd_set r0, w0, e0;
    if (rd)
        r0 = *rd;
    if (wr)
        w0 = *wr;
    if (ex)
        e0 = *ex;
    for (;;) {
        struct timespec ts, *tp = NULL;
        if (tv) { /* normalised as the C library's select does */
            ts = (struct timespec){.tv_sec = tv->tv_sec + tv->tv_usec / 1000000,
                                   .tv_nsec = tv->tv_usec % 1000000 * 1000};
            tp = &ts;
        }
        long rc = syscall(SYS_pselect6, nfds, rd, wr, ex, tp, NULL);
        if (rc >= 0 && nfds > 0) { /* the words nfds reaches, as ASan's interceptor checks */
            size_t set_bytes =
                ((size_t)nfds + 8 * sizeof(long) - 1) / (8 * sizeof(long)) * sizeof(long);
            asan_check_written(rd, rd ? set_bytes : 0);
            asan_check_written(wr, wr ? set_bytes : 0);
            asan_check_written(ex, ex ? set_bytes : 0);
        }
        if (tv) { /* the time not slept, as select(2) reports it on Linux */
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
        if (rc >= 0 || errno != EINTR || !in_fcgi_accept)
            return (int)rc;
        if (rd)
            *rd = r0;
        if (wr)
            *wr = w0;
        if (ex)
            *ex = e0;
    }
}
#endif

/* SIGTERM/SIGINT: stop (after the queued connections when draining); SIGHUP: stop at once
 * (a reload: the new workers take the queue); SIGUSR1: reopen the log. */
static void worker_signal(int sig)
{
    if (sig == SIGUSR1) {
        worker_reopen = 1;
        return;
    }
    if (sig == SIGHUP)
        worker_nodrain = 1;
    worker_stop = 1;
}

/* Whether a connection waits in the listen queue (a drain serves those before exiting). */
static bool backlog_pending(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void serve_one(FCGX_Request *fr, const struct svc_config *cfg)
{
    struct http_req r;
    http_req_init_fcgi(&r, fr, cfg);
    http_dispatch(&r);
    held_clear();
    http_finish(&r);
    http_log(&r);
    http_req_free(&r);
}

/* A drain ends when the queue is empty or after this long: when the master was SIGKILLed
 * its socket's name was never removed, so a web server keeps queueing new connections and
 * the queue would never empty; once the workers are gone, connects are refused and the
 * web server passes them to another pool, and a new master can bind the name again. */
#define DRAIN_MAX_S 3.0

/* Whether a stopping worker leaves now (see DRAIN_MAX_S); stop_at: when the stop was seen. */
static bool drain_over(int listen_fd, bool drain, double *stop_at)
{
    if (!worker_stop)
        return false;
    if (*stop_at == 0)
        *stop_at = svc_time_monotonic();
    return worker_nodrain || !drain || !backlog_pending(listen_fd) ||
           svc_time_monotonic() - *stop_at > DRAIN_MAX_S;
}

/* How often a worker idle in accept(2) on a unix socket wakes to look at its flags. */
#define ACCEPT_WAKE_S 1

/* Whether a signal (and every ACCEPT_WAKE_S) ends an accept(2) on listen_fd under SA_RESTART
 * handlers: a unix listener (of our own) given a receive timeout (see the header comment).
 * The timeout is set on the shared socket by every worker, to the same value. */
static bool accept_wakes_on_timeout(int listen_fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &len) != 0 || ss.ss_family != AF_UNIX)
        return false;
    struct timeval tv = {.tv_sec = ACCEPT_WAKE_S};
    return setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0;
}

/* drain: on stop, first serve the connections already queued (the master unlinked our own
 * socket, so no new ones arrive), for DRAIN_MAX_S at most; false for an inherited socket,
 * left to its owner. */
static int worker_main(int listen_fd, const struct svc_config *cfg, pid_t master, bool drain,
                       const char *log_path)
{
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGTERM);
    sigaddset(&stopset, SIGINT);
    sigaddset(&stopset, SIGHUP);
    sigaddset(&stopset, SIGUSR1);
    /* masked: signals blocked while a request runs (TCP, an inherited socket, or when the
     * timeout is refused); drain is false for an inherited socket */
    bool masked = !drain || !accept_wakes_on_timeout(listen_fd);
    sigprocmask(SIG_BLOCK, &stopset, NULL); /* the master's mask blocks them already */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    /* accept(2) must return EINTR: without SA_RESTART, or with the listener's timeout */
    sa.sa_flags = masked ? 0 : SA_RESTART;
    sa.sa_handler = worker_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    if (!masked) /* handlers in place: one pending since the fork runs now */
        sigprocmask(SIG_UNBLOCK, &stopset, NULL);

    /* Die with the master rather than linger as an orphan. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master)
        return 0;
#ifdef SVC_TEST_HOOKS                    /* only in test builds (make TEST_HOOKS=1) */
    if (getenv("SVC_TEST_WORKER_CRASH")) /* test hook: a crash loop (t/50-ops-pool.t) */
        return 3;
#endif

    FCGX_Request fr;
    if (FCGX_InitRequest(&fr, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
        logmsg("worker: FCGX_InitRequest failed");
        return 1;
    }
    int64_t served = 0;
    double stop_at = 0;
    while (served < cfg->server.max_requests) {
        if (worker_reopen) {
            worker_reopen = 0;
            if (log_path && log_reopen(log_path) < 0)
                logmsg("log: cannot reopen %s: %s", log_path, strerror(errno));
        }
        if (drain_over(listen_fd, drain, &stop_at))
            break;
        if (masked) {
            sigprocmask(SIG_UNBLOCK, &stopset, NULL);
            /* a signal pending until the unblock has run its handler by now */
            if (drain_over(listen_fd, drain, &stop_at)) {
                sigprocmask(SIG_BLOCK, &stopset, NULL);
                break;
            }
        }
        in_fcgi_accept = 1;
        int rc = FCGX_Accept_r(&fr);
        in_fcgi_accept = 0;
        if (masked)
            sigprocmask(SIG_BLOCK, &stopset, NULL);
        if (rc < 0) {
            if (worker_stop && rc != -EINTR && rc != -ECONNABORTED)
                break; /* draining, and the queue cannot be read (or stayed empty): leave */
            if (worker_stop || worker_reopen || rc == -EINTR || rc == -ECONNABORTED ||
                rc == -EAGAIN || rc == -EWOULDBLOCK)
                continue; /* EAGAIN: ACCEPT_WAKE_S passed with no connection */
            logmsg("worker: accept failed: %s", strerror(-rc));
            FCGX_Free(&fr, 0);
            return 1;
        }
        serve_one(&fr, cfg);
        FCGX_Finish_r(&fr);
        served++;
    }
    FCGX_Free(&fr, 0);
    return 0;
}

/* ---- master ---- */

struct child {
    pid_t pid;
    unsigned gen;
    int slot;       /* held.h */
    double started; /* monotonic */
};

static struct child children[MAX_CHILDREN];
static int nchildren;

static int count_gen(unsigned gen)
{
    int n = 0;
    for (int i = 0; i < nchildren; i++)
        if (children[i].gen == gen)
            n++;
    return n;
}

static void signal_gen(unsigned gen, bool all, int sig)
{
    for (int i = 0; i < nchildren; i++)
        if (all || children[i].gen == gen)
            kill(children[i].pid, sig);
}

struct pool {
    int listen_fd;
    bool own; /* we created the socket (unix_path or TCP): drain it on stop */
    const char *unix_path;
    const char *log_path; /* --log FILE or NULL */
};

static pid_t spawn_worker(const struct pool *pl, const struct svc_config *cfg, unsigned gen)
{
    if (nchildren >= MAX_CHILDREN)
        return -1;
    pid_t master = getpid();
    int slot = held_take();
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        logmsg("fork: %s", strerror(errno));
        held_release(slot);
        return -1;
    }
    if (pid == 0) {
        held_attach(slot);
        /* only a unix socket we unlink has a queue that stops growing: drain it */
        int rc = worker_main(pl->listen_fd, cfg, master, pl->own && pl->unix_path, pl->log_path);
        svc_config_free((struct svc_config *)cfg);
        exit(rc); /* exit, not _exit: LeakSanitizer runs at exit in asan builds */
    }
    children[nchildren].pid = pid;
    children[nchildren].gen = gen;
    children[nchildren].slot = slot;
    children[nchildren].started = svc_time_monotonic();
    nchildren++;
    svc_metrics_workers(nchildren);
    return pid;
}

/* A worker that died in the middle of a run left its session `running` with the run lock
 * free: repair it now (SPEC 2.3) rather than at the next reader. */
static void repair_held(const struct svc_config *cfg, int slot, pid_t pid)
{
    char sid[132];
    if (held_get(slot, sid, sizeof sid)) {
        struct svc_err err;
        svc_err_clear(&err);
        int rc = svc_session_repair_stale(cfg, sid, &err);
        if (rc == 1)
            logmsg("worker %d died during a run on session %s: repaired it", (int)pid, sid);
        else if (rc < 0)
            logmsg("worker %d died during a run on session %s: repair failed: %s", (int)pid, sid,
                   err.message);
    }
    held_release(slot);
}

/* Reap exited children; returns how many of generation gen died abnormally within
 * QUICK_DEATH_S of their start (a crash loop in the making); *slow_deaths counts the others. */
static int reap(const struct svc_config *cfg, unsigned gen, bool stopping, int *slow_deaths)
{
    int quick = 0;
    int status;
    pid_t pid;
    double now = svc_time_monotonic();
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < nchildren; i++) {
            if (children[i].pid != pid)
                continue;
            bool bad = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            if (bad && !stopping) {
                if (WIFSIGNALED(status))
                    logmsg("worker %d killed by signal %d", (int)pid, WTERMSIG(status));
                else
                    logmsg("worker %d exited with status %d", (int)pid, WEXITSTATUS(status));
            }
            if (bad && children[i].gen == gen) {
                if (now - children[i].started < QUICK_DEATH_S)
                    quick++;
                else
                    (*slow_deaths)++;
            }
            repair_held(cfg, children[i].slot, pid);
            children[i] = children[--nchildren];
            svc_metrics_workers(nchildren);
            break;
        }
    }
    return quick;
}

/* Stop taking new connections at once: a socket we created is unlinked (a new connect fails,
 * so the web server moves to its next upstream) and our copy of the listener closed; a TCP
 * listener is shut down for every process that shares it. The workers serve what is queued. */
static void drain_socket(struct pool *pl)
{
    if (!pl->own || pl->listen_fd < 0)
        return;
    if (pl->unix_path) {
        if (unlink(pl->unix_path) < 0 && errno != ENOENT) {
            /* the path stays: refuse new connections on it instead */
            logmsg("drain: cannot unlink %s: %s; shutting the listener down", pl->unix_path,
                   strerror(errno));
            shutdown(pl->listen_fd, SHUT_RD);
        }
    } else {
        shutdown(pl->listen_fd, SHUT_RD);
    }
    close(pl->listen_fd);
    pl->listen_fd = -1;
}

static int master_main(struct pool *pl, struct svc_config *cfg, const struct opts *o)
{
    sigset_t set, orig;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &orig);

    unsigned gen = 1;
    bool stopping = false;
    double stop_at = 0, last_term = 0, next_spawn = 0;
    int quick_streak = 0;  /* workers of this generation that died right after start, in a row */
    double backoff = 0;    /* current crash-loop delay, 0 when not in one */
    double last_quick = 0; /* when the last quick death was seen */
    int nworkers = o->workers > 0 ? o->workers : cfg->server.workers;
    if (held_init(MAX_CHILDREN) != 0)
        logmsg("no shared memory for run slots: stale runs wait for their next reader");
    logmsg("master started: %d workers, max_requests %lld, config %s", nworkers,
           (long long)cfg->server.max_requests, cfg->source ? cfg->source : "(defaults)");

    for (;;) {
        double now = svc_time_monotonic();
        if (!stopping && now >= next_spawn) {
            if (count_gen(gen) < nworkers)
                svc_sessions_warm(cfg); /* new workers inherit the listing index, loaded */
            while (count_gen(gen) < nworkers && spawn_worker(pl, cfg, gen) > 0)
                ;
        }
        if (stopping) {
            if (nchildren == 0)
                break;
            /* Repeat SIGTERM: it wakes an idle worker that raced into accept(2) (on TCP or
             * an inherited socket it is blocked, pending, in busy workers). Past the grace
             * period, SIGKILL. */
            double grace = (double)cfg->server.run_timeout_s + 30.0;
            if (now - stop_at > grace) {
                logmsg("stop: %d workers still busy after %.0fs, killing", nchildren, grace);
                signal_gen(0, true, SIGKILL);
            } else if (now - last_term >= 1.0) {
                signal_gen(0, true, SIGTERM);
                last_term = now;
            }
        }

        struct timespec ts = {0, 250 * 1000 * 1000};
        if (!stopping && next_spawn > now && next_spawn - now < 0.25)
            ts.tv_nsec = (long)((next_spawn - now) * 1e9);
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            if (!stopping) {
                drain_socket(pl);
                logmsg("stop: signal %d, %s; waiting for %d workers", sig,
                       pl->own ? "socket closed to new connections"
                               : "inherited socket left to its owner",
                       nchildren);
                stopping = true;
                stop_at = svc_time_monotonic();
                last_term = stop_at;
                signal_gen(0, true, SIGTERM);
            }
        } else if (sig == SIGUSR1) {
            if (pl->log_path) {
                if (log_reopen(pl->log_path) < 0)
                    logmsg("log: cannot reopen %s: %s", pl->log_path, strerror(errno));
                else
                    logmsg("log: reopened %s", pl->log_path);
                signal_gen(0, true, SIGUSR1);
            }
        } else if (sig == SIGHUP && !stopping) {
            struct svc_config ncfg;
            struct svc_err err;
            memset(&ncfg, 0, sizeof ncfg);
            svc_err_clear(&err);
            if (load_config(&ncfg, o->config, &err) < 0) {
                logmsg("reload refused, keeping the running configuration: %s", err.message);
            } else {
                log_warnings(&ncfg);
                apply_overrides(&ncfg, o);
                if (!o->listen && pl->unix_path && ncfg.server.listen && cfg->server.listen &&
                    strcmp(ncfg.server.listen, cfg->server.listen) != 0)
                    logmsg("reload: server.listen changed; it takes effect on restart");
                svc_config_free(cfg);
                *cfg = ncfg;
                umask((mode_t)svc_config_octal(cfg->server.umask));
                signal_gen(gen, false, SIGHUP); /* old workers finish and exit */
                gen++;
                quick_streak = 0;
                backoff = 0;
                nworkers = o->workers > 0 ? o->workers : cfg->server.workers;
                next_spawn = 0;
                logmsg("reloaded configuration: %d workers", nworkers);
            }
        }
        int slow = 0;
        int quick = reap(cfg, gen, stopping, &slow);
        if (slow > 0 && quick == 0) {
            quick_streak = 0; /* it ran for a while: not a crash loop, respawn at once */
            backoff = 0;
        }
        if (quick > 0) {
            double t = svc_time_monotonic();
            if (t - last_quick > 10.0) { /* calm for a while: a new streak */
                quick_streak = 0;
                backoff = 0;
            }
            last_quick = t;
        }
        quick_streak += quick;
        if (quick > 0 && quick_streak >= CRASH_LOOP_DEATHS && !stopping) {
            backoff = backoff > 0 ? backoff * 2 : 1.0;
            if (backoff > CRASH_BACKOFF_MAX_S)
                backoff = CRASH_BACKOFF_MAX_S;
            next_spawn = svc_time_monotonic() + backoff;
            logmsg("crash loop: %d workers died within %.0fs of starting; next spawn in %.0fs",
                   quick_streak, QUICK_DEATH_S, backoff);
        }
    }
    logmsg("stopped");
    return 0;
}

/* ---- plain CGI ---- */

static int serve_cgi(const struct svc_config *cfg, const struct svc_err *cfg_err)
{
    struct http_req r;
    http_req_init_cgi(&r, cfg_err ? NULL : cfg);
    if (cfg_err)
        http_send_error(&r, cfg_err);
    else
        http_dispatch(&r);
    http_finish(&r);
    http_log(&r);
    http_req_free(&r);
    return 0;
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f, "usage: svc-fcgi [--listen unix:PATH|tcp:[HOST:]PORT] [--workers N] "
               "[--config FILE] [--user USER] [--group GROUP] [--log FILE]\n"
               "Without --listen: the socket on fd 0 or LISTEN_FDS, plain CGI when "
               "REQUEST_METHOD is set, else server.listen.\n"
               "Exit codes: 0 stopped, 1 failure, 2 usage, 3 configuration refused, "
               "4 socket could not be created.\n");
}

/* The ids --user/--group name; *uid -1 when no --user. Return 0, or -1 after logging. */
static int resolve_identity(const struct opts *o, uid_t *uid, gid_t *gid, char **home)
{
    *uid = (uid_t)-1;
    *gid = (gid_t)-1;
    *home = NULL;
    if (o->user) {
        struct passwd *pw = getpwnam(o->user);
        if (!pw) {
            logmsg("--user: no such user '%s'", o->user);
            return -1;
        }
        *uid = pw->pw_uid;
        *gid = pw->pw_gid;
        *home = svc_xstrdup(pw->pw_dir ? pw->pw_dir : "/");
    }
    if (o->group) {
        struct group *gr = getgrnam(o->group);
        if (!gr) {
            logmsg("--group: no such group '%s'", o->group);
            free(*home);
            *home = NULL;
            return -1;
        }
        *gid = gr->gr_gid;
    }
    if ((o->user || o->group) && geteuid() != 0 &&
        ((*uid != (uid_t)-1 && *uid != geteuid()) || (*gid != (gid_t)-1 && *gid != getegid()))) {
        logmsg("--user/--group: changing identity needs root (running as uid %d)", (int)geteuid());
        free(*home);
        *home = NULL;
        return -1;
    }
    return 0;
}

/* Become uid/gid for good (root only; a no-op when they are already ours). Return 0 or -1. */
static int drop_privileges(const struct opts *o, uid_t uid, gid_t gid)
{
    if (geteuid() != 0)
        return 0;
    if (gid != (gid_t)-1) {
        if (o->user ? initgroups(o->user, gid) < 0 : setgroups(0, NULL) < 0) {
            logmsg("--user: cannot set supplementary groups: %s", strerror(errno));
            return -1;
        }
        if (setgid(gid) < 0) {
            logmsg("--group: setgid(%d): %s", (int)gid, strerror(errno));
            return -1;
        }
    }
    if (uid != (uid_t)-1) {
        if (setuid(uid) < 0) {
            logmsg("--user: setuid(%d): %s", (int)uid, strerror(errno));
            return -1;
        }
        if (uid != 0 && setuid(0) == 0) {
            logmsg("--user: root could be regained after dropping it; refusing to run");
            return -1;
        }
    }
    return 0;
}

#ifdef SVC_TEST_HOOKS
/* Test hook (test builds only): SVC_TEST_ASAN_READ_PROBE=1 reads 16 bytes of /dev/zero
 * into a 4-byte heap buffer through this file's read, and exits; under `make asan` that
 * must be reported as an overflow (t/50-ops-pool.t), proving the check in read above.
 * Other test builds read into a buffer of the right size and print "no asan". */
static void test_asan_read_probe(void)
{
    if (!getenv("SVC_TEST_ASAN_READ_PROBE"))
        return;
#ifdef SVC_ASAN
    size_t have = 4;
#else
    size_t have = 16;
#endif
    char *buf = malloc(have);
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    volatile size_t want = 16; /* hidden from gcc's -Wstringop-overflow under ASan */
    ssize_t n = buf && fd >= 0 ? read(fd, buf, want) : -1;
    printf("%s: read %zd\n", have == 16 ? "no asan" : "asan", n);
    fflush(stdout);
    free(buf);
    _exit(0);
}
#else
static inline void test_asan_read_probe(void) {}
#endif

int main(int argc, char **argv)
{
    struct opts o = {0};
    test_asan_read_probe();
    svc_log_set_sink(core_log_sink, NULL);
    static const struct option lopts[] = {{"listen", required_argument, NULL, 'l'},
                                          {"workers", required_argument, NULL, 'w'},
                                          {"config", required_argument, NULL, 'c'},
                                          {"user", required_argument, NULL, 'u'},
                                          {"group", required_argument, NULL, 'g'},
                                          {"log", required_argument, NULL, 'L'},
                                          {"help", no_argument, NULL, 'h'},
                                          {"version", no_argument, NULL, 'V'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "l:w:c:u:g:L:hV", lopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o.listen = optarg;
            break;
        case 'c':
            o.config = optarg;
            break;
        case 'u':
            o.user = optarg;
            break;
        case 'g':
            o.group = optarg;
            break;
        case 'L':
            o.log = optarg;
            break;
        case 'w': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 256) {
                fprintf(stderr, "svc-fcgi: --workers must be 1..256\n");
                return EXIT_USAGE;
            }
            o.workers = (int)n;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("svc-fcgi %s\n", SVC_VERSION);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (o.log && log_reopen(o.log) < 0) {
        logmsg("--log: cannot open %s: %s", o.log, strerror(errno));
        return EXIT_CONFIG;
    }

    signal(SIGPIPE, SIG_IGN);
    if (FCGX_Init() != 0) {
        logmsg("FCGX_Init failed");
        return EXIT_FAIL;
    }
    h_base_started_at = svc_time_now();
    h_base_master_pid = (int)getpid();

    /* Which socket? Decided before the config, so plain CGI can answer a config error. */
    int listen_fd = -1;
    bool cgi = false;
    const char *lfds = getenv("LISTEN_FDS"), *lpid = getenv("LISTEN_PID");
    if (o.listen) {
        /* opened below */
    } else if (!FCGX_IsCGI() || is_listening_socket(0)) {
        listen_fd = 0;
    } else if (lfds && atoi(lfds) >= 1 && (!lpid || atoi(lpid) == (int)getpid()) &&
               is_listening_socket(3)) {
        listen_fd = 3;
    } else if (getenv("REQUEST_METHOD") || getenv("GATEWAY_INTERFACE")) {
        cgi = true;
    }
    if (listen_fd == 0)
        o.inherited = "fd:0";
    else if (listen_fd == 3)
        o.inherited = "fd:3";
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");

    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    char *user_home = NULL;
    if (!cgi && resolve_identity(&o, &uid, &gid, &user_home) < 0)
        return EXIT_CONFIG;
    /* Paths that default to ~ are the user's we become, as if started by that user. */
    if (user_home) {
        setenv("HOME", user_home, 1);
        free(user_home);
    }

    struct svc_config cfg;
    struct svc_err err;
    memset(&cfg, 0, sizeof cfg);
    svc_err_clear(&err);
    if (load_config(&cfg, o.config, &err) < 0) {
        if (cgi)
            return serve_cgi(NULL, &err);
        logmsg("config: %s", err.message);
        return EXIT_CONFIG;
    }
    log_warnings(&cfg);
    umask((mode_t)svc_config_octal(cfg.server.umask));
    if (cgi) {
        int rc = serve_cgi(&cfg, NULL);
        svc_config_free(&cfg);
        return rc;
    }

    gid_t sock_gid = (gid_t)-1;
    if (cfg.server.socket_group[0]) {
        struct group *gr = getgrnam(cfg.server.socket_group);
        if (!gr) {
            logmsg("config: server.socket_group: no such group '%s'", cfg.server.socket_group);
            svc_config_free(&cfg);
            return EXIT_CONFIG;
        }
        sock_gid = gr->gr_gid;
    }

    struct pool pl = {.listen_fd = listen_fd, .log_path = o.log};
    char *unix_path = NULL;
    if (listen_fd < 0) {
        const char *spec = o.listen ? o.listen : cfg.server.listen;
        int code;
        listen_fd = open_listen(spec ? spec : "", o.listen ? "--listen" : "server.listen",
                                (mode_t)svc_config_octal(cfg.server.socket_mode), sock_gid,
                                &unix_path, &code);
        if (listen_fd < 0) {
            svc_config_free(&cfg);
            return code;
        }
        pl.listen_fd = listen_fd;
        pl.own = true;
        pl.unix_path = unix_path;
        logmsg("listening on %s", spec);
    } else {
        logmsg("serving the socket on fd %d", listen_fd);
    }
    if (o.log && uid != (uid_t)-1 && geteuid() == 0 && chown(o.log, uid, gid) < 0)
        logmsg("--log: cannot hand %s to --user: %s", o.log, strerror(errno));
    if (drop_privileges(&o, uid, gid) < 0) {
        if (unix_path)
            unlink(unix_path);
        free(unix_path);
        close(listen_fd);
        svc_config_free(&cfg);
        return EXIT_CONFIG;
    }

    apply_overrides(&cfg, &o);
    if (svc_metrics_init() != 0)
        logmsg("metrics: no shared memory (%s): /api/metrics counts per worker", strerror(errno));
    int rc = master_main(&pl, &cfg, &o);
    if (unix_path && pl.listen_fd >= 0)
        unlink(unix_path); /* not drained (cannot happen today): still ours to remove */
    free(unix_path);
    if (pl.listen_fd >= 0)
        close(pl.listen_fd);
    svc_config_free(&cfg);
    return rc;
}
