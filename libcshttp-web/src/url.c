/* Percent-encoding (RFC 3986 §2.1), percent-decoding (WHATWG URL standard,
 * "percent-decode") and request path normalisation (RFC 3986 §5.2.4). */
#include "cshttp/web/url.h"

#include <stdint.h>
#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "util.h"

static const char hex_upper[] = "0123456789ABCDEF";

/* RFC 3986 §2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~" */
static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int cshw_url_encode(cshw_arena *a, const char *data, size_t len, const char **out, size_t *out_len)
{
    if (len > (SIZE_MAX - 1) / 3) return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += unreserved((unsigned char)data[i]) ? 1 : 3;
    char *p = cshw_arena_alloc(a, n + 1);
    if (!p) return -ENOMEM;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        if (unreserved(c)) {
            p[o++] = (char)c;
        } else {
            p[o++] = '%';
            p[o++] = hex_upper[c >> 4];
            p[o++] = hex_upper[c & 15];
        }
    }
    p[o] = '\0';
    *out = p;
    if (out_len) *out_len = o;
    return 0;
}

size_t cshw_url_decode_to(char *dst, const char *src, size_t len, unsigned flags)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        int hi, lo;
        if (c == '%' && i + 2 < len && (hi = cshw__hex((unsigned char)src[i + 1])) >= 0 &&
            (lo = cshw__hex((unsigned char)src[i + 2])) >= 0) {
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && (flags & CSHW_URL_PLUS_SPACE)) {
            c = ' ';
        }
        dst[o++] = (char)c;
    }
    return o;
}

int cshw_url_decode(cshw_arena *a, const char *data, size_t len, unsigned flags, const char **out,
                    size_t *out_len)
{
    if (len == SIZE_MAX) return -ENOMEM;
    char *p = cshw_arena_alloc(a, len + 1);
    if (!p) return -ENOMEM;
    size_t n = cshw_url_decode_to(p, data, len, flags);
    p[n] = '\0';
    *out = p;
    if (out_len) *out_len = n;
    return 0;
}

static int is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

int cshw_path_decode(cshw_arena *a, const char *path, size_t len, const char **out, size_t *out_len)
{
    if (len == 0 || path[0] != '/') return CSHW_E_PATH_NOT_ABSOLUTE;
    if (len == SIZE_MAX) return -ENOMEM;
    char *p = cshw_arena_alloc(a, len + 1);
    if (!p) return -ENOMEM;

    /* p[0 .. o) is the result so far; it always ends with '/' between
     * segments. Each segment is decoded at p + o, then kept, dropped (empty
     * or ".") or, for "..", removed together with the segment before it. */
    size_t o = 0, i = 1;
    p[o++] = '/';
    for (;;) {
        size_t start = o;
        while (i < len && path[i] != '/') {
            unsigned char c = (unsigned char)path[i];
            int hi, lo;
            if (c == '%' && i + 2 < len && (hi = cshw__hex((unsigned char)path[i + 1])) >= 0 &&
                (lo = cshw__hex((unsigned char)path[i + 2])) >= 0) {
                c = (unsigned char)(hi << 4 | lo);
                i += 3;
                /* an encoded '/' or '\' would be a separator to someone */
                if (c == '/' || c == '\\') return CSHW_E_PATH_SEPARATOR;
            } else {
                i++;
                if (c == '\\') return CSHW_E_PATH_SEPARATOR;
            }
            if (is_control(c)) return CSHW_E_PATH_CONTROL;
            p[o++] = (char)c;
        }
        size_t seg = o - start;
        int last = i >= len;
        if (seg == 1 && p[start] == '.') {
            o = start; /* "." : nothing; the '/' before it stays */
        } else if (seg == 2 && p[start] == '.' && p[start + 1] == '.') {
            /* ".." removes the previous segment and its '/'; there is none
             * at the root: refuse instead of clamping (RFC 3986 clamps) */
            if (start == 1) return CSHW_E_PATH_TRAVERSAL;
            o = start - 1; /* the '/' that ended the previous segment */
            while (p[o - 1] != '/') o--;
        } else if (seg > 0 && !last) {
            p[o++] = '/';
        }
        /* seg == 0: an empty segment ("//" or a final '/'): merged */
        if (last) break;
        i++; /* the '/' */
    }
    p[o] = '\0';
    *out = p;
    if (out_len) *out_len = o;
    return 0;
}
