/* dial.c: the order a name's addresses are tried in (RFC 8305 §4), and
 * the connect across them (§5) against real loopback sockets: refused
 * addresses skipped at once, one that never answers left racing while
 * the next one starts, the whole open within one deadline. The attempt
 * delay is driven by setting the next attempt's start, not by sleeping:
 * no pass/fail depends on how fast the machine is. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <cshttp/server/client.h>

#include "dial.h"

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- address lists, as getaddrinfo gives them ---- */

typedef struct fake_ai {
    struct addrinfo ai;
    union {
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
    } a;
} fake_ai;

/* Node i of `nodes` as `spec` says: "4:127.0.0.1:80" or "6:::1:80"; the
 * nodes are chained in array order. */
static void make_list(fake_ai *nodes, const char *const *specs, size_t n)
{
    memset(nodes, 0, n * sizeof *nodes);
    for (size_t i = 0; i < n; i++) {
        fake_ai *f = &nodes[i];
        char host[64];
        unsigned port = 0;
        const char *s = specs[i];
        int v6 = s[0] == '6';
        const char *last = strrchr(s, ':');
        size_t hl = (size_t)(last - (s + 2));
        memcpy(host, s + 2, hl);
        host[hl] = 0;
        port = (unsigned)atoi(last + 1);
        f->ai.ai_socktype = SOCK_STREAM;
        if (v6) {
            f->a.in6.sin6_family = AF_INET6;
            f->a.in6.sin6_port = htons((uint16_t)port);
            assert_int_equal(inet_pton(AF_INET6, host, &f->a.in6.sin6_addr), 1);
            f->ai.ai_family = AF_INET6;
            f->ai.ai_addrlen = sizeof f->a.in6;
        } else {
            f->a.in.sin_family = AF_INET;
            f->a.in.sin_port = htons((uint16_t)port);
            assert_int_equal(inet_pton(AF_INET, host, &f->a.in.sin_addr), 1);
            f->ai.ai_family = AF_INET;
            f->ai.ai_addrlen = sizeof f->a.in;
        }
        f->ai.ai_addr = (struct sockaddr *)&f->a;
        f->ai.ai_next = i + 1 < n ? &nodes[i + 1].ai : NULL;
    }
}

/* "4:127.0.0.1:80" for address i of the dial. */
static const char *spec_of(const cshs_dial *d, unsigned i, char *buf, size_t cap)
{
    char host[64];
    const cshs_dial_addr *a = &d->addr[i];
    if (a->sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->in6.sin6_addr, host, sizeof host);
        snprintf(buf, cap, "6:%s:%u", host, ntohs(a->in6.sin6_port));
    } else {
        inet_ntop(AF_INET, &a->in.sin_addr, host, sizeof host);
        snprintf(buf, cap, "4:%s:%u", host, ntohs(a->in.sin_port));
    }
    return buf;
}

/* The order the dial tries `given` in, `prefer` first (NULL: none). */
static void assert_order_preferring(const char *const *given, size_t n, const char *prefer,
                                    const char *const *want, size_t nw)
{
    fake_ai nodes[24], pref;
    make_list(nodes, given, n);
    if (prefer) make_list(&pref, &prefer, 1);
    cshs_dial d;
    assert_int_equal(cshs__dial_init(&d, &nodes[0].ai, 0, 1000,
                                     prefer ? (const cshs_dial_addr *)(void *)&pref.a : NULL),
                     0);
    assert_int_equal(d.naddr, nw);
    char buf[80];
    for (size_t i = 0; i < nw; i++)
        assert_string_equal(spec_of(&d, (unsigned)i, buf, sizeof buf), want[i]);
}

static void assert_order(const char *const *given, size_t n, const char *const *want, size_t nw)
{
    assert_order_preferring(given, n, NULL, want, nw);
}

/* RFC 8305 §4: the sorted list is kept within each family, and the
 * families alternate from the first address's family on. */
