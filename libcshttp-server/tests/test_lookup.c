/* lookup.c (private): a name looked up on a thread of its own, its end
 * told through a descriptor, and an owner that lets go without waiting.
 * Names come from the test resolver (tests/support/test_resolver.c),
 * whose "wait:MS" makes a look-up as slow as a late DNS server. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include <netinet/in.h>

#include <cshttp/server/client.h>

#include "lookup.h"

/* Waits up to ms for fd to be readable: 1 readable, 0 not. */
static int readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1;
}

/* A name's addresses, in the resolver's order, told through an eventfd. */
static void test_lookup_tells_its_end(void **state)
{
    (void)state;
    setenv("CSHTTP_TEST_HOSTS", "two.test=127.0.0.2,::1", 1);
    int efd = eventfd(0, EFD_CLOEXEC);
    assert_true(efd >= 0);
    cshs_lookup *l = cshs__lookup_start("two.test", "8080", dup(efd));
    assert_non_null(l);
    assert_true(readable(efd, 10000));
    struct addrinfo *res = NULL;
    int err = 1;
    assert_int_equal(cshs__lookup_done(l, &res, &err), 1);
    assert_int_equal(err, 0);
    assert_non_null(res);
    assert_int_equal(res->ai_family, AF_INET);
    const struct sockaddr_in *in = (const struct sockaddr_in *)res->ai_addr;
    assert_int_equal(ntohs(in->sin_port), 8080);
    assert_int_equal(ntohl(in->sin_addr.s_addr), 0x7f000002);
    assert_non_null(res->ai_next);
    assert_int_equal(res->ai_next->ai_family, AF_INET6);
    /* taken once: a second look gives no list */
    struct addrinfo *again = (struct addrinfo *)1;
    assert_int_equal(cshs__lookup_done(l, &again, &err), 1);
    assert_null(again);
    freeaddrinfo(res);
    cshs__lookup_release(l);
    close(efd);
}

/* A name that does not resolve: CSHS_CLIENT_E_RESOLVE, no list. */
static void test_lookup_fails(void **state)
{
    (void)state;
    setenv("CSHTTP_TEST_HOSTS", "none.test=", 1);
    cshs_lookup *l = cshs__lookup_start("none.test", "80", -1);
    assert_non_null(l);
    struct addrinfo *res = (struct addrinfo *)1;
    int err = 0;
    for (int i = 0; i < 10000 && !cshs__lookup_done(l, &res, &err); i++) usleep(1000);
    assert_int_equal(err, CSHS_CLIENT_E_RESOLVE);
    assert_null(res);
    cshs__lookup_release(l);
}

/* The owner lets go while the look-up still runs (a DNS server that
 * answers in 1.5 s): release returns before the look-up ends (its
 * descriptor is not yet written), and the look-up ends by itself later,
 * freeing what it holds (the sanitizers see to that). */
static void test_release_never_waits(void **state)
{
    (void)state;
    setenv("CSHTTP_TEST_HOSTS", "late.test=wait:1500,127.0.0.1", 1);
    int efd = eventfd(0, EFD_CLOEXEC);
    assert_true(efd >= 0);
    cshs_lookup *l = cshs__lookup_start("late.test", "80", dup(efd));
    assert_non_null(l);
    struct addrinfo *res = NULL;
    int err = 0;
    assert_int_equal(cshs__lookup_done(l, &res, &err), 0);
    cshs__lookup_release(l);
    assert_false(readable(efd, 0)); /* still looking up after release returned */
    assert_true(readable(efd, 20000));
    close(efd);
    usleep(100000); /* the thread's last steps after its write: its free */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_tells_its_end),
        cmocka_unit_test(test_lookup_fails),
        cmocka_unit_test(test_release_never_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
