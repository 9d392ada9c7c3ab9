/* Private to the engine: the server, its workers and connections. */
#ifndef CSHS_SERVER_IMPL_H
#define CSHS_SERVER_IMPL_H

#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include <cshttp/parser.h>
#include <cshttp/server/reactor.h>
#include <cshttp/server/server.h>
#include <cshttp/web/context.h>
#include <cshttp/web/exchange.h>

#include "persistent_watch.h"

/* What an epoll registration points at: the first member of each. */
enum {
    TAG_CONN = 1,
    TAG_LISTENER = 2,
    TAG_WAKE = 3,
    TAG_WATCH = 4,
    TAG_PERSISTENT = CSHS_TAG_PERSISTENT
};

/* An event's data: the registration's address in its low 48 bits (a user
 * space address on x86-64 and arm64), and a persistent watch's generation
 * (persistent_watch.h) in the high 16. */
#define CSHS_EV_PTR_MASK ((UINT64_C(1) << 48) - 1)

/* Events a loop takes per epoll_wait. */
#define CSHS_LOOP_BATCH 64

/* Which deadline a parked connection's deadline_ms is. */
enum {
    EXP_NONE = 0,
    EXP_HEAD,   /* a request head (or a new connection's first) */
    EXP_IDLE,   /* keep-alive idle */
    EXP_TLS,    /* TLS handshake */
    EXP_BODY,   /* body rate or read timeout while the body is read */
    EXP_SEND,   /* the client does not take the response */
    EXP_LINGER, /* lingering close over */
    EXP_TUNNEL, /* a tunnel idle (tunnel_idle_timeout_ms), or its output stuck */
    EXP_WAIT,   /* a deferred request's client took no output, or sent no body (CP_WAIT) */
    EXP_NOWAIT  /* the socket could not be waited for (epoll_ctl failed): closed */
};
enum { TLS_NONE = 0, TLS_HANDSHAKE = 1, TLS_OPEN = 2 };

/* cshs_conn.resume: how a connection given back (or posted) goes on */
enum {
    RESUME_AFTER_RUN = 0, /* after its handler: after_run is its result */
    RESUME_EVENT = 1,     /* as after an event: it reads on */
    RESUME_DEFERRED = 2,  /* its deferred handler's continuation is due */
    RESUME_WAIT = 3       /* its deferred handler waits for its client (CP_WAIT) */
};

/* Where a connection's life stands (connection.c has the diagram). */
enum {
    CP_READ = 0, /* reading and answering requests */
    CP_WRITE,    /* the loop finishes sending a response, then reads on or ends */
    CP_LINGER,   /* answered and closing: reading and discarding (lingering close) */
    CP_TUNNEL,   /* switched protocols: its bytes are a tunnel's (tunnel.c) */
    CP_WAIT,     /* a deferred request waits for its own client: its queue to drain or
                  * its body's next bytes (cshs_deferred_on_drain, _on_body) */
    CP_H2        /* HTTP/2: its bytes are the session's (h2.c) */
};

/* Output the socket could not take at once, sent by the loop: bytes, or a
 * file range (its own descriptor, dup'ed). */
typedef struct cshs_out {
    struct cshs_out *next;
    int fd;        /* a file range, else -1 */
    off_t off;     /* file: next offset to send */
    uint64_t left; /* file: bytes still to send */
    dev_t dev;     /* file: which one, so that the range that follows in */
    ino_t ino;     /* it extends this one (no descriptor a range) */
    size_t pos, n; /* data[pos .. n) still to send */
    size_t cap;    /* data's size */
    char data[];
} cshs_out;

/* What a handler runs with: its context, and the transport and the
 * continuation of a request that answers later (cshs_defer). A worker
 * runs the handlers of its loop with its own (w->handler_ctx); a handler that
 * defers takes it along with its connection (c->deferred) until the request
 * ends, and the worker takes a spare one (each worker keeps its own, up
 * to SPARE_CTX_MAX) or a new one. An idle connection holds none of it:
 * a pointer rather than the struct (cshs_idle_connection_bytes). */
