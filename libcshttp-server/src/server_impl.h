/* Private to the engine: the server, its workers and connections. */
#ifndef CSHS_SERVER_IMPL_H
#define CSHS_SERVER_IMPL_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include <cshttp/parser.h>
#include <cshttp/server/server.h>
#include <cshttp/web/context.h>
#include <cshttp/web/exchange.h>

/* What an epoll registration points at: the first member of each. */
enum { TAG_CONN = 1, TAG_LISTENER = 2, TAG_WAKE = 3 };

/* Events a worker takes per epoll_wait (server.c, worker_main). */
#define CSHS_WORKER_BATCH 8

/* Connection states: who may touch it. IDLE: nobody (in epoll); BUSY: one
 * worker; EXPIRED: the sweep found a deadline passed while it was idle, the
 * worker that receives its event ends it (answering 408 when a request was
 * in progress). */
enum { CONN_IDLE = 0, CONN_BUSY = 1, CONN_EXPIRED = 2 };
/* Which deadline deadline_ms is. */
enum {
    EXP_NONE = 0,
    EXP_HEAD,  /* a request head (or a new connection's first) */
    EXP_IDLE,  /* keep-alive idle */
    EXP_TLS,   /* TLS handshake */
    EXP_BODY,  /* body rate or read timeout while the body is read */
    EXP_SEND,  /* the client does not take the response */
    EXP_LINGER /* lingering close over */
};
enum { TLS_NONE = 0, TLS_HANDSHAKE = 1, TLS_OPEN = 2 };

/* Where a connection's life stands (connection.c has the diagram). */
enum {
    CP_READ = 0, /* reading and answering requests */
    CP_WRITE,    /* the loop finishes sending a response, then after_write */
    CP_LINGER    /* answered and closing: reading and discarding (lingering close) */
};

/* Output the socket could not take at once, sent by the loop: bytes, or a
 * file range (its own descriptor, dup'ed). */
typedef struct cshs_out {
    struct cshs_out *next;
    int fd;        /* a file range, else -1 */
    off_t off;     /* file: next offset to send */
    uint64_t left; /* file: bytes still to send */
    size_t pos, n; /* data[pos .. n) still to send */
    size_t cap;    /* data's size */
    char data[];
} cshs_out;

typedef struct cshs_conn {
    int tag;
    int fd;
    struct cshs_server *srv;
    struct cshs_conn *prev, *next; /* the server's list, under srv->mu */
    _Atomic int state;
    _Atomic int64_t deadline_ms; /* while idle: when the sweep acts (0: never) */
    _Atomic int expire_kind;     /* EXP_*: which deadline deadline_ms is */
    int phase;                   /* CP_* */
    int close_after_write;       /* CP_WRITE: close (lingering) once sent, else go on */
    int linger;                  /* the close should linger (an error answer, unread input) */
    int eof;                     /* the client's input ended */
    int last_status;             /* of the last answer reported */
    uint64_t served;             /* exchanges run */
    int64_t accept_ms;
    int64_t last_io_ms;               /* last read (body) or write progress (output) */
    const struct cshs_stream_ops *io; /* plain or TLS bytes (cshs_stream_ops) */
    SSL *ssl;                         /* HTTPS, else NULL */
    int tls_state;                    /* TLS_* */
    short tls_wait;                   /* POLLIN or POLLOUT: what the last read or write waits for */
    char tls_read_wants_write;        /* the last TLS read (or handshake step) wants to write */
    cshw_exchange *x;                 /* while bytes are pending, else NULL */
    cshs_out *out, *out_tail;         /* queued output */
    size_t out_bytes;                 /* bytes (not file ranges) queued */
    char *sbuf;                       /* streaming routes: the bytes the handler's reads use */
    size_t spos, slen;
    uint64_t lingered; /* bytes discarded while lingering */
    unsigned remote_port;
    char remote[46];
} cshs_conn;

typedef struct cshs_listener {
    int tag;
    int fd;
    int family;
    int tls;
    unsigned port;
    _Atomic int paused; /* out of descriptors: re-armed by the next sweep */
} cshs_listener;

