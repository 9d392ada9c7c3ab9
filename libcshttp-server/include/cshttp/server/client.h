/* cshs_client: the engine's pooled HTTP/1.1 client (HTTP and HTTPS), for
 * handlers that call other services (a reverse proxy, an API) and for
 * programs that run no server at all.
 *
 *   cshs_client_options o;
 *   cshs_client_options_init(&o);          // defaults below; own tick thread
 *   cshs_client *cl = cshs_client_new(&o);
 *
 *   cshs_client_request rq;
 *   cshs_client_request_init(&rq);
 *   rq.origin = "http://127.0.0.1:8080";   // scheme://host[:port], no path
 *   rq.method = "GET";
 *   rq.target = "/api/items?page=2";
 *   cshs_call *call;
 *   int r = cshs_client_send(cl, &rq, &call);   // 0: the response head is here
 *   if (r < 0) {
 *       printf("%s (%d)\n", cshs_client_error_message(r), cshs_client_error_status(r));
 *   } else {
 *       const char *body;
 *       size_t len;
 *       int status = cshs_call_status(call);
 *       r = cshs_call_read_all(call, 1 << 20, &body, &len);  // the connection is
 *       ...                                                  // back in the pool here
 *       cshs_call_free(call);
 *   }
 *   cshs_client_free(cl);
 *
 * Streaming both ways (a proxy): the request body in pieces, the response
 * head first and its body in pieces:
 *
 *   rq.body_mode = CSHS_CLIENT_BODY_CHUNKED;    // or _LENGTH with content_length
 *   r = cshs_client_begin(cl, &rq, &call);      // the head is sent
 *   while (more) r = cshs_call_write(call, piece, n);
 *   r = cshs_call_end(call);                    // 0: the response head is here
 *   ... cshs_call_message(call), cshs_call_head(call) ...
 *   while ((n = cshs_call_read(call, buf, sizeof buf)) > 0) pass_on(buf, n);
 *   cshs_call_free(call);                       // n == 0: the end; n < 0: an error
 *
 * The pool. Connections are pooled per origin (scheme, host, port); a pool
 * is created on an origin's first use and dropped by the tick once it has no
 * connection, no waiter and no call. A request takes the most recently used
 * idle connection of its origin (so a few stay warm and the rest go idle
 * long enough to be swept). With none idle, a new connection is opened only
 * while open + opening < pool_size and while the opens in flight are fewer
 * than the requests waiting: a burst of n requests opens up to n
 * connections in parallel and no more. After a failed connect the origin is
 * not tried again for 200-400 ms (jittered). A request that nothing can
 * serve fails at once with that connect's error (CSHS_CLIENT_E_CONNECT
 * for a refused one) instead of waiting for its deadline, as nginx answers
 * 502 at once for a dead origin: when the connect it waited for failed, or
 * it arrives during the backoff, while no connection of its origin is open
 * (idle, or in use: one given back would serve it) and no other connect is
 * in flight (its outcome is waited for). Requests wait first in, first
 * out, each until its acquire_timeout_ms; a connection given back goes
 * straight to the first waiter, with one exception: a connection given
 * back on an engine loop goes to the first waiter of that loop
 * (cshs_client_send_async), if one is among the first 32 and came at
 * most 2 ms after the first waiter: that saves moving the connection to
 * the other loop and waking it. A connection is closed instead of
 * reused when it broke, when the origin said `Connection: close`, when
 * the response ended with the connection (no Content-Length, not
 * chunked), when a response was not read to its end, or once it is older
 * than max_lifetime_ms; its replacement resolves the name again.
 *
 * The tick (cshs_client_tick, every tick_interval_ms): fails the waiters
 * whose acquire deadline has passed (no timer per waiter; with the error
 * of a connect that failed while it waited, if one did, else
 * CSHS_CLIENT_E_ACQUIRE_TIMEOUT; a connect started for it goes on to its
 * own end and serves the next waiter), starts connects for the waiters
 * when an origin's backoff has ended, closes idle connections past
 * idle_timeout_ms and those the origin has closed (poll() with POLLRDHUP and
 * a zero timeout: an unread FIN, or bytes nobody asked for; for one
 * registered with a reactor, only after an event came while it was idle:
 * see "How a request waits"), opens one
 * connection per tick towards min_idle, and drops empty pools (one in its
 * backoff once the backoff ended). By default
 * the client runs its own tick thread (options.tick_thread); a server that
 * runs the client on its own sweep turns it off and calls cshs_client_tick
 * from the engine's tick:
 *
 *   static void client_tick(void *cl) { cshs_client_tick(cl); }
 *   o.tick_thread = 0;  cl = cshs_client_new(&o);
 *   cshs_server_add_tick(server, client_tick, cl);   // before start
 *
 * The engine's tick must return quickly: the client's tick waits on no
 * socket and on no name (its opens look names up on threads of their
 * own, below).
 *
 * Without any tick, a request waiting for a connection waits until one is
 * given back, however long that takes: with tick_thread = 0 the program
 * must call cshs_client_tick.
 *
 * Retry (nginx's proxy_next_upstream rule): a request that failed on a
 * reused connection because the origin had already closed it (an error or
 * end of input on the send, or before the first byte of the response) is
 * sent once more, on a connection it opens itself (when the pool is full,
 * its least recently used idle connection is closed to make room; with
 * none idle it takes the first connection given back), when its method is
 * idempotent (RFC 9110 §9.2.2: GET, HEAD, PUT, DELETE, OPTIONS, TRACE) or
 * when none of its bytes were sent. cshs_client_send (and
 * cshs_client_send_async) retries up to the response head. A body given
 * to cshs_client_begin (whole or streamed) is not kept: such a request is
 * retried only while cshs_client_begin sends it; a request without a body
 * (CSHS_CLIENT_BODY_WHOLE, body_len 0) keeps its head and is also retried
 * while cshs_call_end (or cshs_call_end_async) waits for the response
 * head.
 *
 * Responses are parsed by libcshttp (response mode, strict, default
 * limits). 1xx responses are read and skipped (101 is not: it fails the
 * call as malformed, unless the request asked for it with `upgrade`). A malformed head, a broken
 * body framing, or bytes after the end of the response fail the call and
 * drop the connection. The call owns its head (and the body read by
 * cshs_call_read_all): the connection goes back to the pool as soon as the
 * body's last byte has been read, not when the call is freed.
 *
 * Headers. The client writes the request line, Host (unless the request's
 * headers carry one), and the framing: Content-Length or
 * `Transfer-Encoding: chunked` from body_mode. It never sends the caller's
 * Connection, Keep-Alive, Proxy-Connection, TE, Transfer-Encoding, Upgrade,
 * Content-Length or Expect fields: those are its own or hop-by-hop
 * (RFC 9110 §7.6.1); the fields a client's Connection header names are hop
 * by hop too, and a proxy must drop them before handing the rest here.
 * Names must be tokens and values must hold no CR, LF, NUL or other control
 * byte but HTAB, or the call fails with -EINVAL before anything is sent.
 *
 * Expect: 100-continue: the client never sends Expect upstream. A proxy
 * whose own client sent it answers 100 to that client itself (the engine
 * does so when the handler reads the body) and streams the body upstream
 * with cshs_call_write; the origin's own 1xx responses are skipped.
 *
 * How a request waits, and threads. The client is safe to use from any
 * number of threads at once (a server's workers). A request is one state
 * machine, whichever call made it, run on a reactor: it waits for a
 * connection in its origin's queue (first in, first out) with no thread
 * waiting for it; the release or the open that hands it a connection
 * sends its request (the thread that gives a connection back sends the
 * next waiter's request on it), a failed open at a dead end or the tick
 * at its deadline fails it; its connects, what the socket does not take
 * of its request at once, and its response head are seen through on its
 * reactor. cshs_client_send_async and cshs_call_end_async name that
 * reactor (an engine loop): no thread waits for the request at all. The
 * blocking calls (cshs_client_send, _begin, cshs_call_write,
 * cshs_call_end) give it the calling thread's own loop (an epoll set and
 * an eventfd, made at the thread's first blocking call and let go when it
 * exits) and run that loop until their step is over: the thread sleeps
 * until its request moves, with no polling, and returns once the connects
 * its request started have ended too (one may have gone to another
 * request meanwhile). After the head, a body is read by the calling
 * thread itself (cshs_call_read: poll() on that one socket, within
 * read_timeout_ms), or on a reactor (cshs_call_wait_body).
 *
 * A connection waited on by a server's loop stays registered with it from
 * then to its close (edge-triggered, as nginx keeps its upstream keep-alive
 * connections), so that waiting for a response costs no epoll_ctl. While
 * it is idle, what the origin sends on it (a FIN, or bytes nobody asked
 * for) comes as an event there; such a connection is looked at (poll()
 * with POLLRDHUP and a zero timeout) by the next request or tick, and
 * closed, and one with no event since it went idle is reused without a
 * system call. A connection last waited on by a blocking call's thread
 * (whose loop runs only while that thread waits) leaves that loop when it
 * goes back to the pool, and is looked at before each reuse. A FIN that reaches the origin's socket while a
 * request takes the connection, before the reactor's thread has seen it,
 * is met by that request, which the retry rule sends again when it
 * allows (as nginx's own window between its event and its reuse). A
 * request that waits on a reactor takes the most recently used idle
 * connection registered there, if any, before the most recently used of
 * the others (moving one to another loop's epoll set costs two epoll_ctl).
 *
 * A name is looked up with getaddrinfo() for each connection opened.
 * An open for a request (on its reactor) and the tick's (min_idle) look
 * it up on a thread of their own, which tells the reactor (an eventfd) or
 * the next tick when it has the addresses: no loop and no tick waits for
 * a DNS server. Such a look-up counts against connect_timeout_ms
 * (CSHS_CLIENT_E_RESOLVE past it, as for a name that does not resolve); a
 * stop or a free never waits for one in flight, which ends by itself. An
 * address given as the origin's host is read at once, on no thread.
 *
 * A name's addresses. Every open, by a thread, the tick or a reactor,
 * tries all the addresses the name resolves to (16 at the most), as
 * Happy Eyeballs does (RFC 8305): in getaddrinfo's order with IPv6 and
 * IPv4 taken in turn from the first address's family on; the next address
 * is tried at once when one is refused or unreachable, and 250 ms after
 * the last attempt started when it has not answered, the earlier attempts
 * going on beside it; the first to connect is used and the others are
 * closed. The pool remembers the address its last open connected to and
 * tries it first (RFC 8305 §4 lets a client with a history do so), so an
 * address that never answers costs its delay once, not on every new
 * connection. So `localhost` (::1 then 127.0.0.1 on Debian) reaches an origin
 * that listens on 127.0.0.1 alone. connect_timeout_ms bounds the whole
 * open, every address and the TLS handshake: the open fails with
 * CSHS_CLIENT_E_CONNECT_TIMEOUT when an attempt was still waiting then,
 * or with the last address's error (CSHS_CLIENT_E_CONNECT for refused or
 * unreachable) when every address failed. Only such an open counts as a
 * failure and starts the backoff. A request's open is seen through on
 * the request's reactor (a blocking call's: its thread's loop); the tick never
 * waits on a socket: the next ticks see a min_idle connection through
 * the connect and the TLS handshake (its next address starts at the
 * first tick past its attempt delay). TCP_USER_TIMEOUT bounds each
 * attempt's SYN retries to the time left.
 * One call (a
 * cshs_call) is used by one thread at a time; it may move between threads.
 *
 * Ownership. cshs_client_new copies the options (their strings must
 * outlive the client). A request struct and its strings and body are read
 * only during the call that takes it (cshs_client_send, cshs_client_begin)
 * and may be reused or freed as soon as it returns: nothing of it is kept.
 * Data given to cshs_call_write is sent before it returns. Every
 * cshs_call must be freed with cshs_call_free, and every call freed before
 * cshs_client_free. A client whose calls waited on a server's loops
 * (cshs_call_end_async, cshs_client_send_async) is freed once that server
 * has stopped (cshs_server_stop or cshs_server_free; the two may be freed
 * in either order): its connections stay registered with those loops
 * while idle, and a running loop may still hold an event of one.
 *
 * Errors: every function returning int returns 0 (or a count) on success
 * and a negative code on failure: one of the CSHS_CLIENT_E_* codes below
 * (each with a message and the status a proxy answers its own client:
 * 502, 503 or 504), or -errno for the system's own (-ENOMEM, -EMFILE,
 * -EINVAL for a bad argument or a call used out of order). */