typedef struct cshs_handler_ctx {
    cshw_context *ctx;
    cshw_transport t; /* the exchange writes through it until the request ends */
    /* The continuation (cshs_deferred_resume). pending counts the two
     * events it waits for, the handler's return and the resume: whoever
     * brings it to 0 sees it run. */
    void (*fn)(cshw_context *ctx, void *arg);
    void *arg;
    char job; /* it runs as a job (cshs_deferred_run) */
    _Atomic int pending;
    /* cshs_deferred_on_abort: run once, on the loop's thread, when the
     * client's connection ends while the request waits */
    void (*abort_fn)(void *arg);
    void *abort_arg;
    /* cshs_deferred_on_drain / _on_body instead of a resume: what the
     * continuation waits for (WAIT_*), and why the wait ended early (its
     * deadline, a stop: the continuation's writes and reads then fail
     * with it) */
    char wait_for;
    int wait_error;
} cshs_handler_ctx;

enum { WAIT_NONE = 0, WAIT_DRAIN, WAIT_BODY };

/* cshs_conn.waits: whether a deferred request waits, and who may act on
 * it. WAITS_NONE: none does (or its handler or continuation runs);
 * WAITS_FREE: its handler returned, and the loop may tell it its client
 * left; WAITS_ABORTING: the loop does (the continuation waits for it);
 * WAITS_DUE: and the continuation came due meanwhile (the loop runs it
 * after). */
enum { WAITS_NONE, WAITS_FREE, WAITS_ABORTING, WAITS_DUE };

/* A streaming route's read buffer (connection.c): the bytes the handler's
 * reads use, data[pos .. len) not yet taken. Freed when the connection
 * parks with none left. */
typedef struct cshs_stream_buf {
    size_t pos, len;
    char data[];
} cshs_stream_buf;

/* One connection. It belongs to one loop (registered edge-triggered in its
 * epoll set for its whole life) and is touched by one thread at a time:
 * the loop's owner, or, while `busy`, the thread running its handler (the
 * loop then ignores its events; the handler's thread gives it back through
 * the loop's returned list, and the loop reads on from where it stands).
 * Only the loop's owner closes it; its struct is freed after the batch of
 * events that may still point at it (the loop's closed_conns list). */
typedef struct cshs_conn {
    int tag;
    int fd;
    struct cshs_server *srv;
    struct cshs_loop *loop;
    struct cshs_conn *prev, *next; /* the loop's list (changed under loop->mu) */
    struct cshs_conn *link;        /* returned, closed_conns or the server's waiting list */
    /* the posted list's own link: a posted connection an event closes
     * meanwhile goes to closed_conns too, and stays there (cshs__free_closed) until
     * it is taken off the posted list */
    struct cshs_conn *post_next;
    _Atomic int busy;       /* a handler's thread has it (2: and the loop saw an event meanwhile) */
    int last_status;        /* of the last answer reported */
    int64_t deadline_ms;    /* while parked: when the sweep acts (0: never) */
    char phase;             /* CP_* */
    char resume;            /* how the loop that takes it back goes on (connection.c, RESUME_*) */
    char parked;            /* waiting for the socket (counted idle) */
    char posted;            /* on the loop's posted list */
    char closed;            /* closed, on its loop's closed_conns */
    char close_after_write; /* CP_WRITE: close (lingering) once sent, else go on */
    char linger;            /* the close should linger (an error answer, unread input) */
    char eof;               /* the client's input ended */
    char rdhup;             /* an event said the input ends (read to its end) */
    char out_armed;         /* registered for writability too (cshs__conn_want_out) */
    char in_muted;     /* registered without input: a job's thread waits for it (connection.c) */
    char tls_drained;  /* TLS: OpenSSL's last read of the socket got less than it asked (tls.c) */
    char served;       /* an exchange has run (the next head waits keepalive_timeout_ms) */
    _Atomic char waits; /* WAITS_*: a deferred request waits (its client may leave) */
    short io_wait;      /* POLLIN or POLLOUT: the last read's wait, or a write's that had to */
    short expire_kind; /* EXP_*: which deadline deadline_ms is (a short: 256 bytes in all) */
    short tls_state;   /* TLS_* */
    int after_run;     /* a handler's result, for the loop that takes it back */
    int64_t accept_ms;
    int64_t last_io_ms;               /* last read (body) or write progress (output) */
    /* the minimum body rate's current window: its start and the body
     * bytes received by then (body_rate) */
    int64_t rate_mark_ms;
    union {
        uint64_t rate_mark_bytes; /* CP_READ */
        uint64_t lingered;        /* CP_LINGER: bytes discarded while lingering */
    };
    const struct cshs_stream_ops *io; /* plain or TLS bytes (cshs_stream_ops) */
    SSL *ssl;                         /* HTTPS, else NULL */
    cshw_exchange *x;                 /* while bytes are pending, else NULL */
    cshs_out *out, *out_tail;         /* queued output */
    size_t out_bytes;                 /* bytes (not file ranges) queued */
    struct cshs_stream_buf *sb;       /* streaming routes: the bytes the handler's reads use */
    struct cshs_handler_ctx *deferred; /* a request that answers later (cshs_defer), else NULL */
    struct cshs_tunnel *tunnel;       /* switched protocols (cshs_upgrade, tunnel.c), else NULL */
    union {
        struct cshs_h2 *h2;   /* CP_H2: the HTTP/2 session (h2.c), else NULL */
        struct h2_pipe *pipe; /* CSHS_H2_STREAM: the stream's bytes (h2_stream.c) */
    };
    uint16_t remote_port;
    char remote[46];
} cshs_conn;

