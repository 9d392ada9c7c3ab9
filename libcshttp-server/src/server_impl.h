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

/* What an epoll registration points at: the first member of each. */
enum { TAG_CONN = 1, TAG_LISTENER = 2, TAG_WAKE = 3 };

/* Events a worker takes per epoll_wait (server.c, worker_main). */
#define CSHS_WORKER_BATCH 8

/* Connection states: who may touch it. IDLE: nobody (in epoll); BUSY: one
 * worker; EXPIRED: the sweep shut it down while idle, the worker that
 * receives its event closes it. */
enum { CONN_IDLE = 0, CONN_BUSY = 1, CONN_EXPIRED = 2 };
enum { EXP_NONE = 0, EXP_HEAD = 1, EXP_IDLE = 2, EXP_TLS = 3 };
enum { TLS_NONE = 0, TLS_HANDSHAKE = 1, TLS_OPEN = 2 };

/* Read state, allocated while the connection has bytes to parse. */
typedef struct cshs_reader {
    csh_parser p;
    csh_header fields[]; /* limits.max_fields */
} cshs_reader;

typedef struct cshs_conn {
    int tag;
    int fd;
    struct cshs_server *srv;
    struct cshs_conn *prev, *next; /* the server's list, under srv->mu */
    _Atomic int state;
    _Atomic int64_t deadline_ms; /* while idle: when the sweep closes it (0: never) */
    _Atomic int expire_kind;     /* EXP_*: which deadline deadline_ms is */
    int64_t head_start_ms;       /* first byte of the head being read, 0: none */
    uint64_t served;             /* requests served */
    int64_t accept_ms;
    SSL *ssl;       /* HTTPS, else NULL */
    int tls_state;  /* TLS_* */
    short tls_wait; /* POLLIN or POLLOUT: what OpenSSL waits for */
    cshs_reader *rd;
    char *buf;
    size_t cap, len, pos, body_base;
    /* the request in progress */
    int64_t body_start_ms, last_read_ms;
    uint64_t body_bytes, req_out;
    uint64_t body_limit, body_consumed; /* framing: bytes the body has, bytes used */
    int status;
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
    cshs_conn *conn; /* the connection being served */
    char *spare_buf; /* a read buffer kept for the next connection */
    cshs_reader *spare_rd;
    _Atomic int64_t busy_since_us; /* 0: waiting in epoll */
    _Atomic int parked;
    /* Events taken in one epoll_wait beyond the one being served. Each slot
     * is emptied by exchange, by the worker (to serve it) or by the
     * supervisor (to hand it back when the worker is stuck in a slow
     * handler), so exactly one of them owns it. */
    _Atomic(void *) held[CSHS_WORKER_BATCH];
    _Atomic int64_t held_since_us; /* 0: nothing held */
} cshs_worker;

struct cshs_server {
    cshs_options o;
    cshw_handler handler;
    cshw_router *router;
    cshs_log_fn log_fn;
    void *log_user;
    void *app_data; /* cshs_server_set_app_data, handed to every context */

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
/* Hands an event this worker took but did not serve back to epoll: the
 * one-shot registration is armed again and fires for another worker. */
void cshs__conn_rearm(cshs_conn *c);
void cshs__conn_close(cshs_conn *c);
/* Bytes an idle connection holds beyond its struct (a head in progress). */
uint64_t cshs__conn_idle_held(const cshs_conn *c);
/* Answers 503 and closes: beyond max_connections. */
void cshs__reject(struct cshs_server *s, int fd);

/* tls.c */
int cshs__tls_init(struct cshs_server *s);
void cshs__tls_free(struct cshs_server *s);
int cshs__tls_attach(cshs_conn *c);
/* 1 when done; -EAGAIN / -EINPROGRESS: wants to read / write; else < 0. */
int cshs__tls_handshake(cshs_conn *c);
/* > 0 bytes; 0 end of input; -EAGAIN, -EINPROGRESS, -errno, -EIO. */
ssize_t cshs__tls_read(cshs_conn *c, void *buf, size_t len);
ssize_t cshs__tls_write(cshs_conn *c, const void *buf, size_t len);
int cshs__tls_pending(const cshs_conn *c);
void cshs__tls_close(cshs_conn *c);

#endif
