/* bench_mhd: the benchmark suite's libmicrohttpd peer (bench/run). It serves
 * the routes the workloads ask cshttpd for, on Debian's libmicrohttpd, in one
 * of its two threading strategies:
 *   tpc   a thread per connection (MHD_USE_THREAD_PER_CONNECTION with an
 *         internal poll() thread that accepts): a blocked handler holds only
 *         its own connection's thread, and every idle connection a thread
 *   pool  --threads event loops on epoll (MHD_USE_EPOLL_INTERNAL_THREAD,
 *         MHD_OPTION_THREAD_POOL_SIZE): handlers run on the I/O threads, so a
 *         blocked handler stalls every connection of its loop
 * Routes:
 *   GET /demo/plaintext     200 text/plain "Hello, World!" (cshttpd's bytes)
 *   GET /demo/sleep?ms=N    the handler sleeps N ms, then 200 "slept"
 *   GET /files/NAME         the file NAME in --root, sent with sendfile (an
 *                           fd response); 404 when missing, for a name with
 *                           '/' or "..", or not a regular file
 * Anything else: 404; a method other than GET or HEAD: 405.
 * It prints "listening on PORT" once it accepts, and stops on SIGTERM or
 * SIGINT. Not a product: no TLS, no logging, no configuration beyond this. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#define PLAINTEXT "Hello, World!"
#define SLEPT "slept"
#define NOT_FOUND "Not Found"
#define NOT_ALLOWED "Method Not Allowed"
#define MAX_SLEEP_MS 60000

struct app {
    int root_fd; /* --root, opened once: files are opened relative to it */
    struct MHD_Response *plaintext, *slept, *not_found, *not_allowed;
};

static void usage(FILE *out)
{
    fprintf(out, "usage: bench_mhd [--port N] [--mode tpc|pool] [--threads N] [--root DIR]\n"
                 "  --port N      TCP port on 127.0.0.1 (default: 8080; 0: any free port)\n"
                 "  --mode M      tpc: a thread per connection (poll); pool: --threads epoll\n"
                 "                loops that also run the handlers (default: tpc)\n"
                 "  --threads N   pool size of --mode pool (default: the number of CPUs)\n"
                 "  --root DIR    folder of GET /files/NAME (default: .)\n"
                 "routes: /demo/plaintext, /demo/sleep?ms=N, /files/NAME\n");
}

/* Parses a whole decimal number in [lo, hi]; -1 otherwise. */
static long parse_number(const char *s, long lo, long hi)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    return v;
}

/* A response built once and queued on every request that needs it (MHD
 * counts its references; queueing it from several threads is allowed). */
static struct MHD_Response *fixed_response(const char *text, const char *type)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (r && type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return r;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* NAME must be one path segment: no '/', no "..", not empty. */
static enum MHD_Result serve_file(struct app *app, struct MHD_Connection *conn, const char *name)
{
    if (!*name || strchr(name, '/') || strstr(name, ".."))
        return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, app->not_found);
    int fd = openat(app->root_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, app->not_found);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, app->not_found);
    }
    /* The response owns fd from here and closes it when destroyed; MHD sends
     * it with sendfile(2) on plain (non-TLS) connections. */
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct app *app = cls;
    /* The first call brings the head only; an answer queued then makes MHD
     * 0.9 close the connection after it (it cannot know that no body
     * follows), so the answer waits for the second call, as MHD's examples
     * do. */
    static int head_seen;
    if (*req_cls != &head_seen) {
        *req_cls = &head_seen;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        /* A body of another method is taken and dropped, then 405 on the
         * last call (MHD refuses an answer while body bytes are pending). */
        if (*upload_data_size) {
            *upload_data_size = 0;
            return MHD_YES;
        }
        return MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, app->not_allowed);
    }
    if (strcmp(url, "/demo/plaintext") == 0)
        return MHD_queue_response(conn, MHD_HTTP_OK, app->plaintext);
    if (strcmp(url, "/demo/sleep") == 0) {
        const char *ms = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "ms");
        long v = ms ? parse_number(ms, 0, MAX_SLEEP_MS) : 0;
        if (v > 0) sleep_ms(v);
        return MHD_queue_response(conn, MHD_HTTP_OK, app->slept);
    }
    if (strncmp(url, "/files/", 7) == 0) return serve_file(app, conn, url + 7);
    return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, app->not_found);
}

