/* sized.h: how the engine reads the caller's structs that carry their own
 * size and fills the ones it hands back (README.md, Versioning), on a
 * struct in two releases: v1, and v2 with a field appended. Every such
 * struct of the public headers goes through these functions; their own
 * tests (test_client.c, test_server.c) check the sizes they accept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp_internal/sized.h"

/* No padding at their ends, as sized.h requires. */
typedef struct v1 {
    size_t size;
    uint64_t a;
} v1;

typedef struct v2 {
    size_t size;
    uint64_t a;
    uint64_t b; /* added in v2: default 7 */
} v2;

CSH__SIZED_NO_TAIL_PADDING(v1, a);
CSH__SIZED_NO_TAIL_PADDING(v2, b);

static const v2 v2_defaults = {sizeof(v2), 1, 7};

/* v2's library fills a v1 caller's struct: v1's fields and not a byte past
 * them (the canary; alone in its allocation too, for ASan), and size says
 * what it filled. */
static void test_out_older_caller(void **state)
{
    (void)state;
    struct {
        v1 out;
        uint64_t canary;
    } *old = malloc(sizeof *old);
    assert_non_null(old);
    old->canary = 0x5eed5eed5eed5eedu;
    v2 filled = {sizeof(v2), 3, 4};
    csh__sized_out(&old->out, sizeof old->out, &filled, sizeof filled);
    assert_int_equal(old->out.size, sizeof(v1));
    assert_int_equal(old->out.a, 3);
    assert_true(old->canary == 0x5eed5eed5eed5eedu);
    free(old);
}

/* v1's library fills a v2 caller's struct: what it knows, zeros for the
 * field it does not (not what was there), and size says v1: the caller
 * sees that b was not filled (offsetof(v2, b) >= size). */
static void test_out_newer_caller(void **state)
{
    (void)state;
    v2 newer;
    memset(&newer, 0xa5, sizeof newer);
    v1 filled = {sizeof(v1), 3};
    csh__sized_out(&newer, sizeof newer, &filled, sizeof filled);
    assert_int_equal(newer.size, sizeof(v1));
    assert_int_equal(newer.a, 3);
    assert_int_equal(newer.b, 0);
    assert_true(offsetof(v2, b) >= newer.size);
}

/* v2's library reads a v1 caller's struct: the field it knew, v2's
 * default for the other, no byte past v1 read (ASan); and v1's init, as
 * v2's library runs it, writes no byte past v1. */
static void test_in_older_caller(void **state)
{
    (void)state;
    v1 *old = malloc(sizeof *old);
    assert_non_null(old);
    csh__sized_init(old, sizeof *old, &v2_defaults, sizeof v2_defaults);
    assert_int_equal(old->size, sizeof(v1));
    assert_int_equal(old->a, 1);
    old->a = 3;
    v2 got = v2_defaults;
    assert_int_equal(csh__sized_copy(&got, sizeof got, old, sizeof(v1)), 0);
    assert_int_equal(got.size, sizeof(v2));
    assert_int_equal(got.a, 3);
    assert_int_equal(got.b, 7);
    free(old);
    /* below the first release's size: refused, defaults kept */
    v2 bad = {offsetof(v2, a), 5, 5};
    got = v2_defaults;
    assert_int_equal(csh__sized_copy(&got, sizeof got, &bad, sizeof(v1)), -1);
    assert_int_equal(got.a, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_older_caller),
        cmocka_unit_test(test_out_newer_caller),
        cmocka_unit_test(test_in_older_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
