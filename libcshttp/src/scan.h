/* Byte-class scanners shared by the parsers: each returns the first byte in
 * [p, end) that does not belong to a class, or `end`.
 *
 * Two families give the same answers: portable ones (SWAR on 64-bit words,
 * then a table) and AVX2 ones. The AVX2 ones are inline functions with the
 * target attribute, so that the head parser, compiled a second time for AVX2
 * (head_impl.h), inlines them with their constants hoisted; which copy runs
 * is decided at run time (csh__simd_available, CSH_PARSE_NO_SIMD). */
#ifndef CSH_SRC_SCAN_H
#define CSH_SRC_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Character classes (RFC 9110 §5.6.2 tchar). A constant table, not mutable
 * state. */
extern const unsigned char csh__tchar[256];

static inline int csh__is_tchar(unsigned char c)
{
    return csh__tchar[c];
}

/* 1 when the AVX2 scanners may be used on this CPU. */
int csh__simd_available(void);

/* First byte that is not a tchar: ends a method or a field name. */
static inline const char *csh__scan_token(const char *p, const char *end)
{
    while (p < end && csh__tchar[(unsigned char)*p]) p++;
    return p;
}

/* csh__scan_value_*: the first byte that cannot appear in a field value, a
 * reason phrase or the text of a line: a control other than HTAB (CR and LF
 * included), or DEL.
 * csh__scan_vchar_*: the first byte outside VCHAR (0x21..0x7E), which ends a
 * request-target. */
static inline int csh__value_byte_ok(unsigned char c)
{
    return (c >= 0x20 && c != 0x7f) || c == '\t';
}

static inline int csh__vchar_ok(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

#define CSH__ONES 0x0101010101010101ull
#define CSH__HIGHS 0x8080808080808080ull

/* SWAR: flags bytes < n (n <= 128) in a little-endian word; the lowest flag is
 * exact (borrows only corrupt the bytes above the first true hit). */
static inline uint64_t csh__bytes_below(uint64_t x, unsigned n)
{
    return (x - CSH__ONES * n) & ~x & CSH__HIGHS;
}

static inline uint64_t csh__bytes_equal(uint64_t x, unsigned char c)
{
    uint64_t y = x ^ (CSH__ONES * c);
    return (y - CSH__ONES) & ~y & CSH__HIGHS;
}

static inline uint64_t csh__load64(const char *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CSH_SWAR 1
#endif

static inline const char *csh__scan_value_portable(const char *p, const char *end)
{
#ifdef CSH_SWAR
    while (end - p >= 8) {
        uint64_t x = csh__load64(p);
        uint64_t m = csh__bytes_below(x, 0x20) | csh__bytes_equal(x, 0x7f);
        if (m) {
            const char *hit = p + (__builtin_ctzll(m) >> 3);
            if (*hit != '\t') return hit;
            p = hit + 1;
            continue;
        }
        p += 8;
    }
#endif
    while (p < end && csh__value_byte_ok((unsigned char)*p)) p++;
    return p;
}

static inline const char *csh__scan_vchar_portable(const char *p, const char *end)
{
#ifdef CSH_SWAR
    while (end - p >= 8) {
        uint64_t x = csh__load64(p);
        /* <= 0x20, or >= 0x7f (0x7f itself, or the high bit set) */
        uint64_t m = csh__bytes_below(x, 0x21) | csh__bytes_equal(x, 0x7f) | (x & CSH__HIGHS);
        if (m) return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
#endif
    while (p < end && csh__vchar_ok((unsigned char)*p)) p++;
    return p;
}

/* The portable form of csh__scan_field_avx2. */
static inline int csh__scan_field_portable(const char *line, const char *lim, const char **colon,
                                           const char **eol)
{
    const char *ne = csh__scan_token(line, lim);
    if (ne == lim || *ne != ':' || ne == line) return 0;
    *colon = ne;
    *eol = csh__scan_value_portable(ne + 1, lim);
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CSH_HAVE_AVX2 1
#define CSH_AVX2 __attribute__((target("avx2")))

/* 16-byte vectors, VEX-encoded: 256-bit ones would leave the upper halves
 * dirty and every legacy-SSE instruction after them (in libc, in the
 * portable helpers) would pay for it; values are mostly shorter than 32
 * bytes anyway. Two vectors per round keep the loop's overhead low. */
static inline CSH_AVX2 unsigned csh__value_mask16(__m128i v)
{
    const __m128i c1f = _mm_set1_epi8(0x1f), tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, c1f), c1f); /* v <= 0x1f */
    ctl = _mm_andnot_si128(_mm_cmpeq_epi8(v, tab), ctl);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(ctl, _mm_cmpeq_epi8(v, del)));
}

/* The *_from forms take `lo`, the first byte of the buffer that may be read:
 * fewer than 16 bytes left before `end` are then classified with one vector
 * that ends at `end` (when 16 bytes before it are readable), not a byte at a
 * time. That tail is where a head that arrives in pieces stops on every call.
 * Nothing at or past `end` is read. */
static inline CSH_AVX2 const char *csh__scan_value_avx2_from(const char *lo, const char *p,
                                                             const char *end)
{
    if (end - p >= 64) {
        /* long values (user agents, cookies): 32 bytes a step, then
         * vzeroupper so that no legacy-SSE code pays for dirty halves */
        const __m256i c1f = _mm256_set1_epi8(0x1f), tab = _mm256_set1_epi8('\t'),
                      del = _mm256_set1_epi8(0x7f);
        const char *hit = NULL;
        while (end - p >= 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
            __m256i ctl = _mm256_cmpeq_epi8(_mm256_max_epu8(v, c1f), c1f);
            ctl = _mm256_andnot_si256(_mm256_cmpeq_epi8(v, tab), ctl);
            unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(ctl, _mm256_cmpeq_epi8(v, del)));
            if (m) {
                hit = p + __builtin_ctz(m);
                break;
            }
            p += 32;
        }
        _mm256_zeroupper();
        if (hit) return hit;
    }
    while (end - p >= 32) {
        unsigned m = csh__value_mask16(_mm_loadu_si128((const __m128i *)(const void *)p)) |
                     csh__value_mask16(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)))
                         << 16;
        if (m) return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        unsigned m = csh__value_mask16(_mm_loadu_si128((const __m128i *)(const void *)p));
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    if (p < end && end - lo >= 16) {
        unsigned m =
            csh__value_mask16(_mm_loadu_si128((const __m128i *)(const void *)(end - 16))) >>
            (16 - (end - p));
        return m ? p + __builtin_ctz(m) : end;
    }
    return csh__scan_value_portable(p, end);
}

