/* One body reader over the framings of RFC 9112 §6.3. */
#include "cshttp/body.h"

void csh_body_init(csh_body *b, const csh_message *msg, const csh_limits *limits, unsigned flags,
                   csh_header *trailers, size_t trailers_cap)
{
    /* the decoder is always prepared, so that csh_body_reset can switch to
     * any framing later without its limits */
    csh_chunked_init(&b->chunked, limits, flags, trailers, trailers_cap);
    b->kind = CSH_BODY_NONE;
    b->received = 0;
    b->remaining_ = 0;
    b->done_ = 1;
    if (msg) csh_body_reset(b, msg);
}

void csh_body_reset(csh_body *b, const csh_message *msg)
{
    b->kind = msg->body;
    b->received = 0;
    b->remaining_ = msg->body == CSH_BODY_LENGTH ? msg->content_length : 0;
    b->done_ = msg->body == CSH_BODY_NONE || (msg->body == CSH_BODY_LENGTH && b->remaining_ == 0);
    if (msg->body == CSH_BODY_CHUNKED) csh_chunked_reset(&b->chunked);
}

int csh_body_read(csh_body *b, const char *buf, size_t len, size_t *consumed, csh_span *data)
{
    *consumed = 0;
    if (b->done_) return CSH_OK;
    if (buf == NULL && len > 0) return CSH_E_INVALID_ARGUMENT;

    switch (b->kind) {
    case CSH_BODY_LENGTH:
    case CSH_BODY_UNTIL_CLOSE: {
        size_t n = len;
        if (b->kind == CSH_BODY_LENGTH && (uint64_t)n > b->remaining_) n = (size_t)b->remaining_;
        if (n == 0) return CSH_INCOMPLETE;
        data->off = 0;
        data->len = n;
        *consumed = n;
        b->received += n;
        if (b->kind == CSH_BODY_LENGTH) {
            b->remaining_ -= n;
            /* the next call says CSH_OK, so that one call returns one span */
            if (b->remaining_ == 0) b->done_ = 1;
        }
        return CSH_DATA;
    }
    case CSH_BODY_CHUNKED: {
        int r = csh_chunked_decode(&b->chunked, buf, len, consumed, data);
        if (r == CSH_DATA) b->received += data->len;
        if (r == CSH_OK) b->done_ = 1;
        return r;
    }
    default:
        b->done_ = 1;
        return CSH_OK;
    }
}

int csh_body_finish(csh_body *b)
{
    if (b->done_ || b->kind == CSH_BODY_UNTIL_CLOSE) {
        b->done_ = 1;
        return CSH_OK;
    }
    return CSH_E_BODY_TRUNCATED;
}
