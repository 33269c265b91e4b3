/* svc-fcgi: the FastCGI worker pool (SPEC 6), or one plain CGI request.
 *
 * Socket, in this order: --listen unix:PATH|tcp:[HOST:]PORT; a listening socket on fd 0
 * (spawn-fcgi, systemd StandardInput=socket, mod_fcgid); LISTEN_FDS (fd 3); plain CGI when
 * none of those and REQUEST_METHOD is set (one request, then exit); else server.listen.
 *
 * Master: forks `workers` workers that all poll the socket and accept; respawns dead ones at
 * once (a crash loop, deaths within a second of start, is slowed by a growing delay and
 * logged); SIGHUP reloads (an invalid config is refused and the old workers go on; a valid one
 * replaces them gracefully); SIGUSR1 reopens --log FILE, in the workers too; SIGTERM/SIGINT
 * drains: a socket it created is unlinked (TCP: shut down) at once, so the web server tries its
 * next upstream, and the workers finish in-flight and queued requests, then exit. An inherited
 * socket is left to its owner: the workers only stop accepting. Signals are taken
 * synchronously: sigtimedwait in the master, a signalfd in the workers (struct worker).
 *
 * Permissions (SPEC 6): umask server.umask; a unix socket it creates gets server.socket_mode
 * and server.socket_group; as root with --user/--group it drops privileges after binding,
 * before reading any session. Refusals at start are one line naming the setting, with the
 * exit codes below (docs/OPS.md, "svc-fcgi"). Peers (SPEC 19): a TCP peer outside
 * server.fcgi_allow and FCGI_WEB_SERVER_ADDRS (loopback when neither names one) is closed
 * unread; server.user_param on a TCP listener without such a list is refused.
 *
 * Worker: accepts a connection, waits for its first bytes, hands it to libfcgi and serves the
 * request; signals are seen between requests; exits after max_requests. Runs it forks and
 * programs it spawns reset their signal mask (core/runs.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acl.h"
#include "config.h"
#include "fsio.h"
#include "handlers.h"
#include "held.h"
#include "http.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "query.h"
#include "runs.h"
#include "session.h"
#include "user.h"
#include "util.h"

#define BACKLOG 256
#define MAX_CHILDREN 1024

/* Exit codes (docs/OPS.md, "svc-fcgi"): 1 a runtime failure, 2 a bad command line, 3 a
 * setting refused (agents.yaml invalid, unknown user or group, socket directory missing, bad
 * --listen), 4 the socket could not be created (in use, permission denied). */
#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_CONFIG 3
#define EXIT_SOCKET 4

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
    if (fd < 0 || fd == STDERR_FILENO)
        return fd < 0 ? -1 : 0;
    int rc = dup2(fd, STDERR_FILENO), e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? -1 : 0;
}

/* One line on stderr, "<time> svc-fcgi[<pid>]: <message>"; a refusal then returns rc. */
static int refuse(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(int rc, const char *fmt, ...)
{
    char ts[SVC_TIME_LEN], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s svc-fcgi[%d]: %s\n", svc_time_now_iso(ts), (int)getpid(), line);
    return rc;
}
#define logmsg(...) ((void)refuse(0, __VA_ARGS__))

/* SIGUSR1: reopen --log path (NULL: none), saying so when said. */
static void log_rotate(const char *path, bool said)
{
    if (path && log_reopen(path) < 0)
        logmsg("log: cannot reopen %s: %s", path, strerror(errno));
    else if (path && said)
        logmsg("log: reopened %s", path);
}

/* core/ speaks through svc_logf: give its lines the same prefix as ours. */
static void core_log_sink(const char *line, void *ctx)
{
    logmsg("%s", line);
}

/* Load the configuration (--config FILE, else the default search) and log its warnings. */
static int load_config(struct svc_config *cfg, const char *path, struct svc_err *err)
{
    int rc = path ? svc_config_load_file(cfg, path, err) : svc_config_load(cfg, err);
    for (size_t i = 0; rc >= 0 && i < cfg->nwarnings && cfg->warnings && cfg->warnings[i]; i++)
        logmsg("config warning: %s", cfg->warnings[i]);
    return rc;
}

/* The command line wins over agents.yaml: put the values the pool really runs with into
 * the configuration, so GET /api/config shows them. */
static void apply_overrides(struct svc_config *cfg, const struct opts *o)
{
    if (o->workers > 0)
        cfg->server.workers = o->workers;
    const char *listen = o->listen ? o->listen : o->inherited;
    if (listen) {
        free(cfg->server.listen);
        cfg->server.listen = svc_xstrdup(listen);
    }
}

/* The out-of-memory policy (err.h): one line, then abort; the master starts a new worker. */
static void oom_abort(size_t n)
{
    fprintf(stderr, "svc-fcgi[%d]: out of memory allocating %zu bytes\n", (int)getpid(), n);
    abort();
}

/* ---- listening socket ---- */

/* socket, bind, listen on addr: not FCGX_OpenSocket, which exits the process when bind or
 * listen fails (a refusal is svc's one line and exit code 4). The fd, or -1 with errno. */
static int listen_on(int family, const struct sockaddr *addr, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
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

/* The listening socket for host ("127.0.0.1", "::1", a name, "*" for every IPv4 address) and
 * port: IPv4 unless host is an IPv6 address, as libfcgi's was (localhost, which /etc/hosts also
 * gives ::1, must stay 127.0.0.1), on the first address that binds; -1 with *why set. */
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

/* Create the unix socket path with mode `mode` and, when gid is not -1, group gid. Returns
 * the fd, or minus the exit code after logging. */
static int open_unix(const char *path, const char *what, mode_t mode, gid_t gid, char **unix_path)
{
    struct sockaddr_un sun = {0};
    if (!*path || strlen(path) >= sizeof sun.sun_path || strchr(path, ':'))
        return refuse(-EXIT_CONFIG, "%s: bad unix socket path '%s' (empty, too long or with ':')",
                      what, path);
    char dir[sizeof sun.sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    if (slash && !svc_is_dir(dir))
        return refuse(-EXIT_CONFIG,
                      "%s: the directory %s of socket %s does not exist (create it, e.g. with "
                      "systemd RuntimeDirectory=, or choose another path)",
                      what, dir, path);
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, path, strlen(path));
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return refuse(-EXIT_SOCKET, "%s: %s exists and is not a socket", what, path);
        /* Refuse to steal the socket of a live instance. */
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        bool live = s >= 0 && connect(s, (struct sockaddr *)&sun, sizeof sun) == 0;
        if (s >= 0)
            close(s);
        if (live)
            return refuse(-EXIT_SOCKET, "%s: %s is in use by another process", what, path);
    }
    unlink(path); /* a socket nobody answers on: a dead instance's */
    int fd = listen_on(AF_UNIX, (struct sockaddr *)&sun, sizeof sun);
    if (fd < 0)
        return refuse(-EXIT_SOCKET, "%s: cannot listen on %s: %s", what, path, strerror(errno));
    /* only the web server, through the group or mode: others would bypass its deny rules */
    if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) || chmod(path, mode) < 0) {
        logmsg("%s: cannot set the owner or mode of %s: %s", what, path, strerror(errno));
        close(fd);
        unlink(path);
        return -EXIT_SOCKET;
    }
    *unix_path = svc_xstrdup(path);
    return fd;
}

