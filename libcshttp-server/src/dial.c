/* The TCP connect to a name's addresses (dial.h has the rule). */
#include "dial.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/server/client.h>

static int64_t dial_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A failed connect's errno as the client reports it: CSHS_CLIENT_E_CONNECT
 * for refused or unreachable, CSHS_CLIENT_E_CONNECT_TIMEOUT for ETIMEDOUT,
 * -errno otherwise. */
static int dial_errno(int e)
{
    switch (e) {
    case ETIMEDOUT:
        return CSHS_CLIENT_E_CONNECT_TIMEOUT;
    case ECONNREFUSED:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNRESET:
    case EADDRNOTAVAIL:
    case ENETDOWN:
    case EHOSTDOWN:
    case EAFNOSUPPORT: /* an IPv6 address on a host without IPv6 */
        return CSHS_CLIENT_E_CONNECT;
    default:
        return -e;
    }
}

static socklen_t addr_len(const cshs_dial_addr *a)
{
    return a->sa.sa_family == AF_INET6 ? sizeof a->in6 : sizeof a->in;
}

static int same_addr(const cshs_dial_addr *a, const cshs_dial_addr *b)
{
    if (a->sa.sa_family != b->sa.sa_family) return 0;
    if (a->sa.sa_family == AF_INET)
        return a->in.sin_port == b->in.sin_port && a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
    return a->in6.sin6_port == b->in6.sin6_port && a->in6.sin6_scope_id == b->in6.sin6_scope_id &&
           !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, sizeof a->in6.sin6_addr);
}

int cshs__dial_init(cshs_dial *d, const struct addrinfo *res, int64_t now_ms, unsigned timeout_ms,
                    const cshs_dial_addr *prefer)
{
    memset(d, 0, sizeof *d);
    /* RFC 8305 §4: the list as sorted (RFC 6724), the families taken in
     * turn from the first address's family on */
    const struct addrinfo *next[2] = {NULL, NULL}; /* per family: the first's, the other */
    int first = -1;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fam = ai->ai_family;
        if ((fam != AF_INET && fam != AF_INET6) || ai->ai_socktype != SOCK_STREAM) continue;
        if (first < 0) first = fam;
        int k = fam == first ? 0 : 1;
        if (!next[k]) next[k] = ai;
    }
    for (int k = 0; d->naddr < CSHS_DIAL_MAX_ADDRS && (next[0] || next[1]); k ^= 1) {
        const struct addrinfo *ai = next[k];
        if (!ai) continue;
        size_t len = ai->ai_addrlen < sizeof d->addr[0] ? ai->ai_addrlen : sizeof d->addr[0];
        memcpy(&d->addr[d->naddr++], ai->ai_addr, len);
        int fam = ai->ai_family;
        for (ai = ai->ai_next; ai; ai = ai->ai_next)
            if (ai->ai_family == fam && ai->ai_socktype == SOCK_STREAM) break;
        next[k] = ai;
    }
    if (d->naddr == 0) return CSHS_CLIENT_E_RESOLVE;
    for (unsigned i = 1; prefer && i < d->naddr; i++)
        if (same_addr(&d->addr[i], prefer)) { /* first, the others in their order */
            cshs_dial_addr a = d->addr[i];
            memmove(&d->addr[1], &d->addr[0], i * sizeof d->addr[0]);
            d->addr[0] = a;
            break;
        }
    d->deadline_ms = now_ms + (int64_t)timeout_ms;
    d->delay_ms = CSHS_DIAL_ATTEMPT_DELAY_MS;
    d->next_ms = now_ms;
    return 0;
}

int cshs__dial_peer(int fd, cshs_dial_addr *out)
{
    socklen_t len = sizeof *out;
    memset(out, 0, sizeof *out);
    return getpeername(fd, &out->sa, &len) < 0 ? -errno : 0;
}

int cshs__dial_due(const cshs_dial *d, int64_t now_ms)
{
    return d->started < d->naddr && now_ms < d->deadline_ms &&
           (d->inflight == 0 || now_ms >= d->next_ms);
}

int cshs__dial_over(const cshs_dial *d, int64_t now_ms)
{
    if (now_ms >= d->deadline_ms) return 1;
    return d->inflight == 0 && d->started >= d->naddr;
}

int cshs__dial_error(const cshs_dial *d)
{
    if (d->timed_out || !d->err) return CSHS_CLIENT_E_CONNECT_TIMEOUT;
    return d->err;
}

int64_t cshs__dial_wake_ms(const cshs_dial *d)
{
    if (d->started < d->naddr && d->inflight > 0 && d->next_ms < d->deadline_ms) return d->next_ms;
    return d->deadline_ms;
}