#ifndef CSHTTP_SERVER_CLIENT_H
#define CSHTTP_SERVER_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cshttp/parser.h>

#include "export.h"
#include "reactor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, status, message): the client's own errors. The values
 * lie below -4095, outside the -errno range, so either can be returned.
 * ACQUIRE_TIMEOUT: when a connect to the origin failed while the request
 * waited, the request fails with that connect's error (RESOLVE, CONNECT,
 * CONNECT_TIMEOUT, TLS, CERTIFICATE) instead, the better answer for a
 * proxy (502, not 504): at once when nothing else could serve it (see
 * "The pool"), else at its deadline. */
#define CSHS_CLIENT_ERROR_MAP(XX)                                                                  \
    XX(RESOLVE, -5001, 502, "the origin's name did not resolve")                                   \
    XX(CONNECT, -5002, 502, "could not connect to the origin (refused or unreachable)")            \
    XX(CONNECT_TIMEOUT, -5003, 504, "connecting to the origin timed out")                          \
    XX(TLS, -5004, 502, "the TLS handshake with the origin failed")                                \
    XX(CERTIFICATE, -5005, 502, "the origin's certificate did not verify")                         \
    XX(ACQUIRE_TIMEOUT, -5006, 504, "no connection to the origin within acquire_timeout_ms")       \
    XX(SEND_TIMEOUT, -5007, 504, "sending the request timed out")                                  \
    XX(HEAD_TIMEOUT, -5008, 504, "the response head did not arrive within head_timeout_ms")        \
    XX(READ_TIMEOUT, -5009, 504, "the response body stalled for read_timeout_ms")                  \
    XX(ORIGIN_CLOSED, -5010, 502, "the origin closed the connection before the response ended")    \
    XX(MALFORMED, -5011, 502, "the response is malformed, or bytes followed its end")              \
    XX(TOO_LARGE, -5012, 502, "the response body is larger than the limit")                        \
    XX(CANCELED, -5013, 499, "the call was given up before its answer (cshs_call_cancel)")

