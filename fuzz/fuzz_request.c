/* fuzz_request: the input is what a client sent on one connection. It is
 * played as a server would: head, body (csh_body), next message, until the
 * input ends or an error stops the connection. fz_run checks, on every call,
 * that spans lie inside the buffer, head_length and consumed never pass the
 * bytes given, error statuses are 400/413/414/431/501/505, error offsets lie
 * inside the input, and the parsed head is consistent (fz_check_message).
 *
 * Each input is played twice: strict with the default limits, and lenient
 * about bare LF with tiny limits, so that every limit (414, 431, chunk
 * extension, trailer section) is reachable with inputs of a few hundred
 * bytes. */
#include <stddef.h>
#include <stdint.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_config cfg = {0};
    fz_result res;

    cfg.type = CSH_REQUEST;
    cfg.trailers_cap = FZ_MAX_TRAILERS;
    fz_run(&cfg, data, size, &res);
    FZ_CHECK(res.end <= size, "end %zu past the input", res.end);
    FZ_CHECK(res.complete <= res.messages, "more complete messages than heads");

    csh_limits tiny;
    csh_limits_init(&tiny);
    fz_limits_tiny(&tiny);
    cfg.flags = CSH_PARSE_LENIENT_BARE_LF;
    cfg.limits = &tiny;
    cfg.trailers_cap = 2;
    fz_run(&cfg, data, size, &res);
    FZ_CHECK(res.end <= size, "end %zu past the input", res.end);
    return 0;
}