static inline CSH_AVX2 const char *csh__scan_value_avx2(const char *p, const char *end)
{
    return csh__scan_value_avx2_from(p, p, end);
}

/* tchar test with two table lookups: the low nibble selects which high
 * nibbles (0..7) make a tchar; bytes >= 0x80 have no bit. A bit per byte that
 * is not a tchar. */
static inline CSH_AVX2 unsigned csh__nontoken_mask16(__m128i v)
{
    const __m128i by_low = _mm_setr_epi8((char)0xe8, (char)0xfc, (char)0xf8, (char)0xfc, (char)0xfc,
                                         (char)0xfc, (char)0xfc, (char)0xfc, (char)0xf8, (char)0xf8,
                                         (char)0xf4, 0x54, (char)0xd0, 0x54, (char)0xf4, 0x70);
    const __m128i bit_of_high = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)0x80, 0, 0, 0, 0, 0, 0,
                                              0, 0);
    const __m128i nib = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_shuffle_epi8(by_low, _mm_and_si128(v, nib));
    __m128i hi = _mm_shuffle_epi8(bit_of_high, _mm_and_si128(_mm_srli_epi16(v, 4), nib));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(lo, hi), _mm_setzero_si128()));
}

static inline CSH_AVX2 const char *csh__scan_token_avx2_from(const char *lo, const char *p,
                                                             const char *end)
{
    while (end - p >= 16) {
        unsigned m = csh__nontoken_mask16(_mm_loadu_si128((const __m128i *)(const void *)p));
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    if (p < end && end - lo >= 16) {
        unsigned m =
            csh__nontoken_mask16(_mm_loadu_si128((const __m128i *)(const void *)(end - 16))) >>
            (16 - (end - p));
        return m ? p + __builtin_ctz(m) : end;
    }
    return csh__scan_token(p, end);
}

static inline CSH_AVX2 const char *csh__scan_token_avx2(const char *p, const char *end)
{
    return csh__scan_token_avx2_from(p, p, end);
}

/* A field line in one pass where it can: the first 32 bytes are classified
 * once for both questions, where the name ends (it must end at a ':') and
 * where the value ends. Returns 0 when the line is not that simple (the
 * caller then takes the careful way); else *colon and *eol, the first byte
 * after the colon that cannot be in a value. */
static inline CSH_AVX2 int csh__scan_field_avx2_from(const char *lo, const char *line,
                                                     const char *lim, const char **colon,
                                                     const char **eol)
{
    if (lim - line < 32) {
        const char *ne = csh__scan_token_avx2_from(lo, line, lim);
        if (ne == lim || *ne != ':' || ne == line) return 0;
        *colon = ne;
        *eol = csh__scan_value_avx2_from(lo, ne + 1, lim);
        return 1;
    }
    __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)line);
    __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(line + 16));
    unsigned nt = csh__nontoken_mask16(v0) | csh__nontoken_mask16(v1) << 16;
    if (nt == 0) return 0; /* a name of 32 bytes or more */
    unsigned k = (unsigned)__builtin_ctz(nt);
    if (k == 0 || line[k] != ':') return 0;
    /* value bytes after the colon; (2u << 31) is 0, leaving no bit */
    unsigned bad = (csh__value_mask16(v0) | csh__value_mask16(v1) << 16) & ~((2u << k) - 1u);
    *colon = line + k;
    *eol = bad ? line + __builtin_ctz(bad) : csh__scan_value_avx2_from(lo, line + 32, lim);
    return 1;
}

static inline CSH_AVX2 unsigned csh__vchar_mask16(__m128i v)
{
    const __m128i sp = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
    __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(v, sp), sp);   /* v <= 0x20 */
    __m128i high = _mm_cmpeq_epi8(_mm_min_epu8(v, del), del); /* v >= 0x7f */
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(low, high));
}

static inline CSH_AVX2 const char *csh__scan_vchar_avx2_from(const char *lo, const char *p,
                                                             const char *end)
{
    while (end - p >= 32) {
        unsigned m = csh__vchar_mask16(_mm_loadu_si128((const __m128i *)(const void *)p)) |
                     csh__vchar_mask16(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)))
                         << 16;
        if (m) return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        unsigned m = csh__vchar_mask16(_mm_loadu_si128((const __m128i *)(const void *)p));
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
    if (p < end && end - lo >= 16) {
        unsigned m =
            csh__vchar_mask16(_mm_loadu_si128((const __m128i *)(const void *)(end - 16))) >>
            (16 - (end - p));
        return m ? p + __builtin_ctz(m) : end;
    }
    return csh__scan_vchar_portable(p, end);
}
#endif

#endif
