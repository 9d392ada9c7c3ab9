/* sized.h: how the toolkit reads and fills the caller's structs that carry
 * their own size (README.md, Versioning), on a struct in two releases: v1,
 * and v2 with a field appended. Each struct of the public headers goes
 * through these three functions; their own tests check the sizes they
 * accept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp_internal/sized.h"

/* No padding at their ends, as sized.h requires of every such struct
 * (with `int a` alone, v2's b would lie in v1's tail padding, and be read
 * from there). */
typedef struct v1 {
    size_t size;
    size_t a;
} v1;

typedef struct v2 {
    size_t size;
    size_t a;
    size_t b; /* added in v2: default 7 */
} v2;

CSH__SIZED_NO_TAIL_PADDING(v1, a);
CSH__SIZED_NO_TAIL_PADDING(v2, b);

static const v2 v2_defaults = {sizeof(v2), 1, 7};

/* An init of v2's library called by a caller built with v1: it writes v1's
 * bytes and no more (alone in its allocation, ASan sees a write past
 * them), and size says v1. */
static void test_init_older_caller(void **state)
{
    (void)state;
    v1 *old = malloc(sizeof *old);
    assert_non_null(old);
    csh__sized_init(old, sizeof *old, &v2_defaults, sizeof v2_defaults);
    assert_int_equal(old->size, sizeof(v1));
    assert_int_equal(old->a, 1);
    free(old);
}

/* An init of v1's library called by a caller built with v2: v1's defaults,
 * zeros for the field v1 does not know (not what was there), size says
 * v2. */
static void test_init_newer_caller(void **state)
{
    (void)state;
    static const v1 v1_defaults = {sizeof(v1), 1};
    v2 newer;
    memset(&newer, 0xa5, sizeof newer);
    csh__sized_init(&newer, sizeof newer, &v1_defaults, sizeof v1_defaults);
    assert_int_equal(newer.size, sizeof(v2));
    assert_int_equal(newer.a, 1);
    assert_int_equal(newer.b, 0);
}

/* v2's library reads a v1 caller's struct: the field it knew, v2's
 * default for the other, and no byte past v1 read (ASan). */
static void test_copy_older_caller(void **state)
{
    (void)state;
    v1 *old = malloc(sizeof *old);
    assert_non_null(old);
    old->size = sizeof *old;
    old->a = 3;
    v2 got = v2_defaults;
    assert_int_equal(csh__sized_copy(&got, sizeof got, old, sizeof(v1)), 0);
    assert_int_equal(got.size, sizeof(v2));
    assert_int_equal(got.a, 3);
    assert_int_equal(got.b, 7);
    free(old);
}

/* v1's library reads a v2 caller's struct: what it knows, nothing past
 * its own struct written (the canary after it). */
static void test_copy_newer_caller(void **state)
{
    (void)state;
    v2 newer = {sizeof(v2), 4, 9};
    struct {
        v1 got;
        uint64_t canary;
    } out = {{sizeof(v1), 1}, 0x5eed5eed5eed5eedu};
    assert_int_equal(csh__sized_copy(&out.got, sizeof out.got, &newer, sizeof(v1)), 0);
    assert_int_equal(out.got.size, sizeof(v1));
    assert_int_equal(out.got.a, 4);
    assert_true(out.canary == 0x5eed5eed5eed5eedu);
}

/* A size below the first release's is refused, and dst keeps its
 * defaults. */
static void test_copy_too_small(void **state)
{
    (void)state;
    v2 bad = {offsetof(v2, a), 5, 5};
    v2 got = v2_defaults;
    assert_int_equal(csh__sized_copy(&got, sizeof got, &bad, sizeof(v1)), -1);
    assert_int_equal(got.a, 1);
    bad.size = 0;
    assert_int_equal(csh__sized_copy(&got, sizeof got, &bad, sizeof(v1)), -1);
    assert_int_equal(got.size, sizeof(v2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_older_caller), cmocka_unit_test(test_init_newer_caller),
        cmocka_unit_test(test_copy_older_caller), cmocka_unit_test(test_copy_newer_caller),
        cmocka_unit_test(test_copy_too_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
