/* svc-fcgi: the FastCGI worker pool (SPEC 6), or one plain CGI request.
 *
 * Socket, in this order: --listen unix:PATH|tcp:[HOST:]PORT; a listening socket on fd 0
 * (spawn-fcgi, systemd StandardInput=socket, mod_fcgid); LISTEN_FDS (fd 3, systemd socket
 * activation); plain CGI when none of those and REQUEST_METHOD is set (one request from the
 * environment and stdin, then exit); else server.listen from the configuration.
 *
 * Master: forks `workers` workers sharing the socket (libfcgi serializes accept with an
 * fcntl lock), respawns dead ones (a crash loop is slowed to one spawn a second), reloads
 * on SIGHUP (a config that fails validation is refused, old workers go on; a valid one
 * replaces the workers gracefully), and on SIGTERM/SIGINT stops them and waits for their
 * in-flight requests. Signals are handled synchronously with sigtimedwait.
 *
 * Worker: SIGTERM/SIGINT/SIGHUP are blocked while a request runs and unblocked only around
 * FCGX_Accept_r, so a signal never interrupts a request's reads or writes (libfcgi does not
 * retry on EINTR); the handler sets a flag and calls FCGX_ShutdownPending(). The master
 * repeats SIGTERM every second while stopping, which closes the small window where a signal
 * lands between libfcgi's shutdown check and accept(2). A worker exits after max_requests.
 * Children that workers start inherit the blocked mask: they must reset it before exec. */
#include <errno.h>
#include <fcgiapp.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "handlers.h"
#include "held.h"
#include "http.h"
#include "log.h"
#include "query.h"
#include "session.h"
#include "util.h"

#define BACKLOG 256
#define MAX_CHILDREN 1024

struct opts {
    const char *listen;
    const char *config;
    int workers; /* 0: from config */
};

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

static void log_warnings(const struct svc_config *cfg)
{
    for (size_t i = 0; i < cfg->nwarnings && cfg->warnings && cfg->warnings[i]; i++)
        logmsg("config warning: %s", cfg->warnings[i]);
}

/* ---- listening socket ---- */

/* Open "unix:PATH" or "tcp:[HOST:]PORT". Returns the fd, or -1 after logging. */
static int open_listen(const char *spec, char **unix_path)
{
    *unix_path = NULL;
    if (strncmp(spec, "unix:", 5) == 0) {
        const char *path = spec + 5;
        struct sockaddr_un sun;
        if (!*path || strlen(path) >= sizeof sun.sun_path || strchr(path, ':')) {
            logmsg("listen: bad unix socket path '%s' (empty, too long or with ':')", path);
            return -1;
        }
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                logmsg("listen: %s exists and is not a socket", path);
                return -1;
            }
            /* Refuse to steal the socket of a live instance. */
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            memset(&sun, 0, sizeof sun);
            sun.sun_family = AF_UNIX;
            memcpy(sun.sun_path, path, strlen(path));
            if (s >= 0 && connect(s, (struct sockaddr *)&sun, sizeof sun) == 0) {
                close(s);
                logmsg("listen: %s is in use by another process", path);
                return -1;
            }
            if (s >= 0)
                close(s);
        }
        char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash && slash != dir) {
            *slash = '\0';
            struct svc_err e;
            if (!svc_is_dir(dir) && svc_mkdirs(dir, 0755, &e) < 0)
                logmsg("listen: cannot create %s: %s", dir, e.message);
        }
        free(dir);
        int fd = FCGX_OpenSocket(path, BACKLOG);
        if (fd < 0) {
            logmsg("listen: cannot listen on %s: %s", path, strerror(errno));
            return -1;
        }
        /* nginx may run as another user (nobody, www-data): let it connect. */
        if (chmod(path, 0666) < 0)
            logmsg("listen: chmod %s: %s", path, strerror(errno));
        *unix_path = strdup(path);
        return fd;
    }
    if (strncmp(spec, "tcp:", 4) == 0) {
        const char *hp = spec + 4;
        const char *colon = strrchr(hp, ':');
        const char *port = colon ? colon + 1 : hp;
        char host[256] = "127.0.0.1";
        if (colon) {
            if ((size_t)(colon - hp) >= sizeof host || colon == hp) {
                logmsg("listen: bad host in '%s'", spec);
                return -1;
            }
            snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
        }
        char *end;
        long p = strtol(port, &end, 10);
        if (!*port || *end || p < 1 || p > 65535) {
            logmsg("listen: bad port in '%s'", spec);
            return -1;
        }
        char bind_to[300];
        snprintf(bind_to, sizeof bind_to, "%s:%ld", host, p);
        int fd = FCGX_OpenSocket(bind_to, BACKLOG);
        if (fd < 0) {
            logmsg("listen: cannot listen on %s: %s", bind_to, strerror(errno));
            return -1;
        }
        return fd;
    }
    logmsg("listen: '%s' must be unix:PATH or tcp:[HOST:]PORT", spec);
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

static volatile sig_atomic_t worker_stop;

