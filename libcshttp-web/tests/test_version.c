/* The umbrella header compiles alone and the runtime version matches version.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cshttp/web/web.h"

static void test_version_matches_header(void **state)
{
    (void)state;
    assert_int_equal(cshw_version(), CSHW_VERSION_HEX);
    assert_string_equal(cshw_version_string(), CSHW_VERSION_STRING);
    assert_int_equal(CSHW_VERSION_HEX >> 16, CSHW_VERSION_MAJOR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_version_matches_header)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
