/* A switched connection (a 101 to a request with `upgrade`): its bytes
 * read and written without waiting, and its waits on a reactor. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "client_impl.h"
#include "sock_io.h"

/* ---- a switched connection (cshs_call_tunnel_*) ---- */

static conn *tunnel_conn(const cshs_call *call)
{
    return call && call->state == K_SWITCHED ? call->cn : NULL;
}

ssize_t cshs_call_tunnel_read(cshs_call *call, void *buf, size_t cap)
{
    conn *cn = tunnel_conn(call);
    if (!cn || (cap && !buf)) return -EINVAL;
    if (cn->end > cn->start) { /* read past the 101's head */
        size_t n = cn->end - cn->start;
        if (n > cap) n = cap;
        memcpy(buf, cn->buf + cn->start, n);
        cn->start += n;
        cshs__client_drop_buffer(cn);
        return (ssize_t)n;
    }
    if (cn->tunnel_dry) {
        cn->io_wait = POLLIN;
        return -EAGAIN; /* no system call to meet EAGAIN */
    }
    ssize_t n = cshs__client_conn_read(cn, buf, cap, CONN_NOWAIT);
    if (n > 0 && (size_t)n < cap && !cn->ssl && !cn->tunnel_end) cn->tunnel_dry = 1;
    return n;
}

ssize_t cshs_call_tunnel_write(cshs_call *call, const void *data, size_t len)
{
    conn *cn = tunnel_conn(call);
    if (!cn || (len && !data)) return -EINVAL;
    if (len == 0) return 0;
    for (;;) {
        if (!cn->ssl) {
            ssize_t w = cshs__send(cn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w >= 0) return w;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                cn->io_wait = POLLOUT;
                return -EAGAIN;
            }
            return -errno;
        }
        short wait = POLLOUT;
        ssize_t w = cshs__client_tls_write_now(cn, data, len, &wait);
        if (w == -EAGAIN) cn->io_wait = wait;
        return w;
    }
}

static void tunnel_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    cn->waiting = NULL;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    int ev = 0;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) cn->tunnel_end = 1;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        ev |= CSHS_TUNNEL_IN;
        cn->tunnel_dry = 0;
    }
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) ev |= CSHS_TUNNEL_OUT;
    call->tunnel_ready(call->tunnel_arg, ev);
}

int cshs_call_tunnel_wait(cshs_call *call, cshs_reactor *r, int events, int64_t deadline_ms,
                          void (*ready)(void *arg, int events), void *arg)
{
    conn *cn = tunnel_conn(call);
    if (!cn || !r || !ready || !(events & (CSHS_TUNNEL_IN | CSHS_TUNNEL_OUT))) return -EINVAL;
    if (cn->waiting == call) {
        /* one armed: replaced, unless its event was taken already (its
         * ready runs in this batch, and may wait anew) */
        if (!cshs__persistent_disarm(&cn->pw, r)) return 0;
        cn->waiting = NULL;
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    }
    uint32_t ev = EPOLLRDHUP;
    if (events & CSHS_TUNNEL_IN) ev |= cn->ssl && cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN;
    if (events & CSHS_TUNNEL_OUT) ev |= cn->ssl && cn->io_wait == POLLIN ? EPOLLIN : EPOLLOUT;
    call->tunnel_ready = ready;
    call->tunnel_arg = arg;
    int e = cshs__client_watch_arm(call, r, ev, deadline_ms, tunnel_ready);
    return e > 0 ? -ECANCELED : e;
}

int cshs_call_tunnel_shutdown(cshs_call *call)
{
    conn *cn = tunnel_conn(call);
    if (!cn) return -EINVAL;
    if (cn->ssl) {
        sigpipe_guard g;
        cshs__client_sigpipe_block(&g);
        SSL_shutdown(cn->ssl);
        ERR_clear_error();
        cshs__client_sigpipe_restore(&g);
    }
    return shutdown(cn->fd, SHUT_WR) < 0 ? -errno : 0;
}
