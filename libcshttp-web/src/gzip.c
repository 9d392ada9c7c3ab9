/* gzip content coding (RFC 9110 §8.4.1.3) with zlib: whether the client
 * accepts it (Accept-Encoding, §12.5.3), whether a media type is worth it,
 * and the deflate stream, kept per context and reset between requests. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "static_priv.h"
#include "util.h"

struct cshw_gzip {
    z_stream z;
    int level;
    unsigned char out[16384];
};

/* ---- Accept-Encoding ---- */

int cshw__accepts_gzip(cshw_request *req)
{
    const char *values[16];
    size_t n = cshw_request_header_all(req, "accept-encoding", values, 16);
    /* no field: do not guess (§12.5.3 allows any coding); the one rule of
     * the toolkit, shared with precompressed files (static_cond.c) */
    return cshw__accept_prefers(values, n < 16 ? n : 16, "gzip");
}

/* ---- media types ---- */

int cshw__compressible(const char *content_type)
{
    const char *s = content_type;
    while (cshw__is_ws((unsigned char)*s)) s++;
    size_t n = 0;
    while (s[n] && s[n] != ';' && !cshw__is_ws((unsigned char)s[n])) n++;
    if (n > 5 && cshw__ieq(s, 5, "text/")) return !cshw__ieq(s, n, "text/event-stream");
    /* by the top-level type first: a type of none of these (octet-stream,
     * images, video) is told apart in a few comparisons, on every file */
    static const char *const application[] = {
        "json", "javascript", "x-javascript",      "ecmascript",
        "xml",  "wasm",       "vnd.ms-fontobject", "x-font-ttf",
    };
    static const char *const image[] = {"svg+xml", "x-icon", "vnd.microsoft.icon", "bmp"};
    static const char *const font[] = {"ttf", "otf"};
    const char *const *subtypes = NULL;
    size_t count = 0, top = 0;
    if (n > 12 && cshw__ieq(s, 12, "application/")) {
        /* structured syntax suffixes (RFC 6839): application/ld+json, .../atom+xml */
        if (cshw__ieq(s + n - 5, 5, "+json") || cshw__ieq(s + n - 4, 4, "+xml")) return 1;
        subtypes = application, count = sizeof application / sizeof application[0], top = 12;
    } else if (n > 6 && cshw__ieq(s, 6, "image/")) {
        subtypes = image, count = sizeof image / sizeof image[0], top = 6;
    } else if (n > 5 && cshw__ieq(s, 5, "font/")) {
        subtypes = font, count = sizeof font / sizeof font[0], top = 5;
    }
    for (size_t i = 0; i < count; i++)
        if (cshw__ieq(s + top, n - top, subtypes[i])) return 1;
    return 0;
}

/* ---- deflate ---- */

int cshw__gzip_start(cshw_context *ctx)
{
    cshw_gzip *gz = ctx->gzip;
    if (gz) return deflateReset(&gz->z) == Z_OK ? 0 : -ENOMEM;
    gz = calloc(1, sizeof *gz);
    if (!gz) return -ENOMEM;
    gz->level = ctx->options.gzip_level;
    /* windowBits 15 + 16: a gzip wrapper, not zlib's */
    if (deflateInit2(&gz->z, gz->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(gz);
        return -ENOMEM;
    }
    ctx->gzip = gz;
    return 0;
}

int cshw__gzip_write(cshw_context *ctx, const void *data, size_t len, int flush,
                     cshw_gzip_sink sink, void *arg)
{
    cshw_gzip *gz = ctx->gzip;
    const unsigned char *in = data;
    for (;;) {
        uInt piece = len > UINT_MAX ? UINT_MAX : (uInt)len;
        int last = piece == len;
        int mode = !last || flush == 0 ? Z_NO_FLUSH : flush == 1 ? Z_SYNC_FLUSH : Z_FINISH;
        gz->z.next_in = (Bytef *)(uintptr_t)in;
        gz->z.avail_in = piece;
        int r;
        do {
            gz->z.next_out = gz->out;
            gz->z.avail_out = sizeof gz->out;
            r = deflate(&gz->z, mode);
            if (r == Z_STREAM_ERROR) return -ENOMEM;
            size_t produced = sizeof gz->out - gz->z.avail_out;
            if (produced) {
                int w = sink(arg, (const char *)gz->out, produced);
                if (w < 0) return w;
            }
            /* zlib is done when it left room in the output (and, to finish,
             * said so) */
        } while (gz->z.avail_out == 0 || (mode == Z_FINISH && r != Z_STREAM_END));
        if (last) return 0; /* before moving `in`: a flush brings data == NULL, len 0 */
        in += piece;
        len -= piece;
    }
}

void cshw__gzip_free(cshw_gzip *gz)
{
    if (!gz) return;
    deflateEnd(&gz->z);
    free(gz);
}