/* 10,000 idle connections need as many descriptors: raise the soft limit
 * to the hard one (and the hard one when the process may). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    struct rlimit want = {65536, 65536};
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max >= want.rlim_max) want.rlim_max = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) return;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

int main(int argc, char **argv)
{
    long port = 8080, threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *mode = "tpc", *root = ".";
    if (threads < 1) threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--port") && strcmp(a, "--mode") && strcmp(a, "--threads") &&
            strcmp(a, "--root")) {
            fprintf(stderr, "bench_mhd: unknown option '%s' (--help lists them)\n", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_mhd: %s needs a value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--port") == 0) {
            if ((port = parse_number(v, 0, 65535)) < 0) {
                fprintf(stderr, "bench_mhd: --port '%s': a number from 0 to 65535\n", v);
                return 2;
            }
        } else if (strcmp(a, "--threads") == 0) {
            if ((threads = parse_number(v, 1, 1024)) < 0) {
                fprintf(stderr, "bench_mhd: --threads '%s': a number from 1 to 1024\n", v);
                return 2;
            }
        } else if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "tpc") && strcmp(v, "pool")) {
                fprintf(stderr, "bench_mhd: --mode '%s': tpc or pool\n", v);
                return 2;
            }
            mode = v;
        } else {
            root = v;
        }
    }

    struct app app;
    app.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (app.root_fd < 0) {
        fprintf(stderr, "bench_mhd: --root '%s': %s\n", root, strerror(errno));
        return 2;
    }
    app.plaintext = fixed_response(PLAINTEXT, "text/plain");
    app.slept = fixed_response(SLEPT, "text/plain");
    app.not_found = fixed_response(NOT_FOUND, "text/plain");
    app.not_allowed = fixed_response(NOT_ALLOWED, "text/plain");
    if (!app.plaintext || !app.slept || !app.not_found || !app.not_allowed) {
        fprintf(stderr, "bench_mhd: out of memory\n");
        return 1;
    }
    MHD_add_response_header(app.not_allowed, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");

    raise_fd_limit();
    /* A client that goes away mid-write must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    /* SIGTERM and SIGINT are taken by sigwait below; blocked before MHD
     * starts its threads, so they inherit the mask and never see them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    int pool = strcmp(mode, "pool") == 0;
    unsigned int flags = MHD_USE_ERROR_LOG;
    if (pool)
        flags |= MHD_USE_EPOLL_INTERNAL_THREAD;
    else
        flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD;
    /* MHD_OPTION_THREAD_POOL_SIZE may not be combined with a thread per
     * connection: the option list differs by mode. */
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &sa},
        {MHD_OPTION_CONNECTION_LIMIT, 20000, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL}, /* idle connections stay */
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {pool ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, pool ? threads : 0, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, &app,
                                            MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_mhd: cannot listen on 127.0.0.1:%ld (--mode %s)\n", port, mode);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (pool)
        printf("listening on %u (--mode pool, %ld threads)\n", info ? info->port : (unsigned)port,
               threads);
    else
        printf("listening on %u (--mode tpc)\n", info ? info->port : (unsigned)port);
    fflush(stdout);

    int sig;
    while (sigwait(&stop, &sig) != 0) {
    }
    MHD_stop_daemon(d);
    MHD_destroy_response(app.plaintext);
    MHD_destroy_response(app.slept);
    MHD_destroy_response(app.not_found);
    MHD_destroy_response(app.not_allowed);
    close(app.root_fd);
    return 0;
}