static void worker_signal(int sig)
{
    (void)sig;
    worker_stop = 1;
    FCGX_ShutdownPending();
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

static int worker_main(int listen_fd, const struct svc_config *cfg, pid_t master)
{
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGTERM);
    sigaddset(&stopset, SIGINT);
    sigaddset(&stopset, SIGHUP);
    sigprocmask(SIG_BLOCK, &stopset, NULL);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: accept(2) must return EINTR */
    sa.sa_handler = worker_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);

    /* Die with the master rather than linger as an orphan. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master)
        return 0;

    FCGX_Request fr;
    if (FCGX_InitRequest(&fr, listen_fd, 0) != 0) {
        logmsg("worker: FCGX_InitRequest failed");
        return 1;
    }
    int64_t served = 0;
    while (!worker_stop && served < cfg->server.max_requests) {
        sigprocmask(SIG_UNBLOCK, &stopset, NULL);
        int rc = worker_stop ? -1 : FCGX_Accept_r(&fr);
        sigprocmask(SIG_BLOCK, &stopset, NULL);
        if (rc < 0) {
            if (worker_stop)
                break;
            if (rc == -EINTR || rc == -ECONNABORTED)
                continue;
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
    int slot; /* held.h */
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

static pid_t spawn_worker(int listen_fd, const struct svc_config *cfg, unsigned gen,
                          const sigset_t *orig_mask)
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
        (void)orig_mask;
        held_attach(slot);
        int rc = worker_main(listen_fd, cfg, master);
        svc_config_free((struct svc_config *)cfg);
        exit(rc); /* exit, not _exit: LeakSanitizer runs at exit in asan builds */
    }
    children[nchildren].pid = pid;
    children[nchildren].gen = gen;
    children[nchildren].slot = slot;
    nchildren++;
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
            logmsg("worker %d died during a run on session %s: repair failed: %s", (int)pid,
                   sid, err.message);
    }
    held_release(slot);
}

/* Reap exited children; returns how many of generation gen died abnormally. */
static int reap(const struct svc_config *cfg, unsigned gen, bool stopping)
{
    int crashed = 0;
    int status;
    pid_t pid;
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
            if (bad && children[i].gen == gen)
                crashed++;
            repair_held(cfg, children[i].slot, pid);
            children[i] = children[--nchildren];
            break;
        }
    }
    return crashed;
}

static int master_main(int listen_fd, struct svc_config *cfg, const struct opts *o,
                       const char *unix_path)
{
    sigset_t set, orig;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, &orig);

    unsigned gen = 1;
    bool stopping = false;
    double stop_at = 0, last_term = 0, next_spawn = 0;
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
            while (count_gen(gen) < nworkers && spawn_worker(listen_fd, cfg, gen, &orig) > 0)
                ;
        }
        if (stopping) {
            if (nchildren == 0)
                break;
            /* Repeat SIGTERM: it is blocked (pending) in busy workers, and wakes an idle
             * worker that raced into accept(2). Past the grace period, SIGKILL. */
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
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            if (!stopping) {
                logmsg("stop: signal %d, waiting for %d workers", sig, nchildren);
                stopping = true;
                stop_at = svc_time_monotonic();
                last_term = stop_at;
                signal_gen(0, true, SIGTERM);
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
                if (!o->listen && unix_path && ncfg.server.listen && cfg->server.listen &&
                    strcmp(ncfg.server.listen, cfg->server.listen) != 0)
                    logmsg("reload: server.listen changed; it takes effect on restart");
                svc_config_free(cfg);
                *cfg = ncfg;
                signal_gen(gen, false, SIGTERM); /* old workers finish and exit */
                gen++;
                nworkers = o->workers > 0 ? o->workers : cfg->server.workers;
                next_spawn = 0;
                logmsg("reloaded configuration: %d workers", nworkers);
            }
        }
        int crashed = reap(cfg, gen, stopping);
        if (crashed > 0)
            next_spawn = svc_time_monotonic() + 1.0; /* slow down a crash loop */
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
               "[--config FILE]\n"
               "Without --listen: the socket on fd 0 or LISTEN_FDS, plain CGI when "
               "REQUEST_METHOD is set, else server.listen.\n");
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    svc_log_set_sink(core_log_sink, NULL);
    static const struct option lopts[] = {
        {"listen", required_argument, NULL, 'l'}, {"workers", required_argument, NULL, 'w'},
        {"config", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "l:w:c:hV", lopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'c': o.config = optarg; break;
        case 'w': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 256) {
                fprintf(stderr, "svc-fcgi: --workers must be 1..256\n");
                return 2;
            }
            o.workers = (int)n;
            break;
        }
        case 'h': usage(stdout); return 0;
        case 'V': printf("svc-fcgi %s\n", SVC_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    if (FCGX_Init() != 0) {
        logmsg("FCGX_Init failed");
        return 1;
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
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");

    struct svc_config cfg;
    struct svc_err err;
    memset(&cfg, 0, sizeof cfg);
    svc_err_clear(&err);
    if (load_config(&cfg, o.config, &err) < 0) {
        if (cgi)
            return serve_cgi(NULL, &err);
        logmsg("config: %s", err.message);
        return 1;
    }
    log_warnings(&cfg);
    if (cgi) {
        int rc = serve_cgi(&cfg, NULL);
        svc_config_free(&cfg);
        return rc;
    }

    char *unix_path = NULL;
    if (listen_fd < 0) {
        const char *spec = o.listen ? o.listen : cfg.server.listen;
        listen_fd = open_listen(spec ? spec : "", &unix_path);
        if (listen_fd < 0) {
            svc_config_free(&cfg);
            return 1;
        }
        logmsg("listening on %s", spec);
    } else {
        logmsg("serving the socket on fd %d", listen_fd);
    }

    int rc = master_main(listen_fd, &cfg, &o, unix_path);
    if (unix_path) {
        unlink(unix_path);
        free(unix_path);
    }
    close(listen_fd);
    svc_config_free(&cfg);
    return rc;
}
