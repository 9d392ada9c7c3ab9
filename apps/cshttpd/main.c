/* cshttpd: the reference server. Serves a folder (--root) through the
 * router's static fallback and nothing else by default; --demo adds the
 * demo application under /demo and the status page, --status PATH the
 * status page alone, --listing folder listings. Runs in the foreground:
 * SIGTERM or SIGINT stop it gracefully, SIGHUP reloads the TLS files,
 * SIGUSR1 reopens the logs; `cshttpd --stop PIDFILE` sends SIGTERM and
 * waits. --check-config checks a configuration and exits;
 * --install-service writes a systemd unit for it. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cshttp/server.h>
#include <cshttp/web/mime.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>
#include <cshttp/web/router.h>
#include <cshttp/web/static.h>

#include "app.h"
#include "demo.h"
#include "log.h"
#include "proxy.h"
#include "proxy_buffer.h"
#include "service.h"

#define PROBLEMS_MAX 32

/* cshttpd's own settings, from the config file and the command line */
typedef struct settings {
    char root[4096];
    char pid_file[4096];
    char access_log[4096];
    char access_log_format[16];
    char error_log[4096];
    char threads[32];
    char status_path[1024];
    char status_allow[1024];
    char mime_types[4096];
    int mime_types_set; /* given explicitly: a missing file is a problem */
    int installing;     /* --install-service: systemd makes /var/log/NAME */
    int demo, listing;
    char *mime_overrides[64];
    size_t nmime;
    char *proxies[PROXY_ROUTES_MAX + 1]; /* PREFIX=URL, as given */
    size_t nproxies;
    char proxy_timeout_ms[32];
    char proxy_max_fails[32];
    char proxy_fail_timeout_ms[32];
    char proxy_pool_size[32];
    char proxy_acquire_timeout_ms[32];
    char proxy_ca_file[4096];
    int proxy_insecure;
    int proxy_underscores;
    int proxy_buffering;         /* -1: not given (on) */
    int proxy_request_buffering; /* -1: not given (on) */
    char proxy_max_temp_file_size[32];
    char proxy_temp_max[32];
    char proxy_max_held[32];
    char ws_max_message[32];
    char ws_allow_origins[1024];
    char ws_ping_interval_ms[32];
    char ws_pong_timeout_ms[32];
    int ws_deflate; /* -1: not given (on) */
    char config[4096];
    /* the config file's settings of cshttpd's own that were taken, each
     * once (names as written there): a second one is refused */
    char config_keys[32][40];
    size_t nconfig_keys;
    /* what is wrong, all of it */
    char problems[PROBLEMS_MAX][600];
    size_t nproblems;
    size_t lost_problems;
} settings;

