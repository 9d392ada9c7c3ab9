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
    /* the parser's limits and the toolkit's options: their own defaults */
    assert_null(o.limits);
    assert_null(o.web);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.write_high_water, 262144);
    assert_int_equal(o.linger_ms, 2000);
    assert_int_equal(o.linger_bytes, 1u << 20);
    assert_int_equal(o.next_request_wait_us, 1000);
    assert_int_equal(o.max_waiting_handlers, 1024);
    assert_int_equal(o.max_request_temp_bytes, (uint64_t)4 << 30);
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
    csh_limits limits;
    cshw_options web;
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
    cshw_options_init(&web);
    web.gzip_level = 42;
    o.web = &web;
    expect_refused("gzip_level");
    /* a header array the size of a config file's whim would overflow the
     * parser's allocation: bounded */
    cshs_options_init(&o);
    csh_limits_init(&limits);
    limits.max_fields = 100000;
    o.limits = &limits;
    expect_refused("max_fields");
    cshs_options_init(&o);
    o.write_high_water = 10;
    expect_refused("write_high_water");
    cshs_options_init(&o);
    o.linger_ms = 600000;
    expect_refused("linger_ms");
    cshs_options_init(&o);
    o.next_request_wait_us = 1000001;
    expect_refused("next_request_wait_us");
    cshs_options_init(&o);
    o.max_waiting_handlers = 1000001;
    expect_refused("max_waiting_handlers");
    cshs_options_init(&o);
    cshw_options_init(&web);
    web.body_buffer = 10;
    o.web = &web;
    expect_refused("body_buffer");
}

static int dummy_handler_ran;
static void dummy_handler(cshw_context *ctx)
{
    (void)ctx;
    dummy_handler_ran++;
}

/* options.h: a struct filled without its _init (size 0 or too small) is
 * refused by name, the engine's own and the two it points at, and builds
 * no server. */
static void test_bad_sizes(void **state)
{
    (void)state;
    csh_limits limits;
    cshw_options web;
    o.size = 0;
    expect_refused("size must be set by cshs_options_init");
    assert_null(cshs_server_new(&o, dummy_handler, NULL));
    o.size = CSHS_OPTIONS_SIZE_0_2 - 1;
    expect_refused("size must be set by cshs_options_init");
    cshs_options_init(&o);
    csh_limits_init(&limits);
    limits.size = 0;
    o.limits = &limits;
    expect_refused("limits: size must be set by csh_limits_init");
    assert_null(cshs_server_new(&o, dummy_handler, NULL));
    cshs_options_init(&o);
    cshw_options_init(&web);
    web.size = 0;
    o.web = &web;
    expect_refused("web: size must be set by cshw_options_init");
    assert_null(cshs_server_new(&o, dummy_handler, NULL));
}

/* options.h: the engine reads only the fields within each struct's size.
 * Structs of the first versions' sizes, each alone in its allocation (ASan
 * sees a read past one), and structs from callers built against newer
 * headers (bigger, with bytes this build does not know) are all taken. */
