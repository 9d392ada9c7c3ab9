/* html.c: the five characters that end text or a quoted attribute value
 * (HTML Living Standard §13.1.2.6 and §13.1.4: '&' and '<' in text, '"' or
 * '\'' ending a quoted attribute value), into an arena or a buffer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/buf.h"
#include "cshttp/web/html.h"

static void encodes(cshw_arena *a, const char *in, size_t len, const char *want)
{
    const char *out = NULL;
    size_t n = 0;
    assert_int_equal(cshw_html_encode(a, in, len, &out, &n), 0);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));

    cshw_buf b;
    cshw_buf_init(&b, NULL);
    assert_int_equal(cshw_buf_append_str(&b, "pre:"), 0);
    assert_int_equal(cshw_html_encode_buf(&b, in, len), 0);
    assert_int_equal(b.len, 4 + strlen(want));
    assert_memory_equal(b.data, "pre:", 4);
    assert_string_equal(b.data + 4, want);
    cshw_buf_free(&b);
}

static void test_entities(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(0);
    encodes(a, "", 0, "");
    encodes(a, "plain text 123", 14, "plain text 123");
    encodes(a, "&", 1, "&amp;");
    encodes(a, "<", 1, "&lt;");
    encodes(a, ">", 1, "&gt;");
    encodes(a, "\"", 1, "&quot;");
    encodes(a, "'", 1, "&#39;");
    encodes(a, "<script>alert('x&y')</script>", 29,
            "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;");
    encodes(a, "\" onmouseover=\"x", 16, "&quot; onmouseover=&quot;x");
    /* already escaped text is escaped again: encoding is not idempotent */
    encodes(a, "&amp;", 5, "&amp;amp;");
    /* UTF-8 and other bytes pass through */
    encodes(a, "caf\xc3\xa9 \xff", 7, "caf\xc3\xa9 \xff");
    cshw_arena_free(a);
}

/* The worst case: every byte grows to six. */
static void test_growth(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(128);
    char in[5000];
    memset(in, '"', sizeof in);
    const char *out;
    size_t n;
    assert_int_equal(cshw_html_encode(a, in, sizeof in, &out, &n), 0);
    assert_int_equal(n, 6 * sizeof in);
    for (size_t i = 0; i < n; i += 6) assert_memory_equal(out + i, "&quot;", 6);
    cshw_buf b;
    cshw_buf_init(&b, a);
    for (int i = 0; i < 10; i++) assert_int_equal(cshw_html_encode_buf(&b, in, sizeof in), 0);
    assert_int_equal(b.len, 10 * 6 * sizeof in);
    assert_int_equal(b.data[b.len], '\0');
    cshw_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entities),
        cmocka_unit_test(test_growth),
    };
    return cmocka_run_group_tests_name("html", tests, NULL, NULL);
}