static void problem(settings *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(settings *s, const char *fmt, ...)
{
    if (s->nproblems == PROBLEMS_MAX) {
        s->lost_problems++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->problems[s->nproblems++], sizeof s->problems[0], fmt, ap);
    va_end(ap);
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: cshttpd [options]\n"
        "Serves the folder --root and nothing else unless told (--demo, --status, --listing).\n"
        "  --port N                 TCP port (default: 8080; 0: any free port)\n"
        "  --root DIR               folder served (default: www)\n"
        "  --listing                list folders that have no index file (default: off)\n"
        "  --demo                   the demo application under /demo and the status page\n"
        "                           at /status (default: off)\n"
        "  --status PATH            the status page at PATH (and PATH.json) (default: none)\n"
        "  --status-allow CIDR,...  peers that may read it, IPv4/IPv6 CIDRs and 'unix'\n"
        "                           (default: 127.0.0.0/8,::1,unix; others get 403)\n"
        "  --threads N              threads kept (default: 2; at least loops + 1)\n"
        "  --config FILE            'name = value' lines: every option here and below\n"
        "                           (root, demo = yes, ...); the command line wins\n"
        "  --pid-file FILE          write the process id there (default: none)\n"
        "  --stop PIDFILE           stop the server whose pid is in PIDFILE, and wait\n"
        "  --access-log FILE|-      access log, '-' for stdout (default: none)\n"
        "  --access-log-format F    combined or json (default: combined)\n"
        "  --error-log FILE|-       errors and notices with time and level, '-' for\n"
        "                           stderr (default: -)\n"
        "  --mime-types FILE        extensions to types, mime.types format (default:\n"
        "                           /etc/mime.types when it exists; 'none': built-in only)\n"
        "  --mime-type EXT=TYPE     the type of an extension, above all others (repeatable)\n"
        "  --tls-cert, --tls-key    HTTPS on --tls-port with these PEM files; SIGHUP reloads them\n"
        "  --proxy PREFIX=URL[,URL...]  requests whose path starts with PREFIX go to an origin\n"
        "                           URL (http:// or https://host[:port]): the one with the\n"
        "                           fewest requests in flight; bodies streamed both ways\n"
        "                           (repeatable; default: none)\n"
        "  --proxy-max-fails N      failures (connect, TLS, timeout) that leave an origin out\n"
        "                           (default: 1; 0: never)\n"
        "  --proxy-fail-timeout-ms N  counted within, and left out for, N ms (default: 10000)\n"
        "  --proxy-timeout-ms N     the origin's response head, and each wait for its body,\n"
        "                           within N ms, else 504 (default: 60000)\n"
        "  --proxy-pool-size N      connections per origin at most (default: 32)\n"
        "  --proxy-acquire-timeout-ms N  how long a request waits for a connection to its\n"
        "                           origin (the pool full, or the origin refusing): past\n"
        "                           it, 504, or 502 with the connect's error (default: 2000)\n"
        "  --proxy-ca-file FILE     PEM certificates trusted for https:// origins (default:\n"
        "                           the system's store; certificates are always verified)\n"
        "  --proxy-insecure         do not verify https:// origins' certificates (tests only)\n"
        "  --proxy-underscores      pass on request fields whose names hold '_' (default:\n"
        "                           dropped, as nginx does: X_Forwarded_For would reach an\n"
        "                           origin that reads names with '_' and '-' alike)\n"
        "  --proxy-buffering yes|no  read a streamed answer as fast as the origin sends it\n"
        "                           into a temporary file, sent on at the client's pace, so\n"
        "                           a slow client holds no origin connection (default: yes)\n"
        "  --proxy-request-buffering yes|no  read a request's body whole (memory, then a\n"
        "                           temporary file past --body-buffer) before it goes to\n"
        "                           its origin; no: it is passed on as it comes, Expect:\n"
        "                           100-continue answered once the origin has the head;\n"
        "                           neither holds a thread (default: yes)\n"
        "  --proxy-max-temp-file-size SIZE  one answer's file at most; past it the rest goes\n"
        "                           at the client's pace (default: 1g; k, m, g suffixes)\n"
        "  --proxy-temp-max SIZE    all answers' files at once at most (default: 4g)\n"
        "  --proxy-max-held N       answers past their buffering whose origin connection\n"
        "                           leaves its pool's count, at once (default: 256)\n"
        "  --ws-max-message SIZE    a WebSocket message at most, inflated (close 1009 past\n"
        "                           it) (default: 1m; k, m, g suffixes)\n"
        "  --ws-allow-origins LIST  origins whose pages may open WebSockets, such as\n"
        "                           https://a.example,https://b.example; '*': any\n"
        "                           (default: the server's own; 403 for others)\n"
        "  --ws-ping-interval-ms N  a ping after N ms of silence from the peer (default:\n"
        "                           30000; 0: none)\n"
        "  --ws-pong-timeout-ms N   the socket closes when nothing came N ms after a ping\n"
        "                           (default: 20000)\n"
        "  --ws-deflate yes|no      permessage-deflate when the client offers it (default:\n"
        "                           yes)\n"
        "  --check-config           check the config file and options, print every problem,\n"
        "                           exit 0 (fine) or 1\n"
        "  --install-service        write a systemd unit that runs cshttpd --config FILE\n"
        "                           (needs --config) and enable it when systemd runs\n"
        "  --uninstall-service      disable and remove that unit\n"
        "  --service-name NAME      the unit's name (default: cshttpd)\n"
        "  --unit-dir DIR           where the unit goes (default: $CSHTTPD_UNIT_DIR or\n"
        "                           /etc/systemd/system)\n"
        "  --help                   this text\n"
        "signals: TERM/INT stop gracefully, HUP reloads the TLS files, USR1 reopens the logs\n"
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

static int name_is(const char *name, const char *want)
{
    /* dashes and underscores are the same, as for the engine's names */
    for (; *name && *want; name++, want++) {
        char a = *name == '-' ? '_' : *name, b = *want == '-' ? '_' : *want;
        if (a != b) return 0;
    }
    return *name == *want;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(v, yes[i]) == 0) return *out = 1, 0;
        if (strcmp(v, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

/* One of cshttpd's settings (config name or flag without "--"). 1 when the
 * name is cshttpd's (a bad value becomes a problem), 0 when it is not. */
static int set_app(settings *s, const char *name, const char *value)
{
    struct {
        const char *name;
        char *dst;
        size_t cap;
    } strs[] = {
        {"root", s->root, sizeof s->root},
        {"pid_file", s->pid_file, sizeof s->pid_file},
        {"access_log", s->access_log, sizeof s->access_log},
        {"access_log_format", s->access_log_format, sizeof s->access_log_format},
        {"error_log", s->error_log, sizeof s->error_log},
        {"threads", s->threads, sizeof s->threads},
        {"status", s->status_path, sizeof s->status_path},
        {"status_allow", s->status_allow, sizeof s->status_allow},
        {"mime_types", s->mime_types, sizeof s->mime_types},
        {"proxy_timeout_ms", s->proxy_timeout_ms, sizeof s->proxy_timeout_ms},
        {"proxy_max_fails", s->proxy_max_fails, sizeof s->proxy_max_fails},
        {"proxy_fail_timeout_ms", s->proxy_fail_timeout_ms, sizeof s->proxy_fail_timeout_ms},
        {"proxy_pool_size", s->proxy_pool_size, sizeof s->proxy_pool_size},
        {"proxy_acquire_timeout_ms", s->proxy_acquire_timeout_ms,
         sizeof s->proxy_acquire_timeout_ms},
        {"proxy_ca_file", s->proxy_ca_file, sizeof s->proxy_ca_file},
        {"proxy_max_temp_file_size", s->proxy_max_temp_file_size,
         sizeof s->proxy_max_temp_file_size},
        {"proxy_temp_max", s->proxy_temp_max, sizeof s->proxy_temp_max},
        {"proxy_max_held", s->proxy_max_held, sizeof s->proxy_max_held},
        {"ws_max_message", s->ws_max_message, sizeof s->ws_max_message},
        {"ws_allow_origins", s->ws_allow_origins, sizeof s->ws_allow_origins},
        {"ws_ping_interval_ms", s->ws_ping_interval_ms, sizeof s->ws_ping_interval_ms},
        {"ws_pong_timeout_ms", s->ws_pong_timeout_ms, sizeof s->ws_pong_timeout_ms},
    };
    if (name_is(name, "status_allow") && !*value) {
        problem(s, "status_allow: empty list (leave it out for loopback only)");
        return 1;
    }
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (!name_is(name, strs[i].name)) continue;
        if (strlen(value) >= strs[i].cap)
            problem(s, "%s: value too long", strs[i].name);
        else
            strcpy(strs[i].dst, value);
        if (strs[i].dst == s->mime_types) s->mime_types_set = 1;
        return 1;
    }
    if (name_is(name, "proxy")) {
        if (s->nproxies == sizeof s->proxies / sizeof s->proxies[0]) {
            problem(s, "proxy: more than %d prefixes", PROXY_ROUTES_MAX);
        } else {
            char *c = strdup(value);
            if (c) s->proxies[s->nproxies++] = c;
        }
        return 1;
    }
    if (name_is(name, "proxy_buffering")) {
        if (parse_bool(value, &s->proxy_buffering) < 0)
            problem(s, "proxy_buffering: '%s' is not yes or no", value);
        return 1;
    }
    if (name_is(name, "ws_deflate")) {
        if (parse_bool(value, &s->ws_deflate) < 0)
            problem(s, "ws_deflate: '%s' is not yes or no", value);
        return 1;
    }
    if (name_is(name, "proxy_request_buffering")) {
        if (parse_bool(value, &s->proxy_request_buffering) < 0)
            problem(s, "proxy_request_buffering: '%s' is not yes or no", value);
        return 1;
    }
    if (name_is(name, "proxy_insecure") || name_is(name, "proxy_underscores")) {
        int under = name_is(name, "proxy_underscores");
        if (parse_bool(value, under ? &s->proxy_underscores : &s->proxy_insecure) < 0)
            problem(s, "%s: '%s' is not yes or no", under ? "proxy_underscores" : "proxy_insecure",
                    value);
        return 1;
    }
    if (name_is(name, "demo") || name_is(name, "listing")) {
        int *dst = name_is(name, "demo") ? &s->demo : &s->listing;
        if (parse_bool(value, dst) < 0)
            problem(s, "%s: '%s' is not yes or no", name_is(name, "demo") ? "demo" : "listing",
                    value);
        return 1;
    }
    if (name_is(name, "mime_type")) {
        if (s->nmime == sizeof s->mime_overrides / sizeof s->mime_overrides[0]) {
            problem(s, "mime_type: more than %zu", s->nmime);
        } else {
            char *c = strdup(value);
            if (c) s->mime_overrides[s->nmime++] = c;
        }
        return 1;
    }
    return 0;
}

/* A setting of cshttpd's own in the config file: each is set once there,
 * as nginx takes a directive once, but for those that add to a list
 * (proxy, mime_type). */
static int app_option(void *data, const char *name, const char *value, char *err, size_t errlen)
{
    settings *s = data;
    int list = name_is(name, "proxy") || name_is(name, "mime_type");
    for (size_t i = 0; !list && i < s->nconfig_keys; i++)
        if (name_is(name, s->config_keys[i])) {
            snprintf(err, errlen, "'%s' is set twice", s->config_keys[i]);
            return -EINVAL;
        }
    int r = set_app(s, name, value);
    if (r == 1 && !list && s->nconfig_keys < sizeof s->config_keys / sizeof s->config_keys[0] &&
        strlen(name) < sizeof s->config_keys[0]) {
        char *k = s->config_keys[s->nconfig_keys++];
        strcpy(k, name);
        for (char *c = k; *c; c++)
            if (*c == '-') *c = '_';
    }
    return r;
}

/* The command line's modes */
typedef struct modes {
    int help, check, install, uninstall;
    const char *stop, *service_name, *unit_dir;
    int others; /* options other than --config and the service's */
} modes;

static void parse_args(settings *s, cshs_options *o, modes *m, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            problem(s, "unexpected argument '%s' (see --help)", a);
            continue;
        }
        char name[128];
        const char *eq = strchr(a + 2, '=');
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nl >= sizeof name) {
            problem(s, "unknown option '%.40s...' (see --help)", a);
            continue;
        }
        memcpy(name, a + 2, nl);
        name[nl] = '\0';
        /* the flags without a value */
        int *flag = !strcmp(name, "help")                ? &m->help
                    : !strcmp(name, "check-config")      ? &m->check
                    : !strcmp(name, "install-service")   ? &m->install
                    : !strcmp(name, "uninstall-service") ? &m->uninstall
                                                         : NULL;
        if (!strcmp(name, "h")) flag = &m->help;
        if (flag && !eq) {
            *flag = 1;
            continue;
        }
        if ((!strcmp(name, "demo") || !strcmp(name, "listing") ||
             !strcmp(name, "proxy-insecure") || !strcmp(name, "proxy-underscores")) &&
            !eq) {
            set_app(s, name, "yes");
            m->others = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!value) {
            problem(s, "--%s needs a value (see --help)", name);
            continue;
        }
        if (!eq) i++;
        if (!strcmp(name, "config")) continue; /* read first */
        if (!strcmp(name, "stop")) {
            m->stop = value;
        } else if (!strcmp(name, "service-name")) {
            m->service_name = value;
        } else if (!strcmp(name, "unit-dir")) {
            m->unit_dir = value;
        } else if (!strcmp(name, "threads")) {
            strncpy(s->threads, value, sizeof s->threads - 1);
            s->threads[sizeof s->threads - 1] = '\0';
            m->others = 1;
        } else if (set_app(s, name, value)) {
            m->others = 1;
        } else {
            char err[512];
            m->others = 1;
            if (cshs_options_set(o, name, value, err, sizeof err) < 0) {
                if (!strncmp(err, "unknown option", 14))
                    problem(s, "unknown option '--%s' (see --help)", name);
                else
                    problem(s, "--%s: %s", name, err);
            }
        }
    }
}

