/* fuzz_chunked: the chunked decoder (chunked.h) alone.
 *
 * The payload is decoded twice: whole (one call per step on all the bytes
 * left) and fed in pieces whose sizes come from the input, each call getting
 * a fresh heap copy of exactly the unconsumed bytes plus what arrived (so a
 * read past len, or a pointer kept into an earlier buffer, is caught). Every
 * call must consume at most len bytes and return data spans (non-empty) inside
 * what it consumed; body_bytes must count the data; CSH_OK and errors must be
 * sticky; trailer spans must lie in the last buffer. Both runs must agree on
 * the result, the offset where the body ended or the error was found, the
 * data bytes, the number of chunks and the trailers.
 *
 * Input: bytes 0..2 are the setup, the rest the chunked body.
 *   byte 0 bit 0     CSH_PARSE_LENIENT_BARE_LF
 *          bits 1-3  trailer fields to store (0..7)
 *          bit 4     tiny limits instead of the defaults
 *          bits 5-6  pieces: 0 and 2 of 1..16 bytes, 1 single bytes, 3 of 1..512
 *          bit 7     CSH_PARSE_NO_SIMD
 *   bytes 1-2        seed of the piece sizes */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct outcome {
    int result;      /* CSH_OK, an error, or CSH_INCOMPLETE at the end of the input */
    size_t at;       /* CSH_OK: end of the body; error: where it was found */
    uint64_t chunks; /* c.chunks at the end */
    fz_buf data;     /* the data bytes */
    fz_buf trailers; /* "name: value\n" per stored trailer */
} outcome;

static void decode(const char *in, size_t size, unsigned flags, const csh_limits *limits,
                   size_t cap, int mode, uint32_t seed, outcome *o)
{
    csh_header trailers[FZ_MAX_TRAILERS];
    csh_chunked c;
    fz_rng rng;
    size_t pos = 0, avail = mode == FZ_SPLIT_WHOLE ? size : 0;
    char *copy = NULL;
    int deliver = mode != FZ_SPLIT_WHOLE;

    fz_rng_seed(&rng, seed);
    fz_buf_clear(&o->data);
    fz_buf_clear(&o->trailers);
    memset(trailers, 0xa5, sizeof trailers);
    csh_chunked_init(&c, limits, flags, trailers, cap);
    for (;;) {
        if (deliver) {
            size_t piece = fz_piece(&rng, mode);
            avail += piece < size - avail ? piece : size - avail;
        }
        size_t len = avail - pos;
        const char *buf = in + pos;
        if (mode != FZ_SPLIT_WHOLE) {
            free(copy);
            copy = malloc(len ? len : 1);
            FZ_CHECK(copy != NULL, "out of memory");
            if (len) memcpy(copy, in + pos, len);
            buf = copy;
        }
        size_t used = (size_t)-1;
        csh_span d = {(size_t)-1, (size_t)-1};
        int r = csh_chunked_decode(&c, buf, len, &used, &d);
        FZ_CHECK(used <= len, "consumed %zu of %zu bytes", used, len);
        if (r == CSH_DATA) {
            FZ_CHECK(d.len > 0, "CSH_DATA with an empty span");
            FZ_CHECK(fz_span_in(d, used), "data span %zu+%zu outside the %zu bytes consumed", d.off,
                     d.len, used);
            fz_buf_put(&o->data, buf + d.off, d.len);
            FZ_CHECK(c.body_bytes == o->data.len, "body_bytes %llu, spans gave %zu",
                     (unsigned long long)c.body_bytes, o->data.len);
            pos += used;
            deliver = 0;
            continue;
        }
        if (r == CSH_INCOMPLETE) {
            pos += used;
            if (avail < size) {
                deliver = 1;
                continue;
            }
            o->result = CSH_INCOMPLETE;
            o->at = 0; /* where a decoder stops at the end of the input is its own business */
            break;
        }
        FZ_CHECK(r == CSH_OK || r < 0, "csh_chunked_decode returned %d", r);
        if (r < 0) {
            FZ_CHECK(fz_request_status_ok(csh_error_status(r)) && r != CSH_E_INVALID_ARGUMENT,
                     "%s with status %d", csh_error_name(r), csh_error_status(r));
            o->result = r;
            o->at = pos + used;
            size_t u2 = (size_t)-1;
            csh_span d2;
            FZ_CHECK(csh_chunked_decode(&c, buf, len, &u2, &d2) == r, "error %s not sticky",
                     csh_error_name(r));
            break;
        }
        o->result = CSH_OK;
        o->at = pos + used;
        FZ_CHECK(c.chunks >= 1, "CSH_OK without a last chunk");
        FZ_CHECK(c.num_trailers <= cap, "%zu trailers stored, capacity %zu", c.num_trailers, cap);
        for (size_t i = 0; i < c.num_trailers; i++) {
            csh_header *h = &c.trailers[i];
            FZ_CHECK(fz_span_in(h->name, len) && fz_span_in(h->value, len),
                     "trailer %zu outside the last buffer (%zu bytes)", i, len);
            FZ_CHECK(h->name.len > 0, "trailer %zu with an empty name", i);
            fz_buf_escaped(&o->trailers, buf + h->name.off, h->name.len);
            fz_buf_put(&o->trailers, ": ", 2);
            fz_buf_escaped(&o->trailers, buf + h->value.off, h->value.len);
            fz_buf_put(&o->trailers, "\n", 1);
        }
        size_t u2 = (size_t)-1;
        csh_span d2;
        FZ_CHECK(csh_chunked_decode(&c, buf, len, &u2, &d2) == CSH_OK && u2 == 0,
                 "CSH_OK not sticky, or a later call consumed bytes");
        break;
    }
    o->chunks = c.chunks;
    FZ_CHECK(c.body_bytes == o->data.len, "body_bytes %llu, spans gave %zu",
             (unsigned long long)c.body_bytes, o->data.len);
    free(copy);
}

