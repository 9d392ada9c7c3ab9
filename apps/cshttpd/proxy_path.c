/* Dot segments of a request-target's path, under each reading of its
 * separators (proxy_path.h). */
#include "proxy_path.h"

#include <string.h>

/* The length of the separator at path[i] (0: none) under `flags`. */
static size_t separator(const char *path, size_t len, size_t i, unsigned flags)
{
    if (path[i] == '/') return 1;
    if (!(flags & PROXY_PATH_SLASHES)) return 0;
    if (path[i] == '\\') return 1;
    if (path[i] == '%' && len - i >= 3 &&
        ((path[i + 1] == '2' && (path[i + 2] == 'f' || path[i + 2] == 'F')) ||
         (path[i + 1] == '5' && (path[i + 2] == 'c' || path[i + 2] == 'C'))))
        return 3;
    return 0;
}

/* How many dots the segment is when each '.' may be written %2e: 1 for
 * ".", 2 for "..", 0 for any other segment. */
static int dots(const char *seg, size_t n)
{
    int count = 0;
    for (size_t i = 0; i < n; count++) {
        if (count == 2) return 0;
        if (seg[i] == '.')
            i += 1;
        else if (n - i >= 3 && seg[i] == '%' && seg[i + 1] == '2' &&
                 (seg[i + 2] == 'e' || seg[i + 2] == 'E'))
            i += 3;
        else
            return 0;
    }
    return count;
}

int proxy_path_resolve(const char *path, size_t len, unsigned flags, char *out, size_t *out_len)
{
    /* out[0 .. o) is the result so far; after each segment but the last
     * it ends with the '/' that follows that segment */
    size_t o = 0, i = 1;
    out[o++] = '/';
    for (;;) {
        size_t start = i, sep = 0;
        while (i < len && (sep = separator(path, len, i, flags)) == 0) i++;
        size_t n = i - start;
        int last = i >= len;
        int d = dots(path + start, n);
        if (d == 2) {
            if (o == 1) return -1; /* above the root */
            o--;                   /* the '/' after the segment before */
            while (out[o - 1] != '/') o--;
        } else if (d == 0 && !(n == 0 && (flags & PROXY_PATH_MERGE))) {
            memcpy(out + o, path + start, n);
            o += n;
            if (!last) out[o++] = '/';
        }
        if (last) break;
        i += sep;
    }
    out[o] = '\0';
    *out_len = o;
    return 0;
}

int proxy_path_has_nul(const char *path, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++)
        if (path[i] == '%' && path[i + 1] == '0' && path[i + 2] == '0') return 1;
    return 0;
}
