/* The client's connections: origins parsed, connections opened (by a
 * request's thread, or by the tick without waiting) and closed, TLS, and the
 * SIGPIPE guard around OpenSSL's I/O. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "client_impl.h"
#include "list.h"
#include "thread_reactor.h"

/* ---- SIGPIPE: OpenSSL writes with write(2), which raises it on a socket
 * the origin closed. Blocked around TLS I/O on this thread, and a SIGPIPE
 * raised meanwhile is taken back, so the program's disposition never sees
 * it (the plain path sends with MSG_NOSIGNAL). ---- */

void cshs__client_sigpipe_block(sigpipe_guard *g)
{
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
    sigpending(&pend);
    g->pending_before = sigismember(&pend, SIGPIPE) == 1;
}

void cshs__client_sigpipe_restore(sigpipe_guard *g)
{
    if (!g->pending_before) {
        sigset_t pipe, pend;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigpending(&pend);
        if (sigismember(&pend, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ---- origins ---- */

/* Parses "http://host[:port]" into `p`. */
int cshs__client_parse_origin(const char *origin, origin_id *p)
{
    if (!origin) return -EINVAL;
    const char *s = origin;
    if (strncasecmp(s, "http://", 7) == 0) {
        p->tls = 0;
        s += 7;
    } else if (strncasecmp(s, "https://", 8) == 0) {
        p->tls = 1;
        s += 8;
    } else {
        return -EINVAL;
    }
    const char *h = s, *he;
    int v6 = 0;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb) return -EINVAL;
        h = s + 1;
        he = rb;
        s = rb + 1;
        v6 = 1;
    } else {
        while (*s && *s != ':' && *s != '/') {
            unsigned char ch = (unsigned char)*s;
            /* reg-name or IPv4 (RFC 3986 §3.2.2), without percent-encoding */
            if (!(ch == '-' || ch == '.' || ch == '_' || ch == '~' || (ch >= '0' && ch <= '9') ||
                  ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')))
                return -EINVAL;
            s++;
        }
        he = s;
    }
    size_t hl = (size_t)(he - h);
    if (hl == 0 || hl >= sizeof p->host) return -EINVAL;
    for (size_t i = 0; i < hl; i++)
        p->host[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] | 0x20 : h[i]);
    p->host[hl] = 0;
    unsigned long port = p->tls ? 443 : 80;
    int explicit_port = 0;
    if (*s == ':') {
        s++;
        if (*s < '0' || *s > '9') return -EINVAL;
        port = 0;
        while (*s >= '0' && *s <= '9') {
            port = port * 10 + (unsigned long)(*s - '0');
            if (port > 65535) return -EINVAL;
            s++;
        }
        if (port == 0) return -EINVAL;
        explicit_port = 1;
    }
    if (*s == '/') s++;
    if (*s) return -EINVAL;
    if (v6) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, p->host, &a6) != 1) return -EINVAL;
        p->host_is_ip = 1;
    } else {
        struct in_addr a4;
        p->host_is_ip = inet_pton(AF_INET, p->host, &a4) == 1;
    }
    snprintf(p->port, sizeof p->port, "%lu", port);
    const char *lb = v6 ? "[" : "", *rbk = v6 ? "]" : "";
    snprintf(p->key, sizeof p->key, "%s://%s%s%s:%lu", p->tls ? "https" : "http", lb, p->host, rbk,
             port);
    int defport = (p->tls && port == 443) || (!p->tls && port == 80);
    if (explicit_port && !defport)
        snprintf(p->hosthdr, sizeof p->hosthdr, "%s%s%s:%lu", lb, p->host, rbk, port);
    else
        snprintf(p->hosthdr, sizeof p->hosthdr, "%s%s%s", lb, p->host, rbk);
    return 0;
}

/* Under the lock: the pool of an origin string seen before, or NULL. */
pool *cshs__client_pool_find(cshs_client *c, const char *given)
{
    for (pool *p = c->pools; p; p = p->next)
        if (p->given[0] && strcmp(p->given, given) == 0) return p;
    return NULL;
}