static int same_buf(const fz_buf *a, const fz_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int modes[4] = {FZ_SPLIT_SMALL, FZ_SPLIT_BYTES, FZ_SPLIT_SMALL, FZ_SPLIT_LARGE};
    static outcome whole, split;
    if (size < 3) return 0;
    unsigned setup = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8;
    const char *in = (const char *)data + 3;
    size_t n = size - 3;

    unsigned flags = 0;
    if (setup & 1) flags |= CSH_PARSE_LENIENT_BARE_LF;
    if (setup & 0x80) flags |= CSH_PARSE_NO_SIMD;
    size_t cap = (setup >> 1) & 7;
    csh_limits tiny, *limits = NULL;
    if (setup & 0x10) {
        csh_limits_init(&tiny);
        fz_limits_tiny(&tiny);
        limits = &tiny;
    }
    int mode = modes[(setup >> 5) & 3];

    decode(in, n, flags, limits, cap, FZ_SPLIT_WHOLE, seed, &whole);
    decode(in, n, flags, limits, cap, mode, seed, &split);
    if (whole.result != split.result || whole.at != split.at || whole.chunks != split.chunks ||
        !same_buf(&whole.data, &split.data) || !same_buf(&whole.trailers, &split.trailers)) {
        fprintf(stderr, "\nfuzz_chunked: whole and split decoding differ (setup 0x%02x)\n", setup);
        fz_print_escaped("input", in, n);
        fprintf(stderr, "whole: %s at %zu, %llu chunks\n", csh_error_name(whole.result), whole.at,
                (unsigned long long)whole.chunks);
        fz_print_escaped("whole data", whole.data.data, whole.data.len);
        fz_print_escaped("whole trailers", whole.trailers.data, whole.trailers.len);
        fprintf(stderr, "split: %s at %zu, %llu chunks\n", csh_error_name(split.result), split.at,
                (unsigned long long)split.chunks);
        fz_print_escaped("split data", split.data.data, split.data.len);
        fz_print_escaped("split trailers", split.trailers.data, split.trailers.len);
        FZ_CHECK(0, "whole and split chunked decoding differ");
    }
    return 0;
}
