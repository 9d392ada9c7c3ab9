/* The latency histogram: bucket layout, quantiles, merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "histogram.h"

/* Every value lands in a bucket whose range holds it, and that range is
 * within 1/64 of the value: the promised relative error. */
static void test_buckets_hold_their_values(void **state)
{
    (void)state;
    uint64_t v = 0;
    while (v < ((uint64_t)1 << 40)) {
        unsigned b = load_histogram_bucket_(v);
        assert_true(b < LOAD_HIST_BUCKETS);
        uint64_t top = load_histogram_bucket_top_(b);
        assert_true(top >= v);
        assert_true((double)(top - v) <= (double)v / 64.0);
        if (b > 0) assert_true(load_histogram_bucket_top_(b - 1) < v);
        v = v < 1000 ? v + 1 : v + v / 37 + 1;
    }
    /* values past the range go to the last bucket, not past the array */
    assert_int_equal(load_histogram_bucket_(UINT64_MAX), LOAD_HIST_BUCKETS - 1);
}

static void test_small_values_are_exact(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < 128; v++)
        assert_int_equal(load_histogram_bucket_top_(load_histogram_bucket_(v)), v);
}

static void test_quantiles_of_a_uniform_run(void **state)
{
    (void)state;
    load_histogram *h = malloc(sizeof *h);
    load_histogram_init(h);
    assert_int_equal(load_histogram_quantile(h, 0.5), 0);                      /* empty */
    for (uint64_t i = 1; i <= 100000; i++) load_histogram_record(h, i * 1000); /* 1 us .. 100 ms */
    assert_int_equal(h->count, 100000);
    assert_int_equal(h->min_ns, 1000);
    assert_int_equal(h->max_ns, 100000000);
    double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < 4; i++) {
        double want = qs[i] * 100000 * 1000;
        double got = (double)load_histogram_quantile(h, qs[i]);
        assert_true(got >= want);
        assert_true(got <= want * (1 + 1.0 / 64));
    }
    assert_int_equal(load_histogram_quantile(h, 1.0), 100000000); /* the exact maximum */
    free(h);
}

/* One slow response among many fast ones shows at p99.9 only if it is in
 * the top 0.1%. */
static void test_tail(void **state)
{
    (void)state;
    load_histogram *h = malloc(sizeof *h);
    load_histogram_init(h);
    for (int i = 0; i < 999; i++) load_histogram_record(h, 50000);
    load_histogram_record(h, 7000000);
    assert_true(load_histogram_quantile(h, 0.99) < 51000);
    assert_true(load_histogram_quantile(h, 0.999) < 51000);
    assert_int_equal(load_histogram_quantile(h, 1.0), 7000000);
    load_histogram_record(h, 7000000);
    assert_true(load_histogram_quantile(h, 0.999) >= 7000000);
    free(h);
}

static void test_merge(void **state)
{
    (void)state;
    load_histogram *a = malloc(sizeof *a), *b = malloc(sizeof *b), *all = malloc(sizeof *all);
    load_histogram_init(a);
    load_histogram_init(b);
    load_histogram_init(all);
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t v = (i * 7919) % 200000 + 10;
        load_histogram_record(i % 2 ? a : b, v);
        load_histogram_record(all, v);
    }
    load_histogram *empty = malloc(sizeof *empty);
    load_histogram_init(empty);
    load_histogram_merge(a, empty); /* merging nothing changes nothing */
    load_histogram_merge(a, b);
    assert_int_equal(a->count, all->count);
    assert_int_equal(a->sum_ns, all->sum_ns);
    assert_int_equal(a->min_ns, all->min_ns);
    assert_int_equal(a->max_ns, all->max_ns);
    for (double q = 0.01; q <= 1.0; q += 0.01)
        assert_int_equal(load_histogram_quantile(a, q), load_histogram_quantile(all, q));
    free(a);
    free(b);
    free(all);
    free(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets_hold_their_values),
        cmocka_unit_test(test_small_values_are_exact),
        cmocka_unit_test(test_quantiles_of_a_uniform_run),
        cmocka_unit_test(test_tail),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