/* Whether a file can be appended to (or made in its folder). */
static int check_writable(settings *s, const char *what, const char *path)
{
    if (!path[0] || !strcmp(path, "-")) return 0;
    if (access(path, F_OK) == 0) {
        if (access(path, W_OK) != 0) {
            problem(s, "%s %s: %s", what, path, strerror(errno));
            return -1;
        }
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    /* the unit's LogsDirectory= and RuntimeDirectory= make /var/log/NAME
     * and /run/NAME for the service */
    if (s->installing && ((strncmp(dir, "/var/log/", 9) == 0 && !strchr(dir + 9, '/')) ||
                          (strncmp(dir, "/run/", 5) == 0 && !strchr(dir + 5, '/'))))
        return 0;
    if (access(dir, W_OK | X_OK) != 0) {
        problem(s, "%s %s: cannot be created in %s: %s", what, path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* The certificate chain and the key load, and the key is the
 * certificate's. */
static void check_tls(settings *s, const cshs_options *o)
{
    int cert = o->tls_cert && *o->tls_cert, key = o->tls_key && *o->tls_key;
    if (!cert && !key) return;
    if (cert != key) {
        problem(s, "tls_cert and tls_key go together: %s is missing",
                cert ? "tls_key" : "tls_cert");
        return;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        problem(s, "TLS: cannot make an OpenSSL context");
        return;
    }
    char why[256];
    int ok_cert = SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) == 1;
    if (!ok_cert) {
        ERR_error_string_n(ERR_get_error(), why, sizeof why);
        problem(s, "tls_cert %s: cannot load a PEM certificate: %s", o->tls_cert, why);
    }
    ERR_clear_error();
    int ok_key = SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) == 1;
    if (!ok_key) {
        unsigned long e = ERR_get_error();
        ERR_error_string_n(e, why, sizeof why);
        /* a loadable key that does not match the certificate fails here too */
        if (ok_cert && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
            problem(s, "tls_key %s does not match the certificate in %s", o->tls_key, o->tls_cert);
        else
            problem(s, "tls_key %s: cannot load a PEM private key: %s", o->tls_key, why);
    } else if (ok_cert && SSL_CTX_check_private_key(ctx) != 1) {
        problem(s, "tls_key %s does not match the certificate in %s", o->tls_key, o->tls_cert);
    }
    ERR_clear_error();
    SSL_CTX_free(ctx);
}

/* Every check that needs no listener; problems go to s. */
static void check_settings(settings *s, const cshs_options *o, cshw_mime_types *mime)
{
    const char *why;
    if (cshs_options_check(o, &why) < 0) problem(s, "%s", why);
    struct stat st;
    if (stat(s->root, &st) < 0)
        problem(s, "root %s: %s", s->root, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        problem(s, "root %s is not a folder", s->root);
    else if (access(s->root, R_OK | X_OK) != 0)
        problem(s, "root %s cannot be read: %s", s->root, strerror(errno));
    if (strcmp(s->access_log_format, "combined") && strcmp(s->access_log_format, "json"))
        problem(s, "access_log_format: '%s' is not combined or json", s->access_log_format);
    check_writable(s, "access_log", s->access_log);
    check_writable(s, "error_log", s->error_log);
    check_writable(s, "pid_file", s->pid_file);
    if (s->status_path[0]) {
        if (s->status_path[0] != '/' || s->status_path[1] == '\0' ||
            strpbrk(s->status_path, "?#{}* \t"))
            problem(s, "status: '%s' is not a path such as /status", s->status_path);
    }
    if (s->status_allow[0]) {
        acl a;
        char err[256];
        if (acl_parse(&a, s->status_allow, err, sizeof err) < 0) problem(s, "%s", err);
    }
    if (s->threads[0]) {
        char *end;
        long t = strtol(s->threads, &end, 10);
        if (*end || t < 1 || t > 100000)
            problem(s, "threads: '%s' is not a number of threads", s->threads);
    }
    if (mime) {
        if (strcmp(s->mime_types, "none") != 0 && s->mime_types[0]) {
            char err[512];
            if (access(s->mime_types, F_OK) == 0 || s->mime_types_set) {
                if (cshw_mime_types_load(mime, s->mime_types, err, sizeof err) < 0)
                    problem(s, "mime_types %s", err);
            }
        }
        for (size_t i = 0; i < s->nmime; i++)
            if (cshw_mime_types_set_pair(mime, s->mime_overrides[i]) < 0)
                problem(s, "mime_type: '%s' is not EXT=TYPE (a type such as text/plain)",
                        s->mime_overrides[i]);
    }
    check_tls(s, o);
}

/* "512", "64k", "16m", "1g" (1024-based) into *out: 0, or -1 when it is
 * not such a size or passes max. */
static int parse_size(const char *v, uint64_t max, uint64_t *out)
{
    if (*v < '0' || *v > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K') shift = 10;
    if (*end == 'm' || *end == 'M') shift = 20;
    if (*end == 'g' || *end == 'G') shift = 30;
    if (shift) end++;
    if (errno || *end || n > (max >> shift)) return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

/* The proxy's buffering (proxy_buffer.h) into px->spool. */
static void check_spool(settings *s, proxy *px)
{
    static proxy_spool spool;
    spool_init(&spool);
    px->spool = &spool;
    if (s->proxy_buffering >= 0) spool.on = s->proxy_buffering;
    struct {
        const char *name;
        const char *value;
        uint64_t *dst;
    } sizes[] = {
        {"proxy_max_temp_file_size", s->proxy_max_temp_file_size, &spool.max_file},
        {"proxy_temp_max", s->proxy_temp_max, &spool.max_total},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value[0] && parse_size(sizes[i].value, (uint64_t)1 << 50, sizes[i].dst) < 0)
            problem(s, "%s: '%s' is not a size (bytes, or a number and k, m or g)", sizes[i].name,
                    sizes[i].value);
    if (s->proxy_max_held[0]) {
        uint64_t v;
        if (parse_size(s->proxy_max_held, 1000000, &v) < 0 || strpbrk(s->proxy_max_held, "kKmMgG"))
            problem(s, "proxy_max_held: '%s' is not a number from 0 to 1000000", s->proxy_max_held);
        else
            spool.max_held = (unsigned)v;
    }
}

/* The proxy's routes into px and its client's options into co; every
 * bad one is a problem naming it. */
static void check_proxy(settings *s, proxy *px, cshs_client_options *co)
{
    char err[600];
    px->max_fails = 1; /* nginx's defaults */
    px->fail_timeout_ms = 10000;
    for (size_t i = 0; i < s->nproxies; i++)
        if (proxy_add(px, s->proxies[i], err, sizeof err) < 0) problem(s, "%s", err);
    struct {
        const char *name;
        const char *value;
        unsigned *dst;
        unsigned long min, max;
    } nums[] = {
        {"proxy_timeout_ms", s->proxy_timeout_ms, &px->timeout_ms, 1, 86400000},
        {"proxy_max_fails", s->proxy_max_fails, &px->max_fails, 0, 1000000},
        {"proxy_fail_timeout_ms", s->proxy_fail_timeout_ms, &px->fail_timeout_ms, 1, 86400000},
        {"proxy_pool_size", s->proxy_pool_size, &co->pool_size, 1, 65536},
        {"proxy_acquire_timeout_ms", s->proxy_acquire_timeout_ms, &co->acquire_timeout_ms, 1,
         86400000},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if (!nums[i].value[0]) continue;
        char *end;
        errno = 0;
        unsigned long v = strtoul(nums[i].value, &end, 10);
        if (errno || *end || nums[i].value[0] < '0' || nums[i].value[0] > '9' || v < nums[i].min ||
            v > nums[i].max)
            problem(s, "%s: '%s' is not a number from %lu to %lu", nums[i].name, nums[i].value,
                    nums[i].min, nums[i].max);
        else
            *nums[i].dst = (unsigned)v;
    }
    if (s->proxy_ca_file[0]) {
        co->tls_ca_file = s->proxy_ca_file;
        FILE *f = fopen(s->proxy_ca_file, "r");
        if (!f)
            problem(s, "proxy_ca_file %s: %s", s->proxy_ca_file, strerror(errno));
        else
            fclose(f);
    }
    co->tls_insecure = s->proxy_insecure;
    px->underscores = s->proxy_underscores;
    check_spool(s, px);
    px->request_buffering = s->proxy_request_buffering != 0;
    co->tick_thread = 0; /* the engine's tick runs it */
    const char *why;
    if (cshs_client_options_check(co, &why) < 0) problem(s, "proxy: %s", why);
}

/* scheme "://" host[:port], as a browser's Origin field says it (RFC
 * 6454 §6.1): no path, no userinfo. */
static int origin_ok(const char *p, size_t n)
{
    const char *sep = NULL;
    for (size_t i = 0; !sep && i + 3 <= n; i++)
        if (!memcmp(p + i, "://", 3)) sep = p + i;
    if (!sep || sep == p) return 0;
    for (const char *c = p; c < sep; c++)
        if (!isalpha((unsigned char)*c)) return 0;
    const char *host = sep + 3, *end = p + n;
    return host < end && !memchr(host, '/', (size_t)(end - host)) &&
           !memchr(host, '@', (size_t)(end - host));
}

/* The WebSocket settings (the demo's /demo/ws, the status page's socket)
 * into w; the allowed origins, commas made spaces, stay in s. */
static void check_ws(settings *s, cshw_ws_options *w)
{
    cshw_ws_options_init(w);
    if (s->ws_max_message[0] &&
        parse_size(s->ws_max_message, (uint64_t)1 << 32, &w->max_message) < 0)
        problem(s, "ws_max_message: '%s' is not a size up to 4g (bytes, or a number and k, m or g)",
                s->ws_max_message);
    if (s->ws_max_message[0] && w->max_message == 0)
        problem(s, "ws_max_message: 0 would refuse every message");
    struct {
        const char *name;
        const char *value;
        uint32_t *dst;
    } ms[] = {
        {"ws_ping_interval_ms", s->ws_ping_interval_ms, &w->ping_interval_ms},
        {"ws_pong_timeout_ms", s->ws_pong_timeout_ms, &w->pong_timeout_ms},
    };
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        uint64_t v;
        if (!ms[i].value[0]) continue;
        if (parse_size(ms[i].value, 86400000, &v) < 0 || strpbrk(ms[i].value, "kKmMgG"))
            problem(s, "%s: '%s' is not a number of ms from 0 to 86400000", ms[i].name,
                    ms[i].value);
        else
            *ms[i].dst = (uint32_t)v;
    }
    if (s->ws_allow_origins[0]) {
        for (char *c = s->ws_allow_origins; *c; c++)
            if (*c == ',') *c = ' ';
        for (const char *p = s->ws_allow_origins; *p;) {
            p += strspn(p, " ");
            size_t n = strcspn(p, " ");
            int any = n == 1 && *p == '*';
            if (n && !any && !origin_ok(p, n))
                problem(s, "ws_allow_origins: '%.*s' is not an origin such as https://a.example",
                        (int)n, p);
            p += n;
        }
        w->allowed_origins = s->ws_allow_origins;
    }
    if (s->ws_deflate >= 0) w->deflate = s->ws_deflate;
}

/* Whether an engine option was given on the command line or in a config
 * file (its defaults cannot tell: a value may equal the default). */
/* Whether the command line itself sets `name` (--name or --name=). */
static int on_command_line(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) continue;
        char opt[128];
        snprintf(opt, sizeof opt, "%s", argv[i] + 2);
        opt[strcspn(opt, "=")] = '\0';
        if (name_is(opt, name)) return 1;
    }
    return 0;
}

/* Whether the config file sets `name`: a line's first word, read whole
 * (a long comment is not read as the setting that ends it). */
static int in_config_file(const char *cfg, const char *name)
{
    FILE *f = fopen(cfg, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, " \t=\r\n")] = '\0';
        found = name_is(p, name);
    }
    free(line);
    fclose(f);
    return found;
}

static int option_given(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++) {
        const char *cfg = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc) cfg = argv[i + 1];
        if (!strncmp(argv[i], "--config=", 9)) cfg = argv[i] + 9;
        if (cfg && in_config_file(cfg, name)) return 1;
    }
    return on_command_line(argc, argv, name);
}

