/* A latency histogram with logarithmic buckets (HdrHistogram's layout, kept
 * small): values below 128 ns have a bucket each; above, every power of two
 * is split into 64 buckets, so a value is known to within 1/64 (1.6%) of
 * itself. It covers 0 to 2^40 ns (18 minutes); larger values land in the
 * last bucket. The exact minimum, maximum and sum are kept beside it.
 *
 * Ownership: a caller-owned struct (about 22 KiB); no allocation. One thread
 * at a time: each load thread records into its own, merged after the run. */
#ifndef CSHTTP_LOAD_HISTOGRAM_H
#define CSHTTP_LOAD_HISTOGRAM_H

#include <stdint.h>

#define LOAD_HIST_SUB_BITS 6  /* 64 sub-buckets per octave */
#define LOAD_HIST_MAX_BITS 40 /* 2^40 ns */
#define LOAD_HIST_BUCKETS ((LOAD_HIST_MAX_BITS - LOAD_HIST_SUB_BITS + 1) << LOAD_HIST_SUB_BITS)

typedef struct load_histogram {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t min_ns;
    uint64_t max_ns;
    uint64_t buckets[LOAD_HIST_BUCKETS];
} load_histogram;

void load_histogram_init(load_histogram *h);
void load_histogram_record(load_histogram *h, uint64_t ns);
/* Adds every value recorded in `from` to `into`. */
void load_histogram_merge(load_histogram *into, const load_histogram *from);
/* The value at quantile q (0 < q <= 1): the upper end of the bucket holding
 * the ceil(q * count)-th smallest value, never above the exact maximum. 0 when
 * nothing was recorded. */
uint64_t load_histogram_quantile(const load_histogram *h, double q);

/* Private, for tests: the bucket of a value and the largest value it holds. */
unsigned load_histogram_bucket_(uint64_t ns);
uint64_t load_histogram_bucket_top_(unsigned bucket);

#endif