typedef struct cshs_listener {
    int tag;
    int fd;
    int family;
    int tls;
    unsigned port;
} cshs_listener;

/* Counters a loop adds to (per loop, summed by cshs_server_counters): on
 * a line of their own, written mostly by the loop's owner. */
typedef struct cshs_loop_counters {
    _Atomic uint64_t requests, bytes_in, bytes_out;
    _Atomic uint64_t idle, active, idle_buffers;
} __attribute__((aligned(64))) cshs_loop_counters;

/* An event loop: an epoll set and the connections registered in it, run
 * by one thread at a time, its owner. When the owner has been inside a
 * handler for grow_after_us while the loop has events waiting, the
 * supervisor hands the loop to another thread (handler_since_us goes to
 * -1); the old owner finishes its handler, gives its connection back, and
 * becomes a spare. */
typedef struct cshs_loop {
    struct cshs_server *srv;
    int epfd, evfd;
    int wake_tag;        /* TAG_WAKE: what evfd's registration points at */
    pthread_mutex_t mu;  /* conns (changes) and returned */
    cshs_conn *conns;    /* every connection of the loop */
    cshs_conn *returned; /* given back by handlers' threads, under mu */
    cshs_conn *posted;   /* owner only: to go on with after this batch, first in first */
    cshs_conn *posted_tail;
    _Atomic int nposted;  /* on it (the supervisor's look: work waiting) */
    cshs_conn *closed_conns; /* owner only: closed, freed after the batch */
    struct epoll_event evs[CSHS_LOOP_BATCH];
    _Atomic int nev, next;            /* the batch being served: evs[next .. nev) wait */
    _Atomic int64_t handler_since_us; /* > 0: the owner runs a handler since; -1: taken */
    _Atomic int64_t next_sweep_ms;
    _Atomic pid_t owner_tid;          /* the owner's thread, for the supervisor's look */
    _Atomic int64_t offload_until_ms; /* run handlers on other threads until then */
    int listeners_paused;             /* owner only: out of descriptors, the sweep adds them back */
    cshs_watch *watches;              /* registered (reactor.h), under mu: their deadlines */
    int64_t next_watch_check_ms;      /* owner only */
    /* the earliest deadline among the armed watches (0: none), so that
     * the loop wakes for it: lowered by an arm and set by a look at them
     * all (cshs__expire_watches), under mu; read by the owner */
    _Atomic int64_t watch_due_ms;
    unsigned index, count; /* this loop's place among the server's, and their number */
    /* the first loop's: the server (1) and the persistent watches registered
     * with any loop (persistent_watch.h) hold the loops; the last to let go frees them */
    _Atomic unsigned refs;
    /* owner only: tunnels' reads land here, one at a time (tunnel.c),
     * so an idle tunnel holds no buffer; made at the first */
    char *tunnel_buf;
    /* a thread's own loop (srv NULL, thread_reactor.h): what it runs for,
     * the waits and connects in flight on it; under mu */
    unsigned holds;
    /* HTTP/2 streams whose connection read or wrote (h2_stream.c): the
     * session takes their news after the batch; under mu, counted in
     * nkicked for the wait's look */
    struct h2_pipe *h2_kicked;
    _Atomic int nkicked;
    /* owner only: HTTP/2 streams ended, kept with their small buffers for
     * the next streams of any of the loop's sessions (h2_stream.c); the
     * sweep frees half of them when none was taken since the last */
    struct h2_stream *h2_spare;
    unsigned h2_nspare;
    char h2_spare_taken;
    cshs_loop_counters k;
} cshs_loop;

/* A thread: it runs a loop, runs one connection's handler (a job), or
 * waits as a spare for either. */