int cshs__dial_start(cshs_dial *d, int64_t now_ms, int *connected)
{
    *connected = 0;
    while (d->started < d->naddr) {
        const cshs_dial_addr *a = &d->addr[d->started++];
        int64_t left = d->deadline_ms - now_ms;
        if (left <= 0) break;
        int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            d->err = dial_errno(errno);
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
                return d->err; /* no other address fares better */
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* the kernel's bound on the SYN retries: the time left */
        unsigned ut = (unsigned)left;
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
        int rc = connect(fd, &a->sa, addr_len(a));
        if (rc == 0 || errno == EINPROGRESS) {
            *connected = rc == 0;
            d->inflight++;
            d->next_ms = now_ms + (int64_t)d->delay_ms;
            return fd;
        }
        d->err = dial_errno(errno);
        close(fd);
    }
    return d->err ? d->err : CSHS_CLIENT_E_CONNECT_TIMEOUT;
}

int cshs__dial_done(cshs_dial *d, int fd)
{
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
    d->inflight--;
    if (err == 0) return 0;
    d->err = dial_errno(err);
    d->next_ms = 0; /* the next address at once */
    return d->err;
}

void cshs__dial_abandon(cshs_dial *d, int err)
{
    d->inflight--;
    if (err == CSHS_CLIENT_E_CONNECT_TIMEOUT)
        d->timed_out = 1;
    else
        d->err = err;
}

/* ---- cshs_dialer ---- */

static void dialer_drop(cshs_dialer *dl, unsigned i)
{
    close(dl->fd[i]);
    dl->fd[i] = dl->fd[dl->d.inflight]; /* d.inflight already counts it out */
}

/* Starts what is due; 1 with *fd when one connected at once. */
static int dialer_start_due(cshs_dialer *dl, int64_t now, int *fd)
{
    while (cshs__dial_due(&dl->d, now)) {
        int connected = 0;
        int s = cshs__dial_start(&dl->d, now, &connected);
        if (s < 0) return 0; /* none could start; cshs__dial_over tells */
        dl->fd[dl->d.inflight - 1] = s;
        if (connected) {
            *fd = s;
            dl->d.inflight--;
            cshs__dialer_cancel(dl);
            return 1;
        }
    }
    return 0;
}

int cshs__dialer_init(cshs_dialer *dl, const struct addrinfo *res, int64_t now_ms,
                      unsigned timeout_ms, const cshs_dial_addr *prefer)
{
    return cshs__dial_init(&dl->d, res, now_ms, timeout_ms, prefer);
}

int cshs__dialer_run(cshs_dialer *dl, int wait_ms, int *fd)
{
    *fd = -1;
    int64_t now = dial_now_ms();
    int64_t until = wait_ms < 0 ? INT64_MAX : now + wait_ms;
    for (;;) {
        if (dialer_start_due(dl, now, fd)) return 1;
        if (cshs__dial_over(&dl->d, now)) {
            while (dl->d.inflight > 0) { /* the deadline: the rest are given up */
                cshs__dial_abandon(&dl->d, CSHS_CLIENT_E_CONNECT_TIMEOUT);
                close(dl->fd[dl->d.inflight]);
            }
            return cshs__dial_error(&dl->d);
        }
        struct pollfd pf[CSHS_DIAL_MAX_ADDRS];
        for (unsigned i = 0; i < dl->d.inflight; i++)
            pf[i] = (struct pollfd){dl->fd[i], POLLOUT, 0};
        int64_t wake = cshs__dial_wake_ms(&dl->d);
        if (wake > until) wake = until;
        int64_t t = wake - now;
        if (t < 0) t = 0;
        int n = poll(pf, dl->d.inflight, (int)(t > 60000 ? 60000 : t));
        if (n < 0 && errno != EINTR) {
            int e = -errno;
            cshs__dialer_cancel(dl);
            return e;
        }
        /* from the last, so that a dropped attempt's slot is refilled by
         * one already looked at */
        for (unsigned i = n > 0 ? dl->d.inflight : 0; i-- > 0;) {
            if (!pf[i].revents) continue;
            if (cshs__dial_done(&dl->d, dl->fd[i]) == 0) {
                *fd = dl->fd[i];
                dl->fd[i] = dl->fd[dl->d.inflight];
                cshs__dialer_cancel(dl);
                return 1;
            }
            dialer_drop(dl, i);
        }
        now = dial_now_ms();
        if (now >= until && !cshs__dial_due(&dl->d, now) && !cshs__dial_over(&dl->d, now)) return 0;
    }
}

void cshs__dialer_cancel(cshs_dialer *dl)
{
    while (dl->d.inflight > 0) {
        dl->d.inflight--;
        close(dl->fd[dl->d.inflight]);
    }
}
