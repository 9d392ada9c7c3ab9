/* buf.c: the growable buffer, malloc- and arena-backed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/buf.h"

static void fill_and_check(cshw_buf *b)
{
    assert_null(b->data);
    assert_int_equal(b->len, 0);
    assert_int_equal(cshw_buf_append(b, "", 0), 0);
    assert_null(b->data); /* nothing appended, nothing allocated */
    for (int i = 0; i < 1000; i++) {
        char c = (char)('a' + i % 26);
        assert_int_equal(cshw_buf_append_byte(b, c), 0);
        assert_int_equal(b->len, (size_t)i + 1);
        assert_int_equal(b->data[i], c);
        assert_int_equal(b->data[b->len], '\0');
        assert_true(b->cap > b->len);
    }
    assert_int_equal(cshw_buf_append_str(b, "xyz"), 0);
    assert_int_equal(b->len, 1003);
    assert_string_equal(b->data + 1000, "xyz");
    assert_int_equal(b->data[25], 'z');
    /* NUL bytes are data */
    assert_int_equal(cshw_buf_append(b, "\0\0", 2), 0);
    assert_int_equal(b->len, 1005);
    size_t cap = b->cap;
    cshw_buf_clear(b);
    assert_int_equal(b->len, 0);
    assert_int_equal(b->cap, cap);
    assert_string_equal(b->data, "");
    assert_int_equal(cshw_buf_reserve(b, 100000), 0);
    assert_true(b->cap >= 100001);
    assert_int_equal(b->len, 0);
    assert_int_equal(cshw_buf_reserve(b, SIZE_MAX), -ENOMEM);
    assert_int_equal(cshw_buf_append_str(b, "again"), 0);
    assert_string_equal(b->data, "again");
}

static void test_malloc_backed(void **state)
{
    (void)state;
    cshw_buf b;
    cshw_buf_init(&b, NULL);
    fill_and_check(&b);
    cshw_buf_free(&b); /* LeakSanitizer checks that it freed */
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(cshw_buf_append_str(&b, "reused"), 0);
    assert_string_equal(b.data, "reused");
    cshw_buf_free(&b);
    cshw_buf_free(&b); /* twice is harmless */
}

static void test_arena_backed(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(256);
    cshw_buf b;
    cshw_buf_init(&b, a);
    fill_and_check(&b);
    size_t used = cshw_arena_used(a);
    assert_true(used >= b.cap);
    cshw_buf_free(&b); /* forgets; the arena owns the memory */
    assert_null(b.data);
    cshw_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malloc_backed),
        cmocka_unit_test(test_arena_backed),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
