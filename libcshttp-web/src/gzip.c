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
#include "util.h"

struct cshw_gzip {
    z_stream z;
    int level;
    unsigned char out[16384];
};

/* ---- Accept-Encoding ---- */

/* RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ),
 * as thousandths; -1 when malformed. */
static int parse_qvalue(const char *s, size_t n)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1')) return -1;
    int q = (s[0] - '0') * 1000;
    if (n == 1) return q;
    if (s[1] != '.' || n > 5) return -1;
    int scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9') return -1;
        q += (s[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* Weights for the codings that matter, in thousandths; -1: not listed. */
typedef struct weights {
    int gzip, star, identity;
} weights;

/* One list element: coding *( OWS ";" OWS name "=" value ). */
static void element(const char *s, size_t n, weights *w)
{
    size_t i = 0;
    while (i < n && cshw__tchar((unsigned char)s[i])) i++;
    size_t coding_len = i;
    if (coding_len == 0) return;
    int q = 1000;
    while (i < n) {
        while (i < n && cshw__is_ws((unsigned char)s[i])) i++;
        if (i == n) break;
        if (s[i] != ';') return; /* malformed: ignore the element */
        i++;
        while (i < n && cshw__is_ws((unsigned char)s[i])) i++;
        size_t name = i;
        while (i < n && cshw__tchar((unsigned char)s[i])) i++;
        size_t name_len = i - name;
        if (name_len == 0 || i == n || s[i] != '=') return;
        i++;
        size_t value = i;
        while (i < n && !cshw__is_ws((unsigned char)s[i]) && s[i] != ';') i++;
        if (cshw__ieq(s + name, name_len, "q")) {
            q = parse_qvalue(s + value, i - value);
            if (q < 0) return;
        }
    }
    int *slot = NULL;
    if (cshw__ieq(s, coding_len, "gzip") || cshw__ieq(s, coding_len, "x-gzip"))
        slot = &w->gzip;
    else if (cshw__ieq(s, coding_len, "*"))
        slot = &w->star;
    else if (cshw__ieq(s, coding_len, "identity"))
        slot = &w->identity;
    if (slot && *slot < 0) *slot = q; /* the first mention counts */
}

static void parse_list(const char *s, weights *w)
{
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == ',') s++;
        const char *e = s;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > s && cshw__is_ws((unsigned char)t[-1])) t--;
        if (t > s) element(s, (size_t)(t - s), w);
        s = e;
    }
}

int cshw__accepts_gzip(cshw_request *req)
{
    const char *values[16];
    size_t n = cshw_request_header_all(req, "accept-encoding", values, 16);
    if (n == 0) return 0; /* no field: do not guess (§12.5.3 allows any coding) */
    if (n > 16) n = 16;
    weights w = {-1, -1, -1};
    for (size_t i = 0; i < n; i++)
        if (values[i]) parse_list(values[i], &w);
    /* "*" stands for every coding not listed, identity included */
    int gzip = w.gzip >= 0 ? w.gzip : w.star >= 0 ? w.star : 0;
    int identity = w.identity >= 0 ? w.identity : w.star;
    /* q=0 refuses; an identity the client weighs higher wins; an identity
     * it never named is the fallback, not a preference */
    return gzip > 0 && (identity < 0 || gzip >= identity);
}

/* ---- media types ---- */

int cshw__compressible(const char *content_type)
{
    const char *s = content_type;
    while (cshw__is_ws((unsigned char)*s)) s++;
    size_t n = 0;
    while (s[n] && s[n] != ';' && !cshw__is_ws((unsigned char)s[n])) n++;
    if (n > 5 && cshw__ieq(s, 5, "text/")) return !cshw__ieq(s, n, "text/event-stream");
    static const char *const types[] = {
        "application/json",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/xml",
        "application/wasm",
        "image/svg+xml",
        "image/x-icon",
        "image/vnd.microsoft.icon",
        "image/bmp",
        "font/ttf",
        "font/otf",
        "application/vnd.ms-fontobject",
        "application/x-font-ttf",
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (cshw__ieq(s, n, types[i])) return 1;
    /* structured syntax suffixes (RFC 6839): application/ld+json, .../atom+xml */
    if (n > 12 && cshw__ieq(s, 12, "application/")) {
        if (n > 5 && cshw__ieq(s + n - 5, 5, "+json")) return 1;
        if (n > 4 && cshw__ieq(s + n - 4, 4, "+xml")) return 1;
    }
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
        in += piece;
        len -= piece;
        if (last) return 0;
    }
}

void cshw__gzip_free(cshw_gzip *gz)
{
    if (!gz) return;
    deflateEnd(&gz->z);
    free(gz);
}
