/* cshw_static_mime_type: the table's order and rows, lookups, names without an
 * extension. cshw_mime_types: a table grown from a mime.types file and
 * overrides, with its precedence. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cshttp/web/mime.h"
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
        assert_string_equal(cshw_static_mime_type(name), type);
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
        assert_string_equal(cshw_static_mime_type(cases[i][0]), cases[i][1]);
}

static void test_case_insensitive_and_paths(void **state)
{
    (void)state;
    assert_string_equal(cshw_static_mime_type("PHOTO.JPG"), "image/jpeg");
    assert_string_equal(cshw_static_mime_type("Index.HtMl"), "text/html; charset=utf-8");
    assert_string_equal(cshw_static_mime_type("/var/www/a/b.css"), "text/css; charset=utf-8");
    /* a dot in a folder name is not an extension of the file */
    assert_string_equal(cshw_static_mime_type("/v1.html/README"), OCTET);
}

static void test_no_extension(void **state)
{
    (void)state;
    assert_string_equal(cshw_static_mime_type("Makefile"), OCTET);
    assert_string_equal(cshw_static_mime_type(".html"), OCTET); /* a dotfile named "html" */
    assert_string_equal(cshw_static_mime_type("dir/.css"), OCTET);
    assert_string_equal(cshw_static_mime_type("a."), OCTET);
    assert_string_equal(cshw_static_mime_type(""), OCTET);
    assert_string_equal(cshw_static_mime_type("x.unknown"), OCTET);
    assert_string_equal(cshw_static_mime_type("x.averyveryverylongextension"), OCTET);
    assert_string_equal(cshw_static_mime_type("x.htmlx"), OCTET);
    assert_string_equal(cshw_static_mime_type("x.ht"), OCTET);
    assert_string_equal(cshw_static_mime_type(NULL), OCTET);
}

