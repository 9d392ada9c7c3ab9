/* cshs_server through its API: start on an ephemeral port, a handler,
 * keep-alive, counters, a bound port refused, the Unix listener, wait from
 * another thread, a graceful stop and a stop that has to cut, free(NULL). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/server.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *ms = cshw_request_query_get(req, "sleep");
    if (ms) {
        long n = strtol(ms, NULL, 10);
        struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_printf(res, "hello %s", cshw_request_path(req));
}

static int dial(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends req and reads until `until` appears (or EOF / timeout). */
static int exchange(int fd, const char *req, const char *until, char *out, size_t cap)
{
    if (req && send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) return -1;
    size_t n = 0;
    out[0] = '\0';
    while (n + 1 < cap && !strstr(out, until)) {
        ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        out[n] = '\0';
    }
    return strstr(out, until) ? 0 : -1;
}

static void *stopper(void *arg)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cshs_server_stop(arg, -1);
    return NULL;
}

int main(void)
{
    char buf[8192];
    cshs_server_free(NULL);

    cshs_options o;
    cshs_options_init(&o);
    o.port = 0;
    o.min_threads = 1;
    o.max_threads = 8;
    char sock_path[64];
    snprintf(sock_path, sizeof sock_path, "/tmp/cshs-test-%ld.sock", (long)getpid());
    o.unix_path = sock_path;
    CHECK(cshs_server_new(&o, hello, (cshw_router *)&o) == NULL); /* both */
    cshs_server *s = cshs_server_new(&o, hello, NULL);
    CHECK(s != NULL);
    CHECK(cshs_server_start(s) == 0);
    unsigned port = cshs_server_port(s, 0);
    CHECK(port > 0 && cshs_server_port(s, 1) == 0 && cshs_server_tls_port(s, 0) == 0);

    /* keep-alive: two requests on one connection, then a pipelined pair */
    int fd = dial(port);
    CHECK(fd >= 0);
    CHECK(exchange(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "hello /a", buf, sizeof buf) == 0);
    CHECK(exchange(fd, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n", "hello /b", buf, sizeof buf) == 0);
    CHECK(exchange(fd, "GET /c HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n",
                   "hello /d", buf, sizeof buf) == 0);
    CHECK(strstr(buf, "hello /c") && strstr(buf, "hello /c") < strstr(buf, "hello /d"));

    /* a port in use is refused with -EADDRINUSE */
    cshs_options o2 = o;
    o2.port = port;
    o2.unix_path = NULL;
    cshs_server *s2 = cshs_server_new(&o2, hello, NULL);
    CHECK(s2 && cshs_server_start(s2) == -EADDRINUSE);
    cshs_server_free(s2);

    /* the Unix listener */
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    strcpy(un.sun_path, sock_path);
    CHECK(connect(u, (struct sockaddr *)&un, sizeof un) == 0);
    CHECK(exchange(u, "GET /u HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "hello /u", buf,
                   sizeof buf) == 0);
    close(u);

    cshs_counters c;
    cshs_server_counters(s, &c);
    CHECK(c.requests == 5 && c.connections_total >= 2 && c.bytes_in > 0 && c.bytes_out > 0);
    CHECK(c.workers_total >= 1 && c.err_parse == 0);

    /* a request in flight when the stop begins completes; wait() returns */
    int f2 = dial(port);
    CHECK(send(f2, "GET /slow?sleep=300 HTTP/1.1\r\nHost: x\r\n\r\n", 42, MSG_NOSIGNAL) == 42);
    pthread_t t;
    pthread_create(&t, NULL, stopper, s);
    cshs_server_wait(s);
    pthread_join(t, NULL);
    CHECK(exchange(f2, NULL, "hello /slow", buf, sizeof buf) == 0);
    CHECK(strstr(buf, "Connection: close") != NULL);
    close(f2);
    close(fd);
    CHECK(dial(port) < 0); /* nobody listens any more */
    CHECK(access(sock_path, F_OK) != 0);
    CHECK(cshs_server_stop(s, -1) == 0); /* a second stop does nothing */
    cshs_server_free(s);

    /* a stop whose deadline passes cuts the request */
    o.unix_path = NULL;
    s = cshs_server_new(&o, hello, NULL);
    CHECK(s && cshs_server_start(s) == 0);
    fd = dial(cshs_server_port(s, 0));
    CHECK(send(fd, "GET /x?sleep=1500 HTTP/1.1\r\nHost: x\r\n\r\n", 40, MSG_NOSIGNAL) == 40);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK(cshs_server_stop(s, 100) == 1);
    cshs_server_free(s);
    close(fd);

    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
