/* HTML escaping of the five characters that end text or a quoted attribute. */
#include "cshttp/web/html.h"

#include <stdint.h>
#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"

/* The reference for c, or NULL when c is copied as it is. */
static const char *entity(unsigned char c, size_t *len)
{
    switch (c) {
    case '&':
        *len = 5;
        return "&amp;";
    case '<':
        *len = 4;
        return "&lt;";
    case '>':
        *len = 4;
        return "&gt;";
    case '"':
        *len = 6;
        return "&quot;";
    case '\'':
        *len = 5;
        return "&#39;";
    default:
        return NULL;
    }
}

static size_t encoded_length(const char *s, size_t len)
{
    size_t n = len, e;
    for (size_t i = 0; i < len; i++)
        if (entity((unsigned char)s[i], &e)) n += e - 1;
    return n;
}

/* Writes the escaped form of s into dst (room for encoded_length bytes). */
static void encode(char *dst, const char *s, size_t len)
{
    size_t e;
    for (size_t i = 0; i < len; i++) {
        const char *ref = entity((unsigned char)s[i], &e);
        if (ref) {
            memcpy(dst, ref, e);
            dst += e;
        } else {
            *dst++ = s[i];
        }
    }
}

int cshw_html_encode(cshw_arena *a, const char *s, size_t len, const char **out, size_t *out_len)
{
    if (len > (SIZE_MAX - 1) / 6) return -ENOMEM;
    size_t n = encoded_length(s, len);
    char *p = cshw_arena_alloc(a, n + 1);
    if (!p) return -ENOMEM;
    encode(p, s, len);
    p[n] = '\0';
    *out = p;
    if (out_len) *out_len = n;
    return 0;
}

int cshw_html_encode_buf(cshw_buf *b, const char *s, size_t len)
{
    if (len > (SIZE_MAX - 1) / 6) return -ENOMEM;
    size_t n = encoded_length(s, len);
    int r = cshw_buf_reserve(b, n);
    if (r < 0) return r;
    encode(b->data + b->len, s, len);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}
