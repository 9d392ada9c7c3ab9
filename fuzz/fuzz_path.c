/* fuzz_path: request path decoding (cshw_path_decode) and percent-encoding
 * (cshw_url_encode / cshw_url_decode) of libcshttp-web.
 *
 * The input is a path. Checks:
 *   - a successful result starts with '/', is no longer than the input, has
 *     no empty, "." or ".." segment (no "//", "/./", "/../", no final "/."
 *     or "/.."), no NUL, control or '\' byte; an error is one of the four
 *     codes url.h lists, and leaves the output untouched;
 *   - the result agrees with a second, independent implementation (split,
 *     decode, a stack of segments), error codes included;
 *   - the result is a fixed point: its segments percent-encoded and decoded
 *     again give the same path;
 *   - cshw_url_decode(cshw_url_encode(input)) is the input, with and without
 *     CSHW_URL_PLUS_SPACE, and the encoding is only unreserved bytes and %XX.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/error.h>
#include <cshttp/web/url.h>

#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* The reference: segments decoded one by one onto a stack of (offset,
 * length) pairs in `out`. Returns 0 or the error; *out_len the length. */
static int reference(const unsigned char *in, size_t len, unsigned char *out, size_t *out_len)
{
    if (len == 0 || in[0] != '/') return CSHW_E_PATH_NOT_ABSOLUTE;
    size_t *starts = malloc((len + 1) * sizeof *starts);
    unsigned char *seg = malloc(len + 1);
    CHECK(starts && seg, "out of memory");
    size_t depth = 0, o = 0, i = 1;
    int trailing = 1, err = 0;
    for (;;) {
        size_t k = 0;
        while (i < len && in[i] != '/') {
            int c = in[i];
            if (c == '%' && i + 2 < len && hexval(in[i + 1]) >= 0 && hexval(in[i + 2]) >= 0) {
                c = hexval(in[i + 1]) << 4 | hexval(in[i + 2]);
                i += 3;
                if (c == '/' || c == '\\') err = err ? err : CSHW_E_PATH_SEPARATOR;
            } else {
                i++;
                if (c == '\\') err = err ? err : CSHW_E_PATH_SEPARATOR;
            }
            if (c < 0x20 || c == 0x7f) err = err ? err : CSHW_E_PATH_CONTROL;
            seg[k++] = (unsigned char)c;
        }
        if (err) break;
        if (k == 2 && seg[0] == '.' && seg[1] == '.') {
            if (depth == 0) {
                err = CSHW_E_PATH_TRAVERSAL;
                break;
            }
            o = starts[--depth];
            trailing = 1;
        } else if (k == 0 || (k == 1 && seg[0] == '.')) {
            trailing = 1;
        } else {
            starts[depth++] = o;
            out[o++] = '/';
            memcpy(out + o, seg, k);
            o += k;
            trailing = 0;
        }
        if (i >= len) break;
        i++;
    }
    if (!err && (trailing || o == 0)) out[o++] = '/';
    *out_len = o;
    free(starts);
    free(seg);
    return err;
}

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void check_path(cshw_arena *a, const char *in, size_t size)
{
    const char *out = "untouched";
    size_t len = 12345;
    int r = cshw_path_decode(a, in, size, &out, &len);
    unsigned char *ref = malloc(size + 2);
    size_t ref_len = 0;
    CHECK(ref != NULL, "out of memory");
    int want = reference((const unsigned char *)in, size, ref, &ref_len);
    CHECK(r == want, "result %s, reference %s", cshw_error_name(r), cshw_error_name(want));
    if (r != 0) {
        CHECK(r == CSHW_E_PATH_NOT_ABSOLUTE || r == CSHW_E_PATH_CONTROL ||
                  r == CSHW_E_PATH_SEPARATOR || r == CSHW_E_PATH_TRAVERSAL,
              "unexpected error %d", r);
        CHECK(strcmp(out, "untouched") == 0 && len == 12345, "output set on error");
        free(ref);
        return;
    }
    CHECK(len == ref_len && memcmp(out, ref, len) == 0, "result differs from the reference");
    CHECK(len >= 1 && len <= size, "length %zu for an input of %zu", len, size);
    CHECK(out[len] == '\0', "not NUL-terminated");
    CHECK(out[0] == '/', "does not start with '/'");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        CHECK(c >= 0x20 && c != 0x7f && c != '\\', "byte 0x%02x at %zu", c, i);
        if (c != '/') continue;
        /* the segment after this slash */
        size_t e = i + 1;
        while (e < len && out[e] != '/') e++;
        size_t n = e - i - 1;
        if (e == len && n == 0) break; /* a trailing slash */
        CHECK(n > 0, "empty segment at %zu", i);
        CHECK(!(n == 1 && out[i + 1] == '.'), "'.' segment at %zu", i);
        CHECK(!(n == 2 && out[i + 1] == '.' && out[i + 2] == '.'), "'..' segment at %zu", i);
    }

    /* a fixed point: encode each segment's bytes (but '/') and decode again */
    char *enc = malloc(3 * len + 1);
    CHECK(enc != NULL, "out of memory");
    size_t el = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c == '/' || unreserved(c)) {
            enc[el++] = (char)c;
        } else {
            el += (size_t)snprintf(enc + el, 4, "%%%02X", c);
        }
    }
    const char *again;
    size_t again_len;
    r = cshw_path_decode(a, enc, el, &again, &again_len);
    CHECK(r == 0, "re-encoded result refused: %s", cshw_error_name(r));
    CHECK(again_len == len && memcmp(again, out, len) == 0, "not a fixed point");
    free(enc);
    free(ref);
}

static void check_encoding(cshw_arena *a, const char *in, size_t size)
{
    const char *enc, *dec;
    size_t el, dl;
    CHECK(cshw_url_encode(a, in, size, &enc, &el) == 0, "encode failed");
    CHECK(enc[el] == '\0' && el >= size && el <= 3 * size, "encoded length %zu", el);
    for (size_t i = 0; i < el; i++) {
        unsigned char c = (unsigned char)enc[i];
        if (c == '%') {
            CHECK(i + 2 < el && hexval((unsigned char)enc[i + 1]) >= 0 &&
                      hexval((unsigned char)enc[i + 2]) >= 0,
                  "bad escape at %zu", i);
            i += 2;
        } else {
            CHECK(unreserved(c), "byte 0x%02x left unencoded", c);
        }
    }
    for (unsigned flags = 0; flags <= CSHW_URL_PLUS_SPACE; flags++) {
        CHECK(cshw_url_decode(a, enc, el, flags, &dec, &dl) == 0, "decode failed");
        CHECK(dl == size && memcmp(dec, in, size) == 0, "round trip differs");
    }
    /* decoding the raw input never grows it, never fails */
    CHECK(cshw_url_decode(a, in, size, CSHW_URL_PLUS_SPACE, &dec, &dl) == 0 && dl <= size,
          "decode of the input");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cshw_arena *a = cshw_arena_new(0);
    CHECK(a != NULL, "out of memory");
    char *in = malloc(size ? size : 1); /* exact size: ASan sees a read past it */
    CHECK(in != NULL, "out of memory");
    if (size) memcpy(in, data, size);
    check_path(a, in, size);
    check_encoding(a, in, size);
    free(in);
    cshw_arena_free(a);
    return 0;
}
