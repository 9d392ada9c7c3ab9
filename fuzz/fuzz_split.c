/* fuzz_split: a resumable parser must not care how its input was cut.
 *
 * The input is played (fz_run) once whole and once fed in pieces: the head on
 * a growing buffer that moves on every call (a fresh heap copy), the body
 * decoder getting its unconsumed bytes again with what arrived after them
 * (body.h). Both runs write a transcript of everything they saw: each
 * message's result, method, target, version, status, reason, every field
 * (offsets and bytes), body kind, content length, flags, the de-chunked body
 * bytes, trailers, error codes and offsets, and the number of messages. The
 * transcripts must be identical. So must the transcript of a whole run with
 * CSH_PARSE_NO_SIMD (the portable scanner against the SIMD one). A strict
 * run and a lenient one must agree on every message the strict run accepted
 * (leniency only concerns bare LF).
 *
 * Input: bytes 0..2 are the setup, the rest the messages.
 *   byte 0 bit 0     responses instead of requests
 *          bit 1     CSH_PARSE_LENIENT_BARE_LF
 *          bits 2-3  responses: request method 0 GET, 1 HEAD, 2 CONNECT, 3 POST
 *          bits 4-5  pieces: 0 and 2 of 1..16 bytes, 1 single bytes, 3 of 1..512
 *          bit 6     tiny limits instead of the defaults
 *          bit 7     the split run uses CSH_PARSE_NO_SIMD too
 *   bytes 1-2        seed of the piece sizes */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void compare(const char *what, const fz_buf *a, const fz_buf *b, const uint8_t *in,
                    size_t size, unsigned setup)
{
    if (fz_verbose()) {
        fprintf(stderr, "fuzz_split: %s (setup 0x%02x)\n", what, setup);
        fprintf(stderr, "---- reference transcript:\n%.*s", (int)a->len, a->data);
        fprintf(stderr, "---- other transcript:\n%.*s", (int)b->len, b->data);
    }
    if (a->len == b->len && memcmp(a->data, b->data, a->len) == 0) return;
    size_t i = 0;
    while (i < a->len && i < b->len && a->data[i] == b->data[i]) i++;
    size_t line = i;
    while (line > 0 && a->data[line - 1] != '\n') line--;
    fprintf(stderr, "\nfuzz_split: %s differ (setup byte 0x%02x)\n", what, setup);
    fz_print_escaped("input", in, size);
    fprintf(stderr, "---- reference transcript:\n%.*s", (int)a->len, a->data);
    fprintf(stderr, "---- other transcript:\n%.*s", (int)b->len, b->data);
    fprintf(stderr, "---- first difference at transcript byte %zu, in the line starting:\n%.*s\n",
            i, (int)((a->len - line) < 200 ? a->len - line : 200), a->data + line);
    FZ_CHECK(0, "%s differ", what);
}

/* Offset of the last line of `b` that starts a message ("message K at"). */
static size_t last_message_line(const fz_buf *b)
{
    size_t at = 0;
    for (size_t i = 0; i + 8 <= b->len; i++)
        if ((i == 0 || b->data[i - 1] == '\n') && memcmp(b->data + i, "message ", 8) == 0) at = i;
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const csh_method methods[4] = {CSH_METHOD_GET, CSH_METHOD_HEAD, CSH_METHOD_CONNECT,
                                          CSH_METHOD_POST};
    static const int modes[4] = {FZ_SPLIT_SMALL, FZ_SPLIT_BYTES, FZ_SPLIT_SMALL, FZ_SPLIT_LARGE};
    static fz_buf whole, other;
    if (size < 3) return 0;
    unsigned setup = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8;
    const uint8_t *in = data + 3;
    size_t n = size - 3;

    csh_limits tiny;
    csh_limits_init(&tiny);
    fz_limits_tiny(&tiny);

    fz_config cfg = {0};
    fz_result r1, r2;
    cfg.type = (setup & 1) ? CSH_RESPONSE : CSH_REQUEST;
    cfg.flags = (setup & 2) ? CSH_PARSE_LENIENT_BARE_LF : 0;
    cfg.request_method = methods[(setup >> 2) & 3];
    cfg.limits = (setup & 0x40) ? &tiny : NULL;
    cfg.trailers_cap = 4;
    cfg.seed = seed;

    fz_buf_clear(&whole);
    cfg.transcript = &whole;
    cfg.split = FZ_SPLIT_WHOLE;
    fz_run(&cfg, in, n, &r1);

    fz_config s = cfg;
    fz_buf_clear(&other);
    s.transcript = &other;
    s.split = modes[(setup >> 4) & 3];
    if (setup & 0x80) s.flags |= CSH_PARSE_NO_SIMD;
    fz_run(&s, in, n, &r2);
    compare("whole and split transcripts", &whole, &other, in, n, setup);
    FZ_CHECK(r1.messages == r2.messages && r1.complete == r2.complete && r1.end == r2.end &&
                 r1.last == r2.last,
             "whole and split results differ");

    s = cfg;
    fz_buf_clear(&other);
    s.transcript = &other;
    s.flags |= CSH_PARSE_NO_SIMD;
    fz_run(&s, in, n, &r2);
    compare("SIMD and portable-scanner transcripts", &whole, &other, in, n, setup);

    /* Strict against lenient: leniency only concerns bare LF, and a strict
     * parser stops at the first bare LF that matters. So every message the
     * strict run completed must come out of the lenient run identically, and
     * if the strict run ended without an error, the whole transcripts must be
     * equal. (Whether the input holds a bare LF does not tell: after chunk
     * data ending in CR, "\r" "\n" is data then a bare LF.) */
    s = cfg;
    s.flags ^= CSH_PARSE_LENIENT_BARE_LF;
    fz_buf_clear(&other);
    s.transcript = &other;
    s.split = FZ_SPLIT_WHOLE;
    fz_run(&s, in, n, &r2);
    const fz_buf *strict = (cfg.flags & CSH_PARSE_LENIENT_BARE_LF) ? &other : &whole;
    const fz_buf *lenient = (cfg.flags & CSH_PARSE_LENIENT_BARE_LF) ? &whole : &other;
    int strict_ok = (cfg.flags & CSH_PARSE_LENIENT_BARE_LF) ? r2.last >= 0 : r1.last >= 0;
    fz_buf prefix = *strict;
    if (!strict_ok) prefix.len = last_message_line(strict);
    fz_buf lprefix = *lenient;
    if (!strict_ok && lprefix.len > prefix.len) lprefix.len = prefix.len;
    compare(strict_ok ? "strict and lenient transcripts"
                      : "strict and lenient transcripts of the messages strict accepted",
            &prefix, &lprefix, in, n, setup);
    return 0;
}