typedef enum cshs_client_error {
#define CSHS_CLIENT_ERROR_ENUM_(name, value, status, message) CSHS_CLIENT_E_##name = (value),
    CSHS_CLIENT_ERROR_MAP(CSHS_CLIENT_ERROR_ENUM_)
#undef CSHS_CLIENT_ERROR_ENUM_
} cshs_client_error;

/* "CSHS_CLIENT_E_CONNECT", or the errno name for -errno ("ENOMEM"), or
 * "OK" for 0; "UNKNOWN" otherwise. Static; any thread. */
CSHS_EXPORT const char *cshs_client_error_name(int code);

/* A one-line message for any code this header returns (-errno included).
 * Static; any thread. */
CSHS_EXPORT const char *cshs_client_error_message(int code);

/* The status a proxy answers its own client for `code`: 502 (the origin
 * failed or answered badly), 504 (it did not answer in time), 500 for
 * -errno codes (a failure on this side); 0 for 0. Any thread. */
CSHS_EXPORT int cshs_client_error_status(int code);

/* The client's settings. Timeouts are in milliseconds.
 *
 * The struct can grow without breaking callers: `size` is
 * sizeof(cshs_client_options) as the caller was compiled, set by
 * cshs_client_options_init, and the client reads only the fields within it
 * (an option added after the caller was built takes its default). So
 * always fill it with cshs_client_options_init, never with an initializer
 * or memset alone: a size below CSHS_CLIENT_OPTIONS_SIZE_0_3 fails
 * cshs_client_options_check ("size must be set by
 * cshs_client_options_init") and cshs_client_new. A new field goes at the
 * end, with its default in cshs_client_options_init; nothing is removed,
 * reordered or retyped (README.md, Versioning). */
