/* cshs_options: defaults, checks naming the field, argv and config file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/server.h>

#define CONF_PATH "test_options.conf"

/* every test's options and open files, released in teardown */
static cshs_options o;
static FILE *help_file;

static int setup(void **state)
{
    (void)state;
    cshs_options_init(&o);
    help_file = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cshs_options_release(&o);
    if (help_file) fclose(help_file);
    help_file = NULL;
    remove(CONF_PATH);
    return 0;
}

/* takes "root" only */
static char app_seen[64];
static int app_root(void *data, const char *name, const char *value, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    if (strcmp(name, "root") != 0) return 0;
    snprintf(data, sizeof app_seen, "%s", value);
    return 1;
}

static void write_conf(const char *text)
{
    FILE *f = fopen(CONF_PATH, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *why = NULL;
    assert_int_equal(cshs_options_check(&o, &why), 0);
    assert_null(why);
    assert_int_equal(o.port, 8080);
    assert_int_equal(o.min_threads, 2);
    assert_int_equal(o.loops, 0); /* one per CPU */
    assert_int_equal(o.offload_ms, 1000);
    assert_int_equal(o.header_timeout_ms, 10000);
    assert_int_equal(o.min_body_rate, 240);
    assert_int_equal(o.body_grace_ms, 5000);
    assert_int_equal(o.web.body_buffer, 65536);
    assert_int_equal(o.web.max_request_body, 16u << 20);
    assert_int_equal(o.write_high_water, 262144);
    assert_int_equal(o.linger_ms, 2000);
    assert_int_equal(o.linger_bytes, 1u << 20);
}

/* a refused value is named in the message */
static void expect_refused(const char *field)
{
    const char *why = NULL;
    assert_int_equal(cshs_options_check(&o, &why), -EINVAL);
    assert_non_null(why);
    assert_non_null(strstr(why, field));
}

static void test_check_names_the_field(void **state)
{
    (void)state;
    o.max_threads = 1;
    expect_refused("max_threads");
    cshs_options_init(&o);
    o.loops = 1025;
    expect_refused("loops");
    cshs_options_init(&o);
    o.offload_ms = 3600001;
    expect_refused("offload_ms");
    cshs_options_init(&o);
    o.port = 70000;
    expect_refused("port");
    cshs_options_init(&o);
    o.address = NULL;
    expect_refused("address");
    cshs_options_init(&o);
    o.web.gzip_level = 42;
    expect_refused("gzip_level");
    /* a header array the size of a config file's whim would overflow the
     * parser's allocation: bounded */
    cshs_options_init(&o);
    o.limits.max_fields = 100000;
    expect_refused("max_fields");
    cshs_options_init(&o);
    o.write_high_water = 10;
    expect_refused("write_high_water");
    cshs_options_init(&o);
    o.linger_ms = 600000;
    expect_refused("linger_ms");
    cshs_options_init(&o);
    o.web.body_buffer = 10;
    expect_refused("body_buffer");
}

static void test_parse_args(void **state)
{
    (void)state;
    char err[256];
    char a0[] = "prog", a1[] = "--port", a2[] = "9000", a3[] = "--keep",
         a4[] = "--header-timeout-ms=50", a5[] = "--address6", a6[] = "::1";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
    int argc = 7;
    assert_int_equal(cshs_options_parse_args(&o, &argc, argv, err, sizeof err), 0);
    assert_int_equal(o.port, 9000);
    assert_int_equal(o.header_timeout_ms, 50);
    assert_non_null(o.address6);
    assert_string_equal(o.address6, "::1");
    /* what the options did not take stays, in order */
    assert_int_equal(argc, 2);
    assert_string_equal(argv[1], "--keep");
    assert_null(argv[2]);

    char b1[] = "--port", b2[] = "x";
    char *argv2[] = {a0, b1, b2, NULL};
    argc = 3;
    assert_int_equal(cshs_options_parse_args(&o, &argc, argv2, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "port"));
}

static void test_set_refusals(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cshs_options_set(&o, "nope", "1", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(cshs_options_set(&o, "gzip", "maybe", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "gzip"));
}

static void test_config_file(void **state)
{
    (void)state;
    char err[256];
    write_conf("# a comment\n\nport = 1234\nkeepalive-timeout-ms = 77  # idle\n"
               "server_header = \"cshttpd\"\n");
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), 0);
    assert_int_equal(o.port, 1234);
    assert_int_equal(o.keepalive_timeout_ms, 77);
    assert_non_null(o.web.server_header);
    assert_string_equal(o.web.server_header, "cshttpd");

    /* a bad line is named by its number */
    write_conf("port = 1\nbogus line\n");
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":2:"));

    assert_int_equal(cshs_options_load_file(&o, "/nonexistent/x.conf", err, sizeof err), -ENOENT);
}

/* an application's own names in the same file */
static void test_config_file_application_options(void **state)
{
    (void)state;
    char err[256];
    write_conf("port = 4321\nroot = /srv/www\n");
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "root"));
    app_seen[0] = '\0';
    assert_int_equal(
        cshs_options_load_file_with(&o, CONF_PATH, app_root, app_seen, err, sizeof err), 0);
    assert_int_equal(o.port, 4321);
    assert_string_equal(app_seen, "/srv/www");

    write_conf("port = 1\nnot-the-app = 1\n");
    assert_int_equal(
        cshs_options_load_file_with(&o, CONF_PATH, app_root, app_seen, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":2:"));
    assert_non_null(strstr(err, "not-the-app"));
}

static void test_help(void **state)
{
    (void)state;
    help_file = tmpfile();
    assert_non_null(help_file);
    cshs_options_help(help_file);
    long n = ftell(help_file);
    assert_true(n > 500);
}

static void test_version_and_null_options(void **state)
{
    (void)state;
    assert_int_equal(cshs_version(), CSHS_VERSION_HEX);
    assert_null(cshs_server_new(NULL, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_names_the_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file_application_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_and_null_options, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
