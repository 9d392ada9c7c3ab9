/* Private to the engine's client (client.c and the client_*.c files): its
 * objects, and the functions one of its files calls in another. */
#ifndef CSHS_CLIENT_IMPL_H
#define CSHS_CLIENT_IMPL_H

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <openssl/ssl.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>
#include <cshttp/server/client.h>

#include "dial.h"
#include "persistent_watch.h"
#include "lookup.h"

#define CONN_BUF 16384     /* a connection's buffer: the head built, the response read */
#define CONN_BUF_MAX 65536 /* grown up to this for a long head (the parser stops at 32 KiB) */
#define MAX_FIELDS 100     /* response header fields kept (the parser's default limit) */
#define CALL_TRAILERS 16   /* trailer fields kept of a chunked response */
#define BACKOFF_MIN_MS 200 /* after a failed connect: 200-400 ms, jittered */
#define BACKOFF_JITTER_MS 201
#define HIST_BUCKETS (16 + 16 * 40) /* acquire waits: 1/16-wide log buckets up to 2^44 us */

/* ---- the objects ---- */

typedef struct pool pool;

/* Connection states. */
enum { C_IDLE = 0, C_BUSY, C_OPENING };

typedef struct conn {
    /* The socket's registration with the reactor it was last waited on
     * (persistent_watch.h): from the first wait there (its connect on a reactor, or
     * cshs_call_end_async) to its close, so that a wait costs no epoll_ctl
     * and an event while idle is seen (take_idle). Armed while `waiting`
     * waits, or while it connects on the reactor. A connection that was
     * registered is not freed when it closes but kept on the client's
     * `retired` list for the next connection: a loop may still hold an
     * event of it (dropped by its generation). */
    cshs_persistent_watch pw; /* first: a stale event of the loop reads its tag */
    struct conn *next_retired;
    struct conn *prev, *next; /* idle list (MRU first) or opening list */
    pool *p;
    cshs_client *c; /* its pool's, which may be dropped before the connection is closed */
    int fd;
    SSL *ssl;
    int state;
    int tcp_done;           /* opening: the TCP connect has completed */
    int64_t born_ms;        /* opened (or the open started, while opening) */
    int64_t idle_ms;        /* put on the idle list */
    uint64_t uses;          /* responses read on it */
    unsigned connect_ms;    /* opening by the tick: its deadline */
    char *buf;              /* the head built here; the response read here */
    size_t cap, start, end; /* unread input: buf[start .. end) */
    struct cshs_call *waiting;
    /* a read that could not wait (cshs_call_read_nowait): the way to wait,
     * POLLIN, or POLLOUT when TLS has to write first */
    short io_wait;
    /* a switched connection (cshs_call_tunnel_read): a short read emptied
     * the socket (tunnel_dry: the next read waits for an event, which
     * edge-triggered registration gives for the next bytes), or an event
     * said the input ends (tunnel_end: read until the end) */
    unsigned char tunnel_dry, tunnel_end;
    /* opened on a reactor for one call (an async retry's own connect),
     * not for the pool's first waiter */
    struct cshs_call *opened_for;
    /* counted no more in its pool (cshs_call_detach): closed at its
     * call's end, never given back */
    int detached;
    /* opening by the tick: the TCP connect to the name's addresses, until
     * one connected (then fd is that one's) */
    cshs_dialer *dialer;
    /* opening on a reactor: one attempt of that open's race (open_async),
     * until it won it */
    struct race *race;
    /* a name's look-up (lookup.h) the tick's open waits for (then fd is
     * -1), or whose end this connection's eventfd tells a reactor (then
     * `race` is the open it is for, and the connection is no socket) */
    cshs_lookup *lookup;
} conn;

typedef struct waiter {
    struct waiter *prev, *next;
    /* the call it is (cshs_call.aw): no thread waits on it; whatever
     * hands it a connection or fails it puts the call on the client's
     * `due` list, served after the lock is let go */
    struct cshs_call *call;
    conn *got;   /* handed over by a release or an open */
    int err;     /* failed: its deadline (the tick), or nothing left to serve it */
    int queued;  /* on the pool's queue */
    int64_t deadline_ms;
    int64_t since_us;
} waiter;

/* An origin, parsed: what names a pool and what connecting needs. */
typedef struct origin_id {
    char key[300]; /* "http://host:port" */
    char host[256];
    char port[8];
    char hosthdr[272]; /* Host field value */
    int tls;
    int host_is_ip;
} origin_id;

