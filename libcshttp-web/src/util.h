/* Small helpers shared by the parsers of libcshttp-web (private). */
#ifndef CSHTTP_WEB_UTIL_H
#define CSHTTP_WEB_UTIL_H

#include <stddef.h>
#include <string.h>

#include <cshttp/grammar.h>

/* The value of a hex digit, or -1. */
static inline int cshw__hex(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* RFC 9110 §5.6.2 tchar: the one definition, in libcshttp's grammar.h */
static inline int cshw__tchar(unsigned char c)
{
    return csh_is_tchar(c);
}

static inline int cshw__is_ws(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static inline unsigned char cshw__lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/* 1 if data[0 .. len) equals the lower-case ASCII string `lower`, ignoring
 * case. */
static inline int cshw__ieq(const char *data, size_t len, const char *lower)
{
    size_t i = 0;
    for (; i < len; i++)
        if (lower[i] == '\0' || cshw__lower((unsigned char)data[i]) != (unsigned char)lower[i])
            return 0;
    return lower[i] == '\0';
}

#endif
