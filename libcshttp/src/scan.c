/* The scanners behind scan.h: portable SWAR and AVX2 variants. */
#include "scan.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" /
 *         "_" / "`" / "|" / "~" / DIGIT / ALPHA  (RFC 9110 §5.6.2) */
#define T1 1
const unsigned char csh__tchar[256] = {
    ['!'] = T1, ['#'] = T1, ['$'] = T1, ['%'] = T1, ['&'] = T1, ['\''] = T1, ['*'] = T1,
    ['+'] = T1, ['-'] = T1, ['.'] = T1, ['^'] = T1, ['_'] = T1, ['`'] = T1, ['|'] = T1,
    ['~'] = T1, ['0'] = T1, ['1'] = T1, ['2'] = T1, ['3'] = T1, ['4'] = T1, ['5'] = T1,
    ['6'] = T1, ['7'] = T1, ['8'] = T1, ['9'] = T1, ['A'] = T1, ['B'] = T1, ['C'] = T1,
    ['D'] = T1, ['E'] = T1, ['F'] = T1, ['G'] = T1, ['H'] = T1, ['I'] = T1, ['J'] = T1,
    ['K'] = T1, ['L'] = T1, ['M'] = T1, ['N'] = T1, ['O'] = T1, ['P'] = T1, ['Q'] = T1,
    ['R'] = T1, ['S'] = T1, ['T'] = T1, ['U'] = T1, ['V'] = T1, ['W'] = T1, ['X'] = T1,
    ['Y'] = T1, ['Z'] = T1, ['a'] = T1, ['b'] = T1, ['c'] = T1, ['d'] = T1, ['e'] = T1,
    ['f'] = T1, ['g'] = T1, ['h'] = T1, ['i'] = T1, ['j'] = T1, ['k'] = T1, ['l'] = T1,
    ['m'] = T1, ['n'] = T1, ['o'] = T1, ['p'] = T1, ['q'] = T1, ['r'] = T1, ['s'] = T1,
    ['t'] = T1, ['u'] = T1, ['v'] = T1, ['w'] = T1, ['x'] = T1, ['y'] = T1, ['z'] = T1,
};

static inline int value_byte_ok(unsigned char c)
{
    return (c >= 0x20 && c != 0x7f) || c == '\t';
}

static inline int vchar_ok(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* SWAR: flags bytes < n (n <= 128) in a little-endian word; the lowest flag is
 * exact (borrows only corrupt the bytes above the first true hit). */
static inline uint64_t bytes_below(uint64_t x, unsigned n)
{
    return (x - ONES * n) & ~x & HIGHS;
}

static inline uint64_t bytes_equal(uint64_t x, unsigned char c)
{
    uint64_t y = x ^ (ONES * c);
    return (y - ONES) & ~y & HIGHS;
}

static inline uint64_t load64(const char *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CSH_SWAR 1
#endif

const char *csh__scan_value_portable(const char *p, const char *end)
{
#ifdef CSH_SWAR
    while (end - p >= 8) {
        uint64_t x = load64(p);
        uint64_t m = bytes_below(x, 0x20) | bytes_equal(x, 0x7f);
        if (m) {
            const char *hit = p + (__builtin_ctzll(m) >> 3);
            if (*hit != '\t') return hit;
            p = hit + 1;
            continue;
        }
        p += 8;
    }
#endif
    while (p < end && value_byte_ok((unsigned char)*p)) p++;
    return p;
}

const char *csh__scan_vchar_portable(const char *p, const char *end)
{
#ifdef CSH_SWAR
    while (end - p >= 8) {
        uint64_t x = load64(p);
        /* <= 0x20, or >= 0x7f (0x7f itself, or the high bit set) */
        uint64_t m = bytes_below(x, 0x21) | bytes_equal(x, 0x7f) | (x & HIGHS);
        if (m) return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
#endif
    while (p < end && vchar_ok((unsigned char)*p)) p++;
    return p;
}

#ifdef CSH_HAVE_AVX2
__attribute__((target("avx2"))) const char *csh__scan_value_avx2(const char *p, const char *end)
{
    const __m256i c1f = _mm256_set1_epi8(0x1f), tab = _mm256_set1_epi8('\t'),
                  del = _mm256_set1_epi8(0x7f);
    while (end - p >= 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i ctl = _mm256_cmpeq_epi8(_mm256_max_epu8(v, c1f), c1f);
        ctl = _mm256_andnot_si256(_mm256_cmpeq_epi8(v, tab), ctl);
        __m256i bad = _mm256_or_si256(ctl, _mm256_cmpeq_epi8(v, del));
        unsigned m = (unsigned)_mm256_movemask_epi8(bad);
        if (m) return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i c = _mm_set1_epi8(0x1f);
        __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, c), c);
        ctl = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')), ctl);
        __m128i bad = _mm_or_si128(ctl, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    return csh__scan_value_portable(p, end);
}

/* tchar test with two table lookups: the low nibble selects which high
 * nibbles (0..7) make a tchar; bytes >= 0x80 have no bit. */
__attribute__((target("avx2"))) const char *csh__scan_token_avx2(const char *p, const char *end)
{
    const __m128i by_low = _mm_setr_epi8((char)0xe8, (char)0xfc, (char)0xf8, (char)0xfc, (char)0xfc,
                                         (char)0xfc, (char)0xfc, (char)0xfc, (char)0xf8, (char)0xf8,
                                         (char)0xf4, 0x54, (char)0xd0, 0x54, (char)0xf4, 0x70);
    const __m128i bit_of_high = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)0x80, 0, 0, 0, 0, 0, 0,
                                              0, 0);
    const __m128i nib = _mm_set1_epi8(0x0f);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i lo = _mm_shuffle_epi8(by_low, _mm_and_si128(v, nib));
        __m128i hi = _mm_shuffle_epi8(bit_of_high, _mm_and_si128(_mm_srli_epi16(v, 4), nib));
        __m128i bad = _mm_cmpeq_epi8(_mm_and_si128(lo, hi), _mm_setzero_si128());
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    return csh__scan_token(p, end);
}

__attribute__((target("avx2"))) const char *csh__scan_vchar_avx2(const char *p, const char *end)
{
    const __m256i sp = _mm256_set1_epi8(0x20), del = _mm256_set1_epi8(0x7f);
    while (end - p >= 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i low = _mm256_cmpeq_epi8(_mm256_max_epu8(v, sp), sp);   /* v <= 0x20 */
        __m256i high = _mm256_cmpeq_epi8(_mm256_min_epu8(v, del), del); /* v >= 0x7f */
        unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(low, high));
        if (m) return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i s = _mm_set1_epi8(0x20), d = _mm_set1_epi8(0x7f);
        __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(v, s), s);
        __m128i high = _mm_cmpeq_epi8(_mm_min_epu8(v, d), d);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(low, high));
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    return csh__scan_vchar_portable(p, end);
}

int csh__simd_available(void)
{
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
int csh__simd_available(void)
{
    return 0;
}
#endif