/* The paths a config file leaves relative (given there, or root's
 * default): they name files from the folder cshttpd starts in, and other
 * files, or none, when it starts elsewhere (a service starts in /). Each
 * is said with the path it names now; say() gets one line each. A path
 * given on the command line is the caller's own and is not warned of. */
static void warn_relative_paths(const settings *s, const cshs_options *o, int argc, char **argv,
                                void (*say)(const char *line))
{
    if (!s->config[0]) return;
    const struct {
        const char *name, *value;
    } paths[] = {
        {"root", s->root},           {"access_log", s->access_log},
        {"error_log", s->error_log}, {"pid_file", s->pid_file},
        {"mime_types", s->mime_types}, {"proxy_ca_file", s->proxy_ca_file},
        {"tls_cert", o->tls_cert},   {"tls_key", o->tls_key},
    };
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "the current folder");
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const char *v = paths[i].value;
        if (!v || !*v || *v == '/' || !strcmp(v, "-") || !strcmp(v, "none")) continue;
        if (on_command_line(argc, argv, paths[i].name)) continue;
        char line[PATH_MAX + 512];
        snprintf(line, sizeof line,
                 "%s '%s'%s is relative: %s%s%s from here, another one when cshttpd starts in "
                 "another folder (write an absolute path)",
                 paths[i].name, v,
                 !strcmp(paths[i].name, "root") && !option_given(argc, argv, "root")
                     ? " (the default)"
                     : "",
                 cwd, strcmp(cwd, "/") ? "/" : "", v);
        say(line);
    }
}

