/* cshw_options: the defaults, and validation whose message names the field
 * at fault; the core's rows of the error table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tw.h"

static void test_defaults(void **state)
{
    (void)state;
    cshw_options o;
    memset(&o, 0xa5, sizeof o);
    cshw_options_init(&o);
    assert_int_equal(o.response_buffer, 16384);
    assert_int_equal(o.gzip, 1);
    assert_int_equal(o.gzip_min_bytes, 1024);
    assert_int_equal(o.gzip_level, 6);
    assert_int_equal(o.max_form_bytes, 16u << 20);
    assert_int_equal(o.upload_memory_threshold, 65536);
    assert_string_equal(o.temp_dir, "/tmp");
    assert_int_equal(o.max_drain_bytes, 65536);
    assert_int_equal(o.max_form_parts, 1000);
    assert_int_equal(o.max_part_header, 16384);
    assert_null(o.server_header);
    assert_int_equal(o.size, sizeof o);
    const char *why = "unchanged";
    assert_int_equal(cshw_options_check(&o, &why), 0);
    assert_null(why);
    assert_int_equal(cshw_options_check(&o, NULL), 0);
}

typedef void (*spoil_fn)(cshw_options *o);

static void buffer_small(cshw_options *o)
{
    o->response_buffer = 255;
}
static void buffer_huge(cshw_options *o)
{
    o->response_buffer = (64u << 20) + 1;
}
static void gzip_two(cshw_options *o)
{
    o->gzip = 2;
}
static void gzip_negative(cshw_options *o)
{
    o->gzip = -1;
}
static void level_zero(cshw_options *o)
{
    o->gzip_level = 0;
}
static void level_ten(cshw_options *o)
{
    o->gzip_level = 10;
}
static void form_zero(cshw_options *o)
{
    o->max_form_bytes = 0;
}
static void temp_null(cshw_options *o)
{
    o->temp_dir = NULL;
}
static void temp_empty(cshw_options *o)
{
    o->temp_dir = "";
}
static void temp_relative(cshw_options *o)
{
    o->temp_dir = "tmp";
}
static void parts_zero(cshw_options *o)
{
    o->max_form_parts = 0;
}
static void part_header_small(cshw_options *o)
{
    o->max_part_header = 63;
}
static void server_empty(cshw_options *o)
{
    o->server_header = "";
}
static void server_crlf(cshw_options *o)
{
    o->server_header = "x\r\nSet-Cookie: a=b";
}
static void server_control(cshw_options *o)
{
    o->server_header = "x\x01";
}
static void server_spaces(cshw_options *o)
{
    o->server_header = " x ";
}

/* a struct filled without cshw_options_init */
static void size_zero(cshw_options *o)
{
    o->size = 0;
}

static void size_short(cshw_options *o)
{
    o->size = CSHW_OPTIONS_SIZE_0_2 - 1;
}