typedef struct cshs_worker {
    struct cshs_server *srv;
    pthread_t thread;
    struct cshs_handler_ctx
        *handler_ctx;        /* its handlers' context (a deferring one takes it along) */
    cshw_exchange **spare_x; /* exchanges kept for the next requests (no malloc per request) */
    unsigned nspare_x;
    struct cshs_handler_ctx **spare_ctx; /* kept for handlers that defer (their own goes) */
    unsigned nspare_ctx;
    sem_t wake;      /* a spare waits here for its assignment: posted once by
                        whoever takes it off the spare list (not by itself) */
    cshs_loop *loop; /* assigned loop (under srv->mu until taken) */
    cshs_conn *job;  /* assigned handler (under srv->mu until taken) */
    struct cshs_worker *next_parked;
    int on_parked; /* on srv->parked (under srv->mu) */
    int lost;      /* its loop was handed over while it ran a handler */
    pid_t tid;     /* the kernel's id of the thread */
    int exited;    /* the thread returned (under srv->mu) */
    int abandoned; /* left in a handler at a forced stop (under srv->mu) */
    /* Handlers of jobs on this thread that blocked one after another
     * (cshs__conn_job), 0 when the last did not: the next one's blocking
     * is asked of the kernel when this is a multiple of 16. */
    unsigned blocked_run;
} cshs_worker;

struct cshs_server {
    cshs_options o;
    cshw_handler handler;
    cshw_router *router;
    cshs_log_fn log_fn;
    void *log_user;
    void *app_data;            /* cshs_server_set_app_data, handed to every context */
    cshw_exchange_config xcfg; /* every connection's exchange: the handler, report */
    int (*stream_fn)(void *, const char *, const csh_message *);
    void *stream_arg;
    int (*quick_fn)(void *, const char *, const csh_message *); /* cshs_server_set_quick */
    void *quick_arg;
    /* Workers left in handlers at a forced stop (under mu): the server is
     * freed by the last of them to return when cshs_server_free came first. */
    unsigned abandoned;
    int free_wanted;

    cshs_listener lis[5];
    int nlis;
    SSL_CTX *ssl_ctx; /* HTTPS, under tls_mu (reload swaps it) */
    pthread_mutex_t tls_mu;

    cshs_loop *loops;
    unsigned nloops;

    struct {
        void (*fn)(void *);
        void *arg;
    } ticks[8]; /* cshs_server_add_tick, called by the supervisor */
    unsigned nticks;

    pthread_mutex_t mu; /* the workers, the parked ones, jobs */
    pthread_cond_t sup_cv, stopped_cv;
    cshs_worker **workers;
    unsigned nworkers;   /* under mu */
    unsigned alive;      /* threads not exited, under mu */
    cshs_worker *parked; /* parked workers waiting for an assignment, most recent first */
    /* Handlers waiting for a thread (max_threads reached), first in first
     * out through cshs_conn.link, under mu; each connection busy. A thread
     * takes the next when its job ends, before it becomes a spare. */
    cshs_conn *waiting, *waiting_tail;
    size_t nwaiting;
    pthread_t supervisor;

    _Atomic int stopping; /* no accepting, close after the request in flight */
    _Atomic int forced;   /* the stop deadline passed: cut everything */
    _Atomic int exiting;  /* threads leave */
    int started, stopped;

    _Atomic uint64_t c_open, c_total;
    _Atomic uint64_t c_busy, c_parked; /* threads in handlers; parked workers */
    /* 1 while the supervisor sleeps a long wait (no loop inside a handler):
     * the loop that enters one wakes it, once */
    _Atomic int sup_sleeping;
    _Atomic uint64_t e_parse, e_rejected, e_head, e_idle, e_body, e_send, e_io, e_tls;
    _Atomic uint64_t c_tls_handshakes, c_handovers, c_offloaded, c_deferred;
    /* handlers waiting for a thread now (nwaiting, read without mu), and
     * requests answered 503 because the queue was full */
    _Atomic uint64_t c_waiting, c_declined;
    /* request bodies' bytes in temporary files, and bodies refused for
     * max_request_temp_bytes (cshs__temp_bytes) */
    _Atomic uint64_t c_temp_bytes, c_temp_refused;
    /* connections that switched protocols, and those tunnels open now */
    _Atomic uint64_t c_upgrades, c_tunnels;
    /* HTTP/2 connections open and since start, their streams, and the
     * stream and connection errors sent (h2.c) */
    _Atomic uint64_t c_h2_open, c_h2_total, c_h2_streams, e_h2;
};

int64_t cshs__now_ms(void);
int64_t cshs__now_us(void);