static void say_on_stderr(const char *line)
{
    fprintf(stderr, "cshttpd: warning: %s\n", line);
}

static void say_in_error_log(const char *line)
{
    error_log_printf(LOG_WARN, "%s", line);
}

/* ---- running ---- */

/* The handler when there are proxy routes: a target under a prefix goes to
 * its origin, anything else to the router. */
static void serve(cshw_context *ctx)
{
    cshttpd_app *app = cshw_context_app_data(ctx);
    const char *t = cshw_request_target(cshw_context_request(ctx));
    size_t len = strlen(t);
    char *fwd = cshw_arena_alloc(cshw_context_arena(ctx), len + 1);
    const proxy_route *r = NULL;
    int v = fwd ? proxy_route_of(app->proxy, t, len, fwd, &r) : -ENOMEM;
    if (v == 1)
        proxy_serve(app->proxy, r, ctx, fwd);
    else if (v == 0)
        cshw_router_dispatch(app->router, ctx);
    else /* a path that leaves its prefix, an encoded NUL (proxy.h) */
        cshw_response_send_error(cshw_context_response(ctx), v == -1 ? 400 : 500);
}

/* cshs_server_set_streaming with --proxy (arg: the app): a body that goes
 * to an origin is passed on as it arrives; one that no route takes (a
 * static file, a 404, a 405, a refused target) is never stored either:
 * the answer comes at once (the router decides alone without --proxy). */
static int body_streams(void *arg, const char *head, const csh_message *msg)
{
    const cshttpd_app *app = arg;
    if (msg->body == CSH_BODY_NONE) return 0;
    int proxied = proxy_streaming(app->proxy, head, msg);
    if (proxied >= 0) return proxied; /* an origin's: streamed, or read whole first */
    return cshw_router_body_of(app->router, head, msg) != CSHW_ROUTE_BODY_WHOLE;
}

/* The engine's tick: the proxy's temporary files whose last range was
 * sent are let go. */
static void spool_tick_cb(void *arg)
{
    spool_tick(arg);
}

