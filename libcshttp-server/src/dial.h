/* Private to the engine: the TCP connect to a name's addresses, as Happy
 * Eyeballs tries them (RFC 8305).
 *
 * A name can resolve to several addresses, any of which may refuse, be
 * unreachable or never answer (`localhost` is ::1 and 127.0.0.1 on Debian,
 * and an application behind a proxy usually binds one of them). So an
 * open tries them all:
 *
 * - in getaddrinfo's order (RFC 6724's), the families interleaved, the
 *   first result's family first (RFC 8305 §4, a First Address Family
 *   Count of 1), but for the address the caller prefers (the one its last
 *   open connected to: §4 lets a client with a history put first the
 *   addresses that answered), which goes first;
 * - one attempt at a time, the next started when the last one failed
 *   (refused, unreachable: at once) or after CSHS_DIAL_ATTEMPT_DELAY_MS
 *   without an answer, while the earlier ones go on (§5); the first to
 *   connect wins and the others are closed;
 * - within one deadline for the whole open: the open fails when every
 *   address failed, or at the deadline, with a timeout if any attempt was
 *   still waiting then and the last failure's error otherwise.
 *
 * cshs_dial is the rule's state: which address is next, when, how many
 * attempts are in flight, the error so far. It does no waiting and owns
 * no socket: a caller starts attempts with cshs__dial_start, watches their
 * sockets for writability as it waits (poll, or a reactor) and reports
 * each end with cshs__dial_done. cshs_dialer is such a caller that waits
 * with poll(2), for a thread (the blocking open) or without waiting at all
 * (the tick's look at an open in progress).
 *
 * Threads: a cshs_dial or cshs_dialer is used by one thread at a time. */
#ifndef CSHS_DIAL_H
#define CSHS_DIAL_H

#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

/* RFC 8305 §5's recommended Connection Attempt Delay. */
#define CSHS_DIAL_ATTEMPT_DELAY_MS 250
/* Addresses of a name tried, at the most (the rest are ignored). */
#define CSHS_DIAL_MAX_ADDRS 16

typedef union cshs_dial_addr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} cshs_dial_addr;

typedef struct cshs_dial {
    cshs_dial_addr addr[CSHS_DIAL_MAX_ADDRS]; /* in the order they are tried */
    unsigned naddr;
    unsigned started;    /* attempts started: addr[0 .. started) */
    unsigned inflight;   /* started and not yet ended */
    int64_t next_ms;     /* the next attempt starts then, if none ended before */
    int64_t deadline_ms; /* the whole open's */
    unsigned delay_ms;   /* the attempt delay */
    int err;             /* the last failed attempt's error (0: none failed) */
    int timed_out;       /* an attempt was given up at the deadline */
} cshs_dial;

/* Orders the addresses of `res` (getaddrinfo's list; IPv4 and IPv6 stream
 * addresses are kept, others skipped) for an open that must end by
 * now_ms + timeout_ms, `prefer` first when it is among them (NULL: none).
 * 0, or CSHS_CLIENT_E_RESOLVE when the list has no address to try. `res`
 * and `prefer` are not kept. */
int cshs__dial_init(cshs_dial *d, const struct addrinfo *res, int64_t now_ms, unsigned timeout_ms,
                    const cshs_dial_addr *prefer);

/* The address a connected socket's peer has, into *out: 0, or -errno. */
int cshs__dial_peer(int fd, cshs_dial_addr *out);

/* 1 when an attempt should start now: an address is left, and none is in
 * flight or the last one has waited its attempt delay. */
int cshs__dial_due(const cshs_dial *d, int64_t now_ms);

/* 1 when the open is over without a connection: no attempt in flight and
 * none to start (every address failed), or the deadline passed. */
int cshs__dial_over(const cshs_dial *d, int64_t now_ms);

/* The error of an open that is over: CSHS_CLIENT_E_CONNECT_TIMEOUT when
 * an attempt was still waiting at the deadline (or none was made), else
 * the last attempt's (CSHS_CLIENT_E_CONNECT for refused or unreachable, a
 * -errno otherwise). */
int cshs__dial_error(const cshs_dial *d);

/* When the caller must look again if nothing happens: the next attempt's
 * start, or the deadline, whichever comes first. */
int64_t cshs__dial_wake_ms(const cshs_dial *d);

/* Starts the next attempt: a non-blocking TCP socket (close-on-exec,
 * TCP_NODELAY, TCP_USER_TIMEOUT bounding the connect to the time left)
 * whose connect is under way, returned (the caller owns it and watches it
 * for POLLOUT, then reports its end with cshs__dial_done), with
 * *connected set when it connected at once. An address that fails at
 * once counts as a failed attempt and the next one is tried, so a
 * negative return means no attempt could start: the open is over when
 * cshs__dial_over says so. */
int cshs__dial_start(cshs_dial *d, int64_t now_ms, int *connected);

/* Reports the end of an attempt whose socket fd was writable (or in
 * error): 0 connected (the caller has its connection, and closes the other
 * attempts' sockets), or the attempt's error (the caller closes fd, and
 * the next attempt is due at once). */
int cshs__dial_done(cshs_dial *d, int fd);

/* An attempt given up before its connect ended, counted as ended with
 * `err`: CSHS_CLIENT_E_CONNECT_TIMEOUT at the deadline (or when the open
 * is cancelled), another error when it could not be watched. The caller
 * closes it. */
void cshs__dial_abandon(cshs_dial *d, int err);

/* ---- cshs_dialer: the rule driven with poll(2) ---- */

typedef struct cshs_dialer {
    cshs_dial d;
    int fd[CSHS_DIAL_MAX_ADDRS]; /* the attempts in flight: d.inflight of them */
} cshs_dialer;

/* Starts the open (cshs__dial_init, then the first attempt). 0, or an
 * error (nothing to close then). */
int cshs__dialer_init(cshs_dialer *dl, const struct addrinfo *res, int64_t now_ms,
                      unsigned timeout_ms, const cshs_dial_addr *prefer);

/* Runs the open for at most wait_ms (0: a look that never waits; -1: until
 * it is over): 1 connected (*fd is the caller's, every other attempt is
 * closed), 0 still under way (wait_ms ran out), or the open's error (every
 * attempt closed). The deadline of cshs__dialer_init holds either way. */
int cshs__dialer_run(cshs_dialer *dl, int wait_ms, int *fd);

/* Closes the attempts in flight. Safe on an ended dialer. */
void cshs__dialer_cancel(cshs_dialer *dl);

#endif