struct pool {
    pool *next;
    struct cshs_client *c;
    char given[128]; /* the origin string as first given: found without parsing */
    char key[300];   /* "http://host:port": the origin */
    char host[256];
    char port[8];
    char hosthdr[272]; /* Host field value */
    int tls;
    int host_is_ip;
    conn *idle;    /* MRU first */
    conn *opening; /* min_idle connections being opened by the tick */
    unsigned open, nidle, nopening, nwaiters;
    unsigned users; /* requests and calls that use this pool */
    waiter *wq, *wq_tail;
    int64_t backoff_until_ms;
    uint32_t last_backoff_ms; /* its length (stats) */
    int64_t last_fail_us;
    int last_error;
    uint64_t requests, opens, failures, retries, acquire_timeouts;
    uint64_t looks;    /* conn_quiet calls (cshs_client_pool_stats) */
    uint64_t detached; /* connections given up by the pool (cshs_call_detach) */
    uint32_t hist[HIST_BUCKETS];
    /* the address the last open connected to, tried first by the next
     * (dial.h): a name whose first address never answers costs its
     * attempt delay once, not on every new connection (nginx skips a
     * server that failed for fail_timeout) */
    cshs_dial_addr won;
    int has_won;
};

struct cshs_client {
    cshs_client_options o;
    pthread_mutex_t mu;
    pool *pools;
    SSL_CTX *ssl_ctx;
    unsigned seed;
    /* the tick thread */
    pthread_t tick;
    int tick_running;
    pthread_mutex_t tls_mu; /* ssl_ctx, made on first use */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cv;
    int tick_stop;
    /* calls freed, kept for the next ones (under mu): a call is some 4 KiB
     * (its field array), which malloc serves from its slow path, and a
     * proxy makes one a request */
    struct cshs_call *spare_calls;
    unsigned nspare_calls;
    /* under mu, taken whole by the thread that let go of the lock and
     * served unlocked (serve_due): async waiters given a connection or
     * failed (FIFO), and connects to start for them on a reactor */
    struct cshs_call *due, *due_tail;
    struct open_job *open_jobs;
    /* closed connections that were registered with a reactor (conn.pw),
     * reused for the next ones, freed with the client */
    pthread_mutex_t retired_mu;
    struct conn *retired;
};

/* A connect started for async waiters, without a thread: watched on the
 * reactor of the waiter it was started for (open_ready). */
typedef struct open_job {
    struct open_job *next;
    pool *p;
    cshs_reactor *rx;
    unsigned connect_ms;
    struct cshs_call *own; /* a retry's connect, for that call alone; NULL: the pool's */
} open_job;

/* Calls kept for reuse, at most. */
#define SPARE_CALLS_MAX 64

/* Call states. */
/* K_SWITCHED: a 101 to a request with `upgrade`; the connection is the
 * call's, a tunnel (cshs_call_tunnel_*) */
enum { K_BODY_OUT = 0, K_HEAD_WAIT, K_BODY_IN, K_DONE, K_FAILED, K_SWITCHED };

