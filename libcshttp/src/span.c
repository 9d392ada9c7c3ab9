/* Span helpers that are not inline. */
#include "cshttp/span.h"

static inline unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

int csh_mem_ieq(const char *a, const char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return 0;
    return 1;
}

int csh_span_ieq(const char *base, csh_span s, const char *str)
{
    return strlen(str) == s.len && csh_mem_ieq(base + s.off, str, s.len);
}