/* `old` is a 0.2 caller's struct: smaller than this build's, on purpose */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
static void test_sizes_read_within(void **state)
{
    (void)state;
    cshs_options *old = malloc(CSHS_OPTIONS_SIZE_0_2);
    csh_limits *old_limits = malloc(CSH_LIMITS_SIZE_0_2);
    cshw_options *old_web = malloc(CSHW_OPTIONS_SIZE_0_2);
    assert_non_null(old);
    assert_non_null(old_limits);
    assert_non_null(old_web);
    /* what the _init functions do in such a caller: they write no more */
    cshs_options_init_sized(old, CSHS_OPTIONS_SIZE_0_2);
    csh_limits_init_sized(old_limits, CSH_LIMITS_SIZE_0_2);
    cshw_options_init_sized(old_web, CSHW_OPTIONS_SIZE_0_2);
    assert_int_equal(old->size, CSHS_OPTIONS_SIZE_0_2);
    assert_int_equal(old->port, 8080);
    old->port = 0;
    old->limits = old_limits;
    old->web = old_web;
    old_limits->max_head = 10; /* below what cshs_options_check allows: it was read */
    const char *why = NULL;
    assert_int_equal(cshs_options_check(old, &why), -EINVAL);
    assert_non_null(strstr(why, "max_head"));
    old_limits->max_head = 4096;
    assert_int_equal(cshs_options_check(old, NULL), 0);
    cshs_server *s = cshs_server_new(old, dummy_handler, NULL);
    assert_non_null(s);
    cshs_server_free(s);
    free(old);
    free(old_limits);
    free(old_web);

    size_t big[sizeof(cshs_options) / sizeof(size_t) + 4];
    size_t big_limits[sizeof(csh_limits) / sizeof(size_t) + 4];
    size_t big_web[sizeof(cshw_options) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshs_options *newer = (cshs_options *)(void *)big;
    cshs_options_init_sized(newer, sizeof big);
    /* what this library does not know is zeroed, not left as it was */
    for (size_t i = sizeof(cshs_options) / sizeof(size_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 12345; /* a newer field this library ignores */
    csh_limits_init_sized((csh_limits *)(void *)big_limits, sizeof big_limits);
    cshw_options_init_sized((cshw_options *)(void *)big_web, sizeof big_web);
    big_limits[sizeof big_limits / sizeof big_limits[0] - 1] = 12345;
    big_web[sizeof big_web / sizeof big_web[0] - 1] = 12345;
    newer->port = 0;
    newer->limits = (csh_limits *)(void *)big_limits;
    newer->web = (cshw_options *)(void *)big_web;
    newer->limits->max_head = 10;
    assert_int_equal(cshs_options_check(newer, &why), -EINVAL);
    assert_non_null(strstr(why, "max_head"));
    newer->limits->max_head = 4096;
    assert_int_equal(cshs_options_check(newer, NULL), 0);
    s = cshs_server_new(newer, dummy_handler, NULL);
    assert_non_null(s);
    cshs_server_free(s);
    assert_int_equal(dummy_handler_ran, 0);
}
#pragma GCC diagnostic pop

/* options.h: the loaders write a limit or a toolkit option into the
 * caller's struct, or into one of their own when there is none; a struct
 * too old to hold the option is named, not written past. */
static void test_loaders_and_the_nested_structs(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cshs_options_set(&o, "max-head", "4096", err, sizeof err), 0);
    assert_non_null(o.limits);
    assert_int_equal(o.limits->size, sizeof(csh_limits));
    assert_int_equal(o.limits->max_head, 4096);
    assert_int_equal(o.limits->max_fields, 100); /* the others: defaults */
    assert_null(o.web);
    cshs_options_release(&o);
    assert_null(o.limits);

    cshs_options_init(&o);
    csh_limits mine;
    csh_limits_init(&mine);
    o.limits = &mine;
    assert_int_equal(cshs_options_set(&o, "max_fields", "7", err, sizeof err), 0);
    assert_ptr_equal(o.limits, &mine);
    assert_int_equal(mine.max_fields, 7);
    cshs_options_release(&o);
    assert_ptr_equal(o.limits, &mine); /* the caller's stays */

    /* a struct as small as one from before max_fields existed */
    mine.size = offsetof(csh_limits, max_fields);
    mine.max_fields = 5;
    assert_int_equal(cshs_options_set(&o, "max_fields", "9", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "max_fields"));
    assert_non_null(strstr(err, "csh_limits"));
    assert_int_equal(mine.max_fields, 5);
    o.limits = NULL;
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
    /* 0.3.2's field, set by name; a caller's struct of 0.2's size has no
     * room for it: refused by name rather than written past it */
    assert_int_equal(cshs_options_set(&o, "next_request_wait_us", "0", err, sizeof err), 0);
    assert_int_equal(o.next_request_wait_us, 0);
    cshs_options old;
    cshs_options_init_sized(&old, CSHS_OPTIONS_SIZE_0_2);
    assert_int_equal(cshs_options_set(&old, "next_request_wait_us", "0", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "next_request_wait_us"));
    cshs_options_release(&old);
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
    /* a toolkit option: in a cshw_options of the loaders' own */
    assert_non_null(o.web);
    assert_int_equal(o.web->size, sizeof(cshw_options));
    assert_non_null(o.web->server_header);
    assert_string_equal(o.web->server_header, "cshttpd");
    assert_int_equal(o.web->gzip_level, 6);

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

static void write_conf_bytes(const char *bytes, size_t n)
{
    FILE *f = fopen(CONF_PATH, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The file as an attacker writes it: a line is read whole (a long comment
 * never becomes a setting), a line past 64 KiB, a NUL byte, a name set
 * twice and a folder are errors that name the line. */
static void test_config_file_refusals(void **state)
{
    (void)state;
    char err[256];
    /* '#' + 1,021 characters + " port = 1": all of it a comment */
    char *text = malloc(2000);
    assert_non_null(text);
    int n = sprintf(text, "port = 1234\n#");
    memset(text + n, 'c', 1021);
    strcpy(text + n + 1021, " port = 1\n");
    write_conf(text);
    free(text);
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), 0);
    assert_int_equal(o.port, 1234);

    /* a line of 70,000 bytes */
    text = malloc(70100);
    assert_non_null(text);
    n = sprintf(text, "port = 1\nserver_header = ");
    memset(text + n, 'x', 70000);
    strcpy(text + n + 70000, "\n");
    write_conf(text);
    free(text);
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":2: line longer than 65536 bytes"));

    /* a NUL byte: not the end of the line */
    write_conf_bytes("port = 1\0\nport = 2\n", 19);
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":1: a NUL byte"));

    /* a name set twice, however it is spelled (the first stays) */
    write_conf("port = 1\nkeepalive-timeout-ms = 5\nkeepalive_timeout_ms = 6\n");
    assert_int_equal(cshs_options_load_file(&o, CONF_PATH, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":3: 'keepalive_timeout_ms' is set twice (first on line 2)"));
    assert_int_equal(o.keepalive_timeout_ms, 5);

    /* a folder */
    assert_int_equal(cshs_options_load_file(&o, "/tmp", err, sizeof err), -EISDIR);
    assert_non_null(strstr(err, "/tmp: is a folder"));
}