/* Listen on hp, "[HOST:]PORT" of a "tcp:" spec. Returns the fd, or minus the exit code after
 * logging. */
static int open_tcp(const char *spec, const char *hp, const char *what)
{
    const char *colon = strrchr(hp, ':');
    const char *port = colon ? colon + 1 : hp;
    char host[256] = "127.0.0.1";
    if (colon) {
        if ((size_t)(colon - hp) >= sizeof host || colon == hp)
            return refuse(-EXIT_CONFIG, "%s: bad host in '%s'", what, spec);
        snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 1 || p > 65535)
        return refuse(-EXIT_CONFIG, "%s: bad port in '%s'", what, spec);
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [::1]:9000 */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    const char *why = NULL;
    int fd = listen_tcp(host, port, &why);
    if (fd < 0)
        return refuse(-EXIT_SOCKET, "%s: cannot listen on %s%s%s:%s: %s", what,
                      strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port, why);
    return fd;
}

/* Open "unix:PATH" (mode `mode`, group gid unless -1) or "tcp:[HOST:]PORT"; what names the
 * setting in messages ("server.listen", "--listen"). The fd, or minus the exit code after
 * logging one line. */
static int open_listen(const char *spec, const char *what, mode_t mode, gid_t gid, char **unix_path)
{
    *unix_path = NULL;
    if (strncmp(spec, "unix:", 5) == 0)
        return open_unix(spec + 5, what, mode, gid, unix_path);
    if (strncmp(spec, "tcp:", 4) == 0)
        return open_tcp(spec, spec + 4, what);
    return refuse(-EXIT_CONFIG, "%s: '%s' must be unix:PATH or tcp:[HOST:]PORT", what, spec);
}

static bool is_listening_socket(int fd)
{
    int v = 0;
    socklen_t len = sizeof v;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v;
}

/* ---- worker ---- */

/* A worker reads its blocked signals from a signalfd while it waits, so none interrupts a
 * system call of a request or of libfcgi; it accepts connections itself and hands libfcgi
 * only one whose first bytes arrived, so a stop never waits inside libfcgi. */
struct worker {
    int listen_fd; /* non-blocking (the master's pool_open): several workers poll it */
    int sfd;       /* signalfd of SIGTERM, SIGINT, SIGHUP and SIGUSR1 */
    bool drain;    /* on stop, first serve the connections already queued */
    bool local;    /* a unix socket: a new connection gets FIRST_BYTES_S even when not stopping */
    bool stop, nodrain, reopen;
    double stop_at;     /* monotonic time the stop was seen */
    struct svc_acl acl; /* the peers allowed (allow_list) */
};

/* How long a new connection may stay silent on a unix socket (libfcgi's rule for those) and,
 * once the worker is stopping, on any socket. */
#define FIRST_BYTES_S 2.0

/* A drain ends when the queue is empty or after this long: after a SIGKILLed master the
 * socket's name stays and the web server keeps queueing on it; once the workers are gone,
 * connects are refused (the web server tries another pool) and a new master can bind it. */
#define DRAIN_MAX_S 3.0

/* Read the pending signals into the flags: SIGTERM/SIGINT stop (after the queue when
 * draining), SIGHUP stops at once (a reload: new workers take the queue), SIGUSR1 reopens. */
static void worker_signals(struct worker *w)
{
    struct signalfd_siginfo si;
    while (read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGUSR1) {
            w->reopen = true;
            continue;
        }
        if (si.ssi_signo == SIGHUP)
            w->nodrain = true;
        if (!w->stop)
            w->stop_at = svc_time_monotonic();
        w->stop = true;
    }
}