/* Under the lock: the pool of `id`'s origin, created on first use. */
pool *cshs__client_pool_get(cshs_client *c, const origin_id *id, const char *given)
{
    for (pool *p = c->pools; p; p = p->next)
        if (strcmp(p->key, id->key) == 0) return p;
    pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (strlen(given) < sizeof p->given) memcpy(p->given, given, strlen(given) + 1);
    memcpy(p->key, id->key, sizeof p->key);
    memcpy(p->host, id->host, sizeof p->host);
    memcpy(p->port, id->port, sizeof p->port);
    memcpy(p->hosthdr, id->hosthdr, sizeof p->hosthdr);
    p->tls = id->tls;
    p->host_is_ip = id->host_is_ip;
    p->c = c;
    CSHS_STACK_PUSH(c->pools, p, next);
    return p;
}

/* ---- connections: opening and closing ---- */

/* The pool's preferred address (pool.won), copied for an open that runs
 * unlocked: `out`, or NULL when it has none. */
const cshs_dial_addr *cshs__client_won_get(pool *p, cshs_dial_addr *out)
{
    pthread_mutex_lock(&p->c->mu);
    int has = p->has_won;
    if (has) *out = p->won;
    pthread_mutex_unlock(&p->c->mu);
    return has ? out : NULL;
}

/* An open connected socket fd: its peer's address is the pool's
 * preferred one from now on. */
void cshs__client_won_set(pool *p, int fd)
{
    cshs_dial_addr a;
    if (cshs__dial_peer(fd, &a) < 0) return;
    pthread_mutex_lock(&p->c->mu);
    p->won = a;
    p->has_won = 1;
    pthread_mutex_unlock(&p->c->mu);
}

void cshs__client_conn_close(conn *cn)
{
    if (!cn) return;
    if (cn->ssl) {
        sigpipe_guard g;
        cshs__client_sigpipe_block(&g);
        ERR_clear_error();
        SSL_shutdown(cn->ssl); /* one try at a close_notify; the socket is non-blocking */
        ERR_clear_error();
        cshs__client_sigpipe_restore(&g);
        SSL_free(cn->ssl);
    }
    if (cn->dialer) {
        cshs__dialer_cancel(cn->dialer);
        free(cn->dialer);
        cn->dialer = NULL;
    }
    cshs__lookup_release(cn->lookup); /* a look-up in flight ends by itself */
    cn->lookup = NULL;
    cshs__persistent_forget(&cn->pw); /* before the close: the loop lets go of it */
    if (cn->fd >= 0) close(cn->fd);
    free(cn->buf);
    cn->buf = NULL;
    if (!cshs__persistent_ever(&cn->pw)) {
        free(cn);
        return;
    }
    cshs_client *c = cn->c;
    pthread_mutex_lock(&c->retired_mu);
    CSHS_STACK_PUSH(c->retired, cn, next_retired);
    pthread_mutex_unlock(&c->retired_mu);
}

void cshs__client_close_list(conn *cn)
{
    while (cn) {
        conn *n = cn->next;
        cshs__client_conn_close(cn);
        cn = n;
    }
}

conn *cshs__client_conn_alloc(pool *p)
{
    cshs_client *c = p->c;
    pthread_mutex_lock(&c->retired_mu);
    conn *cn = NULL;
    if (c->retired) CSHS_STACK_POP(c->retired, cn, next_retired);
    pthread_mutex_unlock(&c->retired_mu);
    if (cn) {
        /* a retired one: its registration (not registered; its generation
         * goes on, read by a loop that holds a stale event) is left as is */
        memset((char *)cn + sizeof cn->pw, 0, sizeof *cn - sizeof cn->pw);
    } else {
        cn = calloc(1, sizeof *cn);
        if (!cn) return NULL;
        cn->pw.w.fd = -1;
    }
    cn->buf = malloc(CONN_BUF);
    cn->c = c;
    if (!cn->buf) {
        cn->fd = -1;
        cn->p = p;
        cshs__client_conn_close(cn);
        return NULL;
    }
    cn->cap = CONN_BUF;
    cn->fd = -1;
    cn->p = p;
    cn->born_ms = now_ms();
    return cn;
}

int cshs__client_resolve(const pool *p, struct addrinfo **res)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (p->host_is_ip ? AI_NUMERICHOST : 0);
    int r = getaddrinfo(p->host, p->port, &hints, res);
    if (r == EAI_MEMORY) return -ENOMEM;
    return r ? CSHS_CLIENT_E_RESOLVE : 0;
}