static char each_seen[8][256];
static int each_n;

static void each_problem(void *data, const char *message)
{
    (void)data;
    if (each_n < 8) snprintf(each_seen[each_n], sizeof each_seen[0], "%s", message);
    each_n++;
}

/* An application that refuses a setting without a word. */
static int app_silent_refusal(void *data, const char *name, const char *value, char *err,
                              size_t errlen)
{
    (void)data;
    (void)name;
    (void)value;
    (void)err;
    (void)errlen;
    return -EINVAL;
}

/* cshs_options_load_file_each: every bad line, in order, and the good
 * lines around them taken; 100 bad lines are 100 problems; an application
 * that refuses a setting without saying why still gets it named. */
static void test_config_file_every_problem(void **state)
{
    (void)state;
    write_conf("port = 7\nbogus\nkeepalive_timeout_ms = soon\nheader_timeout_ms = 5\n"
               "port = 8\nread_timeout_ms = 9\n");
    each_n = 0;
    assert_int_equal(cshs_options_load_file_each(&o, CONF_PATH, NULL, NULL, each_problem, NULL), 3);
    assert_int_equal(each_n, 3);
    assert_non_null(strstr(each_seen[0], ":2: expected 'name = value'"));
    assert_non_null(strstr(each_seen[1], ":3: keepalive_timeout_ms"));
    assert_non_null(strstr(each_seen[2], ":5: 'port' is set twice (first on line 1)"));
    assert_int_equal(o.port, 7);
    assert_int_equal(o.header_timeout_ms, 5);
    assert_int_equal(o.read_timeout_ms, 9);

    char *text = malloc(100 * 16);
    assert_non_null(text);
    size_t n = 0;
    for (int i = 0; i < 100; i++) n += (size_t)sprintf(text + n, "bad line %d\n", i);
    write_conf(text);
    free(text);
    each_n = 0;
    assert_int_equal(cshs_options_load_file_each(&o, CONF_PATH, NULL, NULL, each_problem, NULL),
                     100);
    assert_int_equal(each_n, 100);

    each_n = 0;
    assert_int_equal(
        cshs_options_load_file_each(&o, "/nonexistent/x.conf", NULL, NULL, each_problem, NULL),
        -ENOENT);
    assert_int_equal(each_n, 1);
    assert_non_null(strstr(each_seen[0], "/nonexistent/x.conf"));
    assert_int_equal(cshs_options_load_file_each(&o, CONF_PATH, NULL, NULL, NULL, NULL), -EINVAL);

    write_conf("port = 7\nmine = 1\n");
    each_n = 0;
    assert_int_equal(
        cshs_options_load_file_each(&o, CONF_PATH, app_silent_refusal, NULL, each_problem, NULL),
        1);
    assert_non_null(strstr(each_seen[0], ":2: 'mine' refused"));
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
        cmocka_unit_test_setup_teardown(test_bad_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sizes_read_within, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loaders_and_the_nested_structs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file_application_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file_every_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_and_null_options, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