/* connection.c */
cshs_conn *cshs__conn_new(struct cshs_server *s, int fd, const struct sockaddr *sa);
/* Serves what a ready event brought (the loop's owner, c not busy). */
void cshs__conn_event(cshs_worker *w, cshs_conn *c);
/* A connection a handler's thread gave back: goes on after its handler. */
void cshs__conn_resume(cshs_worker *w, cshs_conn *c);
/* An event said c's client left (the loop's owner, c busy): a request
 * that waits is told (cshs_deferred_on_abort). */
void cshs__conn_client_left(cshs_conn *c);
/* A deferred handler's continuation, due (the loop's owner; c posted or
 * given back with RESUME_DEFERRED). */
void cshs__conn_continue(cshs_worker *w, cshs_conn *c);
/* Posts c to go on after the batch (the loop's owner). */
void cshs__conn_post(cshs_conn *c);
/* The loop this thread runs (its owner), else NULL. */
cshs_loop *cshs__self_loop(void);
/* The calling thread becomes l's owner (NULL: none's); the loop it owned
 * before is returned (thread_reactor.c). */
cshs_loop *cshs__set_self_loop(cshs_loop *l);
/* Runs a connection's ready handler on a job thread, then parks it or
 * gives it back. */
void cshs__conn_job(cshs_worker *w, cshs_conn *c);
/* The loop's handlers run on other threads for offload_ms from now. */
void cshs__offload_more(cshs_loop *l);
/* The sweep's look at one parked connection: ends it when its deadline
 * passed (408 for a request in progress), or at a stop. */
void cshs__conn_sweep(cshs_worker *w, cshs_conn *c, int64_t now_ms);
/* The exchange configuration's callbacks (server.c sets them up). */
void cshs__report(void *arg, const cshw_exchange_outcome *o);
int cshs__closing(void *arg);
int cshs__streams(void *arg, const char *head, const csh_message *msg);
int cshs__temp_bytes(void *arg, int64_t delta);
/* Output without waiting: what the socket takes now is sent, the rest
 * queued for the loop (no high-water mark). 0, or a negative error. */
int cshs__out_write(cshs_conn *c, const void *data, size_t len);
/* What the socket takes of data now when nothing is queued (0 when
 * something is: it goes after that), queueing nothing: the bytes sent,
 * or the socket's error. */
ssize_t cshs__out_try(cshs_conn *c, const void *data, size_t len);
/* Sends what is queued without waiting: 1 all of it, 0 the socket is
 * full (wait for c->io_wait), or a negative error. */
int cshs__out_flush(cshs_conn *c);
/* Waiting for the socket (counted idle) until deadline (EXP_* kind), and
 * back to being served. */
void cshs__park(cshs_conn *c, int64_t deadline, int kind);
void cshs__unpark(cshs_conn *c);
/* The connection ends: what is queued is sent first (within
 * send_timeout_ms) when `flush`, then it closes (the loop's owner). */
void cshs__conn_end(cshs_worker *w, cshs_conn *c, int flush);

/* tunnel.c: a connection that switched protocols (cshs_upgrade). start:
 * the exchange returned SWITCHED, the tunnel opens (the loop's owner);
 * event: its socket's event (or it was posted); drop: the connection
 * ends, the application's closed callback is called with `why` (once)
 * and the tunnel freed. */
void cshs__tunnel_start(cshs_worker *w, cshs_conn *c);
void cshs__tunnel_event(cshs_worker *w, cshs_conn *c);
void cshs__tunnel_drop(cshs_conn *c, int why);
/* A protocol on the tunnel (websocket.c) with timers of its own: fn runs
 * at each serve, on the loop's thread, and returns when it is due next
 * (CLOCK_MONOTONIC ms, 0: not); the tunnel is served then (within the
 * sweep's interval). timer_due: a deadline that passed is the timer's,
 * not the tunnel's idle or send deadline. */
void cshs__tunnel_set_timer(struct cshs_tunnel *t, int64_t (*fn)(void *arg, int64_t now_ms),
                            void *arg);
int cshs__tunnel_timer_due(const cshs_conn *c, int64_t now_ms);
/* The tunnel's deadline now (0: none): no byte either way for
 * tunnel_idle_timeout_ms, output not taken for send_timeout_ms, the
 * protocol's timer. The sweep asks it again before expiring a tunnel: a
 * write made while it was parked moved it on. */
int64_t cshs__tunnel_deadline(const cshs_conn *c);
/* The protocol's goodbye at a graceful stop (a WebSocket's close frame):
 * fn runs once, on the loop's thread, and the tunnel is served (what it
 * wrote goes out; a cshs_tunnel_close there ends it). stopping: 1 when fn
 * ran now, 0 when there is none or it ran already (close the tunnel). */
