/* cshw_arena: growth, alignment, large blocks, cleanups, reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"

static void test_alloc_alignment_and_growth(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(256);
    assert_non_null(a);
    char *prev = NULL;
    for (int i = 1; i < 2000; i++) {
        char *p = cshw_arena_alloc(a, (size_t)(i % 61) + 1);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
        memset(p, 0xab, (size_t)(i % 61) + 1); /* ASan: every byte is ours */
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    assert_true(cshw_arena_used(a) > 2000);
    cshw_arena_free(a);
}

static void test_large_allocation_and_zero(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(128);
    char *small = cshw_arena_alloc(a, 8);
    char *big = cshw_arena_alloc(a, 100000);
    assert_non_null(small);
    assert_non_null(big);
    memset(big, 1, 100000);
    char *small2 = cshw_arena_alloc(a, 8);
    assert_non_null(small2);
    assert_null(cshw_arena_alloc(a, 0));
    assert_null(cshw_arena_alloc(a, SIZE_MAX));
    unsigned char *z = cshw_arena_calloc(a, 64);
    for (int i = 0; i < 64; i++) assert_int_equal(z[i], 0);
    cshw_arena_reset(a);
    assert_int_equal(cshw_arena_used(a), 0);
    /* a large block after reset, then free: no leak (ASan) */
    assert_non_null(cshw_arena_alloc(a, 50000));
    cshw_arena_free(a);
}

static void test_strings(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(0);
    char *s = cshw_arena_strndup(a, "ab\0cd", 5);
    assert_memory_equal(s, "ab\0cd", 6);
    assert_string_equal(cshw_arena_strdup(a, "hello"), "hello");
    assert_string_equal(cshw_arena_printf(a, "%d-%s", 42, "x"), "42-x");
    char *big = cshw_arena_printf(a, "%09000d", 7);
    assert_int_equal(strlen(big), 9000);
    cshw_arena_free(a);
}

static int order[8];
static int norder;
static void record(void *data)
{
    order[norder++] = (int)(intptr_t)data;
}

static void test_cleanups_run_last_first_on_reset_and_free(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(0);
    norder = 0;
    assert_int_equal(cshw_arena_on_cleanup(a, record, (void *)1), 0);
    assert_int_equal(cshw_arena_on_cleanup(a, record, (void *)2), 0);
    cshw_arena_reset(a);
    assert_int_equal(norder, 2);
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 1);
    /* reset cleared them: a second reset runs nothing */
    cshw_arena_reset(a);
    assert_int_equal(norder, 2);
    assert_int_equal(cshw_arena_on_cleanup(a, record, (void *)3), 0);
    cshw_arena_free(a);
    assert_int_equal(norder, 3);
    assert_int_equal(order[2], 3);
    cshw_arena_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_alignment_and_growth),
        cmocka_unit_test(test_large_allocation_and_zero),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_cleanups_run_last_first_on_reset_and_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