static int tls_setup(cshs_client *c, conn *cn)
{
    pool *p = cn->p;
    SSL *ssl = SSL_new(c->ssl_ctx);
    if (!ssl) return -ENOMEM;
    if (!p->host_is_ip) SSL_set_tlsext_host_name(ssl, p->host); /* SNI: names only (RFC 6066 §3) */
    if (!c->o.tls_insecure) {
        int ok = p->host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), p->host)
                               : SSL_set1_host(ssl, p->host);
        if (ok != 1) {
            SSL_free(ssl);
            return -ENOMEM;
        }
    }
    SSL_set_fd(ssl, cn->fd);
    SSL_set_connect_state(ssl);
    cn->ssl = ssl;
    return 0;
}

/* One step of the TLS handshake: 1 done, 0 wants *events, or an error. */
static int tls_step(cshs_client *c, conn *cn, short *events)
{
    sigpipe_guard g;
    cshs__client_sigpipe_block(&g);
    ERR_clear_error();
    int r = SSL_do_handshake(cn->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    cshs__client_sigpipe_restore(&g);
    if (r == 1) return 1;
    if (e == SSL_ERROR_WANT_READ) {
        *events = POLLIN;
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        *events = POLLOUT;
        return 0;
    }
    long v = SSL_get_verify_result(cn->ssl);
    ERR_clear_error();
    if (!c->o.tls_insecure && v != X509_V_OK) return CSHS_CLIENT_E_CERTIFICATE;
    return CSHS_CLIENT_E_TLS;
}

/* The TCP connect of the tick's open, to the addresses of res (its
 * deadline from the open's start, born_ms). 0, or an error. */
static int open_dial(conn *cn, struct addrinfo *res)
{
    cshs_dialer *dl = malloc(sizeof *dl);
    if (!dl) return -ENOMEM;
    cn->dialer = dl;
    cshs_dial_addr pref;
    return cshs__dialer_init(dl, res, cn->born_ms, cn->connect_ms,
                             cshs__client_won_get(cn->p, &pref));
}

/* The tick's non-blocking open (min_idle): the name looked up on a thread
 * of its own (lookup.h; an address is read at once), then the TCP connect
 * to its addresses; later ticks see it through (open_progress), the next
 * address started at the first tick past its attempt delay. */
int cshs__client_open_start(pool *p, unsigned connect_ms, conn **out)
{
    *out = NULL;
    conn *cn = cshs__client_conn_alloc(p);
    if (!cn) return -ENOMEM;
    cn->state = C_OPENING;
    cn->connect_ms = connect_ms;
    int r = 0;
    if (p->host_is_ip) {
        struct addrinfo *res = NULL;
        r = cshs__client_resolve(p, &res); /* numeric: never waits */
        if (r == 0) r = open_dial(cn, res);
        if (res) freeaddrinfo(res);
    } else {
        cn->lookup = cshs__lookup_start(p->host, p->port, -1);
        if (!cn->lookup) r = -ENOMEM;
    }
    if (r < 0) {
        cshs__client_conn_close(cn);
        return r;
    }
    *out = cn;
    return 0;
}

/* A non-blocking open once its TCP connect won (dial.h), then each time
 * its socket is ready as the TLS handshake asked: 1 ready, 0 the
 * handshake wants *events, or an error. */
int cshs__client_open_advance(cshs_client *c, conn *cn, short *events)
{
    if (!cn->tcp_done) { /* connected: the dial saw it (cshs__dial_done) */
        cn->tcp_done = 1;
        unsigned ut = c->o.send_timeout_ms;
        setsockopt(cn->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
        if (!cn->p->tls) return 1;
        int r = tls_setup(c, cn);
        if (r < 0) return r;
    }
    return tls_step(c, cn, events);
}

/* One look at a connection the tick is opening: 1 ready, 0 not yet, or an
 * error. Never waits. */
int cshs__client_open_progress(cshs_client *c, conn *cn)
{
    if (cn->lookup) {
        struct addrinfo *res = NULL;
        int r;
        if (!cshs__lookup_done(cn->lookup, &res, &r)) goto not_yet;
        cshs__lookup_release(cn->lookup);
        cn->lookup = NULL;
        if (r == 0) r = open_dial(cn, res);
        if (res) freeaddrinfo(res);
        if (r < 0) return r;
    }
    if (cn->dialer) {
        int fd = -1;
        int r = cshs__dialer_run(cn->dialer, 0, &fd);
        if (r < 0) return r;
        if (r == 0) goto not_yet;
        free(cn->dialer);
        cn->dialer = NULL;
        cn->fd = fd;
        cshs__client_won_set(cn->p, fd);
    }
    short ev = 0;
    int r = cshs__client_open_advance(c, cn, &ev);
    if (r != 0) return r;
not_yet:
    if (now_ms() - cn->born_ms >= (int64_t)cn->connect_ms) return CSHS_CLIENT_E_CONNECT_TIMEOUT;
    return 0;
}

/* 1 when an idle connection is still fit to send on: not closed by the
 * origin, no bytes nobody asked for, not past max_lifetime_ms. */
int cshs__client_conn_too_old(const cshs_client *c, const conn *cn, int64_t now)
{
    return c->o.max_lifetime_ms && now - cn->born_ms >= (int64_t)c->o.max_lifetime_ms;
}

/* The look at the socket of conn_fresh: 1 when the origin sent nothing
 * (no FIN, no byte) since the connection went idle. */
int cshs__client_conn_quiet(conn *cn)
{
    if (cn->ssl && SSL_pending(cn->ssl) > 0) return 0; /* decrypted, unasked for */
    struct pollfd pf = {cn->fd, POLLIN | POLLRDHUP, 0};
    if (poll(&pf, 1, 0) <= 0 || !pf.revents) return 1;
    if (!cn->ssl || (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) return 0;
    /* TLS: a record may be a session ticket, which is no answer; any
     * application byte is one nobody asked for */
    char b;
    size_t n = 0;
    sigpipe_guard g;
    cshs__client_sigpipe_block(&g);
    ERR_clear_error();
    int r = SSL_read_ex(cn->ssl, &b, 1, &n);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    ERR_clear_error();
    cshs__client_sigpipe_restore(&g);
    return r != 1 && e == SSL_ERROR_WANT_READ;
}

/* Whether an idle connection's socket has to be looked at (conn_quiet)
 * before it is reused. One registered with a server's loop (persistent_watch.h) has the
 * origin's FIN, or bytes nobody asked for, given there as an event while
 * idle: it is looked at only after such an event (or any event that came
 * while it was not waited on there, as the end of a long body read by a
 * thread), and is reused without a system call otherwise. This is nginx's
 * way with its upstream keep-alive connections, whose read event closes an
 * idle one; as there, a FIN the loop has not yet taken when a request
 * takes the connection is met by that request, which the retry rule sends
 * again. The others are always looked at. */
int cshs__client_conn_needs_look(conn *cn)
{
    /* muted, or registered with a thread's own loop, which takes no
     * event while its thread does not wait: no event comes */
    if (!cshs__reactor_live(cn->pw.w.reg) || cn->pw.muted) return 1;
    return cshs__persistent_take_missed(&cn->pw, EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR) != 0;
}

/* Under the lock. */
int cshs__client_conn_fresh(const cshs_client *c, conn *cn, int64_t now)
{
    if (cshs__client_conn_too_old(c, cn, now)) return 0;
    if (!cshs__client_conn_needs_look(cn)) return 1;
    cn->p->looks++;
    return cshs__client_conn_quiet(cn);
}

/* The TLS context, made on the first HTTPS origin (loading a trust store
 * costs milliseconds that a plain client never pays). */
int cshs__client_tls_ctx(cshs_client *c)
{
    int r = 0;
    pthread_mutex_lock(&c->tls_mu);
    if (!c->ssl_ctx) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        if (!ctx) {
            r = -ENOMEM;
        } else {
            static const unsigned char alpn[] = "\x08http/1.1";
            SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
            SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
            if (c->o.tls_insecure) {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
            } else {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
                int ok = c->o.tls_ca_file
                             ? SSL_CTX_load_verify_locations(ctx, c->o.tls_ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(ctx);
                if (ok != 1) r = CSHS_CLIENT_E_CERTIFICATE;
            }
            ERR_clear_error();
            if (r == 0)
                c->ssl_ctx = ctx;
            else
                SSL_CTX_free(ctx);
        }
    }
    pthread_mutex_unlock(&c->tls_mu);
    return r;
}