void cshs__tunnel_set_stop(struct cshs_tunnel *t, void (*fn)(void *arg), void *arg);
int cshs__tunnel_stopping(cshs_worker *w, cshs_conn *c);
/* The access log's entry of the 101 that opened c's tunnel, kept (its
 * strings copied) and written when the tunnel ends, with the tunnel's
 * bytes both ways added and the duration to its end. 0, or -ENOMEM (the
 * caller logs it now). */
struct cshs_request_log;
int cshs__tunnel_hold_log(cshs_conn *c, const struct cshs_request_log *e);
/* The connection the handler running on this thread serves (inline, a
 * continuation or a job), else NULL. */
cshs_conn *cshs__handler_conn(void);

/* Closes it (the loop's owner only); the struct waits on the loop's closed_conns. */
void cshs__conn_close(cshs_worker *w, cshs_conn *c);
/* Frees it: closed_conns after a batch, or everything at the end. */
void cshs__conn_free(cshs_conn *c);
/* Bytes an idle connection holds beyond its struct (a head in progress). */
uint64_t cshs__conn_idle_held(const cshs_conn *c);
/* Answers 503 and closes: beyond max_connections. */
void cshs__reject(struct cshs_loop *l, int fd, const struct sockaddr *sa);
/* Watches past their deadline (all of them at a forced stop) are given 0
 * (the loop's owner, between batches). */
void cshs__expire_watches(cshs_loop *l, int64_t now_ms);
/* Frees a worker's own cshs_handler_ctx and the spares it kept (at the
 * worker's end). */
void cshs__worker_release(cshs_worker *w);
/* A new cshs_handler_ctx with a context of the server's (NULL: out of memory),
 * and its end. */
cshs_handler_ctx *cshs__handler_ctx_new(struct cshs_server *s);
void cshs__handler_ctx_free(cshs_handler_ctx *d);

/* A connection's handler goes to another thread (threads.c), or comes
 * back (loop.c). cshs__offload: OFFLOAD_RUNS (a thread has it), OFFLOAD_WAITS
 * (queued for the next thread free), OFFLOAD_FULL (`bounded` and
 * max_waiting_handlers wait already: the caller declines it), or
 * OFFLOAD_NONE (no thread can ever take it: every thread runs a loop, as
 * with max_threads equal to loops; the caller runs it). */
enum { OFFLOAD_NONE, OFFLOAD_RUNS, OFFLOAD_WAITS, OFFLOAD_FULL };
int cshs__offload(struct cshs_server *s, cshs_conn *c, int bounded);
void cshs__give_back(cshs_conn *c);
/* The connection waits for its socket to take bytes: its registration gains
 * writability (once in its life). 0, or a negative errno. */
int cshs__conn_want_out(cshs_conn *c);
/* Input taken out of the connection's registration (on 0) or put back (on
 * 1; EPOLL_CTL_MOD looks at the socket again, so bytes that came meanwhile
 * fire an event), by the thread that holds it (busy). */
void cshs__conn_input_events(cshs_conn *c, int on);
/* Around a handler run by a loop's owner: begin returns the time it
 * stored, which end is given back; 0 from end when the loop was handed to
 * another thread meanwhile. */
int64_t cshs__handler_begin(cshs_loop *l);
int cshs__handler_end(cshs_loop *l, int64_t since);

/* connection.c: a connection's life, and the parts of it that other
 * files run. The connection whose handler runs inline on this thread and
 * its worker (what cshs_defer finds); the one whose handler runs as a job
 * here (what cshs_upgrade finds there). */
extern _Thread_local cshs_conn *cshs__running_conn;
extern _Thread_local cshs_worker *cshs__running_worker;
extern _Thread_local cshs_conn *cshs__job_conn;
/* A cshs_handler_ctx from the worker's spares (or a new one: NULL when out of
 * memory), and one given back to them. */
cshs_handler_ctx *cshs__handler_ctx_take(cshs_worker *w, struct cshs_server *s);
void cshs__handler_ctx_put(cshs_worker *w, cshs_handler_ctx *d);
/* Waits for the client's next bytes on the loop (parked, with the
 * deadline that applies). */
void cshs__park_input(cshs_worker *w, cshs_conn *c);
/* What follows an exchange (r from cshw_exchange_run or _resume; `ran`: a
 * handler ran): 1 when the caller goes on with the connection (drive). */