typedef struct cshs_client_options {
    size_t size; /* sizeof as the caller knew it: leave _init's */

    unsigned pool_size;          /* most connections open (or opening) per origin (32) */
    unsigned min_idle;           /* idle connections kept warm per origin (0) */
    unsigned idle_timeout_ms;    /* an idle connection is closed after it (60000) */
    unsigned max_lifetime_ms;    /* a connection older than it is not reused (3600000; 0: none) */
    unsigned acquire_timeout_ms; /* how long a request waits for a connection (10000) */
    unsigned connect_timeout_ms; /* connect, every address, and TLS handshake (5000) */
    unsigned send_timeout_ms;    /* between bytes of the request being taken (60000) */
    unsigned head_timeout_ms;    /* from the request sent to the response head (60000) */
    unsigned read_timeout_ms;    /* between bytes of the response body (60000) */

    /* The tick: with tick_thread (1), cshs_client_new starts a thread that
     * calls cshs_client_tick every tick_interval_ms (200), stopped and
     * joined by cshs_client_free. 0: the program calls cshs_client_tick
     * itself (a server's sweep does), about every 200-250 ms. */
    int tick_thread;
    unsigned tick_interval_ms;

    /* HTTPS origins: the certificate is verified (the chain against
     * tls_ca_file, a PEM file of trusted certificates, or when NULL the
     * system's default trust store; the name or IP address of the origin
     * against the certificate; SNI is sent for names). tls_insecure = 1
     * turns verification off: for tests against self-signed origins
     * only. (tls_insecure comes first: the struct ends without padding,
     * README.md, Versioning.) */
    int tls_insecure;
    const char *tls_ca_file;
} cshs_client_options;

/* The size of cshs_client_options in libcshttp-server 0.3, the first
 * version of this layout: the smallest size the client accepts. */
#define CSHS_CLIENT_OPTIONS_SIZE_0_3                                                               \
    (offsetof(cshs_client_options, tls_ca_file) + sizeof(const char *))

/* Fills the first `size` bytes of `o` with the defaults (zeros past the
 * fields this library knows) and sets o->size = size. Called through
 * cshs_client_options_init, which passes the caller's sizeof: a library
 * newer than the caller never writes past the caller's struct. Any
 * thread. */
CSHS_EXPORT void cshs_client_options_init_sized(cshs_client_options *o, size_t size);

/* Fills `o` with the defaults above and sets o->size. Any thread. */
static inline void cshs_client_options_init(cshs_client_options *o)
{
    cshs_client_options_init_sized(o, sizeof *o);
}

/* 0 when the options are usable, else -EINVAL with *why (if not NULL)
 * naming the bad field ("pool_size must be at least 1"). Any thread. */
CSHS_EXPORT int cshs_client_options_check(const cshs_client_options *o, const char **why);

/* How the request body is sent. */
typedef enum cshs_client_body_mode {
    /* body/body_len, whole, in one writev with the head (a body that fits
     * the connection's buffer is copied next to the head; a larger one is
     * sent from the caller's memory). Content-Length is sent when body_len
     * > 0, or for POST, PUT and PATCH (as 0). */
    CSHS_CLIENT_BODY_WHOLE = 0,
    /* exactly content_length bytes written with cshs_call_write
     * (cshs_client_begin only); Content-Length: content_length. */
    CSHS_CLIENT_BODY_LENGTH = 1,
    /* pieces written with cshs_call_write, each sent as one chunk
     * (cshs_client_begin only); Transfer-Encoding: chunked. */
    CSHS_CLIENT_BODY_CHUNKED = 2,
    /* body_len bytes of the file body_fd from body_offset (0.4.2), whole,
     * after the head (sendfile; over TLS read and written a piece at a
     * time); Content-Length: body_len. As WHOLE otherwise (cshs_client_send,
     * cshs_client_begin, cshs_client_send_async): a proxy passing on a
     * request body stored in a temporary file. The file is read with
     * offsets (its position is not used) until the call's head is here. */
    CSHS_CLIENT_BODY_FILE = 3,
} cshs_client_body_mode;

/* One header field to send: name and value by pointer and length (not
 * NUL-terminated; a value may be empty). */
typedef struct cshs_client_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} cshs_client_header;

/* One request. Filled with defaults by cshs_client_request_init; read
 * only during cshs_client_send / cshs_client_begin.
 *
 * It grows as cshs_client_options does: `size` is the caller's sizeof, set
 * by cshs_client_request_init, and the client reads only the fields within
 * it (later ones take their defaults). A size below
 * CSHS_CLIENT_REQUEST_SIZE_0_3 (a struct not filled by
 * cshs_client_request_init) is -EINVAL from cshs_client_send and
 * cshs_client_begin, before anything is sent. */
typedef struct cshs_client_request {
    size_t size; /* sizeof as the caller knew it: leave _init's */

    /* "http://host[:port]" or "https://host[:port]" (default ports 80 and
     * 443; an IPv6 literal in brackets); no path, no user info. The host is
     * compared without case: it names the pool. */
    const char *origin;
    const char *method;                /* a token: "GET" (default) */
    const char *target;                /* origin-form "/path?query" (default "/"), or "*" */
    const cshs_client_header *headers; /* sent in order (see the top) */
    size_t num_headers;

    /* Per-request deadlines; 0: the client's option of the same name. */
    unsigned acquire_timeout_ms;
    unsigned connect_timeout_ms;
    unsigned send_timeout_ms;
    unsigned head_timeout_ms;
    unsigned read_timeout_ms;

    cshs_client_body_mode body_mode;
    const void *body; /* CSHS_CLIENT_BODY_WHOLE: the body (may be NULL with 0) */
    size_t body_len;
    uint64_t content_length; /* CSHS_CLIENT_BODY_LENGTH */
    /* 0.4.2, CSHS_CLIENT_BODY_FILE: the file (body_len bytes of it from
     * body_offset; default -1: none) */
    int body_fd;
    uint64_t body_offset;
    /* 0.4.4: a protocol to switch to ("websocket"; RFC 9110 §7.8), or
     * NULL: the request carries "Connection: Upgrade" and "Upgrade:
     * protocol" (the caller's own Upgrade and Connection are dropped as
     * ever), has no body, and a 101 answer is taken: the call's status is
     * 101 and its connection is its own from then on (cshs_call_tunnel_*
     * below), never given back to the pool. */
    const char *upgrade;
} cshs_client_request;