static void test_check_names_the_field(void **state)
{
    (void)state;
    static const struct {
        spoil_fn spoil;
        const char *field;
    } cases[] = {
        {buffer_small, "response_buffer"},
        {buffer_huge, "response_buffer"},
        {gzip_two, "gzip "},
        {gzip_negative, "gzip "},
        {level_zero, "gzip_level"},
        {level_ten, "gzip_level"},
        {form_zero, "max_form_bytes"},
        {temp_null, "temp_dir"},
        {temp_empty, "temp_dir"},
        {temp_relative, "temp_dir"},
        {parts_zero, "max_form_parts"},
        {part_header_small, "max_part_header"},
        {server_empty, "server_header"},
        {server_crlf, "server_header"},
        {server_control, "server_header"},
        {server_spaces, "server_header"},
        {size_zero, "size must be set by cshw_options_init"},
        {size_short, "size must be set by cshw_options_init"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cshw_options o;
        cshw_options_init(&o);
        cases[i].spoil(&o);
        const char *why = NULL;
        assert_int_equal(cshw_options_check(&o, &why), CSHW_E_INVALID_OPTION);
        assert_non_null(why);
        if (strncmp(why, cases[i].field, strlen(cases[i].field)) != 0)
            fail_msg("case %zu: \"%s\" does not name %s", i, why, cases[i].field);
        assert_int_equal(cshw_options_check(&o, NULL), CSHW_E_INVALID_OPTION);
        /* nothing is built on bad options */
        assert_null(cshw_context_new(&o));
        cshw_memory *m = cshw_memory_new("GET / HTTP/1.1\r\nHost: h\r\n\r\n", 27, 0);
        assert_int_equal(cshw_memory_serve(m, &o, NULL), CSHW_E_INVALID_OPTION);
        size_t n;
        cshw_memory_output(m, &n);
        assert_int_equal(n, 0);
        cshw_memory_free(m);
    }
}

/* options.h: the toolkit reads only the fields within o->size. A caller
 * built against the first headers with `size` hands a struct of
 * CSHW_OPTIONS_SIZE_0_2 bytes: here in an allocation of exactly that size,
 * so that a read past it is an ASan report. One built against newer headers
 * hands a bigger one: the fields this library does not know are ignored. */
static void test_options_read_within_size(void **state)
{
    (void)state;
    cshw_options *old = malloc(CSHW_OPTIONS_SIZE_0_2);
    assert_non_null(old);
    /* what cshw_options_init does in such a caller: it writes no more */
    cshw_options_init_sized(old, CSHW_OPTIONS_SIZE_0_2);
    assert_int_equal(old->size, CSHW_OPTIONS_SIZE_0_2);
    assert_string_equal(old->temp_dir, "/tmp");
    old->gzip_level = 3;
    assert_int_equal(cshw_options_check(old, NULL), 0);
    cshw_context *ctx = cshw_context_new(old);
    assert_non_null(ctx);
    assert_int_equal(cshw_context_options(ctx)->gzip_level, 3);
    /* the context's copy is this library's whole struct */
    assert_int_equal(cshw_context_options(ctx)->size, sizeof(cshw_options));
    cshw_context_free(ctx);
    free(old);

    size_t big[sizeof(cshw_options) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_options *newer = (cshw_options *)(void *)big;
    cshw_options_init_sized(newer, sizeof big);
    /* what this library does not know is zeroed, not left as it was */
    for (size_t i = sizeof(cshw_options) / sizeof(size_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);
    newer->gzip_level = 3;
    big[sizeof big / sizeof big[0] - 1] = 12345; /* a newer field this library ignores */
    assert_int_equal(cshw_options_check(newer, NULL), 0);
    ctx = cshw_context_new(newer);
    assert_non_null(ctx);
    assert_int_equal(cshw_context_options(ctx)->gzip_level, 3);
    assert_int_equal(cshw_context_options(ctx)->size, sizeof(cshw_options));
    cshw_context_free(ctx);
}

static void test_check_accepts_edges(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    o.gzip = 0;
    o.gzip_level = 1;
    o.gzip_min_bytes = 0;
    o.max_form_bytes = 1;
    o.upload_memory_threshold = 0;
    o.max_drain_bytes = 0;
    o.max_form_parts = 1;
    o.max_part_header = 64;
    o.temp_dir = "/";
    o.server_header = "cshttp/0.1 (test; \xc3\xa9t\xc3\xa9)";
    assert_int_equal(cshw_options_check(&o, NULL), 0);
    o.response_buffer = 64u << 20;
    o.gzip = 1;
    o.gzip_level = 9;
    assert_int_equal(cshw_options_check(&o, NULL), 0);
}

/* The core's rows: -10100 .. -10199, each with a name, a message and the
 * status the toolkit answers. */
static void test_error_rows(void **state)
{
    (void)state;
    static const struct {
        int code;
        const char *name;
        int status;
    } rows[] = {
        {CSHW_E_HEADERS_SENT, "CSHW_E_HEADERS_SENT", 500},
        {CSHW_E_INVALID_HEADER, "CSHW_E_INVALID_HEADER", 500},
        {CSHW_E_INVALID_STATUS, "CSHW_E_INVALID_STATUS", 500},
        {CSHW_E_INVALID_OPTION, "CSHW_E_INVALID_OPTION", 500},
        {CSHW_E_NOT_ACTIVE, "CSHW_E_NOT_ACTIVE", 500},
        {CSHW_E_RESERVED_HEADER, "CSHW_E_RESERVED_HEADER", 500},
        {CSHW_E_INVALID_REDIRECT, "CSHW_E_INVALID_REDIRECT", 500},
        {CSHW_E_BODY_AFTER_FILE, "CSHW_E_BODY_AFTER_FILE", 500},
        {CSHW_E_BODY_CONSUMED, "CSHW_E_BODY_CONSUMED", 500},
        {CSHW_E_BODY_TRUNCATED, "CSHW_E_BODY_TRUNCATED", 400},
        {CSHW_E_BAD_BODY, "CSHW_E_BAD_BODY", 400},
        {CSHW_E_BODY_TOO_LARGE, "CSHW_E_BODY_TOO_LARGE", 413},
        {CSHW_E_EXPECTATION_FAILED, "CSHW_E_EXPECTATION_FAILED", 417},
        {CSHW_E_UPLOAD_FAILED, "CSHW_E_UPLOAD_FAILED", 500},
        {CSHW_E_FILE_READ, "CSHW_E_FILE_READ", 500},
        {CSHW_E_TRANSFER_CODING, "CSHW_E_TRANSFER_CODING", 501},
        {CSHW_E_BODY_LIMIT, "CSHW_E_BODY_LIMIT", 413}, /* RFC 9110 §15.5.14 */
        {CSHW_E_BODY_LENGTH, "CSHW_E_BODY_LENGTH", 500},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        assert_true(rows[i].code <= -10100 && rows[i].code >= -10199);
        assert_string_equal(cshw_error_name(rows[i].code), rows[i].name);
        assert_int_equal(cshw_error_status(rows[i].code), rows[i].status);
        assert_true(strlen(cshw_error_message(rows[i].code)) > 10);
        for (size_t j = 0; j < i; j++) assert_int_not_equal(rows[i].code, rows[j].code);
    }
    /* -errno: the C library's text, taken without strerror's shared buffer
     * (error.h promises thread safety); an unknown one still has a text */
    assert_string_equal(cshw_error_message(-EPIPE), "Broken pipe");
    assert_string_equal(cshw_error_message(-ETIMEDOUT), "Connection timed out");
    assert_string_equal(cshw_error_message(-4000), "system error");
    assert_int_equal(cshw_error_status(-ETIMEDOUT), 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_check_names_the_field),
        cmocka_unit_test(test_options_read_within_size),
        cmocka_unit_test(test_check_accepts_edges),
        cmocka_unit_test(test_error_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