static char *write_bytes(const char *data, size_t len)
{
    static char path[64];
    strcpy(path, "/tmp/test_mime_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

static char *write_file(const char *text)
{
    return write_bytes(text, strlen(text));
}

/* Loads `text` as a mime.types file into m: cshw_mime_types_load's result. */
static int load_text(cshw_mime_types *m, const char *text)
{
    char err[256] = "";
    char *path = write_file(text);
    int r = cshw_mime_types_load(m, path, err, sizeof err);
    unlink(path);
    return r;
}

/* Loads data[0 .. len) (NULs and all) as a mime.types file into m. */
static int load_bytes(cshw_mime_types *m, const char *data, size_t len)
{
    char err[256] = "";
    char *path = write_bytes(data, len);
    int r = cshw_mime_types_load(m, path, err, sizeof err);
    unlink(path);
    return r;
}

/* a table with nothing loaded answers as the built-in one */
static void test_table_starts_builtin(void **state)
{
    (void)state;
    cshw_mime_types *m = cshw_mime_types_new();
    assert_non_null(m);
    const char *type;
    size_t n = 0;
    for (const char *ext; (ext = cshw__mime_row(n, &type)) != NULL; n++) {
        char name[40];
        snprintf(name, sizeof name, "f.%s", ext);
        assert_string_equal(cshw_mime_types_lookup(m, name), type);
    }
    assert_int_equal(cshw_mime_types_count(m), n);
    assert_string_equal(cshw_mime_types_lookup(m, "Makefile"), OCTET);
    assert_string_equal(cshw_mime_types_lookup(m, "x.nope"), OCTET);
    assert_string_equal(cshw_mime_types_lookup(NULL, "a.png"), "image/png");
    cshw_mime_types_free(m);
    cshw_mime_types_free(NULL);
}

/* the mime.types format, and which source wins */
static void test_load_file_precedence(void **state)
{
    (void)state;
    char *path = write_file("# comment line\n"
                            "application/x-test-new\tfoo BAR\n"
                            "image/x-portable-anymap  pnm ;\n"
                            "text/x-readme readme\n"
                            "audio/x-mine mp3\n"                /* a file beats the table */
                            "application/x-not-html html htm\n" /* core types never lose */
                            "application/x-js js\n"
                            "image/x-svg svg\n"
                            "application/octet-stream wasm\n"
                            "application/x-nothing\n" /* no extensions */
                            "not-a-type ext1\n"       /* no slash: skipped */
                            "a/b bad$ext averyveryveryverylongext ok2\n");
    cshw_mime_types *m = cshw_mime_types_new();
    char err[256] = "";
    int taken = cshw_mime_types_load(m, path, err, sizeof err);
    unlink(path);
    /* foo, bar, pnm, readme, mp3, ok2 */
    assert_int_equal(taken, 6);
    assert_string_equal(cshw_mime_types_lookup(m, "x.foo"), "application/x-test-new");
    assert_string_equal(cshw_mime_types_lookup(m, "X.FOO"), "application/x-test-new");
    assert_string_equal(cshw_mime_types_lookup(m, "x.bar"), "application/x-test-new");
    assert_string_equal(cshw_mime_types_lookup(m, "x.pnm"), "image/x-portable-anymap");
    assert_string_equal(cshw_mime_types_lookup(m, "x.readme"), "text/x-readme; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "a.mp3"), "audio/x-mine");
    assert_string_equal(cshw_mime_types_lookup(m, "x.ok2"), "a/b");
    assert_string_equal(cshw_mime_types_lookup(m, "x.ext1"), OCTET);
    assert_string_equal(cshw_mime_types_lookup(m, "index.html"), "text/html; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "index.htm"), "text/html; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "i.svg"), "image/svg+xml");
    assert_string_equal(cshw_mime_types_lookup(m, "m.wasm"), "application/wasm");
    /* untouched built-in rows stay */
    assert_string_equal(cshw_mime_types_lookup(m, "i.png"), "image/png");
    /* an override beats everything, core types included */
    assert_int_equal(cshw_mime_types_set(m, "HTML", "text/x-mine; charset=latin1"), 0);
    assert_int_equal(cshw_mime_types_set_pair(m, "foo=application/x-foo"), 0);
    assert_int_equal(cshw_mime_types_set_pair(m, ".newext=image/x-new"), 0);
    assert_string_equal(cshw_mime_types_lookup(m, "a.html"), "text/x-mine; charset=latin1");
    assert_string_equal(cshw_mime_types_lookup(m, "a.foo"), "application/x-foo");
    assert_string_equal(cshw_mime_types_lookup(m, "a.NEWEXT"), "image/x-new");
    /* a later file does not undo an override */
    assert_int_equal(load_text(m, "text/x-again html foo\n"), 0);
    assert_string_equal(cshw_mime_types_lookup(m, "a.foo"), "application/x-foo");
    cshw_mime_types_free(m);
}

/* An extension a file gives twice takes its last line; a later file
 * overrides an earlier one; many new extensions, given in reverse order,
 * land among the built-in rows (the table stays in order for lookups). */
static void test_load_file_order(void **state)
{
    (void)state;
    cshw_mime_types *m = cshw_mime_types_new();
    assert_int_equal(load_text(m, "type/one dup\n"
                                  "type/two dup other\n"
                                  "type/three DUP\n"),
                     4);
    assert_string_equal(cshw_mime_types_lookup(m, "x.dup"), "type/three");
    assert_string_equal(cshw_mime_types_lookup(m, "x.other"), "type/two");
    assert_int_equal(load_text(m, "type/four other\n"), 1);
    assert_string_equal(cshw_mime_types_lookup(m, "x.other"), "type/four");
    assert_string_equal(cshw_mime_types_lookup(m, "x.dup"), "type/three");

    /* 600 extensions around the built-in ones (png, pdf, ...), last first,
     * of 600 types (some 15 KiB of them: more than one chunk) */
    size_t cap = 600 * 64, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 599; i >= 0; i--)
        n += (size_t)snprintf(text + n, cap - n, "x/a-longer-type-name-%d p%03d a%03d\n", i, i, i);
    assert_int_equal(load_text(m, text), 1200);
    free(text);
    char name[32], want[48];
    for (int i = 0; i < 600; i++) {
        snprintf(want, sizeof want, "x/a-longer-type-name-%d", i);
        snprintf(name, sizeof name, "f.p%03d", i);
        assert_string_equal(cshw_mime_types_lookup(m, name), want);
        snprintf(name, sizeof name, "f.A%03d", i);
        assert_string_equal(cshw_mime_types_lookup(m, name), want);
    }
    assert_string_equal(cshw_mime_types_lookup(m, "i.png"), "image/png");
    assert_string_equal(cshw_mime_types_lookup(m, "d.pdf"), "application/pdf");
    assert_string_equal(cshw_mime_types_lookup(m, "x.dup"), "type/three");
    assert_string_equal(cshw_mime_types_lookup(m, "x.nope"), OCTET);
    cshw_mime_types_free(m);
}

/* Lines as long as a line may be, and one byte longer (skipped whole);
 * a NUL ends a line's text; a line without a newline at the end of the
 * file. */
static void test_load_line_limits(void **state)
{
    (void)state;
    cshw_mime_types *m = cshw_mime_types_new();
    size_t cap = 3 * 8192, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    /* 4094 bytes and its newline: read */
    n += (size_t)snprintf(text + n, cap - n, "x/fits fits");
    memset(text + n, ' ', 4094 - strlen("x/fits fits"));
    n += 4094 - strlen("x/fits fits");
    text[n++] = '\n';
    /* 4095 bytes and its newline: skipped */
    n += (size_t)snprintf(text + n, cap - n, "x/long long");
    memset(text + n, ' ', 4095 - strlen("x/long long"));
    n += 4095 - strlen("x/long long");
    text[n++] = '\n';
    /* a NUL ends the text of a line */
    memcpy(text + n, "x/nul n1\0 n2\n", 13);
    n += 13;
    /* in a line that long, the text after its first 4095 bytes is read
     * as a line of its own */
    memcpy(text + n, "x/a q1\0", 7);
    memset(text + n + 7, 'z', 4095 - 7);
    n += 4095;
    n += (size_t)snprintf(text + n, cap - n, "x/b q2\n");
    n += (size_t)snprintf(text + n, cap - n, "x/end end"); /* no newline */
    assert_int_equal(load_bytes(m, text, n), 5);
    free(text);
    assert_string_equal(cshw_mime_types_lookup(m, "a.fits"), "x/fits");
    assert_string_equal(cshw_mime_types_lookup(m, "a.long"), OCTET);
    assert_string_equal(cshw_mime_types_lookup(m, "a.n1"), "x/nul");
    assert_string_equal(cshw_mime_types_lookup(m, "a.n2"), OCTET);
    assert_string_equal(cshw_mime_types_lookup(m, "a.q1"), "x/a");
    assert_string_equal(cshw_mime_types_lookup(m, "a.q2"), "x/b");
    assert_string_equal(cshw_mime_types_lookup(m, "a.end"), "x/end");
    cshw_mime_types_free(m);
}

/* A file larger than the loader reads at a time: lines across the
 * boundaries of its reads, and an over-long line across one, are read as
 * in a small file. */
static void test_load_large_file(void **state)
{
    (void)state;
    cshw_mime_types *m = cshw_mime_types_new();
    size_t cap = 400000, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 0; i < 6000; i++) {
        n += (size_t)snprintf(text + n, cap - n, "x/a-type-name-%05d\tb%05d c%05d\n", i, i, i);
        if (i == 3000) { /* over-long, somewhere past the first read */
            n += (size_t)snprintf(text + n, cap - n, "x/long long");
            memset(text + n, ' ', 10000);
            n += 10000;
            text[n++] = '\n';
        }
    }
    assert_true(n > 3 * 65536);
    assert_int_equal(load_bytes(m, text, n), 12000);
    free(text);
    char name[32], want[48];
    for (int i = 0; i < 6000; i++) {
        snprintf(want, sizeof want, "x/a-type-name-%05d", i);
        snprintf(name, sizeof name, "f.b%05d", i);
        assert_string_equal(cshw_mime_types_lookup(m, name), want);
        snprintf(name, sizeof name, "f.C%05d", i);
        assert_string_equal(cshw_mime_types_lookup(m, name), want);
    }
    assert_string_equal(cshw_mime_types_lookup(m, "f.long"), OCTET);
    cshw_mime_types_free(m);
}