static void test_order(void **state)
{
    (void)state;
    const char *v6first[] = {"6:::1:80", "6:::2:80", "6:::3:80", "4:127.0.0.1:80",
                             "4:127.0.0.2:80"};
    const char *v6want[] = {"6:::1:80", "4:127.0.0.1:80", "6:::2:80", "4:127.0.0.2:80", "6:::3:80"};
    assert_order(v6first, 5, v6want, 5);
    const char *v4first[] = {"4:127.0.0.1:80", "6:::1:80", "4:127.0.0.2:80", "4:127.0.0.3:80"};
    const char *v4want[] = {"4:127.0.0.1:80", "6:::1:80", "4:127.0.0.2:80", "4:127.0.0.3:80"};
    assert_order(v4first, 4, v4want, 4);
    const char *one[] = {"4:127.0.0.1:8080"};
    assert_order(one, 1, one, 1);
    /* at most CSHS_DIAL_MAX_ADDRS, the first ones */
    char specs[20][32];
    const char *many[20];
    for (int i = 0; i < 20; i++) {
        snprintf(specs[i], sizeof specs[i], "4:127.0.0.%d:80", i + 1);
        many[i] = specs[i];
    }
    assert_order(many, 20, many, CSHS_DIAL_MAX_ADDRS);

    /* the address the last open connected to goes first, the others in
     * their order; one that is not in the list changes nothing */
    const char *prefwant[] = {"4:127.0.0.2:80", "6:::1:80", "4:127.0.0.1:80", "6:::2:80",
                              "6:::3:80"};
    assert_order_preferring(v6first, 5, "4:127.0.0.2:80", prefwant, 5);
    assert_order_preferring(v6first, 5, "6:::1:80", v6want, 5);
    assert_order_preferring(v6first, 5, "4:127.0.0.2:81", v6want, 5);
    assert_order_preferring(v6first, 5, "6:::9:80", v6want, 5);

    /* what is not a TCP address is skipped; nothing left: a resolve error */
    fake_ai nodes[2];
    const char *two[] = {"4:127.0.0.1:80", "6:::1:80"};
    make_list(nodes, two, 2);
    nodes[0].ai.ai_socktype = SOCK_DGRAM;
    nodes[1].ai.ai_family = AF_UNIX;
    cshs_dial d;
    assert_int_equal(cshs__dial_init(&d, &nodes[0].ai, 0, 1000, NULL), CSHS_CLIENT_E_RESOLVE);
    assert_int_equal(cshs__dial_init(&d, NULL, 0, 1000, NULL), CSHS_CLIENT_E_RESOLVE);
}

/* ---- real sockets ---- */

static int listener(const char *ip, int backlog, unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, backlog), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

/* An address that never answers: a listener whose accept queue is full
 * (one connection parked in a queue of one) drops further SYNs. */
typedef struct hole {
    int lfd, parked;
    unsigned port;
} hole;

static void hole_open(hole *h)
{
    h->lfd = listener("127.0.0.1", 0, &h->port);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)h->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->parked = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(h->parked, (struct sockaddr *)&a, sizeof a), 0);
}

static void hole_close(hole *h)
{
    close(h->parked);
    close(h->lfd);
}

static unsigned dead_port(void)
{
    unsigned port;
    int fd = listener("127.0.0.1", 1, &port);
    close(fd);
    return port;
}

static unsigned peer_port(int fd)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    assert_int_equal(getpeername(fd, (struct sockaddr *)&a, &l), 0);
    return ntohs(a.sin_port);
}

/* A dialer for two addresses, "6:::1" or "4:127.0.0.1" with their ports. */
static void dialer_on(cshs_dialer *dl, const char *a1, unsigned p1, const char *a2, unsigned p2,
                      unsigned timeout_ms)
{
    char s1[40], s2[40];
    snprintf(s1, sizeof s1, "%s:%u", a1, p1);
    snprintf(s2, sizeof s2, "%s:%u", a2, p2);
    const char *specs[] = {s1, s2};
    fake_ai nodes[2];
    make_list(nodes, specs, 2);
    assert_int_equal(cshs__dialer_init(dl, &nodes[0].ai, mono_ms(), timeout_ms, NULL), 0);
}

/* ::1 refused (nothing listens there), then 127.0.0.1: connected to the
 * second at once, the refusal counted. The `localhost` of a Debian host in
 * front of an application bound to 127.0.0.1. */
static void test_refused_then_listening(void **state)
{
    (void)state;
    unsigned port;
    int lfd = listener("127.0.0.1", 8, &port);
    cshs_dialer dl;
    dialer_on(&dl, "6:::1", port, "4:127.0.0.1", port, 5000);
    int fd = -1;
    assert_int_equal(cshs__dialer_run(&dl, -1, &fd), 1);
    assert_int_equal(peer_port(fd), port);
    assert_int_equal(dl.d.started, 2);
    assert_int_equal(dl.d.inflight, 0);
    assert_int_equal(dl.d.err, CSHS_CLIENT_E_CONNECT);
    close(fd);
    close(lfd);
}