struct cshs_call {
    cshs_client *c;
    pool *p;
    conn *cn; /* NULL once given back or closed */
    int state;
    int err;
    csh_method method;
    int idempotent;
    int reused;    /* the connection had served a response before */
    int retryable; /* failed because the origin had closed the reused connection */
    int retried;   /* the one retry the rule allows was made */
    int peer_eof;  /* the origin's end of input was read while sending */
    int early;     /* the origin answered before the body was all sent */
    uint64_t bytes_sent;
    cshs_client_body_mode mode;
    uint64_t body_left; /* CSHS_CLIENT_BODY_LENGTH: bytes still to write */
    unsigned send_ms, head_ms, read_ms;
    unsigned acquire_ms, connect_ms;
    int keep_head; /* keep the head to send it again (the retry rule) */
    char *again;   /* that head, sent by a retry rather than built again */
    size_t again_len;
    int64_t head_deadline_ms;
    csh_parser parser;
    csh_body body;
    char *head;
    size_t head_len;
    char *all; /* cshs_call_read_all */
    size_t all_len;
    /* cshs_call_end_async: what to call when the head is here */
    void (*done)(void *arg);
    void *done_arg;
    uint64_t got;                 /* response bytes read there */
    struct cshs_call *next_spare; /* on the client's spare_calls */
    /* the request (its strings are the caller's, read while rq_kept:
     * until done runs, or until cshs_client_begin returns), the reactor
     * that waits for it, its place in the pool's queue, and its link on
     * the client's due list */
    cshs_client_request rq;
    int rq_kept;
    cshs_reactor *rx;
    waiter aw;
    struct cshs_call *due_next;
    /* the connection whose watch awaits its head (cshs_call_end_async),
     * set before the arm: cshs_call_cancel ends the call when it finds
     * that watch still armed, under the reactor's lock */
    struct conn *_Atomic watched;
    /* cshs_call_cancel came while the call was between states (being
     * handed a connection, its watch being armed): the arm sees it */
    _Atomic int cancel_wanted;
    /* cshs_call_wait_body's deadline passed: the next read fails */
    int read_expired;
    /* the request's `upgrade` (the caller's string, until the head is
     * here); after the 101, cshs_call_tunnel_wait's callback */
    const char *upgrade;
    void (*tunnel_ready)(void *arg, int events);
    void *tunnel_arg;
    /* the head and body are sent as the socket takes them (conn_send
     * says -EAGAIN rather than wait), what is left of them in out_iov,
     * the rest sent from the reactor */
    struct iovec out_iov[2];
    /* the blocking calls' (client_blocking.c): done runs once the
     * request is sent (cshs_client_begin; its head awaited later), and
     * once the head is here, its body left to cshs_call_read */
    int stop_sent, stop_head;
    /* cshs_client_send_async with a streamed body (CSHS_CLIENT_BODY_LENGTH
     * or _CHUNKED), written with cshs_call_write_async: `done` runs once
     * the head is sent and after each write the socket did not take at
     * once, until cshs_call_end_async ends the body (body_ended; then it
     * runs for the head). `frame`: a chunk's size line, after the CRLF
     * that closes the chunk before it (chunk_open), or the last chunk. */
    int streamed, body_ended, chunk_open;
    int head_out; /* a streamed body's head was sent: never sent again (retry_async) */
    char frame[32];
    /* CSHS_CLIENT_BODY_FILE: what is left of the file to send after the
     * head, and over TLS the piece of it being written (fchunk, read at
     * file_off before; freed by call_destroy) */
    int file_fd;
    uint64_t file_off, file_left;
    char *fchunk;
    size_t fchunk_pos, fchunk_len;
    /* the trailer fields that ended a chunked body (cshs_call_trailer_at):
     * ntrailers pairs of pointers, then their strings, one allocation */
    char **trailers;
    size_t ntrailers;
    csh_header fields[MAX_FIELDS]; /* last: not cleared (call_start) */
    csh_header trailer_spans[CALL_TRAILERS]; /* the decoder's, into its input */
};

/* The monotonic clock: now, in microseconds and in milliseconds. */
static inline int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t now_ms(void)
{
    return now_us() / 1000;
}

/* The SIGPIPE guard around TLS I/O (client_conn.c). */
typedef struct {
    sigset_t old;
    int pending_before;
} sigpipe_guard;

/* What async waiters were handed, taken under the lock to be served
 * after it (serve_due). */
typedef struct due_work {
    struct cshs_call *calls;
    open_job *jobs;
} due_work;

/* conn_read's deadline for a read that never waits */
#define CONN_NOWAIT (-1)

/* 1 when a send's or a read's result says the origin closed the connection. */
static inline int is_closed_errno(int e)
{
    return e == -EPIPE || e == -ECONNRESET || e == 0;
}

/* ---- client.c ---- */

/* cshs_call_free: the call's connection given back or closed, the call
 * kept for the next one or freed. */
void cshs__client_call_free(cshs_call *call);
/* The request's defaults: a caller's request is read over a copy of them. */
extern const cshs_client_request cshs__client_request_defaults;
/* The retry rule (client.h): whether a failed call may be started once more. */
int cshs__client_may_retry(const cshs_call *call, int attempt);
/* The call set up to be sent once more under that rule: in `state`,
 * nothing sent or received, no error, a fresh parser, never retried
 * again. */
void cshs__client_retry_reset(cshs_call *call, int state);

/* ---- client_conn.c ---- */