/* cshs_server_set_quick (arg: the demo setting): every request of
 * cshttpd's is quick but the demo's /demo/sleep. A static file, the
 * status page and the demo's answers come from memory or disk; a proxied
 * request without a body waits for its origin on the loop, deferred, and
 * one with a body streams, on a thread anyway. With every thread busy,
 * /demo/sleep waits for one while the rest goes on. */
static int quick_request(void *arg, const char *head, const csh_message *msg)
{
    const int *demo = arg;
    return !*demo || !demo_blocks(head + msg->target.off, msg->target.len);
}

/* The engine's tick: requests answered 503 because every thread was busy
 * and max_waiting_handlers waited already, or because their body would
 * have passed max_request_temp_bytes, go into the error log, a line a
 * second at most for each. */
typedef struct overload_watch {
    cshs_server *server;
    uint64_t declined, temp_refused; /* counted at the last line of each */
    int64_t declined_ms, temp_ms;    /* when it was written */
    unsigned threads;                /* max_threads */
    size_t waiting_max;              /* max_waiting_handlers */
    uint64_t temp_max;               /* max_request_temp_bytes */
} overload_watch;

/* Whether a line about a count that moved from *last to now may go out at
 * ms (one a second): 1, and *last and *at updated. */
static int worth_a_line(uint64_t now, uint64_t *last, int64_t *at, int64_t ms)
{
    if (now == *last || (*at && ms - *at < 1000)) return 0;
    *last = now;
    *at = ms;
    return 1;
}

static void overload_tick(void *arg)
{
    overload_watch *w = arg;
    cshs_counters k;
    if (cshs_server_counters(w->server, &k) < 0) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    uint64_t before = w->declined;
    if (worth_a_line(k.handlers_declined, &w->declined, &w->declined_ms, ms))
        error_log_printf(LOG_WARN,
                         "%llu request%s answered 503: all %u threads busy and %zu handlers "
                         "waiting (max_threads, max_waiting_handlers)",
                         (unsigned long long)(k.handlers_declined - before),
                         k.handlers_declined - before == 1 ? "" : "s", w->threads, w->waiting_max);
    before = w->temp_refused;
    if (worth_a_line(k.request_temp_refused, &w->temp_refused, &w->temp_ms, ms))
        error_log_printf(LOG_WARN,
                         "%llu request%s answered 503: request bodies in temporary files at "
                         "%llu bytes (max_request_temp_bytes)",
                         (unsigned long long)(k.request_temp_refused - before),
                         k.request_temp_refused - before == 1 ? "" : "s",
                         (unsigned long long)w->temp_max);
}

typedef struct logs {
    log_file access;
    log_format format;
    stats *stats;
} logs;

/* Each answered request: its latency into the stats, its line into the
 * access log (one write per line). */
static void log_request(void *user, const cshs_request_log *e)
{
    logs *l = user;
    int64_t latency_us = e->duration_us > 0 ? e->duration_us : 0;
    if (l->stats) stats_record(l->stats, e, latency_us);
    if (l->access.fd >= 0) {
        char line[8192];
        size_t n = access_log_format(line, sizeof line, l->format, e, latency_us);
        log_file_write(&l->access, line, n);
    }
}

/* A problem of the config file, as the loader names it. */
static void config_problem(void *data, const char *message)
{
    problem(data, "%s", message);
}

/* The config file, every problem in it (the loader reads on past a bad
 * line, which sets nothing). */
static void load_config(settings *s, cshs_options *o, const char *path)
{
    cshs_options_load_file_each(o, path, app_option, s, config_problem, s);
}

static void free_settings(settings *s)
{
    for (size_t i = 0; i < s->nmime; i++) free(s->mime_overrides[i]);
    s->nmime = 0;
    for (size_t i = 0; i < s->nproxies; i++) free(s->proxies[i]);
    s->nproxies = 0;
}

static int report_problems(settings *s, int code)
{
    for (size_t i = 0; i < s->nproblems; i++) fprintf(stderr, "cshttpd: %s\n", s->problems[i]);
    if (s->lost_problems) fprintf(stderr, "cshttpd: ... and %zu more\n", s->lost_problems);
    return code;
}

/* Whether a user with no rights of its own can read `path` (absolute):
 * the file readable by others, and every folder above it open to them. */
static int readable_by_anyone(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0 || !(st.st_mode & S_IROTH)) return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *slash = strrchr(dir, '/'); slash && slash != dir; slash = strrchr(dir, '/')) {
        *slash = '\0';
        if (stat(dir, &st) < 0 || !(st.st_mode & S_IXOTH)) return 0;
    }
    return 1;
}

static int install(settings *s, const cshs_options *o, const modes *m)
{
    const char *name = m->service_name ? m->service_name : "cshttpd";
    const char *dir = m->unit_dir ? m->unit_dir : getenv("CSHTTPD_UNIT_DIR");
    if (!dir || !*dir) dir = "/etc/systemd/system";
    if (!service_name_ok(name)) {
        fprintf(stderr, "cshttpd: --service-name '%s': letters, digits and :_.@- only\n", name);
        return 2;
    }
    if (m->uninstall) return service_uninstall(name, dir);
    if (!s->config[0]) {
        fprintf(stderr, "cshttpd: --install-service needs --config FILE: the unit starts "
                        "cshttpd with that file\n");
        return 2;
    }
    if (m->others) {
        fprintf(stderr,
                "cshttpd: --install-service takes only --config, --service-name and "
                "--unit-dir: put the other settings in %s\n",
                s->config);
        return 2;
    }
    if (s->nproblems) {
        fprintf(stderr, "cshttpd: %s has problems; no unit written:\n", s->config);
        return report_problems(s, 1);
    }
    char exe[PATH_MAX], root[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
    char logs_[3][PATH_MAX];
    if (!realpath("/proc/self/exe", exe) || !realpath(s->root, root)) {
        fprintf(stderr, "cshttpd: --install-service: %s\n", strerror(errno));
        return 1;
    }
    service_spec spec = {.name = name,
                         .unit_dir = dir,
                         .exe = exe,
                         .config = s->config,
                         .root = root,
                         .port = o->port};
    /* relative paths of the config were checked from here: the service
     * starts here too (else in /, where they name other files) */
    const char *paths[] = {s->root,       s->access_log,    s->error_log, s->pid_file,
                           s->mime_types, s->proxy_ca_file, o->tls_cert,  o->tls_key};
    char cwd[PATH_MAX];
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i] && paths[i][0] && paths[i][0] != '/' && strcmp(paths[i], "-") != 0 &&
            strcmp(paths[i], "none") != 0) {
            if (!getcwd(cwd, sizeof cwd)) {
                fprintf(stderr, "cshttpd: --install-service: the current folder: %s\n",
                        strerror(errno));
                return 1;
            }
            spec.workdir = cwd;
            break;
        }
    if (o->tls_cert && *o->tls_cert) {
        spec.tls_port = o->tls_port;
        if (realpath(o->tls_cert, cert)) spec.readable[0] = cert;
        if (o->tls_key && realpath(o->tls_key, key)) spec.readable[1] = key;
    }
    const char *files[3] = {s->access_log, s->error_log, s->pid_file};
    size_t nw = 0;
    for (size_t i = 0; i < 3; i++) {
        if (!files[i][0] || !strcmp(files[i], "-")) continue;
        if (files[i][0] == '/')
            snprintf(logs_[i], sizeof logs_[i], "%s", files[i]);
        else if (!getcwd(logs_[i], sizeof logs_[i]) ||
                 strlen(logs_[i]) + strlen(files[i]) + 2 > sizeof logs_[i])
            continue;
        else
            strcat(strcat(logs_[i], "/"), files[i]);
        spec.writable[nw++] = logs_[i];
    }
    /* the unit's dynamic user reads the TLS files only when anyone may:
     * else they go in as credentials, which systemd reads as root */
    spec.tls_credentials = (spec.readable[0] && !readable_by_anyone(spec.readable[0])) ||
                           (spec.readable[1] && !readable_by_anyone(spec.readable[1]));
    return service_install(&spec);
}