/* Wait until fd has something to read, taking signals as they come: for FIRST_BYTES_S when
 * limited and, once stopping, FIRST_BYTES_S after the later of the wait's start and the
 * stop. Returns whether fd is readable. */
static bool await_bytes(struct worker *w, int fd, bool limited)
{
    double start = svc_time_monotonic();
    for (;;) {
        int ms = -1;
        if (limited || w->stop) {
            double from = w->stop && w->stop_at > start ? w->stop_at : start;
            double left = from + FIRST_BYTES_S - svc_time_monotonic();
            if (left <= 0)
                return false;
            ms = (int)(left * 1000) + 1;
        }
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = w->sfd, .events = POLLIN}};
        int n = poll(p, 2, ms);
        if (n < 0 && errno != EINTR)
            return false;
        if (n > 0 && p[1].revents) /* seen here under load too: accept4 then never waits */
            worker_signals(w);
        if (n > 0 && p[0].revents)
            return true; /* data, or an end that libfcgi reads as one */
    }
}

/* The FastCGI peers a pool accepts (SPEC 19): server.fcgi_allow and libfcgi's comma-separated
 * FCGI_WEB_SERVER_ADDRS (IPv6 too) together, else loopback only; a unix socket's peers are
 * its mode's to guard. Whether a list was given, or -1 after logging an entry of
 * FCGI_WEB_SERVER_ADDRS that is not an address (the settings' are checked at load). */
static int allow_list(const struct svc_config *cfg, struct svc_acl *a)
{
    int given = 0;
    for (char **p = cfg->server.fcgi_allow; p && *p; p++, given = 1)
        svc_acl_add(a, *p);
    const char *env = getenv("FCGI_WEB_SERVER_ADDRS");
    for (const char *p = env; p && *p;) {
        char one[64];
        size_t n = strcspn(p, ",");
        snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
        if (n > 0 && svc_acl_add(a, one) < 0)
            return refuse(
                -1, "FCGI_WEB_SERVER_ADDRS: '%s' is not an IPv4 or IPv6 address or network", one);
        given = given || n > 0;
        p += n + (p[n] ? 1 : 0);
    }
    if (!given)
        svc_acl_add_loopback(a);
    return given;
}

/* Whether the peer of a new connection may speak FastCGI to us; a refusal is logged at most
 * once a minute per worker (a scan must not fill the log), with the count. */
static bool peer_allowed(const struct svc_acl *a, const struct sockaddr_storage *ss)
{
    static double last_log;
    static unsigned refused;
    if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
        return true;
    if (svc_acl_match(a, (const struct sockaddr *)ss))
        return true;
    refused++;
    double now = svc_time_monotonic();
    if (last_log == 0 || now - last_log >= 60) {
        char host[INET6_ADDRSTRLEN] = "?";
        const void *addr = ss->ss_family == AF_INET
                               ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                               : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
        inet_ntop(ss->ss_family, addr, host, sizeof host);
        logmsg("refused a FastCGI connection from %s: not in server.fcgi_allow (%u refused since "
               "the last such line)",
               host, refused);
        last_log = now;
        refused = 0;
    }
    return false;
}

/* What the listener and settings expose (SPEC 19), at start and on reload: server.user_param
 * on TCP without an allow list is refused (any peer could name any user); no token and no
 * users with peers beyond loopback is said loudly. 0, or EXIT_CONFIG after logging. */
static int exposure_check(int listen_fd, const struct svc_config *cfg)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    bool tcp = getsockname(listen_fd, (struct sockaddr *)&ss, &len) == 0 &&
               (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
    struct svc_acl a = {0};
    int given = allow_list(cfg, &a);
    bool beyond = svc_acl_beyond_loopback(&a);
    svc_acl_free(&a);
    if (given < 0)
        return EXIT_CONFIG;
    if (!tcp) {
        if (cfg->server.fcgi_allow && cfg->server.fcgi_allow[0])
            logmsg("server.fcgi_allow: not used on a unix socket, which its mode guards "
                   "(server.socket_mode, server.socket_group)");
        return 0;
    }
    if (cfg->server.user_param[0] && !given)
        return refuse(
            EXIT_CONFIG,
            "server.user_param: refusing to start: on a TCP listener any process that reaches "
            "the port could send %s and act as any user; list the web servers' addresses in "
            "server.fcgi_allow (e.g. [127.0.0.1]) or listen on a unix socket",
            cfg->server.user_param);
    if (!given && !svc_acl_loopback_addr((struct sockaddr *)&ss))
        logmsg("server.fcgi_allow is empty: this TCP listener takes loopback peers only; list "
               "the web servers that connect from elsewhere (docs/OPS.md, \"Safe by default\")");
    if (beyond && !svc_config_api_token(cfg) && !svc_users_enabled(cfg))
        logmsg("WARNING: no server.api_token and no users, and server.fcgi_allow admits peers "
               "beyond loopback: whoever reaches them reads and runs every session; set a token "
               "or users first (docs/OPS.md, \"Safe by default\")");
    return 0;
}

/* The roots svc writes, checked as the user it runs as (at start and on reload): one line for
 * each that cannot be written, as health and every 503 say (core/fsio.h). */
