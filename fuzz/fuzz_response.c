/* fuzz_response: the input is what a server sent on one connection, played as
 * a client would (head, body, next response; a 1xx is followed by the final
 * response; a tunnel or a body until close ends the connection).
 *
 * Input: byte 0 chooses the setup, the rest are the response bytes.
 *   bits 0-1  the request method: 0 GET, 1 HEAD, 2 CONNECT, 3 GET
 *   bit 2     CSH_PARSE_LENIENT_BARE_LF
 *   bit 3     tiny limits instead of the defaults
 *   bits 4-6  trailer fields to store (0..7)
 * Checks: those of fz_run (spans, consumed, statuses: 400/413/414/431/501/505
 * or 502 for response-only errors) plus RFC 9112 §6.3 framing (HEAD, 1xx,
 * 204, 304 have no body; 2xx to CONNECT and 101 are tunnels). */
#include <stddef.h>
#include <stdint.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const csh_method methods[4] = {CSH_METHOD_GET, CSH_METHOD_HEAD, CSH_METHOD_CONNECT,
                                          CSH_METHOD_GET};
    if (size < 1) return 0;
    unsigned setup = data[0];
    fz_config cfg = {0};
    fz_result res;
    csh_limits tiny;

    cfg.type = CSH_RESPONSE;
    cfg.request_method = methods[setup & 3];
    if (setup & 4) cfg.flags |= CSH_PARSE_LENIENT_BARE_LF;
    if (setup & 8) {
        csh_limits_init(&tiny);
        fz_limits_tiny(&tiny);
        cfg.limits = &tiny;
    }
    cfg.trailers_cap = (setup >> 4) & 7;
    fz_run(&cfg, data + 1, size - 1, &res);
    FZ_CHECK(res.end <= size - 1, "end %zu past the input", res.end);
    FZ_CHECK(res.complete <= res.messages, "more complete messages than heads");
    return 0;
}
