/* cshttpd: the reference server. Serves a folder (--root) through the
 * router's static fallback and a demo application under /demo, with a live
 * status page. Runs in the foreground; SIGTERM or SIGINT stop it
 * gracefully, `cshttpd --stop PIDFILE` sends SIGTERM and waits. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/server.h>
#include <cshttp/web/router.h>
#include <cshttp/web/static.h>

#include "demo.h"

static FILE *access_log;

/* Combined log format, one fwrite per line (stdio locks the stream). */
static void log_line(void *user, const cshs_request_log *e)
{
    (void)user;
    char when[64], line[4096];
    time_t t = (time_t)(e->time_unix_ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S %z", &tm);
    int n = snprintf(line, sizeof line, "%s - - [%s] \"%s %s HTTP/1.%d\" %d %llu \"%s\" \"%s\"\n",
                     e->remote_addr, when, e->method, e->target, e->version_minor, e->status,
                     (unsigned long long)e->bytes_out, e->referer ? e->referer : "-",
                     e->user_agent ? e->user_agent : "-");
    if (n > 0) {
        fwrite(line, 1, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, access_log);
        fflush(access_log);
    }
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: cshttpd [options]\n"
        "  --port N                 TCP port (default: 8080; 0: any free port)\n"
        "  --root DIR               folder served (default: www)\n"
        "  --threads N              workers waiting from the start (default: 2)\n"
        "  --config FILE            'name = value' lines: every option below (root,\n"
        "                           access_log, ... too); the command line wins\n"
        "  --pid-file FILE          write the process id there (default: none)\n"
        "  --stop PIDFILE           stop the server whose pid is in PIDFILE, and wait\n"
        "  --access-log FILE|-      combined-format access log (default: none)\n"
        "  --tls-cert, --tls-key    HTTPS on --tls-port with these PEM files; SIGHUP reloads them\n"
        "  --help                   this text\n"
        "engine options (also accepted in the config file, with '_' for '-'):\n");
    cshs_options_help(out);
}

static int stop_other(const char *pidfile)
{
    FILE *f = fopen(pidfile, "r");
    long pid = 0;
    if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 0) {
        fprintf(stderr, "cshttpd: cannot read a pid from %s\n", pidfile);
        if (f) fclose(f);
        return 1;
    }
    fclose(f);
    if (kill((pid_t)pid, SIGTERM) < 0) {
        fprintf(stderr, "cshttpd: kill %ld: %s\n", pid, strerror(errno));
        return 1;
    }
    for (int i = 0; i < 600; i++) { /* up to 60 s */
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) return 0;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "cshttpd: %ld still running\n", pid);
    return 1;
}

/* cshttpd's own settings, from the command line or the config file */
typedef struct app_settings {
    char root[4096];
    char pid_file[4096];
    char log_path[4096];
    char threads[32];
} app_settings;

static int name_is(const char *name, const char *want)
{
    /* dashes and underscores are the same, as for the engine's names */
    for (; *name && *want; name++, want++) {
        char a = *name == '-' ? '_' : *name, b = *want == '-' ? '_' : *want;
        if (a != b) return 0;
    }
    return *name == *want;
}

static int app_option(void *data, const char *name, const char *value, char *err, size_t errlen)
{
    app_settings *a = data;
    char *dst = name_is(name, "root")         ? a->root
                : name_is(name, "pid_file")   ? a->pid_file
                : name_is(name, "access_log") ? a->log_path
                : name_is(name, "threads")    ? a->threads
                                              : NULL;
    size_t cap = dst == a->threads ? sizeof a->threads : sizeof a->root;
    if (!dst) return 0;
    if (strlen(value) >= cap) {
        snprintf(err, errlen, "%s: value too long", name);
        return -EINVAL;
    }
    strcpy(dst, value);
    return 1;
}

