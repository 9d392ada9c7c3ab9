/* One reader for every body framing a parsed head can announce: none, a
 * Content-Length, chunked, or until the connection closes (responses).
 *
 * Use, after csh_parser_execute returned CSH_OK:
 *   csh_body b;
 *   csh_body_init(&b, &p.msg, NULL, 0, NULL, 0);
 *   buf/len: the bytes after the head (buf + p.msg.head_length ...)
 *   loop: r = csh_body_read(&b, buf, len, &used, &data);
 *     CSH_DATA: data is a span of buf; advance by used and call again (when
 *       used == len, a call without new bytes can only return CSH_INCOMPLETE,
 *       or CSH_OK if csh_body_done: waiting for more bytes is enough)
 *     CSH_INCOMPLETE: keep buf[used .. len), call again when more arrived
 *     CSH_OK: the body ended after `used` bytes; the next message follows
 *     < 0: error
 *   on end of input: csh_body_finish(&b) says whether that ends the body
 *   cleanly (CSH_BODY_UNTIL_CLOSE) or truncates it (CSH_E_BODY_TRUNCATED).
 *
 * One reader for a connection: csh_body_init once (msg may be NULL), then
 * csh_body_reset(&b, &p.msg) for each message: the limits and the chunked
 * decoder are prepared once. csh_body_next is csh_body_read with the common
 * steps inline (Content-Length data, chunk data, a call without bytes).
 *
 * Ownership: caller-owned struct; no allocation, no I/O; data spans refer to
 * the buffer of the call that returned them. One thread at a time. */
#ifndef CSHTTP_BODY_H
#define CSHTTP_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "chunked.h"
#include "export.h"
#include "parser.h"
#include "span.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csh_body {
    csh_body_kind kind;
    uint64_t received;   /* body data bytes returned so far */
    uint64_t remaining_; /* CSH_BODY_LENGTH: bytes still to come */
    int done_;
    csh_chunked chunked; /* CSH_BODY_CHUNKED: the decoder (trailers, counts) */
} csh_body;

/* Prepares `b` to read the body `msg` announces. `limits`, `flags`,
 * `trailers` and `trailers_cap` are passed to csh_chunked_init, for chunked
 * bodies (may be NULL/0). `msg` may be NULL: the reader is then prepared for
 * csh_body_reset and reads nothing before it (csh_body_read says CSH_OK). */
CSH_EXPORT void csh_body_init(csh_body *b, const csh_message *msg, const csh_limits *limits,
                              unsigned flags, csh_header *trailers, size_t trailers_cap);

/* Prepares `b`, initialised once by csh_body_init, to read the body `msg`
 * announces, with the limits, flags and trailer array given to csh_body_init.
 * Nothing of the setup is redone: the limits are not read again and the
 * chunked decoder is reset (csh_chunked_reset), not initialised, so this costs
 * far less than csh_body_init. */
CSH_EXPORT void csh_body_reset(csh_body *b, const csh_message *msg);

/* Reads body bytes from buf[0 .. len): see the loop above. Never consumes a
 * byte past the end of the body. */
CSH_EXPORT int csh_body_read(csh_body *b, const char *buf, size_t len, size_t *consumed,
                             csh_span *data);

/* csh_body_read, same contract and results, with its common cases inline:
 * Content-Length data, chunk data in the middle of a chunk (neither looks at
 * a byte) and a call without bytes (CSH_INCOMPLETE unless the body ended or
 * failed). Anything else is handed to csh_body_read. */
static inline int csh_body_next(csh_body *b, const char *buf, size_t len, size_t *consumed,
                                csh_span *data)
{
    if (len > 0 && buf) {
        size_t n = len;
        if (b->kind == CSH_BODY_LENGTH && !b->done_) { /* not done: remaining_ > 0 */
            if ((uint64_t)n >= b->remaining_) {
                n = (size_t)b->remaining_;
                b->done_ = 1;
            }
            b->remaining_ -= n;
        } else if (b->kind == CSH_BODY_CHUNKED && b->chunked.remaining_ > 0) {
            /* in chunk data; the decoder moves past the chunk's end */
            if ((uint64_t)n > b->chunked.remaining_) n = (size_t)b->chunked.remaining_;
            b->chunked.remaining_ -= n;
            b->chunked.body_bytes += n;
        } else {
            return csh_body_read(b, buf, len, consumed, data);
        }
        b->received += n;
        data->off = 0;
        data->len = n;
        *consumed = n;
        return CSH_DATA;
    }
    if (len == 0 && !b->done_ && b->kind != CSH_BODY_NONE &&
        (b->kind != CSH_BODY_CHUNKED || b->chunked.result_ == CSH_INCOMPLETE)) {
        *consumed = 0;
        return CSH_INCOMPLETE;
    }
    return csh_body_read(b, buf, len, consumed, data);
}

/* 1 once the body has ended: right after the CSH_DATA that carried the last
 * byte of a Content-Length body (no further call is needed to learn it:
 * the next message starts after `used`), or once csh_body_read returned
 * CSH_OK. A chunked body ends with its last chunk and trailer section,
 * which only a call that reads them can report. */
static inline int csh_body_done(const csh_body *b)
{
    return b->done_;
}

/* The input ended (the peer closed). CSH_OK if the body is complete (or ends
 * with the connection), CSH_E_BODY_TRUNCATED otherwise. */
CSH_EXPORT int csh_body_finish(csh_body *b);

#ifdef __cplusplus
}
#endif

#endif