/* Every address refused: CSHS_CLIENT_E_CONNECT once both were tried. */
static void test_all_refused(void **state)
{
    (void)state;
    unsigned port = dead_port();
    cshs_dialer dl;
    dialer_on(&dl, "6:::1", port, "4:127.0.0.1", port, 5000);
    int fd = -1;
    assert_int_equal(cshs__dialer_run(&dl, -1, &fd), CSHS_CLIENT_E_CONNECT);
    assert_int_equal(fd, -1);
    assert_int_equal(dl.d.started, 2);
    assert_int_equal(dl.d.inflight, 0);
}

/* An address that never answers: the next one starts after the attempt
 * delay (not before), and the first keeps racing beside it. Here the
 * second is refused, and the first then connects once its listener makes
 * room: it was still racing. */
static void test_silent_address_keeps_racing(void **state)
{
    (void)state;
    hole h;
    hole_open(&h);
    unsigned dead = dead_port();
    cshs_dialer dl;
    dialer_on(&dl, "4:127.0.0.1", h.port, "4:127.0.0.1", dead, 30000);
    dl.d.delay_ms = 3600 * 1000; /* no second attempt until told */
    int fd = -1;
    assert_int_equal(cshs__dialer_run(&dl, 0, &fd), 0); /* never waits */
    assert_int_equal(dl.d.started, 1);
    assert_int_equal(cshs__dialer_run(&dl, 50, &fd), 0);
    assert_int_equal(dl.d.started, 1); /* the delay holds it back */
    dl.d.next_ms = 0;                  /* the delay has passed */
    assert_int_equal(cshs__dialer_run(&dl, 0, &fd), 0);
    assert_int_equal(dl.d.started, 2);
    /* the second is refused; the first goes on */
    int64_t end = mono_ms() + 10000;
    while (dl.d.inflight > 1 && mono_ms() < end)
        assert_int_equal(cshs__dialer_run(&dl, 20, &fd), 0);
    assert_int_equal(dl.d.inflight, 1);
    assert_int_equal(dl.d.err, CSHS_CLIENT_E_CONNECT);
    /* room in the queue: the first attempt's SYN, sent again, is answered */
    close(h.parked);
    int a = accept(h.lfd, NULL, NULL);
    assert_true(a >= 0);
    assert_int_equal(cshs__dialer_run(&dl, -1, &fd), 1);
    assert_int_equal(peer_port(fd), h.port);
    close(fd);
    close(a);
    close(h.lfd);
}

/* An address that never answers, then one that does: connected to the
 * second, and the first attempt closed. */
static void test_silent_then_listening(void **state)
{
    (void)state;
    hole h;
    hole_open(&h);
    unsigned port;
    int lfd = listener("127.0.0.1", 8, &port);
    cshs_dialer dl;
    dialer_on(&dl, "4:127.0.0.1", h.port, "4:127.0.0.1", port, 30000);
    int fd = -1;
    assert_int_equal(cshs__dialer_run(&dl, -1, &fd), 1);
    assert_int_equal(peer_port(fd), port);
    assert_int_equal(dl.d.started, 2);
    assert_int_equal(dl.d.inflight, 0);
    close(fd);
    close(lfd);
    hole_close(&h);
}

/* Nothing answers within the open's deadline: a connect timeout, and
 * every attempt given up. */
static void test_deadline(void **state)
{
    (void)state;
    hole h1, h2;
    hole_open(&h1);
    hole_open(&h2);
    cshs_dialer dl;
    dialer_on(&dl, "4:127.0.0.1", h1.port, "4:127.0.0.1", h2.port, 100);
    int fd = -1;
    assert_int_equal(cshs__dialer_run(&dl, -1, &fd), CSHS_CLIENT_E_CONNECT_TIMEOUT);
    assert_int_equal(dl.d.inflight, 0);
    assert_true(dl.d.started >= 1);
    hole_close(&h1);
    hole_close(&h2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_refused_then_listening),
        cmocka_unit_test(test_all_refused),
        cmocka_unit_test(test_silent_address_keeps_racing),
        cmocka_unit_test(test_silent_then_listening),
        cmocka_unit_test(test_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