typedef struct cshs_worker {
    struct cshs_server *srv;
    pthread_t thread;
    cshw_context *ctx;
    cshw_exchange *spare_x;        /* an exchange kept for the next connection */
    _Atomic int64_t busy_since_us; /* 0: waiting in epoll */
    _Atomic int parked;
    /* Events taken in one epoll_wait beyond the one being served. Each slot
     * is emptied by exchange, by the worker (to serve it) or by the
     * supervisor (to hand it back when the worker is stuck in a slow
     * handler), so exactly one of them owns it. */
    _Atomic(void *) held[CSHS_WORKER_BATCH];
    _Atomic int64_t held_since_us; /* 0: nothing held */
    int exited;                    /* worker_main returned (under srv->mu) */
    int abandoned;                 /* left in a handler at a forced stop (under srv->mu) */
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
    /* Workers left in handlers at a forced stop (under mu): the server is
     * freed by the last of them to return when cshs_server_free came first. */
    unsigned abandoned;
    int free_wanted;

    int epfd;
    int wake_tag; /* TAG_WAKE, what the eventfd's registration points at */
    int evfd;
    cshs_listener lis[5];
    SSL_CTX *ssl_ctx; /* HTTPS, under tls_mu (reload swaps it) */
    pthread_mutex_t tls_mu;
    int nlis;

    pthread_mutex_t mu; /* the connection list, the workers, parking */
    pthread_cond_t park_cv, sup_cv, stopped_cv;
    cshs_conn *conns;
    cshs_worker **workers;
    _Atomic unsigned nworkers;
    unsigned unpark_tokens;
    pthread_t supervisor;

    _Atomic int stopping; /* no accepting, close after the request in flight */
    _Atomic int forced;   /* the stop deadline passed: cut everything */
    _Atomic int exiting;  /* threads leave */
    int started, stopped;

    _Atomic uint64_t c_open, c_idle, c_active, c_total, c_requests, c_bytes_in, c_bytes_out;
    _Atomic uint64_t c_idle_buffers, c_busy, c_parked;
    /* 1 while the supervisor sleeps a long wait (not every worker busy): the
     * worker that makes them all busy wakes it, once; otherwise it is left
     * alone, so a busy server pays no wake-up per request */
    _Atomic int sup_sleeping;
    _Atomic unsigned c_holding; /* workers holding taken events (held[]) */
    _Atomic uint64_t e_parse, e_rejected, e_head, e_idle, e_body, e_send, e_io, e_tls;
    _Atomic uint64_t c_tls_handshakes;
    _Atomic uint64_t busy_peak; /* most workers busy at once since the last look */
    _Atomic int park_wanted;    /* surplus workers the supervisor asks to park */
};

int64_t cshs__now_ms(void);
int64_t cshs__now_us(void);

/* connection.c */
cshs_conn *cshs__conn_new(struct cshs_server *s, int fd, const struct sockaddr *sa);
/* Serves what the connection's event brought; re-arms or closes it. */
void cshs__conn_event(cshs_worker *w, cshs_conn *c);
/* The exchange configuration's callbacks (server.c sets them up). */
void cshs__report(void *arg, const cshw_exchange_outcome *o);
int cshs__closing(void *arg);
int cshs__streams(void *arg, const char *head, const csh_message *msg);
/* Hands an event this worker took but did not serve back to epoll: the
 * one-shot registration is armed again and fires for another worker. */
void cshs__conn_rearm(cshs_conn *c);
/* Closes and frees it; w (may be NULL) keeps its exchange as a spare. */
void cshs__conn_close(cshs_worker *w, cshs_conn *c);
/* Bytes an idle connection holds beyond its struct (a head in progress). */
uint64_t cshs__conn_idle_held(const cshs_conn *c);
/* Answers 503 and closes: beyond max_connections. */
void cshs__reject(struct cshs_server *s, int fd, const struct sockaddr *sa);
/* Gives a worker's spare exchange back (at the worker's end). */
void cshs__worker_release(cshs_worker *w);

/* One connection's bytes, plain or TLS: past the TLS handshake the
 * connection's life never asks which (connection.c: plain; tls.c: TLS).
 * read and write: > 0 bytes, 0 at the end of input (read), -EAGAIN when
 * the socket has to be waited for, in the direction c->tls_wait says
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

extern const cshs_stream_ops cshs__plain_stream; /* connection.c */
extern const cshs_stream_ops cshs__tls_stream;   /* tls.c */

/* tls.c */
int cshs__tls_init(struct cshs_server *s);
void cshs__tls_free(struct cshs_server *s);
/* The TLS session of a new connection; its stream becomes cshs__tls_stream. */
int cshs__tls_attach(cshs_conn *c);
/* 1 when done; -EAGAIN / -EINPROGRESS: wants to read / write; else < 0. */
int cshs__tls_handshake(cshs_conn *c);
/* Frees the session (after its close), for a connection that goes on as
 * plain bytes (plain HTTP sent to the HTTPS port). */
void cshs__tls_drop(cshs_conn *c);

#endif