int cshs__after_exchange(cshs_worker *w, cshs_conn *c, int r, int ran);
/* A deferred request's continuation: run now by the loop's owner
 * (`owner`), or when due, posted to its loop. */
void cshs__continuation_run(cshs_conn *c, int owner);
void cshs__continuation_due(cshs_conn *c, int owner);
/* Reads, runs and answers requests until the socket says EAGAIN, the
 * output waits for the client, the handler leaves this thread, or the
 * connection ends. */
void cshs__drive(cshs_worker *w, cshs_conn *c);

/* output.c: waits for `events` until until_ms (0: no limit; 0 ready,
 * -ETIMEDOUT, -ECONNABORTED), a worker inside a handler only; the queue
 * emptied; bytes or a file range queued behind what waits (0, or
 * -ENOMEM); n bytes counted as sent; a handler's output above the
 * high-water mark sent down to half of it, waiting for the client. */
int cshs__wait_fd(cshs_conn *c, short events, int64_t until_ms);
void cshs__out_clear(cshs_conn *c);
int cshs__out_queue_bytes(cshs_conn *c, const char *p, size_t len);
int cshs__out_queue_file(cshs_conn *c, int fd, off_t off, uint64_t len);
void cshs__out_sent(cshs_conn *c, size_t n);
int cshs__out_throttle(cshs_conn *c);

/* transport.c: whether a streaming route's handler read past its body
 * (bytes not yet taken); the body's deadline from `now`; a streaming
 * body's next bytes, waiting within its deadlines when `wait`; the bytes
 * queued for the client; the transport the exchange is given. */
int cshs__stream_left(const cshs_conn *c);
int64_t cshs__body_deadline(cshs_conn *c, int64_t now);
int cshs__conn_peek(cshs_conn *c, const char **data, size_t *len, int wait);
uint64_t cshs__transport_queued(void *io);
cshw_transport cshs__transport_of(cshs_conn *c);

/* deferred.c: a request waiting for its own client (CP_WAIT): the wait
 * ends with err (0: what it waited for is there); 1 when it is over (the
 * continuation posted); parked with its deadline; begun once the handler
 * returned. */
void cshs__wait_end(cshs_conn *c, int err);
int cshs__wait_over(cshs_conn *c);
void cshs__wait_park(cshs_conn *c);
void cshs__wait_begin(cshs_worker *w, cshs_conn *c);

/* listen.c: the listeners, bound and listening (0, or -errno), and one
 * connection accepted from a listener by the loop l's owner; a loop's
 * connections now. */
int cshs__listen_tcp(struct cshs_server *s, const char *address, unsigned port, int tls,
                     cshs_listener *l);
int cshs__listen_unix(struct cshs_server *s, cshs_listener *l);
void cshs__accept_one(cshs_worker *w, cshs_loop *l, cshs_listener *lis);
uint64_t cshs__loop_load(cshs_loop *l);
/* A connection made here rather than accepted (an HTTP/2 stream's, no
 * socket: fd -1): linked to l, as an accepted one is. */
void cshs__conn_join(cshs_loop *l, cshs_conn *c);
/* loop.c: an event for a connection without a socket (an HTTP/2
 * stream's), by the loop's owner: served after the batch, or, while a
 * handler's thread has it, noted for that thread (and, `gone`: a request
 * that waits is told its client left). */
void cshs__conn_signal(cshs_conn *c, int gone);

/* h2.c: HTTP/2 (RFC 9113). want: whether a new connection speaks it (ALPN
 * chose h2, or its first bytes are the h2c preface): 1 yes, 0 no, -EAGAIN
 * not known until more bytes come. start: the connection becomes CP_H2.
 * event: its socket's event. take_kicked: the news of the streams whose
 * connections read or wrote (the loop's owner, after the batch). sweep:
 * its deadline passed, or a stop (`stop`). close and free: at the
 * connection's close and after the batch. pipe_wait: cshs__wait_fd for a
 * stream's connection (a handler's thread). drop_kicked: the loop's end. */
struct cshs_h2;
int cshs__h2_want(cshs_conn *c);
void cshs__h2_start(cshs_worker *w, cshs_conn *c);
void cshs__h2_event(cshs_worker *w, cshs_conn *c);
void cshs__h2_take_kicked(cshs_worker *w, cshs_loop *l);
void cshs__h2_drop_kicked(cshs_loop *l);
/* The streams kept for reuse, freed (the loop ends), or half of them
 * when none was taken since the last sweep (the loop's sweep). */
