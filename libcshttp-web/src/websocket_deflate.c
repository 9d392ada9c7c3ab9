/* permessage-deflate (RFC 7692 §7.2) with zlib, one message at a time:
 * the handshake asked for no context takeover either way, so zlib's
 * state is made for a message and freed at its end, and an idle socket
 * holds none. Also the UTF-8 check of text messages (RFC 6455 §8.1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "websocket_impl.h"

int cshw__utf8_feed(cshw__utf8 *u, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char b = p[i];
        if (u->need == 0) {
            if (b < 0x80) {
                /* ASCII runs go eight at a time */
                while (i + 9 <= n) {
                    uint64_t w;
                    memcpy(&w, p + i + 1, 8);
                    if (w & 0x8080808080808080ull) break;
                    i += 8;
                }
                continue;
            }
            u->lo = 0x80;
            u->hi = 0xBF;
            if (b >= 0xC2 && b <= 0xDF)
                u->need = 1;
            else if (b == 0xE0)
                u->need = 2, u->lo = 0xA0; /* overlong */
            else if (b == 0xED)
                u->need = 2, u->hi = 0x9F; /* surrogates */
            else if (b >= 0xE1 && b <= 0xEF)
                u->need = 2;
            else if (b == 0xF0)
                u->need = 3, u->lo = 0x90; /* overlong */
            else if (b >= 0xF1 && b <= 0xF3)
                u->need = 3;
            else if (b == 0xF4)
                u->need = 3, u->hi = 0x8F; /* past U+10FFFF */
            else
                return -1;
        } else {
            if (b < u->lo || b > u->hi) return -1;
            u->need--;
            u->lo = 0x80;
            u->hi = 0xBF;
        }
    }
    return 0;
}

struct cshw__inflater {
    z_stream z;
};

cshw__inflater *cshw__inflater_new(int window)
{
    cshw__inflater *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    /* zlib inflates a window of 8 only as 9 or more, which reads it too */
    if (inflateInit2(&d->z, -(window < 9 ? 9 : window)) != Z_OK) {
        free(d);
        return NULL;
    }
    return d;
}

void cshw__inflater_free(cshw__inflater *d)
{
    if (!d) return;
    inflateEnd(&d->z);
    free(d);
}

static int inflate_some(cshw__inflater *d, const unsigned char *in, size_t n, char **out,
                        size_t *len, size_t *size, uint64_t cap)
{
    z_stream *z = &d->z;
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)n;
    while (z->avail_in > 0) {
        if (*len == *size) {
            /* room for one byte past cap: what is there tells a bomb */
            if (*len > cap) return 1;
            size_t want = *size ? *size * 2 : 4096;
            /* cap + 1 would wrap for a cap of UINT64_MAX (no limit) */
            if (cap < SIZE_MAX && want > cap + 1) want = (size_t)cap + 1;
            char *p = realloc(*out, want);
            if (!p) return -ENOMEM;
            *out = p;
            *size = want;
        }
        z->next_out = (Bytef *)*out + *len;
        /* zlib counts in 32 bits: a larger room is offered in parts */
        size_t room = *size - *len;
        z->avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
        int r = inflate(z, Z_SYNC_FLUSH);
        *len += (room > UINT32_MAX ? UINT32_MAX : room) - z->avail_out;
        if (*len > cap) return 1;
        if (r == Z_STREAM_END) {
            /* a final block ends a deflate stream; a sender may begin
             * another within the message */
            if (inflateReset(z) != Z_OK) return -1;
            continue;
        }
        if (r == Z_BUF_ERROR && z->avail_out > 0) break;
        if (r != Z_OK && r != Z_BUF_ERROR) return r == Z_MEM_ERROR ? -ENOMEM : -1;
    }
    return 0;
}

int cshw__inflate(cshw__inflater *d, const unsigned char *in, size_t n, int last, char **out,
                  size_t *len, size_t *size, uint64_t cap)
{
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    int r = inflate_some(d, in, n, out, len, size, cap);
    if (r == 0 && last) r = inflate_some(d, tail, sizeof tail, out, len, size, cap);
    return r;
}

int cshw__deflate(const void *in, size_t n, int window, unsigned char **out, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* memLevel 8 with the window: zlib's state is 2^(window+2) plus 2^17 */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -window, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    size_t cap = deflateBound(&z, (uLong)n) + 16;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_SYNC_FLUSH);
    size_t got = cap - z.avail_out;
    deflateEnd(&z);
    if (r != Z_OK || z.avail_in != 0 || got < 4) {
        free(buf);
        return -ENOMEM;
    }
    /* §7.2.1: the sync flush's empty stored block ends in 00 00 ff ff,
     * which the message leaves out */
    *out = buf;
    *out_len = got - 4;
    return 0;
}