static void roots_check(const struct svc_config *cfg)
{
    char why[512];
    if (cfg->sessions.enabled &&
        !svc_dir_writable("session root", cfg->sessions.root, why, sizeof why))
        logmsg("%s: reads go on; turns and other writes answer 503 service_unavailable", why);
    if (cfg->sessions.enabled && cfg->sessions.sync_memory &&
        !svc_dir_writable("memory root", cfg->memory.root, why, sizeof why))
        logmsg("%s: runs go on without their memory digests", why);
}

/* The next connection: polls the listener and the signals while the queue is empty (another
 * worker may take what woke us: EAGAIN). -1 when a signal came first or a stopping worker
 * finds the queue empty; *failed is errno when the listener itself fails. */
static int accept_next(struct worker *w, int *failed)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(w->listen_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (fd >= 0 && peer_allowed(&w->acl, &ss)) {
            int one = 1; /* answers go out as written: disable Nagle, as libfcgi did */
            if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        if (fd >= 0) {
            close(fd);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (w->stop)
                return -1;
            struct pollfd p[2] = {{.fd = w->listen_fd, .events = POLLIN},
                                  {.fd = w->sfd, .events = POLLIN}};
            if (poll(p, 2, -1) > 0 && p[1].revents) {
                worker_signals(w);
                return -1;
            }
        } else if (errno != EINTR && errno != ECONNABORTED && errno != EPROTO &&
                   errno != ECONNRESET && errno != ETIMEDOUT && errno != EHOSTUNREACH &&
                   errno != ENETUNREACH) { /* a peer gone before we took it: libfcgi's list */
            *failed = errno;
            return -1;
        }
    }
}

/* Whether a stopping worker leaves now: no drain, an empty listen queue, or DRAIN_MAX_S. */
static bool drain_over(const struct worker *w)
{
    struct pollfd p = {.fd = w->listen_fd, .events = POLLIN};
    return w->stop && (w->nodrain || !w->drain || poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN) ||
                       svc_time_monotonic() - w->stop_at > DRAIN_MAX_S);
}

/* Put the next request's connection into fr, its first bytes arrived: the one libfcgi kept
 * (fastcgi_keep_conn) or a new one. 1 when there is one, 0 to look at the flags first, -1
 * when the listener failed. */
static int next_connection(struct worker *w, FCGX_Request *fr)
{
    int fd = fr->ipcFd;
    if (fd < 0) {
        int failed = 0;
        fd = accept_next(w, &failed);
        if (fd < 0 && failed) {
            /* a stopping master shuts its TCP listener down just before it signals us */
            struct pollfd p = {.fd = w->sfd, .events = POLLIN};
            poll(&p, 1, 1000);
            worker_signals(w);
            if (w->stop) /* the master closed or shut down the listener as it stopped */
                return 0;
            logmsg("worker: accept failed: %s", strerror(failed));
            return -1;
        }
        if (fd < 0)
            return 0;
    }
    if (!await_bytes(w, fd, fr->ipcFd < 0 && w->local)) {
        close(fd); /* silent for too long, or a kept connection while stopping */
        fr->ipcFd = -1;
        return 0;
    }
    fr->ipcFd = fd;
    fr->keepConnection = 1; /* FCGX_Accept_r's opening finish must not close it */
    return 1;
}

/* One request: from fr, or from the CGI environment (fr NULL); a configuration that failed
 * to load (cfg_err) is the answer to a plain CGI request. */
static void serve_one(FCGX_Request *fr, const struct svc_config *cfg, const struct svc_err *cfg_err)
{
    struct http_req r;
    http_req_init(&r, fr, cfg_err ? NULL : cfg);
    if (cfg_err)
        http_send_error(&r, cfg_err);
    else
        http_dispatch(&r);
    held_clear();
    http_finish(&r);
    http_log(&r);
    http_req_free(&r);
}

/* The signals the pool takes synchronously: stop, reload, reopen, and (master) SIGCHLD. */
static void pool_signals(sigset_t *set, bool chld)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGUSR1);
    if (chld)
        sigaddset(set, SIGCHLD);
}

/* The worker's signalfd (the signals stay blocked, as the master's mask left them) and
 * SIGCHLD back to its default for the programs and runs it waits for. -1 on failure. */
