/* cshw_mime_type: the table's order and rows, lookups, names without an
 * extension. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/static.h"
#include "static_priv.h"

#define OCTET "application/octet-stream"

/* bsearch needs strict strcmp order: a row out of place is never found */
static void test_table_sorted_lowercase_unique(void **state)
{
    (void)state;
    const char *prev = NULL, *type;
    size_t n = 0;
    for (const char *ext; (ext = cshw__mime_row(n, &type)) != NULL; n++) {
        if (prev) assert_true(strcmp(prev, ext) < 0);
        for (const char *p = ext; *p; p++) assert_false(*p >= 'A' && *p <= 'Z');
        assert_true(strlen(ext) < 16);
        assert_non_null(type);
        assert_non_null(strchr(type, '/'));
        /* every row is found through the public lookup */
        char name[40];
        snprintf(name, sizeof name, "f.%s", ext);
        assert_string_equal(cshw_mime_type(name), type);
        /* text types say their charset */
        if (strncmp(type, "text/", 5) == 0) assert_non_null(strstr(type, "; charset=utf-8"));
        prev = ext;
    }
    assert_true(n >= 40);
}

static void test_common_types(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"index.html", "text/html; charset=utf-8"},
        {"a.htm", "text/html; charset=utf-8"},
        {"s.css", "text/css; charset=utf-8"},
        {"app.js", "text/javascript; charset=utf-8"},
        {"mod.mjs", "text/javascript; charset=utf-8"},
        {"d.json", "application/json"},
        {"feed.xml", "application/xml"},
        {"i.svg", "image/svg+xml"},
        {"i.png", "image/png"},
        {"i.jpg", "image/jpeg"},
        {"i.jpeg", "image/jpeg"},
        {"i.gif", "image/gif"},
        {"i.webp", "image/webp"},
        {"i.avif", "image/avif"},
        {"favicon.ico", "image/x-icon"},
        {"r.txt", "text/plain; charset=utf-8"},
        {"README.md", "text/markdown; charset=utf-8"},
        {"doc.pdf", "application/pdf"},
        {"m.wasm", "application/wasm"},
        {"f.woff", "font/woff"},
        {"f.woff2", "font/woff2"},
        {"f.ttf", "font/ttf"},
        {"v.mp4", "video/mp4"},
        {"v.webm", "video/webm"},
        {"a.mp3", "audio/mpeg"},
        {"a.wav", "audio/wav"},
        {"z.zip", "application/zip"},
        {"a.tar.gz", "application/gzip"},
        {"a.tar", "application/x-tar"},
        {"t.csv", "text/csv; charset=utf-8"},
        {"app.js.map", "application/json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(cshw_mime_type(cases[i][0]), cases[i][1]);
}

static void test_case_insensitive_and_paths(void **state)
{
    (void)state;
    assert_string_equal(cshw_mime_type("PHOTO.JPG"), "image/jpeg");
    assert_string_equal(cshw_mime_type("Index.HtMl"), "text/html; charset=utf-8");
    assert_string_equal(cshw_mime_type("/var/www/a/b.css"), "text/css; charset=utf-8");
    /* a dot in a folder name is not an extension of the file */
    assert_string_equal(cshw_mime_type("/v1.html/README"), OCTET);
}

static void test_no_extension(void **state)
{
    (void)state;
    assert_string_equal(cshw_mime_type("Makefile"), OCTET);
    assert_string_equal(cshw_mime_type(".html"), OCTET); /* a dotfile named "html" */
    assert_string_equal(cshw_mime_type("dir/.css"), OCTET);
    assert_string_equal(cshw_mime_type("a."), OCTET);
    assert_string_equal(cshw_mime_type(""), OCTET);
    assert_string_equal(cshw_mime_type("x.unknown"), OCTET);
    assert_string_equal(cshw_mime_type("x.averyveryverylongextension"), OCTET);
    assert_string_equal(cshw_mime_type("x.htmlx"), OCTET);
    assert_string_equal(cshw_mime_type("x.ht"), OCTET);
    assert_string_equal(cshw_mime_type(NULL), OCTET);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_sorted_lowercase_unique),
        cmocka_unit_test(test_common_types),
        cmocka_unit_test(test_case_insensitive_and_paths),
        cmocka_unit_test(test_no_extension),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