/* Blocks SIGPIPE on this thread, noting whether one was pending already. */
void cshs__client_sigpipe_block(sigpipe_guard *g);
/* Takes back a SIGPIPE raised since sigpipe_block, and restores the mask. */
void cshs__client_sigpipe_restore(sigpipe_guard *g);
/* Parses "http://host[:port]" into `p`: 0, or -EINVAL. */
int cshs__client_parse_origin(const char *origin, origin_id *p);
/* Under the lock: the pool of an origin string seen before, or NULL. */
pool *cshs__client_pool_find(cshs_client *c, const char *given);
/* Under the lock: the pool of `id`'s origin, created on first use. */
pool *cshs__client_pool_get(cshs_client *c, const origin_id *id, const char *given);
/* The pool's preferred address, copied for an open that runs unlocked: `out`, or NULL. */
const cshs_dial_addr *cshs__client_won_get(pool *p, cshs_dial_addr *out);
/* The peer of the socket fd, just connected, becomes the pool's preferred address. */
void cshs__client_won_set(pool *p, int fd);
/* Closes a connection; one that was registered with a reactor is kept on `retired`. */
void cshs__client_conn_close(conn *cn);
/* Closes every connection of a list linked by `next`. */
void cshs__client_close_list(conn *cn);
/* A new connection of pool p, with its buffer and no socket yet; NULL when out of memory. */
conn *cshs__client_conn_alloc(pool *p);
/* Looks up the pool's host and port: 0, -ENOMEM or CSHS_CLIENT_E_RESOLVE. */
int cshs__client_resolve(const pool *p, struct addrinfo **res);
/* Starts the tick's open (min_idle), which never waits: the look-up, then the connect. */
int cshs__client_open_start(pool *p, unsigned connect_ms, conn **out);
/* A non-blocking open, connected: 1 ready, 0 the TLS handshake wants *events, or an error. */
int cshs__client_open_advance(cshs_client *c, conn *cn, short *events);
/* One look at a connection the tick is opening: 1 ready, 0 not yet, or an error. */
int cshs__client_open_progress(cshs_client *c, conn *cn);
/* 1 when a connection is past max_lifetime_ms at `now`. */
int cshs__client_conn_too_old(const cshs_client *c, const conn *cn, int64_t now);
/* 1 when the origin sent nothing (no FIN, no byte) since the connection went idle. */
int cshs__client_conn_quiet(conn *cn);
/* Whether an idle connection's socket has to be looked at before it is reused. */
int cshs__client_conn_needs_look(conn *cn);
/* Under the lock: 1 when an idle connection is still fit to send on. */
int cshs__client_conn_fresh(const cshs_client *c, conn *cn, int64_t now);
/* The TLS context, made on the first HTTPS origin: 0, or an error. */
int cshs__client_tls_ctx(cshs_client *c);

/* ---- client_pool.c ---- */

/* Counts a request that waited for its connection since since_us (the histogram). */
void cshs__client_record_wait(pool *p, int64_t since_us);
/* Under the lock: takes a waiter out of its pool's queue. */
void cshs__client_wq_remove(pool *p, waiter *w);
/* Under the lock: takes a connection off its pool's idle list. */
void cshs__client_idle_remove(pool *p, conn *cn);
/* Under the lock: room in a full pool for a retry's own connection. The
 * least recently used idle one leaves the pool (no longer counted open)
 * and goes on *stale, to be closed once the lock is let go; nothing when
 * the pool has room or nothing idle. */
void cshs__client_evict_lru(cshs_client *c, pool *p, conn **stale);
/* Under the lock: an async waiter, served with what it got once the lock is let go. */
void cshs__client_make_due(cshs_client *c, waiter *w);
/* Under the lock: a connect to start for async waiters on a call's reactor; 0: no memory. */
int cshs__client_open_job_add(cshs_client *c, pool *p, struct cshs_call *for_call, int own);
/* Under the lock: a usable connection goes to a waiter, or to the idle list. */
void cshs__client_give(cshs_client *c, pool *p, conn *cn);
/* Under the lock: takes what async waiters were handed, to be served after it. */
due_work cshs__client_take_due(cshs_client *c);
/* The call's connection leaves its pool for good (cshs_call_detach, a
 * switch of protocols): it no longer counts, and its place goes to the
 * next request, a waiter's open. */
void cshs__client_detach(cshs_call *call);
/* Lets go of the lock, then serves what was handed under it. */
void cshs__client_unlock_and_serve(cshs_client *c);
/* 1 when nothing can serve a waiter of `p` before its backoff ends. */
int cshs__client_dead_end(const pool *p, int64_t now);
/* Under the lock: counts a connection closed; the caller closes it after unlocking. */
void cshs__client_dropped(cshs_client *c, pool *p);
/* Under the lock: counts a failed connect, starts the backoff, fails waiters at a dead end. */
void cshs__client_open_failed(cshs_client *c, pool *p, int err);
/* Under the lock: the most recently used idle connection still fit to send on, or NULL. */
conn *cshs__client_take_idle(cshs_client *c, pool *p, cshs_reactor *rx, int64_t since_us,
                             conn **stale);
/* Gives a call's connection back: reused when `keep`, else closed. */
void cshs__client_release(cshs_client *c, pool *p, conn *cn, int keep);
/* Under the lock: an async call joins its pool's queue. */
void cshs__client_enqueue_async(cshs_client *c, pool *p, waiter *w);
/* The tick thread: cshs_client_tick every tick_interval_ms, until told to stop. */
void *cshs__client_tick_main(void *arg);