/* Every byte in a type and in an extension: a file takes what
 * cshw_mime_types_set takes (the bytes that separate the words of a
 * line aside). */
static void test_load_bytes_as_set(void **state)
{
    (void)state;
    for (int c = 1; c < 256; c++) {
        if (strchr(" \t\r\v\f\n#;", c)) continue;
        char type1[8], type2[8], ext[8], text[64];
        snprintf(type1, sizeof type1, "t%ct/x", c);
        snprintf(type2, sizeof type2, "t/x%cx", c);
        snprintf(ext, sizeof ext, "e%ce", c);
        cshw_mime_types *set = cshw_mime_types_new();
        int ok1 = cshw_mime_types_set(set, "one", type1) == 0;
        int ok2 = cshw_mime_types_set(set, "two", type2) == 0;
        int ok3 = cshw_mime_types_set(set, ext, "t/y") == 0;
        cshw_mime_types_free(set);
        cshw_mime_types *m = cshw_mime_types_new();
        int n = snprintf(text, sizeof text, "%s one\n%s two\nt/y %s\n", type1, type2, ext);
        assert_int_equal(load_bytes(m, text, (size_t)n), ok1 + ok2 + ok3);
        assert_string_equal(cshw_mime_types_lookup(m, "a.one"), ok1 ? type1 : OCTET);
        assert_string_equal(cshw_mime_types_lookup(m, "a.two"), ok2 ? type2 : OCTET);
        char name[16];
        snprintf(name, sizeof name, "a.%s", ext);
        if (c != '/' && c != '.') /* a name's extension is what follows its last '.' */
            assert_string_equal(cshw_mime_types_lookup(m, name), ok3 ? "t/y" : OCTET);
        cshw_mime_types_free(m);
    }
}

