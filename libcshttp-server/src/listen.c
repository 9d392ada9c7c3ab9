/* The listeners (TCP, TLS, a Unix socket) and accepting: which loop a new
 * connection joins, its registration, and the changes to it later. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "list.h"
#include "server_impl.h"
#include "sock_io.h"

/* ---- listeners ---- */

int cshs__listen_tcp(cshs_server *s, const char *address, unsigned port, int tls, cshs_listener *l)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, address, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        sl = sizeof *in;
    } else if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        sl = sizeof *in6;
    } else {
        return -EINVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->o.reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, s->o.backlog) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    l->port = ntohs(ss.ss_family == AF_INET ? in->sin_port : in6->sin6_port);
    l->fd = fd;
    l->family = ss.ss_family;
    l->tls = tls;
    l->tag = TAG_LISTENER;
    return 0;
}

int cshs__listen_unix(cshs_server *s, cshs_listener *l)
{
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    if (strlen(s->o.unix_path) >= sizeof un.sun_path) return -ENAMETOOLONG;
    strcpy(un.sun_path, s->o.unix_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    unlink(s->o.unix_path);
    if (bind(fd, (struct sockaddr *)&un, sizeof un) < 0 || listen(fd, s->o.backlog) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    l->fd = fd;
    l->family = AF_UNIX;
    l->tag = TAG_LISTENER;
    return 0;
}

unsigned cshs_server_port(const cshs_server *s, int index)
{
    int k = 0;
    for (int i = 0; i < s->nlis; i++) {
        if (s->lis[i].family == AF_UNIX || s->lis[i].tls) continue;
        if (k++ == index) return s->lis[i].port;
    }
    return 0;
}

unsigned cshs_server_tls_port(const cshs_server *s, int index)
{
    int k = 0;
    for (int i = 0; i < s->nlis; i++) {
        if (!s->lis[i].tls) continue;
        if (k++ == index) return s->lis[i].port;
    }
    return 0;
}

/* ---- accepting ---- */

/* The connections a loop serves now. */
uint64_t cshs__loop_load(cshs_loop *l)
{
    return atomic_load_explicit(&l->k.idle, memory_order_relaxed) +
           atomic_load_explicit(&l->k.active, memory_order_relaxed);
}

/* The loop a new connection joins: the one with the fewest connections,
 * the accepting loop `l` on a tie, and never one whose owner is inside a
 * handler now (a loop held by a handler that blocks would let its new
 * connections wait). The listener is shared, and its exclusive wake-up
 * goes to the loop that waited last, the one that just accepted: without
 * this, a burst of connections joins one loop while the others idle. */
static cshs_loop *joining_loop(cshs_server *s, cshs_loop *l)
{
    cshs_loop *best = l;
    uint64_t least = cshs__loop_load(l);
    for (unsigned i = 0; i < s->nloops && least > 0; i++) {
        cshs_loop *m = &s->loops[i];
        if (m == l || atomic_load_explicit(&m->handler_since_us, memory_order_relaxed) > 0)
            continue;
        uint64_t n = cshs__loop_load(m);
        if (n < least) {
            least = n;
            best = m;
        }
    }
    return best;
}

/* c joins loop t's list and counters, or leaves them. */
static void loop_link(cshs_loop *t, cshs_conn *c)
{
    c->loop = t;
    atomic_fetch_add_explicit(&t->k.idle, 1, memory_order_relaxed);
    pthread_mutex_lock(&t->mu);
    CSHS_LIST_PUSH(t->conns, c, prev, next);
    pthread_mutex_unlock(&t->mu);
}

static void loop_unlink(cshs_loop *t, cshs_conn *c)
{
    pthread_mutex_lock(&t->mu);
    CSHS_LIST_REMOVE(t->conns, c, prev, next);
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_sub_explicit(&t->k.idle, 1, memory_order_relaxed);
}

/* One connection from the listener (nginx's default: one per event),
 * served by the loop joining_loop picks: its epoll set takes the socket,
 * whose first bytes wake that loop. */
void cshs__accept_one(cshs_worker *w, cshs_loop *l, cshs_listener *lis)
{
    cshs_server *s = l->srv;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(lis->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        /* out of descriptors or memory: the listener stays ready and every
         * wait would return at once; it leaves the epoll set until the
         * next sweep */
        if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) &&
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, lis->fd, NULL) == 0)
            l->listeners_paused = 1;
        return;
    }
    (void)w;
    if (lis->family == AF_UNIX) ss.ss_family = AF_UNIX;
    if (atomic_load(&s->c_open) >= s->o.max_connections) {
        if (lis->tls) { /* a plain-text 503 means nothing inside TLS */
            close(fd);
            atomic_fetch_add(&s->e_rejected, 1);
        } else {
            cshs__reject(l, fd, (struct sockaddr *)&ss);
        }
        return;
    }
    cshs_conn *c = cshs__conn_new(s, fd, (struct sockaddr *)&ss);
    if (!c || (lis->tls && cshs__tls_attach(c) < 0)) {
        free(c);
        close(fd);
        return;
    }
    c->loop = l;
    c->accept_ms = cshs__now_ms();
    if (lis->tls && s->o.tls_handshake_timeout_ms) {
        c->deadline_ms = c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms;
        c->expire_kind = EXP_TLS;
    } else if (!lis->tls && s->o.header_timeout_ms) {
        c->deadline_ms = c->accept_ms + (int64_t)s->o.header_timeout_ms;
        c->expire_kind = EXP_HEAD;
    }
    c->parked = 1;
    atomic_fetch_add(&s->c_open, 1);
    atomic_fetch_add(&s->c_total, 1);
    cshs_loop *t = joining_loop(s, l);
    loop_link(t, c);
    /* Registered once, edge-triggered (whoever serves an event reads and
     * writes until the socket says EAGAIN), for input only, as nginx does:
     * a new socket is writable at once, and with writability registered
     * that alone would fire an event, a wake-up of the loop for nothing
     * (one connection in five in a run of full handshakes). The first write
     * that has to wait adds writability (cshs__conn_want_out), for the rest
     * of the connection's life. Bytes already there fire at once. */
    struct epoll_event ev;
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        /* never to be served: closed now rather than left until stop, by
         * this loop (a loop's closed connections are its owner's to free) */
        if (t != l) {
            loop_unlink(t, c);
            loop_link(l, c);
        }
        cshs__conn_close(w, c);
    }
}