/* The size of cshs_client_request in libcshttp-server 0.3, the first
 * version of this layout: the smallest size the client accepts. */
#define CSHS_CLIENT_REQUEST_SIZE_0_3                                                               \
    (offsetof(cshs_client_request, content_length) + sizeof(uint64_t))

/* Fills the first `size` bytes of `r` with the defaults (zeros past the
 * fields this library knows) and sets r->size = size. Called through
 * cshs_client_request_init, which passes the caller's sizeof. Any
 * thread. */
CSHS_EXPORT void cshs_client_request_init_sized(cshs_client_request *r, size_t size);

/* Fills `r` with the defaults (method GET, target "/", no headers, no
 * body, deadlines from the client) and sets r->size. Any thread. */
static inline void cshs_client_request_init(cshs_client_request *r)
{
    cshs_client_request_init_sized(r, sizeof *r);
}

typedef struct cshs_client cshs_client;

/* One request and its response, on one connection of the pool. */
typedef struct cshs_call cshs_call;

/* A client with a copy of `o` (NULL: the defaults). NULL when out of
 * memory, when the options do not pass cshs_client_options_check, or when
 * the tick thread cannot be started. No connection is opened here. Any
 * thread. */
CSHS_EXPORT cshs_client *cshs_client_new(const cshs_client_options *o);

/* Stops and joins the tick thread, closes every connection and frees the
 * client. Every cshs_call must have been freed before, and no request may
 * be in progress on any thread. NULL does nothing. */
CSHS_EXPORT void cshs_client_free(cshs_client *c);

/* The periodic work (see the top): expired waiters, backoffs ended, idle
 * and origin-closed connections, min_idle, empty pools. Call it every
 * 200-250 ms when the client has no tick thread; calling it more often is
 * harmless. It waits on no socket and on no name (its opens look names
 * up on threads of their own). Any thread. */
CSHS_EXPORT void cshs_client_tick(cshs_client *c);

/* Sends a request whose body (if any) is whole (CSHS_CLIENT_BODY_WHOLE)
 * (-EINVAL for another body_mode) and waits for the response head, 1xx
 * responses skipped. On 0, *out is the call (read its body, then
 * cshs_call_free it). On error, *out is NULL
 * and the connection, if one was taken, was given back or closed as its
 * state requires. Retries once as described at the top. Blocks the
 * calling thread (see "How a request waits"). Any thread. */
CSHS_EXPORT int cshs_client_send(cshs_client *c, const cshs_client_request *r, cshs_call **out);

/* Takes a connection and sends the request head, and the body when it is
 * CSHS_CLIENT_BODY_WHOLE. On 0, *out is the call: write the body with
 * cshs_call_write (streamed modes), then cshs_call_end for the response
 * head. On error, *out is NULL. Any thread. */
CSHS_EXPORT int cshs_client_begin(cshs_client *c, const cshs_client_request *r, cshs_call **out);

/* Sends `len` bytes of a streamed body from `data` (no copy; it returns
 * once the socket took them, within send_timeout_ms between bytes). For
 * CSHS_CLIENT_BODY_CHUNKED each call with len > 0 is one chunk (len 0 does
 * nothing); for CSHS_CLIENT_BODY_LENGTH more than content_length bytes in
 * all is -EINVAL. On error the call is failed: only cshs_call_free is
 * left.
 *
 * 1: the origin answered before the body was all sent (RFC 9112 §9.5: a
 * 413 or a 401 sent as soon as it had the head, then closing, or reading
 * no more). Its response head was read while the socket could take no
 * more, or after the send failed because the origin had closed; the rest
 * of the body is not sent (this write's bytes maybe in part), later
 * writes return 1 and send nothing, cshs_call_end returns 0 with that
 * response, whose body is read as any other; the connection is closed
 * after it, never reused. A proxy passes that response on and stops
 * reading its own client's body. The same over TLS (https://) since
 * 0.3.1. */
CSHS_EXPORT int cshs_call_write(cshs_call *call, const void *data, size_t len);

/* Ends the request (CSHS_CLIENT_BODY_CHUNKED: the last chunk;
 * CSHS_CLIENT_BODY_LENGTH: fewer than content_length bytes written is
 * -EINVAL, and the connection is closed) and waits for the response head,
 * 1xx responses skipped, within head_timeout_ms. 0 when the head is here.
 * For a call made by cshs_client_begin with a whole body, call it once to
 * wait for the head. A response the origin sent before the request body
 * was all written is read here once the body is sent; when the origin
 * answered while the body could not all be sent (cshs_call_write returned
 * 1, or the last chunk met it), 0 at once with that response; when a send
 * failed with no response there, the send's error. */
CSHS_EXPORT int cshs_call_end(cshs_call *call);

/* Waits for the response head on a reactor instead of the calling thread
 * (0.3.2): a handler that deferred (server.h, cshs_defer) waits for its
 * origin on its loop, holding no thread. For a call whose request was
 * sent whole (cshs_client_begin with CSHS_CLIENT_BODY_WHOLE); a streamed
 * body ends with cshs_call_end. The socket is watched on `r` for the
 * response (1xx skipped), read and parsed there without waiting, and
 * when the head is here (and with it a body of known length that fits
 * the connection's buffer, so that reading it waits for nothing), or the
 * call failed, or head_timeout_ms passed, done(arg) is called once on the
 * reactor's thread. Then call cshs_call_end: it returns at once with the
 * head or the error. When the origin had closed the reused connection,
 * the retry rule's second sending (a request without a body) is made on
 * `r` before done runs (since 0.4.6). Until done runs, the call must not
 * be touched.
 *
 * 0: done will be called. 1: nothing to wait for (the head is here, or
 * the call failed): call cshs_call_end now; done is not called. -EINVAL
 * for a call in another state or a NULL argument; -errno when the
 * reactor could not watch the socket: cshs_call_end then waits in the
 * calling thread. For a streamed body of cshs_client_send_async (0.4.3,
 * below) it ends the body first (the last chunk; a LENGTH body short of
 * its length fails the call with -EINVAL), sent from the reactor as the
 * socket takes it, on `r` (the call's own) and its thread only. */