/* ---- client_call.c ---- */

/* One SSL_read without waiting: > 0 bytes, 0 at the end of input, -EAGAIN (*wait), or an error. */
ssize_t cshs__client_tls_read_now(conn *cn, void *buf, size_t cap, short *wait);
/* One SSL_write without waiting: the bytes taken, -EAGAIN (*wait), or an error. */
ssize_t cshs__client_tls_write_now(conn *cn, const void *data, size_t len, short *wait);
/* Reads what is there, waiting until deadline_ms for something (CONN_NOWAIT: -EAGAIN). */
ssize_t cshs__client_conn_read(conn *cn, void *buf, size_t cap, int64_t deadline_ms);
/* Sends what is left of the request's head and body (out_iov, then a
 * file body) as the socket takes it: 0 all, -EAGAIN (the way to wait in
 * cn->io_wait), or an error. */
int cshs__client_send_rest(cshs_call *call);
/* The call fails: its connection is closed, later calls return `err`. */
int cshs__client_call_fail(cshs_call *call, int err);
/* The call fails with a send error (the origin's close of a reused connection: retryable). */
int cshs__client_send_failed(cshs_call *call, int e);
/* Sends the request on the call's connection, as send_rest does: the
 * head kept for the retry rule (call->again), or the head built in the
 * connection's buffer from call->rq, with a whole body. */
int cshs__client_send_request(cshs_call *call);
/* A call made for a request, with no connection yet: its pool found (or made) and used. */
int cshs__client_call_new(cshs_client *c, const cshs_client_request *r, cshs_call **out);

/* ---- client_response.c ---- */

/* The response ended: its connection goes back to the pool (`keep`), or is closed. */
int cshs__client_body_done(cshs_call *call, int keep);
/* Makes room at the end of the connection's buffer, keeping its unread bytes. */
int cshs__client_make_room(conn *cn);
/* A switched connection's buffer is freed once the bytes in it were taken. */
void cshs__client_drop_buffer(conn *cn);
/* Parses the buffered response: 1 a final head is here, 0 more bytes, or an error. */
int cshs__client_head_parse(cshs_call *call);
/* Reads and parses what the origin sent, without waiting (client_response.c
 * says what it returns): the one head reader. */
int cshs__client_read_head(cshs_call *call);
/* Reads an answer sent before the end of the body, without waiting: 1 its head, 0, or an error. */
int cshs__client_early_answer(cshs_call *call);
/* The origin answered before the body's end: the call goes on with the response. */
int cshs__client_answered_early(cshs_call *call);

/* ---- client_async.c ---- */

/* Arms the call's connection's watch on reactor r: 0 armed, 1 cancelled meanwhile, or -errno. */
int cshs__client_watch_arm(cshs_call *call, cshs_reactor *r, uint32_t events, int64_t deadline_ms,
                           void (*ready)(cshs_watch *w, uint32_t events));
/* The head is here: whether the rest of the body is still to come from the socket. */
int cshs__client_body_from_socket(const cshs_call *call);
/* Awaits the call's head on reactor r: 0 armed, 1 finished (the head, or a failure), or -errno. */
int cshs__client_head_arm(cshs_call *call, cshs_reactor *r);
/* cshs_call_end_async, with done run once the head is here when `stop_head`. */
int cshs__client_end_async(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg,
                           int stop_head);

/* ---- client_open_async.c ---- */

/* Starts a connect for async waiters on the job's reactor; no step of it waits. */
void cshs__client_open_async(cshs_client *c, const open_job *j);

/* ---- client_send_async.c ---- */

/* Where the blocking calls have done run (cshs_call.stop_sent, stop_head). */
enum { CALL_STOP_SENT = 1, CALL_STOP_HEAD = 2 };
/* cshs_client_send_async, with done run earlier as `stops` asks. */
int cshs__client_request_async(cshs_client *c, const cshs_client_request *r, cshs_reactor *rx,
                               void (*done)(void *arg), void *arg, int stops, cshs_call **out);

/* The retry rule for a call of cshs_client_send_async: 1 retrying (done runs later), else 0. */
int cshs__client_retry_async(cshs_call *call);
/* cshs_call_end_async for a streamed body: its end sent, then its head awaited. */
int cshs__client_stream_end(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg);
/* Serves what was handed under the lock: connects started, async waiters served. */
void cshs__client_serve_due(cshs_client *c, due_work hw);

#endif