int main(int argc, char **argv)
{
    cshs_options o;
    cshs_options_init(&o);
    char err[512];
    static app_settings conf = {"www", "", "", ""};
    const char *root, *pid_file = NULL, *log_path = NULL;

    /* the config file first, so that the command line overrides it */
    for (int i = 1; i < argc; i++) {
        const char *cfg = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc) cfg = argv[i + 1];
        if (!strncmp(argv[i], "--config=", 9)) cfg = argv[i] + 9;
        if (cfg && cshs_options_load_file_with(&o, cfg, app_option, &conf, err, sizeof err) < 0) {
            fprintf(stderr, "cshttpd: %s\n", err);
            return 2;
        }
    }
    root = conf.root;
    if (conf.pid_file[0]) pid_file = conf.pid_file;
    if (conf.log_path[0]) log_path = conf.log_path;
    if (conf.threads[0]) {
        if (cshs_options_set(&o, "min_threads", conf.threads, err, sizeof err) < 0) {
            fprintf(stderr, "cshttpd: threads: %s\n", err);
            return 2;
        }
        if (o.max_threads < o.min_threads) o.max_threads = o.min_threads;
    }
    if (cshs_options_parse_args(&o, &argc, argv, err, sizeof err) < 0) {
        fprintf(stderr, "cshttpd: %s\n", err);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--root") && v) {
            root = v;
            i++;
        } else if (!strcmp(a, "--threads") && v) {
            if (cshs_options_set(&o, "min_threads", v, err, sizeof err) < 0) {
                fprintf(stderr, "cshttpd: --threads: %s\n", err);
                return 2;
            }
            if (o.max_threads < o.min_threads) o.max_threads = o.min_threads;
            i++;
        } else if (!strcmp(a, "--config") && v) {
            i++;
        } else if (!strncmp(a, "--config=", 9)) {
        } else if (!strcmp(a, "--pid-file") && v) {
            pid_file = v;
            i++;
        } else if (!strcmp(a, "--access-log") && v) {
            log_path = v;
            i++;
        } else if (!strcmp(a, "--stop") && v) {
            return stop_other(v);
        } else {
            fprintf(stderr, "cshttpd: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
    }
    const char *why;
    if (cshs_options_check(&o, &why) < 0) {
        fprintf(stderr, "cshttpd: %s\n", why);
        return 2;
    }
    struct stat st;
    if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "cshttpd: --root %s is not a folder\n", root);
        return 2;
    }
    if (log_path) {
        access_log = strcmp(log_path, "-") == 0 ? stdout : fopen(log_path, "a");
        if (!access_log) {
            fprintf(stderr, "cshttpd: %s: %s\n", log_path, strerror(errno));
            return 2;
        }
    }

    cshw_router *router = cshw_router_new();
    if (!router || demo_routes(router) < 0) {
        fprintf(stderr, "cshttpd: routes: %s\n", router ? cshw_router_error(router) : "no memory");
        return 1;
    }
    cshw_static_options so;
    cshw_static_options_init(&so);
    so.root = root;
    so.directory_listing = 1;
    cshw_router_set_static(router, &so);

    /* SIGTERM, SIGINT and SIGHUP are taken by sigwait below: blocked in
     * every thread, the workers included */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    cshs_server *s = cshs_server_new(&o, NULL, router);
    if (!s) {
        fprintf(stderr, "cshttpd: cannot create the server\n");
        return 1;
    }
    demo_set_server(s);
    if (access_log) cshs_server_set_log(s, log_line, NULL);
    int r = cshs_server_start(s);
    if (r < 0) {
        fprintf(stderr, "cshttpd: cannot listen: %s\n", strerror(-r));
        return 1;
    }
    if (pid_file) {
        FILE *f = fopen(pid_file, "w");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    if (o.address && *o.address)
        printf("cshttpd: listening on http://%s%s%s:%u/ (root %s)\n",
               strchr(o.address, ':') ? "[" : "", o.address, strchr(o.address, ':') ? "]" : "",
               cshs_server_port(s, 0), root);
    if (o.address6 && *o.address6)
        printf("cshttpd: listening on http://[%s]:%u/\n", o.address6,
               cshs_server_port(s, (o.address && *o.address) ? 1 : 0));
    if (o.unix_path) printf("cshttpd: listening on unix:%s\n", o.unix_path);
    if (o.tls_cert && *o.tls_cert && o.address && *o.address)
        printf("cshttpd: listening on https://%s%s%s:%u/\n", strchr(o.address, ':') ? "[" : "",
               o.address, strchr(o.address, ':') ? "]" : "", cshs_server_tls_port(s, 0));
    fflush(stdout);

    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (sig == SIGHUP) {
            /* new certificate and key files for new connections */
            if (o.tls_cert && *o.tls_cert) {
                int e = cshs_server_reload_tls(s);
                printf("cshttpd: TLS reload %s\n", e == 0 ? "done" : "failed, the old files stay");
                fflush(stdout);
            }
            continue;
        }
        break;
    }
    printf("cshttpd: stopping\n");
    fflush(stdout);
    int cut = cshs_server_stop(s, -1);
    printf("cshttpd: stopped (%d connection%s cut at the deadline)\n", cut, cut == 1 ? "" : "s");
    fflush(stdout);
    cshs_server_free(s);
    cshw_router_free(router);
    if (pid_file) unlink(pid_file);
    if (access_log && access_log != stdout) fclose(access_log);
    cshs_options_release(&o);
    return 0;
}
