/* What the two bench/uring servers share: one connection's HTTP/1.1 state
 * (libcshttp's parser, a partial head kept between reads, the responses not
 * yet sent) and the socket set-up. Only the I/O loop differs between
 * bench_epoll and bench_uring, so whatever their CPU per request differs by
 * is the I/O mechanism's.
 *
 * The application is cshttpd's demo plaintext route and nothing else: GET or
 * HEAD /demo/plaintext gets the same bytes as `cshttpd --demo` sends
 * ("Hello, World!", text/plain, Content-Length, Date), any other request 404.
 * A head that fails to parse gets its status (400, 431, ...) and the
 * connection closes after it; so does a chunked request body, which these
 * servers do not decode (501). A Content-Length body is read and discarded.
 *
 * Threads: everything here belongs to the one thread of the server. */
#ifndef BENCH_URING_HTTP_H
#define BENCH_URING_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cshttp/parser.h>

/* Bytes waiting to be sent: data[off .. len). */
typedef struct bench_buf {
    char *data;
    size_t off;
    size_t len;
    size_t cap;
} bench_buf;

typedef struct bench_conn {
    csh_parser parser;
    csh_header fields[32];
    bench_buf in;                   /* the start of a message whose head is not complete yet */
    bench_buf out;                  /* responses the loop has not handed to the kernel */
    uint64_t skip;                  /* body bytes of the current request still to discard */
    int close_after;                /* no more requests: close once `out` is sent */
    int fd;                         /* -1 once closed */
    struct bench_conn *prev, *next; /* every open connection, freed at exit */
    /* bench_uring only: the send in flight (its bytes must stay put until
     * the kernel completes it, so new responses go to `out` meanwhile), and
     * which requests of the ring still name this connection. */
    bench_buf sending;
    int recv_armed;
    int send_busy;
} bench_conn;

/* A new connection on socket `fd`, or NULL when out of memory. */
bench_conn *bench_conn_new(int fd);

/* Frees `c` and its buffers (not the socket); NULL does nothing. */
void bench_conn_free(bench_conn *c);

/* At exit: closes the socket of every connection still open and frees it,
 * so that a run under ASan reports only real leaks. */
void bench_conn_free_all(void);

/* Feeds `n` bytes received on `c` (they may end in the middle of a head or
 * hold several pipelined requests) and appends every response they complete
 * to c->out. Bytes after the request that set c->close_after are dropped.
 * `data` is only read during the call: the caller may reuse it at once.
 * Returns 0, or -1 when out of memory (close the connection). */
int bench_conn_received(bench_conn *c, const char *data, size_t n);

/* Appends `n` bytes to `b`, growing it; -1 when out of memory. */
int bench_buf_append(bench_buf *b, const char *data, size_t n);

/* Moves what `b` still has to send to the front, so it can grow. */
void bench_buf_compact(bench_buf *b);

/* Keeps the Date field current; call once per loop iteration (it formats
 * only when the second changed). */
void bench_date_update(time_t now);

/* The command line: --port N (default 8080; 0: any free port), and for bench_epoll
 * --short-reads (stop reading at a short read instead of at EAGAIN). */
typedef struct bench_args {
    int port;
    int short_reads;
} bench_args;

/* Fills `a` from argv; -1 after printing usage. `short_reads_ok`: whether
 * the program takes --short-reads. */
int bench_parse_args(bench_args *a, int argc, char **argv, int short_reads_ok);

/* A listening TCP socket on 127.0.0.1:`port` (SO_REUSEADDR, backlog 4096),
 * non-blocking when `nonblock`; -1 after printing why. Also raises the
 * descriptor limit to its hard limit (W3 holds 1,550 connections). */
int bench_listen(int port, int nonblock);

/* The port a listening socket is bound to (after --port 0: any free one). */
int bench_local_port(int fd);

/* TCP_NODELAY on an accepted socket, as cshttpd sets it. */
void bench_socket_accepted(int fd);

/* SIGINT and SIGTERM stop the server: bench_stopping() becomes 1, and the
 * signal interrupts the loop's wait (no SA_RESTART), which then checks it.
 * SIGPIPE is ignored (a peer that closed is seen as EPIPE). */
void bench_signals_init(void);
int bench_stopping(void);

#endif