CSHS_EXPORT int cshs_call_end_async(cshs_call *call, cshs_reactor *r, void (*done)(void *arg),
                                    void *arg);

/* Sends a request whose body (if any) is whole (CSHS_CLIENT_BODY_WHOLE or
 * _FILE; streamed ones below) and waits for the response head on the
 * reactor `r`, holding no thread from start to end (0.3.2): not while it
 * waits for the head (as cshs_call_end_async), and not while it waits for
 * a connection either. With one idle, the request is sent from here. With
 * none, the call is queued with the other requests for its origin (first
 * in, first out, until acquire_timeout_ms) as a waiter no thread waits
 * for: the thread that gives a connection back sends the request on it
 * and has its head awaited on `r`; a connect the pool's rules allow is
 * started here and seen through on `r` (the connect, then the TLS
 * handshake, within connect_timeout_ms), its connection going to the
 * first waiter; the tick fails the waiter at its deadline. The retry
 * rule (at the top) holds no thread either: a request that met the
 * origin's close of a reused connection, before the first byte of its
 * answer, is sent once more on a connection opened for it on `r` (the
 * least recently used idle one closed to make room), or, when none can
 * be opened then, on the first one given back; done runs after that.
 *
 * *out is the call, set before anything can run done. 0: done(arg) will
 * be called once, when the head is here (with a body of known length
 * that fits the connection's buffer), or the call failed (no connection
 * by its deadline, a failed connect at a dead end, a failed send), or
 * head_timeout_ms passed: on `r`'s thread, or on the thread that failed it
 * (the tick's, or one that gave a connection back), maybe before this
 * function returns. Until then the call must not be touched. 1: finished
 * at once (the head is here, or it failed); done is not called. Either
 * way, then call cshs_call_end: it returns the head or the error at once
 * (since 0.4.3 a socket `r` could not watch fails the call with that
 * error, never waited for on the reactor's thread). < 0: no call was
 * made (*out NULL): -EINVAL, -ENOMEM, or the request's check (as
 * cshs_client_begin). The request struct is copied; its strings, fields
 * and body are read until done runs (or this returns 1). done should
 * return quickly: it may run on a thread that gives a connection back in
 * the middle of its own work. Every call must
 * be done (and freed) before cshs_client_free, and a reactor given here
 * must outlive the calls and connects on it (a server's loops: until it
 * is freed; at a forced stop its watches are given 0 and fail). Any
 * thread. */
CSHS_EXPORT int cshs_client_send_async(cshs_client *c, const cshs_client_request *r,
                                       cshs_reactor *rx, void (*done)(void *arg), void *arg,
                                       cshs_call **out);

/* A streamed body on the reactor (0.4.3): a request of
 * cshs_client_send_async whose body_mode is CSHS_CLIENT_BODY_LENGTH or
 * CSHS_CLIENT_BODY_CHUNKED. Everything above holds, but done (or the
 * return of 1) comes once the request's head is sent, not with the
 * response: the caller then writes the body with cshs_call_write_async,
 * on rx's thread, piece by piece as it has them, and ends it with
 * cshs_call_end_async(call, rx, ...), whose done comes with the response
 * head. No thread waits at any point: a piece the socket does not take
 * at once is sent from the reactor, and `drained` says when to write the
 * next one. The retry rule holds until the head is out; once it is, the
 * request is never sent again.
 *
 * cshs_call_write_async sends `len` bytes of the body from `data` (for
 * CHUNKED each write with len > 0 is one chunk; for LENGTH more than
 * content_length bytes in all fails the call with -EINVAL; len 0 sends
 * nothing and says where the call stands: 0, 2 or its error):
 * - 0: the socket took them all; write more now;
 * - 1: some wait for the socket: `data` must stay as it is until
 *   drained(arg) runs, once, on rx's thread, when they went, or the call
 *   failed (send_timeout_ms, the origin's close, cshs_call_cancel), or the
 *   origin answered; then write again (the next write says which);
 * - 2: the origin answered before the body was all sent (as
 *   cshs_call_write's 1): nothing more is sent; cshs_call_end_async
 *   returns 1 and cshs_call_end gives that response; the connection is
 *   closed after it;
 * - < 0: the call failed with that error (cshs_call_end returns it), or
 *   -EINVAL for a call that is not such a call, off rx's thread, or after
 *   its end.
 * A request whose body is cut short (its own client's body failed) is
 * given up with cshs_call_free: its connection is closed. */
CSHS_EXPORT int cshs_call_write_async(cshs_call *call, const void *data, size_t len,
                                      void (*drained)(void *arg), void *arg);

/* The call's connection stops counting toward its pool's size (0.4.1):
 * the pool may open another for the requests that wait, and this one is
 * closed when the call ends, never given back. For a call reading a long
 * body at its reader's pace (a proxy's client that reads slowly, past
 * what the proxy buffers), so that it holds no place other requests
 * need; whoever detaches bounds how many it holds so. 0 (again: 0);
 * -EINVAL without a response body being read. The thread using the
 * call. */
CSHS_EXPORT int cshs_call_detach(cshs_call *call);