static void test_bad_input(void **state)
{
    (void)state;
    cshw_mime_types *m = cshw_mime_types_new();
    char err[256] = "";
    assert_int_equal(cshw_mime_types_load(m, "/nonexistent/mime.types", err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "/nonexistent/mime.types"));
    assert_int_equal(cshw_mime_types_set(m, "", "a/b"), -EINVAL);
    assert_int_equal(cshw_mime_types_set(m, "x y", "a/b"), -EINVAL);
    assert_int_equal(cshw_mime_types_set(m, "x", "nocolon"), -EINVAL);
    assert_int_equal(cshw_mime_types_set(m, "x", "a/b\r\nX-Injected: 1"), -EINVAL);
    assert_int_equal(cshw_mime_types_set(m, "x", "a/"), -EINVAL);
    assert_int_equal(cshw_mime_types_set_pair(m, "noequals"), -EINVAL);
    assert_int_equal(cshw_mime_types_set_pair(m, "=a/b"), -EINVAL);
    assert_int_equal(cshw_mime_types_set(NULL, "x", "a/b"), -EINVAL);
    /* a binary file and an over-long line are read without harm */
    char path[] = "/tmp/test_mime_XXXXXX";
    int fd = mkstemp(path);
    char junk[10000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 7 + 1);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_int_equal(write(fd, "\nimage/x-after after\n", 21), 21);
    close(fd);
    assert_true(cshw_mime_types_load(m, path, err, sizeof err) >= 1);
    unlink(path);
    assert_string_equal(cshw_mime_types_lookup(m, "a.after"), "image/x-after");
    /* a directory opens, but cannot be read */
    assert_int_equal(cshw_mime_types_load(m, "/tmp", err, sizeof err), -EIO);
    assert_string_equal(err, "/tmp: read error");
    cshw_mime_types_free(m);
}

/* Debian's media-types file, when this machine has it: the types that
 * matter keep their built-in values, and it adds many. */
static void test_system_file(void **state)
{
    (void)state;
    if (access("/etc/mime.types", R_OK) != 0) skip();
    cshw_mime_types *m = cshw_mime_types_new();
    size_t before = cshw_mime_types_count(m);
    assert_true(cshw_mime_types_load(m, "/etc/mime.types", NULL, 0) > 0);
    assert_true(cshw_mime_types_count(m) > before);
    assert_string_equal(cshw_mime_types_lookup(m, "a.html"), "text/html; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "a.js"), "text/javascript; charset=utf-8");
    assert_string_equal(cshw_mime_types_lookup(m, "a.json"), "application/json");
    cshw_mime_types_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_sorted_lowercase_unique),
        cmocka_unit_test(test_common_types),
        cmocka_unit_test(test_case_insensitive_and_paths),
        cmocka_unit_test(test_no_extension),
        cmocka_unit_test(test_table_starts_builtin),
        cmocka_unit_test(test_load_file_precedence),
        cmocka_unit_test(test_load_file_order),
        cmocka_unit_test(test_load_line_limits),
        cmocka_unit_test(test_load_large_file),
        cmocka_unit_test(test_load_bytes_as_set),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_system_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
