#include "histogram.h"

#include <math.h>
#include <string.h>

void load_histogram_init(load_histogram *h)
{
    memset(h, 0, sizeof *h);
}

/* Bucket layout: values 0..127 map to themselves. A value with its highest
 * set bit at position b >= 7 keeps its top 7 bits (the leading 1 and 6 more),
 * so octave b has 64 buckets starting at 64 * (b - 5). */
unsigned load_histogram_bucket_(uint64_t ns)
{
    if (ns < (1u << (LOAD_HIST_SUB_BITS + 1))) return (unsigned)ns;
    unsigned b = 63u - (unsigned)__builtin_clzll(ns);
    if (b >= LOAD_HIST_MAX_BITS) return LOAD_HIST_BUCKETS - 1;
    unsigned shift = b - LOAD_HIST_SUB_BITS;
    unsigned sub = (unsigned)(ns >> shift) & ((1u << LOAD_HIST_SUB_BITS) - 1);
    return ((b - LOAD_HIST_SUB_BITS + 1) << LOAD_HIST_SUB_BITS) + sub;
}

uint64_t load_histogram_bucket_top_(unsigned bucket)
{
    if (bucket < (1u << (LOAD_HIST_SUB_BITS + 1))) return bucket;
    unsigned octave = (bucket >> LOAD_HIST_SUB_BITS) - 1; /* b - 6 */
    unsigned sub = bucket & ((1u << LOAD_HIST_SUB_BITS) - 1);
    uint64_t low = ((uint64_t)(sub | (1u << LOAD_HIST_SUB_BITS))) << octave;
    return low + (((uint64_t)1 << octave) - 1);
}

void load_histogram_record(load_histogram *h, uint64_t ns)
{
    h->buckets[load_histogram_bucket_(ns)]++;
    if (h->count == 0 || ns < h->min_ns) h->min_ns = ns;
    if (ns > h->max_ns) h->max_ns = ns;
    h->count++;
    h->sum_ns += ns;
}

void load_histogram_merge(load_histogram *into, const load_histogram *from)
{
    if (from->count == 0) return;
    for (unsigned i = 0; i < LOAD_HIST_BUCKETS; i++) into->buckets[i] += from->buckets[i];
    if (into->count == 0 || from->min_ns < into->min_ns) into->min_ns = from->min_ns;
    if (from->max_ns > into->max_ns) into->max_ns = from->max_ns;
    into->count += from->count;
    into->sum_ns += from->sum_ns;
}

uint64_t load_histogram_quantile(const load_histogram *h, double q)
{
    if (h->count == 0) return 0;
    double want = ceil(q * (double)h->count);
    uint64_t rank = want < 1 ? 1 : (uint64_t)want;
    if (rank > h->count) rank = h->count;
    uint64_t seen = 0;
    for (unsigned i = 0; i < LOAD_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t top = load_histogram_bucket_top_(i);
            return top < h->max_ns ? top : h->max_ns;
        }
    }
    return h->max_ns;
}
