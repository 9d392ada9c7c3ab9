/* The chunked transfer coding decoder (RFC 9112 §7.1): incremental and
 * zero-copy. Chunk data comes back as spans of the caller's buffer; chunk
 * framing is consumed as it is validated.
 *
 * Use:
 *   csh_chunked c;
 *   csh_chunked_init(&c, NULL, 0, NULL, 0);
 *   loop: r = csh_chunked_decode(&c, buf, len, &used, &data);
 *     CSH_DATA:       data is a span of buf; buf += used, len -= used; again
 *     CSH_INCOMPLETE: keep buf[used .. len) and call again with more after it
 *     CSH_OK:         the body ended after `used` bytes (last chunk + trailers)
 *     < 0:            an error, at buf + used
 *
 * Chunk-size lines (size, extensions, CRLF) are validated and consumed as
 * they come: a line whole in the buffer with no extension in one go, any
 * other a byte at a time, so a size line split across calls costs nothing
 * extra.
 * Only an unfinished trailer section is left unconsumed: bytes not consumed
 * (buf[used .. len)) must be passed again, first, in the next call, and the
 * decoder remembers how far it has already parsed them, so no byte is
 * examined twice.
 *
 * Trailer fields are validated like header fields (RFC 9112 §7.1.2) and, on
 * CSH_OK, described in the array given to csh_chunked_init as spans of the
 * buffer passed to that last call (the whole trailer section is in it).
 *
 * Ownership: caller-owned struct; no allocation, no I/O. One thread at a
 * time per decoder. */
#ifndef CSHTTP_CHUNKED_H
#define CSHTTP_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "parser.h"
#include "span.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csh_chunked {
    uint64_t body_bytes;  /* decoded data bytes so far */
    uint64_t chunks;      /* chunks seen, the last (zero) chunk included */
    csh_header *trailers; /* array given to csh_chunked_init (may be NULL) */
    size_t num_trailers;  /* trailer fields stored (valid on CSH_OK) */

    csh_limits_kept_ limits_;
    uint64_t remaining_; /* data bytes left in the current chunk: nonzero only
                            while in chunk data (csh_body_next reads it) */
    uint64_t size_;      /* chunk size being read */
    size_t ext_len_;     /* extension bytes on the current size line */
    size_t trailer_cap_;
    size_t fields_seen_; /* trailer fields seen, stored or not */
    csh_line_state_ ls_; /* trailer section: offsets from its first byte */
    unsigned flags_;
    int digits_;
    int simd_;
    int state_;
    int result_;
} csh_chunked;

/* Prepares `c` to decode one chunked body. `limits` may be NULL for the
 * defaults (max_chunk_ext, max_trailer, max_field_line and max_fields apply)
 * and is read as csh_parser_init reads it (a bad size: every decode returns
 * CSH_E_INVALID_ARGUMENT).
 * `trailers` (capacity `trailers_cap`, may be NULL/0) receives trailer fields;
 * more trailer fields than the capacity are validated but not stored, more
 * than max_fields is CSH_E_TOO_MANY_FIELDS. `flags`: CSH_PARSE_LENIENT_BARE_LF. */
CSH_EXPORT void csh_chunked_init(csh_chunked *c, const csh_limits *limits, unsigned flags,
                                 csh_header *trailers, size_t trailers_cap);

/* Prepares `c`, already initialised by csh_chunked_init, to decode another
 * chunked body with the same limits, flags and trailer array: the decoding
 * state and the counts are cleared, nothing else is copied or recomputed
 * (far less work than csh_chunked_init). */
CSH_EXPORT void csh_chunked_reset(csh_chunked *c);

/* Decodes from buf[0 .. len). Sets *consumed to the bytes used (never more
 * than len) and, on CSH_DATA, *data to a span of chunk data in `buf`
 * (data->len > 0). Returns CSH_DATA, CSH_INCOMPLETE, CSH_OK (body complete;
 * later calls return CSH_OK and consume nothing) or a negative csh_error (the
 * error was found at buf + *consumed; later calls return it again). */
CSH_EXPORT int csh_chunked_decode(csh_chunked *c, const char *buf, size_t len, size_t *consumed,
                                  csh_span *data);

#ifdef __cplusplus
}
#endif

#endif