void cshs__h2_drop_spares(cshs_loop *l);
void cshs__h2_trim_spares(cshs_loop *l);
int cshs__h2_pipe_wait(cshs_conn *c, short events, int64_t until_ms);
/* A switched stream's side ends (cshs_tunnel_shutdown): its answer ends
 * (END_STREAM) while the client's bytes still come. */
void cshs__h2_pipe_shut(cshs_conn *c);
void cshs__h2_sweep(cshs_worker *w, cshs_conn *c, int stop);
void cshs__h2_close(cshs_conn *c);
void cshs__h2_free(cshs_conn *c);

/* reactor.c: an event of a watch, of a persistent watch (with the generation
 * its registration carried), given by the loop's owner; the loops freed by
 * the last of the server and the persistent watches to let go of them. */
void cshs__watch_event(cshs_loop *l, cshs_watch *w, uint32_t events);
void cshs__persistent_event(cshs_loop *l, cshs_persistent_watch *k, unsigned gen, uint32_t events);
void cshs__loops_unref(cshs_loop *l);

/* loop.c: a thread runs the loop l until it loses it or the server
 * exits; the loop woken from its wait; connections closed on it freed. */
void cshs__run_loop(cshs_worker *w, cshs_loop *l);
void cshs__wake_loop(cshs_loop *l);
void cshs__free_closed(cshs_loop *l);

/* threads.c, under s->mu: a new worker thread (given the loop `loop` or
 * the job `job` to start with; NULL at `limit` threads or when none can be
 * made), a spare one (NULL: none); the supervisor's thread. server.c: a
 * worker's last act. */
cshs_worker *cshs__spawn_worker(struct cshs_server *s, cshs_loop *loop, cshs_conn *job,
                                unsigned limit);
cshs_worker *cshs__take_parked(struct cshs_server *s);
void *cshs__supervisor_main(void *arg);
void cshs__worker_exit(struct cshs_server *s, cshs_worker *w);

/* One connection's bytes, plain or TLS: past the TLS handshake the
 * connection's life never asks which (connection.c: plain; tls.c: TLS).
 * read and write: > 0 bytes, 0 at the end of input (read), -EAGAIN when
 * the socket has to be waited for, in the direction c->io_wait says
 * (POLLIN or POLLOUT: OpenSSL may want the other one), or -errno.
 * sendfile: up to len bytes of the file fd from *off (advanced), as write;
 * NULL when the bytes must be read and written (TLS). pending: bytes
 * already read from the socket and not yet handed out (OpenSSL's records),
 * which epoll cannot see. close: ends the session (TLS close_notify), not
 * the socket. */
typedef struct cshs_stream_ops {
    ssize_t (*read)(cshs_conn *c, void *buf, size_t len);
    ssize_t (*write)(cshs_conn *c, const void *buf, size_t len);
    ssize_t (*sendfile)(cshs_conn *c, int fd, off_t *off, size_t len);
    int (*pending)(const cshs_conn *c);
    void (*close)(cshs_conn *c);
} cshs_stream_ops;

extern const cshs_stream_ops cshs__plain_stream; /* output.c */
/* The bytes of an HTTP/2 stream (h2_stream.c), in memory, for a
 * connection that is plain or HTTPS: what says that a connection serves
 * a stream, and which the request came on, in no byte of its own. */
extern const cshs_stream_ops cshs__h2_pair_stream, cshs__h2_pair_tls_stream;
#define CSHS_H2_STREAM(c) ((c)->io == &cshs__h2_pair_stream || (c)->io == &cshs__h2_pair_tls_stream)
extern const cshs_stream_ops cshs__tls_stream;   /* tls.c */

/* tls.c */
int cshs__tls_init(struct cshs_server *s);
/* The protocol ALPN chose (2: h2, else 1), and whether the session's
 * version and cipher are fit for HTTP/2 (RFC 9113 §9.2). */
int cshs__tls_alpn(const cshs_conn *c);
int cshs__tls_h2_adequate(const cshs_conn *c);
void cshs__tls_free(struct cshs_server *s);
/* The TLS session of a new connection; its stream becomes cshs__tls_stream. */
int cshs__tls_attach(cshs_conn *c);
/* 1 when done; -EAGAIN / -EINPROGRESS: wants to read / write; else < 0. */
int cshs__tls_handshake(cshs_conn *c);
/* Frees the session (after its close), for a connection that goes on as
 * plain bytes (plain HTTP sent to the HTTPS port). */
void cshs__tls_drop(cshs_conn *c);

#endif