/* After a 101 to a request with `upgrade` (0.4.4): the connection's
 * bytes both ways, without waiting, on the thread of the reactor the
 * call's head was awaited on (or the caller's, for cshs_call_end).
 * cshs_call_tunnel_read: the origin's bytes (those read past the 101's
 * head first): the count, 0 at its end, -EAGAIN (wait for it), -errno.
 * cshs_call_tunnel_write: what the socket takes of data: the count (> 0),
 * -EAGAIN (wait; over TLS, offer the same bytes again), -errno.
 * cshs_call_tunnel_wait: ready(arg, events) once on r's thread when the
 * socket can be read (CSHS_TUNNEL_IN) or written (CSHS_TUNNEL_OUT), as
 * asked (a TLS read that needs the socket writable, or the other way
 * round, is looked after), or with 0 at deadline_ms (0: none) or when r
 * stops; 0, or -errno. Wait only after a read or write said -EAGAIN:
 * bytes already read past the 101, or held by OpenSSL, fire no event.
 * One wait at a time: another, on r's thread, replaces the one armed
 * (unless r took its event already: its ready runs, and may wait anew). cshs_call_tunnel_shutdown:
 * our side ends (FIN; TLS: close_notify). cshs_call_free closes the
 * connection (a wait armed is given up first: call it on r's thread).
 * Each is -EINVAL for a call that did not switch. */
#define CSHS_TUNNEL_IN 1
#define CSHS_TUNNEL_OUT 2
CSHS_EXPORT ssize_t cshs_call_tunnel_read(cshs_call *call, void *buf, size_t cap);
CSHS_EXPORT ssize_t cshs_call_tunnel_write(cshs_call *call, const void *data, size_t len);
CSHS_EXPORT int cshs_call_tunnel_wait(cshs_call *call, cshs_reactor *r, int events,
                                      int64_t deadline_ms, void (*ready)(void *arg, int events),
                                      void *arg);
CSHS_EXPORT int cshs_call_tunnel_shutdown(cshs_call *call);

/* 1 when the rest of the response's body is here (none, or all of it in
 * the call's buffer: cshs_call_read waits for nothing), as after a
 * cshs_call_end_async whose head came with a short body (0.4.1). 0 when
 * more must come from the origin, before the head, or after a failure.
 * A handler that answers on its loop asks this, not the body's length:
 * a body longer than the connection's buffer is read from the socket. */
CSHS_EXPORT int cshs_call_body_here(const cshs_call *call);

/* Gives up a call of cshs_client_send_async that nobody wants any more:
 * the client of a proxied request left (0.4.1). On its reactor's thread,
 * before done ran. 0: it ended here with CSHS_CLIENT_E_CANCELED, and done
 * ran before this returned, as for any failure (cshs_call_end then
 * returns the error): a call waiting in its pool's queue for a
 * connection leaves the queue; a call whose head is awaited has its
 * watch disarmed and its connection closed (its request was sent: the
 * origin sees the close, as nginx's proxy closes the upstream connection
 * of a client that left). 1: it could not end here; a call between
 * states (being handed a connection, opening one of its own) fails with
 * CSHS_CLIENT_E_CANCELED as soon as its head would be awaited, its done
 * run by the thread that got there, maybe while this runs: the call must
 * stay valid until this returns (a deferred request's continuation, which
 * frees it, waits for the abort callback: cshs_deferred_on_abort). -EINVAL:
 * a NULL call, one of another function, or another thread. */
CSHS_EXPORT int cshs_call_cancel(cshs_call *call);

/* The response, once the head is here (after cshs_client_send, or
 * cshs_call_end returned 0); valid until cshs_call_free.
 * cshs_call_status: 100..599. cshs_call_message: the parsed head (framing,
 * flags, headers); its spans are offsets into cshs_call_head(call, &len),
 * bytes the call owns, whatever happens to the connection. */
CSHS_EXPORT int cshs_call_status(const cshs_call *call);
CSHS_EXPORT const csh_message *cshs_call_message(const cshs_call *call);
CSHS_EXPORT const char *cshs_call_head(const cshs_call *call, size_t *len);

/* The value of the first header field named `name` (any case): 1 and
 * *value set (a pointer into the call's head, not NUL-terminated, with
 * *value_len), or 0 when absent. */
CSHS_EXPORT int cshs_call_header(const cshs_call *call, const char *name, const char **value,
                                 size_t *value_len);

/* Reads up to `cap` bytes of the response body (chunked coding removed)
 * into `buf`: > 0 the bytes read, 0 at the end of the body (the connection
 * went back to the pool when its last byte was read; HEAD, 204 and 304
 * have no body), or a negative error (read_timeout_ms between bytes
 * (CSHS_CLIENT_E_READ_TIMEOUT), CSHS_CLIENT_E_ORIGIN_CLOSED for a body cut
 * short, CSHS_CLIENT_E_MALFORMED for broken chunked coding or bytes after
 * the end): then the connection is closed and later reads return the same
 * error. A body delimited by the connection's end (no Content-Length, not
 * chunked) ends when the origin closes, and that connection is closed. */
CSHS_EXPORT ssize_t cshs_call_read(cshs_call *call, void *buf, size_t cap);

/* A read that never waits (0.4.2), for a handler relaying the body on
 * its loop: as cshs_call_read, or -EAGAIN when no byte of the body is
 * here; then cshs_call_wait_body says when to read again. */
CSHS_EXPORT ssize_t cshs_call_read_nowait(cshs_call *call, void *buf, size_t cap);

