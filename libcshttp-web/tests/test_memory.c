/* cshw_memory: the in-memory transport and cshw_memory_serve, the engine
 * every other test drives the toolkit with: heads parsed from pieces of
 * any size, body bytes copied with the head handed over first, pipelining
 * (RFC 9112 §9.3.2), parse errors answered with their status and
 * Connection: close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tw.h"

static void hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", "utf-8");
    cshw_response_printf(res, "%s %s", cshw_request_method(req), cshw_request_target(req));
}

static void test_get_whole_and_byte_by_byte(void **state)
{
    (void)state;
    static const char in[] = "GET /hello?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
    for (size_t piece = 0; piece <= 3; piece++) {
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, piece, NULL, hello);
        assert_int_equal(run.served, 1);
        assert_int_equal(run.n, 1);
        assert_int_equal(run.r[0].status, 200);
        assert_string_equal(run.r[0].body, "GET /hello?x=1");
        assert_string_equal(tw_field(&run.r[0], "content-length"), "14");
        assert_string_equal(tw_field(&run.r[0], "content-type"), "text/plain; charset=utf-8");
        assert_null(tw_field(&run.r[0], "server"));
        assert_non_null(tw_field(&run.r[0], "date"));
        tw_free(&run);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_whole_and_byte_by_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