static int worker_signal_fd(void)
{
    sigset_t set, chld;
    pool_signals(&set, false);
    signal(SIGCHLD, SIG_DFL);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* drain: on stop, first serve the queued connections (none arrive on the unlinked socket),
 * for DRAIN_MAX_S at most; false for an inherited socket, left to its owner. */
static int worker_main(int listen_fd, const struct svc_config *cfg, pid_t master, bool drain,
                       const char *log_path)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    struct worker w = {.listen_fd = listen_fd, .drain = drain};
    w.local = getsockname(listen_fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_UNIX;
    w.sfd = worker_signal_fd();
    if (allow_list(cfg, &w.acl) < 0) /* the master checked it: only if the environment moved */
        return 1;
    if (w.sfd < 0)
        return refuse(1, "worker: signalfd: %s", strerror(errno));
    /* Die with the master rather than linger as an orphan. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master)
        return 0;
#ifdef SVC_TEST_HOOKS                    /* only in test builds (make TEST_HOOKS=1) */
    if (getenv("SVC_TEST_WORKER_CRASH")) /* test hook: a crash loop (t/50-ops-pool.t) */
        return 3;
#endif
    FCGX_Request fr;
    /* no listener for libfcgi: it only ever reads connections next_connection gives it */
    FCGX_InitRequest(&fr, -1, 0);
    int64_t served = 0;
    int rc = 0;
    while (served < cfg->server.max_requests) {
        if (w.reopen)
            log_rotate(log_path, false);
        w.reopen = false;
        if (drain_over(&w))
            break;
        int got = next_connection(&w, &fr);
        if (got < 0) {
            rc = 1;
            break;
        }
        /* below 0: the connection broke the protocol (libfcgi closed it) */
        if (got == 0 || FCGX_Accept_r(&fr) < 0)
            continue;
        serve_one(&fr, cfg, NULL);
        FCGX_Finish_r(&fr);
        served++;
    }
    FCGX_Free(&fr, 0);
    close(w.sfd);
    svc_acl_free(&w.acl);
    return rc;
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

/* The workers of generation gen (0: every one): how many, each sent sig unless it is 0. */
static int workers_of(unsigned gen, int sig)
{
    int n = 0;
    for (int i = 0; i < nchildren; i++) {
        if (gen != 0 && children[i].gen != gen)
            continue;
        if (sig)
            kill(children[i].pid, sig);
        n++;
    }
    return n;
}

struct pool {
    int listen_fd;
    bool own; /* we created the socket (unix_path or TCP): drain it on stop */
    char *unix_path;
    int inherited_flags;  /* an inherited socket's file flags, restored at exit; else -1 */
    const char *log_path; /* --log FILE or NULL */
};

static pid_t spawn_worker(const struct pool *pl, struct svc_config *cfg, unsigned gen)
{
    if (nchildren >= MAX_CHILDREN)
        return -1;
    pid_t master = getpid();
    int slot = held_take();
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        logmsg("fork: %s", strerror(errno));
        held_release(slot, NULL, 0);
        return -1;
    }
    if (pid == 0) {
        held_attach(slot);
        /* only a unix socket we unlink has a queue that stops growing: drain it */
        int rc = worker_main(pl->listen_fd, cfg, master, pl->own && pl->unix_path, pl->log_path);
        svc_mcp_stop_all(); /* a worker's MCP servers end with it (SPEC 16) */
        svc_config_free(cfg);
        exit(rc); /* exit, not _exit: LeakSanitizer runs at exit in asan builds */
    }
    children[nchildren++] =
        (struct child){.pid = pid, .gen = gen, .slot = slot, .started = svc_time_monotonic()};
    svc_metrics_workers(nchildren);
    return pid;
}

/* A worker that died in the middle of a run left its session `running` with the run lock
 * free: repair it now (SPEC 2.3) rather than at the next reader. */
static void repair_held(const struct svc_config *cfg, int slot, pid_t pid)
{
    char sid[132];
    struct svc_err err;
    svc_err_clear(&err);
    int rc = held_release(slot, sid, sizeof sid) ? svc_session_repair_stale(cfg, sid, &err) : 0;
    if (rc == 1)
        logmsg("worker %d died during a run on session %s: repaired it", (int)pid, sid);
    else if (rc < 0)
        logmsg("worker %d died during a run on session %s: repair failed: %s", (int)pid, sid,
               err.message);
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

/* Stop taking new connections at once: our unix socket is unlinked (the web server moves to
 * its next upstream), a TCP one shut down; the workers serve what is queued. */
static void drain_socket(struct pool *pl)
{
    if (!pl->own || pl->listen_fd < 0)
        return;
    bool stays = pl->unix_path && unlink(pl->unix_path) < 0 && errno != ENOENT;
    if (stays) /* the path stays: refuse new connections on it instead */
        logmsg("drain: cannot unlink %s: %s; shutting the listener down", pl->unix_path,
               strerror(errno));
    if (stays || !pl->unix_path)
        shutdown(pl->listen_fd, SHUT_RD);
    close(pl->listen_fd);
    pl->listen_fd = -1;
}

/* The master's state between two turns of its loop. */
struct master {
    struct pool *pl;
    struct svc_config *cfg;
    const struct opts *o;
    unsigned gen; /* the generation of workers the configuration is for */
    bool stopping;
    double stop_at, next_spawn;
    int quick_streak;  /* workers of this generation that died right after start, in a row */
    double backoff;    /* current crash-loop delay, 0 when not in one */
    double last_quick; /* when the last quick death was seen */
};

/* SIGTERM/SIGINT: close the socket to new connections and have the workers drain. */
static void master_stop(struct master *m, int sig)
{
    if (m->stopping)
        return;
    drain_socket(m->pl);
    logmsg("stop: signal %d, %s; waiting for %d workers", sig,
           m->pl->own ? "socket closed to new connections" : "inherited socket left to its owner",
           nchildren);
    m->stopping = true;
    m->stop_at = svc_time_monotonic();
    workers_of(0, SIGTERM);
}

/* SIGHUP: a valid configuration replaces the workers gracefully; an invalid one is refused. */
static void master_reload(struct master *m)
{
    struct svc_config ncfg = {0};
    struct svc_err err;
    svc_err_clear(&err);
    if (load_config(&ncfg, m->o->config, &err) < 0) {
        logmsg("reload refused, keeping the running configuration: %s", err.message);
        return;
    }
    if (m->pl->listen_fd >= 0 && exposure_check(m->pl->listen_fd, &ncfg) != 0) {
        logmsg("reload refused, keeping the running configuration");
        svc_config_free(&ncfg);
        return;
    }
    apply_overrides(&ncfg, m->o);
    roots_check(&ncfg);
    if (!m->o->listen && m->pl->unix_path && ncfg.server.listen && m->cfg->server.listen &&
        strcmp(ncfg.server.listen, m->cfg->server.listen) != 0)
        logmsg("reload: server.listen changed; it takes effect on restart");
    svc_config_free(m->cfg);
    *m->cfg = ncfg;
    umask((mode_t)svc_config_octal(m->cfg->server.umask));
    workers_of(m->gen, SIGHUP); /* old workers finish and exit */
    m->gen++;
    m->quick_streak = 0;
    m->backoff = 0;
    m->next_spawn = 0;
    logmsg("reloaded configuration: %d workers", m->cfg->server.workers);
}

static void master_signal(struct master *m, int sig)
{
    if (sig == SIGTERM || sig == SIGINT) {
        master_stop(m, sig);
    } else if (sig == SIGUSR1 && m->pl->log_path) {
        log_rotate(m->pl->log_path, true);
        workers_of(0, SIGUSR1);
    } else if (sig == SIGHUP && !m->stopping) {
        master_reload(m);
    }
}

/* Reap the workers that exited; a crash loop (CRASH_LOOP_DEATHS quick deaths in a row) slows
 * the respawns down with a doubling delay. */
static void master_reap(struct master *m)
{
    int slow = 0;
    int quick = reap(m->cfg, m->gen, m->stopping, &slow);
    double t = svc_time_monotonic();
    /* one ran for a while (respawn at once), or calm for a while (a new streak) */
    if ((slow > 0 && quick == 0) || (quick > 0 && t - m->last_quick > 10.0)) {
        m->quick_streak = 0;
        m->backoff = 0;
    }
    if (quick == 0)
        return;
    m->last_quick = t;
    m->quick_streak += quick;
    if (m->quick_streak >= CRASH_LOOP_DEATHS && !m->stopping) {
        m->backoff = m->backoff > 0 ? m->backoff * 2 : 1.0;
        if (m->backoff > CRASH_BACKOFF_MAX_S)
            m->backoff = CRASH_BACKOFF_MAX_S;
        m->next_spawn = t + m->backoff;
        logmsg("crash loop: %d workers died within %.0fs of starting; next spawn in %.0fs",
               m->quick_streak, QUICK_DEATH_S, m->backoff);
    }
}

/* Before forking workers: loading the listing leaves freed chunks in glibc's unsorted list,
 * which each process sorts at its next mallocs, writing into every chunk, so every worker
 * would copy the master's heap (measured: 82 MB private a worker at 100k sessions after one
 * health request). Sorted here by allocations no free chunk fits, the heap stays shared. */
static void heap_settle(void)
{
#ifdef __GLIBC__
    for (int i = 0; i < 64; i++) {
        void *volatile p = malloc((size_t)4 << 20);
        free(p);
    }
    malloc_trim(0);
#endif
}

/* Core's background work (spawn.h): the listing's build and rescan, detached runs. In a
 * grandchild (nothing to reap) that tells through a pipe that it runs, whatever becomes of
 * the intermediate process (a test kills the worker right after). Its stdin and stdout are
 * /dev/null: it must not hold a socket inherited on fd 0, nor a CGI answer's pipe open
 * (the web server would wait for the work to end); stderr stays the log, but for plain CGI,
 * where it is the web server's pipe too (Apache's mod_cgi waits for it). */
static bool spawn_cgi;

static void spawned_stdio(void)
{
    int null = open("/dev/null", O_RDWR);
    if (null < 0)
        return;
    dup2(null, 0);
    dup2(null, 1);
    if (spawn_cgi)
        dup2(null, 2);
    if (null > 2)
        close(null);
}

static int spawn_detached(void (*work)(void *ctx), void *ctx, int flags)
{
    int started[2];
    if (pipe2(started, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(started[0]);
        if (flags & SVC_SPAWN_SETSID)
            setsid();
        if (fork() == 0 && write(started[1], "r", 1) == 1) {
            close(started[1]);
            spawned_stdio();
            if (!(flags & SVC_SPAWN_KEEP_FDS))
                close_range(3, ~0U, 0);
            work(ctx);
        }
        _exit(0);
    }
    int fork_errno = errno;
    close(started[1]);
    char byte;
    ssize_t got = -1;
    while (pid > 0 && (got = read(started[0], &byte, 1)) < 0 && errno == EINTR)
        ;
    close(started[0]);
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    errno = pid < 0 ? fork_errno : ECHILD;
    return got == 1 ? 0 : -1;
}

/* Bring the current generation up to server.workers (unless stopping or backing off); past
 * the grace period of a stop, kill the workers still busy. */
static void master_tend(struct master *m, double now)
{
    if (!m->stopping && now >= m->next_spawn) {
        if (workers_of(m->gen, 0) < m->cfg->server.workers) {
            svc_sessions_warm(m->cfg); /* new workers inherit the listing index, loaded */
            heap_settle();
        }
        while (workers_of(m->gen, 0) < m->cfg->server.workers &&
               spawn_worker(m->pl, m->cfg, m->gen) > 0)
            ;
    }
    double grace = (double)m->cfg->server.run_timeout_s + 30.0;
    if (m->stopping && now - m->stop_at > grace) {
        logmsg("stop: %d workers still busy after %.0fs, killing", nchildren, grace);
        workers_of(0, SIGKILL);
    }
}

static int master_main(struct pool *pl, struct svc_config *cfg, const struct opts *o)
{
    sigset_t set;
    pool_signals(&set, true);
    sigprocmask(SIG_BLOCK, &set, NULL); /* taken with sigtimedwait; workers inherit the mask */

    struct master m = {.pl = pl, .cfg = cfg, .o = o, .gen = 1};
    logmsg("master started: %d workers, max_requests %lld, config %s", cfg->server.workers,
           (long long)cfg->server.max_requests, cfg->source ? cfg->source : "(defaults)");
    for (;;) {
        double now = svc_time_monotonic();
        master_tend(&m, now);
        if (m.stopping && nchildren == 0)
            break;
        struct timespec ts = {0, 250 * 1000 * 1000};
        if (!m.stopping && m.next_spawn > now && m.next_spawn - now < 0.25)
            ts.tv_nsec = (long)((m.next_spawn - now) * 1e9);
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &ts);
        if (sig > 0)
            master_signal(&m, sig);
        master_reap(&m);
    }
    svc_sessions_seal(cfg);
    logmsg("stopped");
    return 0;
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f, "usage: svc-fcgi [--listen unix:PATH|tcp:[HOST:]PORT] [--workers N] "
               "[--config FILE] [--user USER] [--group GROUP] [--log FILE]\n"
               "       svc-fcgi --routes | --version | --help\n"
               "Without --listen: the socket on fd 0 or LISTEN_FDS, plain CGI when "
               "REQUEST_METHOD is set, else server.listen.\n"
               "Exit codes: 0 stopped, 1 failure, 2 usage, 3 configuration refused, "
               "4 socket could not be created.\n");
}

/* The ids --user/--group name (*uid -1 when no --user), and HOME set to --user's. Return 0,
 * or -1 after logging. */
static int resolve_identity(const struct opts *o, uid_t *uid, gid_t *gid)
{
    struct passwd *pw = o->user ? getpwnam(o->user) : NULL;
    struct group *gr = o->group ? getgrnam(o->group) : NULL;
    *uid = pw ? pw->pw_uid : (uid_t)-1;
    *gid = gr ? gr->gr_gid : pw ? pw->pw_gid : (gid_t)-1;
    if (o->user && !pw)
        return refuse(-1, "--user: no such user '%s'", o->user);
    if (o->group && !gr)
        return refuse(-1, "--group: no such group '%s'", o->group);
    if ((o->user || o->group) && geteuid() != 0 &&
        ((*uid != (uid_t)-1 && *uid != geteuid()) || (*gid != (gid_t)-1 && *gid != getegid())))
        return refuse(-1, "--user/--group: changing identity needs root (running as uid %d)",
                      (int)geteuid());
    if (pw) /* paths that default to ~ are the user's we become, as if started by that user */
        setenv("HOME", pw->pw_dir ? pw->pw_dir : "/", 1);
    return 0;
}

/* Become uid/gid for good (root only; a no-op when they are already ours). Return 0 or -1. */
static int drop_privileges(const struct opts *o, uid_t uid, gid_t gid)
{
    if (geteuid() != 0)
        return 0;
    if (gid != (gid_t)-1) {
        if (o->user ? initgroups(o->user, gid) < 0 : setgroups(0, NULL) < 0)
            return refuse(-1, "--user: cannot set supplementary groups: %s", strerror(errno));
        if (setgid(gid) < 0)
            return refuse(-1, "--group: setgid(%d): %s", (int)gid, strerror(errno));
    }
    if (uid != (uid_t)-1) {
        if (setuid(uid) < 0)
            return refuse(-1, "--user: setuid(%d): %s", (int)uid, strerror(errno));
        if (uid != 0 && setuid(0) == 0)
            return refuse(-1, "--user: root could be regained after dropping it; refusing to run");
    }
    return 0;
}

/* The pool's memory shared with its workers, mapped once before the first fork: the
 * metrics' counters (core/metrics.h) and each worker's run slot (held.h). */
static int shared_init(int slots)
{
    size_t m = (svc_metrics_size() + 63) & ~(size_t)63;
    void *p =
        mmap(NULL, m + held_size(slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    svc_metrics_share(p); /* a fresh anonymous mapping is zero: every counter starts at 0 */
    held_init((char *)p + m, slots);
    return 0;
}

/* Hand --log to --user, become --user/--group, then run the pool. */
static int pool_run(struct pool *pl, struct svc_config *cfg, const struct opts *o, uid_t uid,
                    gid_t gid)
{
    if (o->log && uid != (uid_t)-1 && geteuid() == 0 && chown(o->log, uid, gid) < 0)
        logmsg("--log: cannot hand %s to --user: %s", o->log, strerror(errno));
    if (drop_privileges(o, uid, gid) < 0)
        return EXIT_CONFIG;
    int rc = exposure_check(pl->listen_fd, cfg);
    if (rc != 0)
        return rc;
    roots_check(cfg);
    apply_overrides(cfg, o);
    if (shared_init(MAX_CHILDREN) != 0)
        logmsg("no shared memory (%s): /api/metrics counts per worker, stale runs wait for their "
               "next reader",
               strerror(errno));
    return master_main(pl, cfg, o);
}

/* Parse the command line into o: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option lopts[] = {
        {"listen", required_argument, NULL, 'l'}, {"workers", required_argument, NULL, 'w'},
        {"config", required_argument, NULL, 'c'}, {"user", required_argument, NULL, 'u'},
        {"group", required_argument, NULL, 'g'},  {"log", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
        {"routes", no_argument, NULL, 'R'},       {NULL, 0, NULL, 0}};
    const char **strings[] = {['l'] = &o->listen,
                              ['c'] = &o->config,
                              ['u'] = &o->user,
                              ['g'] = &o->group,
                              ['L'] = &o->log};
    int c;
    while ((c = getopt_long(argc, argv, "l:w:c:u:g:L:hV", lopts, NULL)) != -1) {
        char *end;
        long n;
        if (c > 0 && (size_t)c < sizeof strings / sizeof *strings && strings[c]) {
            *strings[c] = optarg;
            continue;
        }
        switch (c) {
        case 'w':
            n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 256) {
                fprintf(stderr, "svc-fcgi: --workers must be 1..256\n");
                return EXIT_USAGE;
            }
            o->workers = (int)n;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("svc-fcgi %s\n", SVC_VERSION);
            return 0;
        case 'R':
            http_routes_print(stdout);
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
    return -1;
}

/* The socket handed to us unless --listen names one, fd 0 or 3 (see the top); else -1, with
 * *cgi set for one plain CGI request (decided before the config: CGI answers its error). */
static int inherited_socket(struct opts *o, bool *cgi)
{
    int fd = -1;
    const char *lfds = getenv("LISTEN_FDS"), *lpid = getenv("LISTEN_PID");
    if (o->listen) {
        /* opened by pool_open */
    } else if (!FCGX_IsCGI() || is_listening_socket(0)) {
        fd = 0;
    } else if (lfds && atoi(lfds) >= 1 && (!lpid || atoi(lpid) == (int)getpid()) &&
               is_listening_socket(3)) {
        fd = 3;
    } else if (getenv("REQUEST_METHOD") || getenv("GATEWAY_INTERFACE")) {
        *cgi = true;
    }
    if (fd >= 0)
        o->inherited = fd == 0 ? "fd:0" : "fd:3";
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");
    return fd;
}

/* Open the pool's socket (or take the inherited pl->listen_fd), non-blocking: a worker that
 * loses the race for a connection must not block in accept(2). 0, or an exit code. */
static int pool_open(struct pool *pl, const struct opts *o, const struct svc_config *cfg)
{
    if (pl->listen_fd >= 0) {
        logmsg("serving the socket on fd %d", pl->listen_fd);
        pl->inherited_flags = fcntl(pl->listen_fd, F_GETFL);
        if (pl->inherited_flags < 0 ||
            fcntl(pl->listen_fd, F_SETFL, pl->inherited_flags | O_NONBLOCK) < 0)
            return refuse(EXIT_SOCKET, "fd %d: cannot make it non-blocking: %s", pl->listen_fd,
                          strerror(errno));
        return 0;
    }
    gid_t sock_gid = (gid_t)-1;
    if (cfg->server.socket_group[0]) {
        struct group *gr = getgrnam(cfg->server.socket_group);
        if (!gr)
            return refuse(EXIT_CONFIG, "config: server.socket_group: no such group '%s'",
                          cfg->server.socket_group);
        sock_gid = gr->gr_gid;
    }
    const char *spec = o->listen ? o->listen : cfg->server.listen;
    int fd =
        open_listen(spec ? spec : "", o->listen ? "--listen" : "server.listen",
                    (mode_t)svc_config_octal(cfg->server.socket_mode), sock_gid, &pl->unix_path);
    if (fd < 0)
        return -fd;
    pl->listen_fd = fd;
    pl->own = true;
    logmsg("listening on %s", spec);
    return 0;
}

/* Close the pool's socket: ours is removed (when the drain did not already), an inherited
 * one gets its file flags back for its owner. */
static void pool_close(struct pool *pl)
{
    if (pl->listen_fd >= 0) {
        if (pl->unix_path)
            unlink(pl->unix_path);
        if (pl->inherited_flags >= 0)
            fcntl(pl->listen_fd, F_SETFL, pl->inherited_flags);
        close(pl->listen_fd);
    }
    free(pl->unix_path);
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    svc_log_set_sink(core_log_sink, NULL);
    svc_oom_set_handler(oom_abort);
    svc_index_set_spawn(spawn_detached);
    svc_runs_set_spawn(spawn_detached);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.log && log_reopen(o.log) < 0)
        return refuse(EXIT_CONFIG, "--log: cannot open %s: %s", o.log, strerror(errno));
    signal(SIGPIPE, SIG_IGN);
    if (FCGX_Init() != 0)
        return refuse(EXIT_FAIL, "FCGX_Init failed");
    h_base_start(svc_time_now(), (int)getpid());
    bool cgi = false;
    struct pool pl = {
        .listen_fd = inherited_socket(&o, &cgi), .inherited_flags = -1, .log_path = o.log};

    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    if (!cgi && resolve_identity(&o, &uid, &gid) < 0)
        return EXIT_CONFIG;
    struct svc_config cfg = {0};
    struct svc_err err;
    svc_err_clear(&err);
    if (load_config(&cfg, o.config, &err) < 0) {
        if (!cgi)
            return refuse(EXIT_CONFIG, "config: %s", err.message);
        serve_one(NULL, NULL, &err); /* plain CGI answers the refusal */
        return 0;
    }
    umask((mode_t)svc_config_octal(cfg.server.umask));
    rc = 0;
    spawn_cgi = cgi;
    if (cgi)
        serve_one(NULL, &cfg, NULL);
    else if ((rc = pool_open(&pl, &o, &cfg)) == 0)
        rc = pool_run(&pl, &cfg, &o, uid, gid);
    svc_mcp_stop_all();
    pool_close(&pl);
    svc_config_free(&cfg);
    return rc;
}