/* Waits on the reactor `r` for the body's next bytes (0.4.2): done(arg)
 * runs once on r's thread when the origin sent more, ended or failed, or
 * read_timeout_ms passed (the next cshs_call_read_nowait then fails with
 * CSHS_CLIENT_E_READ_TIMEOUT), or the reactor's server stops. No thread
 * waits meanwhile, and cshs_call_cancel (on r's thread) gives the call
 * up as while its head is awaited: a deferred request whose client left
 * (cshs_deferred_on_abort). 0: done will run, the call not touched until
 * then; 1: read now (bytes are buffered, the body ended or failed), done
 * is not called; -EINVAL; -errno when r could not watch the socket (read
 * with cshs_call_read, which waits). After a cshs_call_read_nowait that
 * returned -EAGAIN; the thread using the call. */
CSHS_EXPORT int cshs_call_wait_body(cshs_call *call, cshs_reactor *r, void (*done)(void *arg),
                                    void *arg);

/* Reads the rest of the body into memory the call owns: 0 and *body,
 * *len (the bytes, followed by a NUL not counted in *len; valid until
 * cshs_call_free; a second call gives the same), or a negative error as
 * cshs_call_read, and CSHS_CLIENT_E_TOO_LARGE past `limit` bytes (the
 * connection is closed, unless the byte past the limit was the body's
 * last). Bytes read before with cshs_call_read are not in *body. */
CSHS_EXPORT int cshs_call_read_all(cshs_call *call, size_t limit, const char **body, size_t *len);

/* The trailer fields of the response (0.4.8; RFC 9110 §6.5): those that
 * ended its chunked body (RFC 9112 §7.1.2), once a read returned 0 or
 * cshs_call_read_all returned; none before, nor for a body of another
 * framing. The first 16, in order, names as sent, NUL-terminated; valid
 * until cshs_call_free. */
CSHS_EXPORT size_t cshs_call_trailer_count(const cshs_call *call);
CSHS_EXPORT const char *cshs_call_trailer_at(const cshs_call *call, size_t i, const char **value);

/* Ends the call: a connection whose response was read to its end is
 * already back in the pool; one still held (the body not read to its end,
 * the request not ended, an error) is closed. NULL does nothing. Any
 * thread (the one using the call). */
CSHS_EXPORT void cshs_call_free(cshs_call *call);

/* One origin's pool, read at one moment (under the client's lock).
 *
 * The client fills the caller's array, and the struct can grow at its end:
 * cshs_client_stats passes the caller's sizeof, which is also the array's
 * stride; the client writes only the fields that fit in it (zeros past the
 * ones it knows), and `size` says how many bytes of each element it
 * filled, min(the caller's sizeof, the client's). A program built against
 * newer headers than the library reads a field only when it lies within
 * `size`. A new field goes at the end; nothing is removed, reordered or
 * retyped (README.md, Versioning). */
typedef struct cshs_client_pool_stats {
    size_t size;      /* the bytes the client filled (see above) */
    char origin[300]; /* "http://host:port", NUL-terminated (cut if longer) */
    uint32_t open;    /* connections open: idle and in use */
    uint32_t idle;
    uint32_t opening;          /* connects in flight */
    uint32_t waiters;          /* requests waiting for a connection */
    uint32_t backoff_ms;       /* after a failed connect: ms before the origin is tried again */
    uint32_t last_backoff_ms;  /* the length of the last backoff (200-400, jittered; 0: none) */
    uint64_t requests;         /* requests that were given a connection */
    uint64_t opens;            /* connections opened */
    uint64_t failures;         /* failed opens (resolve, connect, TLS) */
    uint64_t retries;          /* requests sent again under the retry rule */
    uint64_t acquire_timeouts; /* requests failed at their acquire deadline (not those failed at
                                  once after a connect failed: see "The pool") */
    /* how long requests waited for a connection (0 for one idle at
     * once), since the pool was created: p50 and p99 in microseconds, by
     * buckets that are at most 1/16 wide (the bucket's upper bound) */
    uint64_t acquire_wait_p50_us;
    uint64_t acquire_wait_p99_us;
    /* 0.3.2: idle connections whose socket was looked at (a poll() for a
     * FIN, or bytes nobody asked for) before a request took one or the
     * tick kept one: each time for those only ever waited on by threads,
     * and only after an event came while idle for those waited on by a
     * reactor (see "How a request waits") */
    uint64_t looks;
    /* 0.4.1: connections the pool stopped counting while a call still
     * read from them (cshs_call_detach) */
    uint64_t detached;
} cshs_client_pool_stats;

/* The size of cshs_client_pool_stats in libcshttp-server 0.3, the first
 * version with `size`: the smallest size the client fills. */
#define CSHS_CLIENT_POOL_STATS_SIZE_0_3                                                            \
    (offsetof(cshs_client_pool_stats, acquire_wait_p99_us) + sizeof(uint64_t))

/* cshs_client_stats for elements of `size` bytes (the caller's sizeof,
 * passed by cshs_client_stats): -EINVAL when c is NULL, out is NULL with
 * cap > 0, or size is below CSHS_CLIENT_POOL_STATS_SIZE_0_3 (nothing
 * written). */
CSHS_EXPORT ssize_t cshs_client_stats_sized(cshs_client *c, cshs_client_pool_stats *out, size_t cap,
                                            size_t size);

/* Fills out[0 .. cap) with the pools in no particular order; returns the
 * number of pools (which may be more than cap: call again with more room;
 * cap 0 and out NULL only count them), or -EINVAL (c NULL, out NULL with
 * cap > 0). Any thread. */
static inline ssize_t cshs_client_stats(cshs_client *c, cshs_client_pool_stats *out, size_t cap)
{
    return cshs_client_stats_sized(c, out, cap, sizeof *out);
}

#ifdef __cplusplus
}
#endif

#endif
