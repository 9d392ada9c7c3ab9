/* The part of the bench/uring servers that is not I/O: parsing with libcshttp,
 * the demo's plaintext answer, buffers and the listening socket. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cshttp/error.h>

static bench_conn *conns; /* every open connection (bench_conn_free_all) */

/* "Date: Tue, 01 Dec 2026 15:18:10 GMT\r\n" (RFC 9110 §5.6.7), 37 bytes. */
static char date_line[64];
static size_t date_len;
static time_t date_second = -1;

static volatile sig_atomic_t stopping;

void bench_date_update(time_t now)
{
    if (now == date_second) return;
    struct tm tm;
    gmtime_r(&now, &tm);
    date_len = strftime(date_line, sizeof date_line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    date_second = now;
}

int bench_buf_append(bench_buf *b, const char *data, size_t n)
{
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return 0;
}

void bench_buf_compact(bench_buf *b)
{
    if (b->off == 0) return;
    memmove(b->data, b->data + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
}

bench_conn *bench_conn_new(int fd)
{
    bench_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    csh_parser_init(&c->parser, CSH_REQUEST, c->fields, sizeof c->fields / sizeof c->fields[0],
                    NULL, 0);
    c->fd = fd;
    c->next = conns;
    if (conns) conns->prev = c;
    conns = c;
    return c;
}

void bench_conn_free(bench_conn *c)
{
    if (!c) return;
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c->in.data);
    free(c->out.data);
    free(c->sending.data);
    free(c);
}

void bench_conn_free_all(void)
{
    while (conns) {
        if (conns->fd >= 0) close(conns->fd);
        bench_conn_free(conns);
    }
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* One response: the fields in cshttpd's order (status line, Date,
 * Content-Type, Vary, Content-Length, Connection), so that the plaintext
 * answer is byte for byte the demo's. `body` is sent unless `head_only`. */
static int respond(bench_conn *c, int status, const char *type, const char *body, int head_only,
                   const char *connection)
{
    char head[512];
    size_t body_len = strlen(body);
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\n%.*sContent-Type: %s\r\n%s"
                     "Content-Length: %zu\r\n%s%s%s\r\n",
                     status, reason(status), (int)date_len, date_line, type,
                     status == 200 ? "Vary: Accept-Encoding\r\n" : "", body_len,
                     connection ? "Connection: " : "", connection ? connection : "",
                     connection ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof head) return -1;
    if (bench_buf_append(&c->out, head, (size_t)n) < 0) return -1;
    return head_only ? 0 : bench_buf_append(&c->out, body, body_len);
}

/* The path of an origin-form target: up to '?' (cshttpd routes on it). */
static int is_plaintext(const char *msg, const csh_message *m)
{
    const char *t = csh_span_ptr(msg, m->target);
    const char *q = memchr(t, '?', m->target.len);
    size_t len = q ? (size_t)(q - t) : m->target.len;
    static const char path[] = "/demo/plaintext";
    return len == sizeof path - 1 && memcmp(t, path, len) == 0;
}

/* Answers the request whose head is complete in `msg`. */
static int answer(bench_conn *c, const char *msg)
{
    const csh_message *m = &c->parser.msg;
    const char *connection = NULL;
    if (m->body == CSH_BODY_CHUNKED) {
        /* Decoding chunked bodies is the toolkit's job, not this loop's: say
         * so and close, rather than lose the framing. */
        c->close_after = 1;
        return respond(c, 501, "text/plain", "chunked request bodies are not read here\n", 0,
                       "close");
    }
    if (!(m->flags & CSH_MSG_KEEP_ALIVE)) {
        c->close_after = 1;
        connection = "close";
    } else if (m->version_minor == 0) {
        connection = "keep-alive"; /* HTTP/1.0 keeps the connection only when told */
    }
    int head_only = m->method == CSH_METHOD_HEAD;
    if ((m->method == CSH_METHOD_GET || head_only) && m->target_form == CSH_TARGET_ORIGIN &&
        is_plaintext(msg, m))
        return respond(c, 200, "text/plain", "Hello, World!", head_only, connection);
    return respond(c, 404, "text/plain", "Not Found\n", head_only, connection);
}

int bench_conn_received(bench_conn *c, const char *data, size_t n)
{
    if (c->close_after) return 0;
    /* Parse in place when nothing is pending (the usual case: a whole
     * request in one read); copy only a partial head. The parser resumes on
     * the longer buffer (its spans are offsets), so a head that arrives in
     * pieces is scanned once. */
    const char *buf = data;
    size_t len = n;
    if (c->in.len) {
        if (bench_buf_append(&c->in, data, n) < 0) return -1;
        buf = c->in.data;
        len = c->in.len;
    }
    size_t pos = 0;
    while (pos < len && !c->close_after) {
        if (c->skip) {
            size_t k = len - pos < c->skip ? len - pos : (size_t)c->skip;
            pos += k;
            c->skip -= k;
            continue;
        }
        int r = csh_parser_execute(&c->parser, buf + pos, len - pos);
        if (r == CSH_INCOMPLETE) break;
        if (r < 0) {
            c->close_after = 1;
            char text[160];
            snprintf(text, sizeof text, "%s\n", csh_error_message(r));
            if (respond(c, csh_error_status(r), "text/plain", text, 0, "close") < 0) return -1;
            break;
        }
        if (answer(c, buf + pos) < 0) return -1;
        pos += c->parser.msg.head_length;
        if (c->parser.msg.body == CSH_BODY_LENGTH) c->skip = c->parser.msg.content_length;
        csh_parser_reset(&c->parser);
    }
    /* Keep the start of an incomplete head; the parser's limit on head bytes
     * (max_head, 431) bounds it. */
    size_t rest = c->close_after ? 0 : len - pos;
    if (buf == c->in.data) {
        memmove(c->in.data, c->in.data + pos, rest);
        c->in.len = rest;
    } else if (rest && bench_buf_append(&c->in, data + pos, rest) < 0) {
        return -1;
    }
    if (c->close_after) c->in.len = 0;
    return 0;
}

int bench_parse_args(bench_args *a, int argc, char **argv, int short_reads_ok)
{
    a->port = 8080;
    a->short_reads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 65535) goto usage;
            a->port = (int)v;
        } else if (short_reads_ok && strcmp(argv[i], "--short-reads") == 0) {
            a->short_reads = 1;
        } else {
            goto usage;
        }
    }
    return 0;
usage:
    fprintf(stderr,
            "usage: %s [--port N]%s\n"
            "Serves GET /demo/plaintext as cshttpd --demo does (404 otherwise) on\n"
            "127.0.0.1, one thread; SIGINT or SIGTERM stops it.\n",
            argv[0], short_reads_ok ? " [--short-reads]" : "");
    return -1;
}

int bench_listen(int port, int nonblock)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) {
        perror("socket");
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4096) < 0) {
        fprintf(stderr, "127.0.0.1:%d: %s\n", port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int bench_local_port(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) return -1;
    return ntohs(a.sin_port);
}

void bench_socket_accepted(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

void bench_signals_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the loop's wait returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int bench_stopping(void)
{
    return stopping;
}