int main(int argc, char **argv)
{
    cshs_options o;
    cshs_options_init(&o);
    static settings conf = {.root = "www",
                            .access_log_format = "combined",
                            .mime_types = "/etc/mime.types",
                            .proxy_buffering = -1,
                            .proxy_request_buffering = -1,
                            .ws_deflate = -1};
    modes m = {0};
    char err[512];

    /* the config file first, so that the command line overrides it */
    for (int i = 1; i < argc; i++) {
        const char *cfg = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc) cfg = argv[i + 1];
        if (!strncmp(argv[i], "--config=", 9)) cfg = argv[i] + 9;
        if (!cfg) continue;
        if (!realpath(cfg, conf.config)) snprintf(conf.config, sizeof conf.config, "%s", cfg);
        load_config(&conf, &o, cfg);
    }
    parse_args(&conf, &o, &m, argc, argv);
    if (m.help) {
        usage(stdout);
        free_settings(&conf);
        cshs_options_release(&o);
        return 0;
    }
    if (m.stop) {
        free_settings(&conf);
        cshs_options_release(&o);
        return stop_other(m.stop);
    }
    if (conf.threads[0]) {
        if (cshs_options_set(&o, "min_threads", conf.threads, err, sizeof err) < 0)
            problem(&conf, "threads: %s", err);
        else if (o.max_threads < o.min_threads)
            o.max_threads = o.min_threads;
    }
    if (conf.demo && !conf.status_path[0]) strcpy(conf.status_path, "/status");

    cshw_mime_types *mime = cshw_mime_types_new();
    if (!mime) {
        fprintf(stderr, "cshttpd: out of memory\n");
        return 1;
    }
    conf.installing = m.install;
    check_settings(&conf, &o, mime);
    static proxy px;
    cshs_client_options co;
    cshs_client_options_init(&co);
    /* the client waits 10 s by default for a connection; a proxy gives
     * up sooner on a full pool (a refused origin fails at once anyway) */
    co.acquire_timeout_ms = 2000;
    check_proxy(&conf, &px, &co);
    static cshw_ws_options ws;
    check_ws(&conf, &ws);
    /* A proxied request without a body defers its handler and waits for
     * its origin on the loop (proxy.c), which only a handler run on its
     * loop's thread can do: under the engine's offload mode, after any
     * handler that blocked, every request would go to another thread and
     * wait there, at the price of more context switches a request
     * (bench/HISTORY.md, W6, has the figures). Given explicitly, the option
     * stands. */
    if (px.n && !option_given(argc, argv, "offload_ms")) o.offload_ms = 0;

    if (m.install || m.uninstall) {
        int r = install(&conf, &o, &m);
        cshw_mime_types_free(mime);
        free_settings(&conf);
        cshs_options_release(&o);
        return r;
    }
    if (m.check) {
        warn_relative_paths(&conf, &o, argc, argv, say_on_stderr);
        int bad = conf.nproblems > 0;
        if (bad) {
            report_problems(&conf, 1);
            fprintf(stderr, "cshttpd: %zu problem%s%s%s\n", conf.nproblems + conf.lost_problems,
                    conf.nproblems + conf.lost_problems == 1 ? "" : "s",
                    conf.config[0] ? " in the configuration from " : "",
                    conf.config[0] ? conf.config : "");
        } else {
            printf("cshttpd: configuration OK%s%s (root %s, port %u%s)\n",
                   conf.config[0] ? ": " : "", conf.config, conf.root, o.port,
                   o.tls_cert && *o.tls_cert ? ", HTTPS" : "");
            for (size_t i = 0; i < px.n; i++)
                for (unsigned k = 0; k < px.routes[i].norigins; k++)
                    printf("cshttpd: proxy %s -> %s\n", px.routes[i].prefix,
                           px.routes[i].origins[k].url);
        }
        cshw_mime_types_free(mime);
        free_settings(&conf);
        cshs_options_release(&o);
        return bad;
    }
    if (conf.nproblems) {
        report_problems(&conf, 2);
        cshw_mime_types_free(mime);
        free_settings(&conf);
        cshs_options_release(&o);
        return 2;
    }

    if (conf.error_log[0] && error_log_open(conf.error_log, err, sizeof err) < 0) {
        fprintf(stderr, "cshttpd: error_log %s\n", err);
        return 2;
    }
    static logs lg;
    lg.access.fd = -1;
    lg.format = strcmp(conf.access_log_format, "json") == 0 ? LOG_JSON : LOG_COMBINED;
    if (conf.access_log[0] &&
        log_file_open(&lg.access, conf.access_log, STDOUT_FILENO, err, sizeof err) < 0) {
        error_log_printf(LOG_ERROR, "access_log %s", err);
        return 2;
    }

    cshw_router *router = cshw_router_new();
    if (!router || (conf.demo && demo_routes(router) < 0) ||
        (conf.status_path[0] && status_routes(router, conf.status_path) < 0)) {
        error_log_printf(LOG_ERROR, "routes: %s", router ? cshw_router_error(router) : "no memory");
        return 1;
    }
    cshw_static_options so;
    cshw_static_options_init(&so);
    so.root = conf.root;
    so.directory_listing = conf.listing;
    so.mime_types = mime;
    cshw_router_set_static(router, &so);

    /* SIGTERM, SIGINT, SIGHUP and SIGUSR1 are taken by sigwait below, on
     * this thread: blocked in every thread, the workers included, so no
     * handler ever runs and the reopen happens on a normal thread. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (px.n && !(px.client = cshs_client_new(&co))) {
        error_log_printf(LOG_ERROR, "cannot create the proxy's client");
        return 1;
    }
    cshs_server *s = px.n ? cshs_server_new(&o, serve, NULL) : cshs_server_new(&o, NULL, router);
    if (!s) {
        error_log_printf(LOG_ERROR, "cannot create the server");
        return 1;
    }
    static cshttpd_app app;
    app.server = s;
    app.router = router;
    if (px.n) {
        app.proxy = &px;
        app.proxy_client = px.client;
        cshs_server_set_streaming(s, body_streams, &app);
        cshs_server_add_tick(s, proxy_tick, px.client);
        cshs_server_add_tick(s, spool_tick_cb, px.spool);
    }
    cshs_server_set_quick(s, quick_request, &conf.demo);
    static overload_watch overload;
    overload.server = s;
    overload.threads = o.max_threads;
    overload.waiting_max = o.max_waiting_handlers;
    overload.temp_max = o.max_request_temp_bytes;
    cshs_server_add_tick(s, overload_tick, &overload);
    app.workers_min = o.min_threads;
    app.workers_max = o.max_threads;
    app.ws = &ws;
    if (conf.status_allow[0])
        acl_parse(&app.status_allow, conf.status_allow, err, sizeof err);
    else
        acl_loopback(&app.status_allow);
    if (conf.status_path[0]) {
        app.stats = stats_new(s);
        app.push = status_push_new();
        if (!app.stats || !app.push) {
            error_log_printf(LOG_ERROR, "out of memory");
            return 1;
        }
        cshs_server_add_tick(s, status_push_tick, &app);
    }
    lg.stats = app.stats;
    cshs_server_set_app_data(s, &app);
    if (lg.access.fd >= 0 || lg.stats) cshs_server_set_log(s, log_request, &lg);
    int r = cshs_server_start(s);
    if (r < 0) {
        error_log_printf(LOG_ERROR, "cannot listen: %s", strerror(-r));
        return 1;
    }
    if (app.stats && (r = stats_start(app.stats)) < 0) {
        error_log_printf(LOG_ERROR, "cannot start the sampler: %s", strerror(-r));
        return 1;
    }
    if (conf.pid_file[0]) {
        FILE *f = fopen(conf.pid_file, "w");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        } else {
            error_log_printf(LOG_WARN, "pid_file %s: %s", conf.pid_file, strerror(errno));
        }
    }
    char url[600] = "";
    if (o.address && *o.address) {
        snprintf(url, sizeof url, "http://%s%s%s:%u/", strchr(o.address, ':') ? "[" : "", o.address,
                 strchr(o.address, ':') ? "]" : "", cshs_server_port(s, 0));
        printf("cshttpd: listening on %s (root %s)\n", url, conf.root);
    }
    if (o.address6 && *o.address6)
        printf("cshttpd: listening on http://[%s]:%u/\n", o.address6,
               cshs_server_port(s, (o.address && *o.address) ? 1 : 0));
    if (o.unix_path) printf("cshttpd: listening on unix:%s\n", o.unix_path);
    if (o.tls_cert && *o.tls_cert && o.address && *o.address)
        printf("cshttpd: listening on https://%s%s%s:%u/\n", strchr(o.address, ':') ? "[" : "",
               o.address, strchr(o.address, ':') ? "]" : "", cshs_server_tls_port(s, 0));
    fflush(stdout);
    warn_relative_paths(&conf, &o, argc, argv, say_in_error_log);
    error_log_printf(LOG_NOTICE, "started (pid %ld, root %s%s%s%s%s%s)", (long)getpid(), conf.root,
                     url[0] ? ", " : "", url, conf.demo ? ", demo" : "",
                     conf.status_path[0] ? ", status at " : "", conf.status_path);

    int sig = 0;
    for (;;) {
        if (sigwait(&set, &sig) != 0) continue;
        if (sig == SIGHUP) {
            /* new certificate and key files for new connections */
            if (o.tls_cert && *o.tls_cert) {
                int e = cshs_server_reload_tls(s);
                printf("cshttpd: TLS reload %s\n", e == 0 ? "done" : "failed, the old files stay");
                fflush(stdout);
                error_log_printf(e == 0 ? LOG_NOTICE : LOG_ERROR, "TLS reload %s",
                                 e == 0 ? "done" : "failed, the old files stay");
            }
            continue;
        }
        if (sig == SIGUSR1) {
            /* logrotate moved the files away: open them again by name */
            int ea = log_file_reopen(&lg.access), ee = error_log_reopen();
            if (ea < 0)
                error_log_printf(LOG_ERROR, "access_log %s: cannot reopen: %s", lg.access.path,
                                 strerror(-ea));
            if (ee < 0)
                fprintf(stderr, "cshttpd: error_log %s: cannot reopen: %s\n", conf.error_log,
                        strerror(-ee));
            error_log_printf(LOG_NOTICE, "logs reopened");
            continue;
        }
        break;
    }
    printf("cshttpd: stopping\n");
    fflush(stdout);
    error_log_printf(LOG_NOTICE, "stopping (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM");
    int cut = cshs_server_stop(s, -1);
    if (app.stats) stats_stop(app.stats);
    printf("cshttpd: stopped (%d connection%s cut at the deadline)\n", cut, cut == 1 ? "" : "s");
    fflush(stdout);
    error_log_printf(LOG_NOTICE, "stopped (%d connection%s cut at the deadline)", cut,
                     cut == 1 ? "" : "s");
    unsigned behind = cshs_server_handlers_running(s);
    if (behind) {
        /* their threads still use the server, the router, the stats and
         * the logs: exit without freeing what they reach */
        error_log_printf(LOG_WARN,
                         "%u handler%s still running after the deadline: exiting "
                         "without waiting for %s",
                         behind, behind == 1 ? "" : "s", behind == 1 ? "it" : "them");
        if (conf.pid_file[0]) unlink(conf.pid_file);
        fflush(NULL);
        _exit(0);
    }
    cshs_server_free(s);
    cshs_client_free(px.client);
    stats_free(app.stats);
    status_push_free(app.push);
    cshw_router_free(router);
    cshw_mime_types_free(mime);
    if (conf.pid_file[0]) unlink(conf.pid_file);
    log_file_close(&lg.access);
    error_log_close();
    free_settings(&conf);
    cshs_options_release(&o);
    return 0;
}
