/* Byte-class scanners shared by the parsers: each returns the first byte in
 * [p, end) that does not belong to a class, or `end`. A SIMD variant (AVX2,
 * chosen at run time) and a portable one (SWAR on 64-bit words, then a table)
 * give the same answers; CSH_PARSE_NO_SIMD selects the portable one. */
#ifndef CSH_SRC_SCAN_H
#define CSH_SRC_SCAN_H

#include <stddef.h>

/* Character classes (RFC 9110 §5.6.2 tchar, §5.5 field-vchar). Constant
 * tables, not mutable state. */
extern const unsigned char csh__tchar[256];

static inline int csh__is_tchar(unsigned char c)
{
    return csh__tchar[c];
}

/* 1 when the AVX2 scanners may be used on this CPU. */
int csh__simd_available(void);

#if defined(__x86_64__) && defined(__GNUC__)
#define CSH_HAVE_AVX2 1
const char *csh__scan_value_avx2(const char *p, const char *end);
const char *csh__scan_vchar_avx2(const char *p, const char *end);
const char *csh__scan_token_avx2(const char *p, const char *end);
#endif
const char *csh__scan_value_portable(const char *p, const char *end);
const char *csh__scan_vchar_portable(const char *p, const char *end);

/* First byte that cannot appear in a field value, reason phrase or the text of
 * a line: a control other than HTAB (CR and LF included), or DEL. */
static inline const char *csh__scan_value(const char *p, const char *end, int simd)
{
#ifdef CSH_HAVE_AVX2
    if (simd) return csh__scan_value_avx2(p, end);
#endif
    (void)simd;
    return csh__scan_value_portable(p, end);
}

/* First byte outside VCHAR (0x21..0x7E): ends a request-target. */
static inline const char *csh__scan_vchar(const char *p, const char *end, int simd)
{
#ifdef CSH_HAVE_AVX2
    if (simd) return csh__scan_vchar_avx2(p, end);
#endif
    (void)simd;
    return csh__scan_vchar_portable(p, end);
}

/* First byte that is not a tchar: ends a method or a field name. The SIMD
 * variant pays off from about 16 bytes. */
static inline const char *csh__scan_name(const char *p, const char *end, int simd);

/* The portable form, for short tokens (list elements). */
static inline const char *csh__scan_token(const char *p, const char *end)
{
    while (p < end && csh__tchar[(unsigned char)*p]) p++;
    return p;
}

static inline const char *csh__scan_name(const char *p, const char *end, int simd)
{
#ifdef CSH_HAVE_AVX2
    if (simd) return csh__scan_token_avx2(p, end);
#endif
    (void)simd;
    return csh__scan_token(p, end);
}

#endif