void cshs__conn_join(cshs_loop *l, cshs_conn *c)
{
    loop_link(l, c);
}

/* Beyond max_connections: the toolkit's 503 page, written without waiting
 * (a new socket's buffer takes it), what the client already sent read so
 * that close sends a FIN rather than a reset that could destroy the
 * answer, and close. */
void cshs__reject(cshs_loop *l, int fd, const struct sockaddr *sa)
{
    cshs_server *s = l->srv;
    cshs_conn c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    c.srv = s;
    c.loop = l;
    c.io = &cshs__plain_stream;
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
        cshs_conn *tmp = cshs__conn_new(s, fd, sa);
        if (tmp) {
            memcpy(c.remote, tmp->remote, sizeof c.remote);
            c.remote_port = tmp->remote_port;
            free(tmp);
        }
    } else {
        strcpy(c.remote, "unix");
    }
    cshw_transport t = cshs__transport_of(&c);
    cshw_exchange_refuse(&s->xcfg, &t, 503, "The server has too many connections.");
    cshs__out_clear(&c); /* what a full socket did not take is dropped */
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && cshs__recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {
    }
    close(fd);
    atomic_fetch_add(&s->e_rejected, 1);
}

/* The connection's registration as it stands: input unless muted,
 * writability once a write waited. */
static int conn_modify(cshs_conn *c, int out_armed, int in_muted)
{
    if (c->fd < 0) return 0; /* no socket (an HTTP/2 stream's): signalled instead */
    struct epoll_event ev;
    ev.events = (in_muted ? 0u : EPOLLIN) | (out_armed ? EPOLLOUT : 0u) | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    return epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
}

int cshs__conn_want_out(cshs_conn *c)
{
    if (c->out_armed) return 0;
    /* EPOLL_CTL_MOD looks at the socket again: if it became writable since
     * the write that said EAGAIN, the event fires now, so none is lost */
    int r = conn_modify(c, 1, c->in_muted);
    if (r < 0) return r;
    c->out_armed = 1;
    return 0;
}

void cshs__conn_input_events(cshs_conn *c, int on)
{
    if (!c->in_muted == !!on) return;
    if (conn_modify(c, c->out_armed, !on) == 0) c->in_muted = (char)!on;
}
