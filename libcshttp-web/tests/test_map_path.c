/* MapPath: lexical checks, symlinks out of the root, and the open that
 * cshw_static_serve relies on, with openat2(RESOLVE_BENEATH) and with the
 * portable check. The root is a temporary folder (static_fixture.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sys/inotify.h>

#include "cshttp/web/error.h"
#include "cshttp/web/static.h"
#include "static_fixture.h"
#include "static_priv.h"

static fixture fx;

static int setup(void **state)
{
    (void)state;
    return fix_make(&fx);
}

static int teardown(void **state)
{
    (void)state;
    fix_free(&fx);
    return 0;
}

static void test_clean_path(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(0);
    const char *rel;
    int slash;
    static const struct {
        const char *in, *out;
        int slash;
    } ok[] = {
        {"/", "", 1},
        {"", "", 1},
        {"/a", "a", 0},
        {"/a/", "a", 1},
        {"//a///b//", "a/b", 1},
        {"/./a/./b/.", "a/b", 0},
        {"a/b", "a/b", 0},
        {"/...", "...", 0},
        {"/.. ", ".. ", 0},
        {"/..a/b..", "..a/b..", 0},
        {"/a b/%2e", "a b/%2e", 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        slash = -1;
        assert_int_equal(cshw__static_clean_path(a, ok[i].in, &rel, &slash), 0);
        assert_string_equal(rel, ok[i].out);
        assert_int_equal(slash, ok[i].slash);
    }
    static const char *const bad[] = {
        "/..",     "/../etc/passwd", "/a/../b", "/a/..", "..",    "/a\\b",
        "\\..\\x", "/a\x01",         "/\x7f",   "/a\nb", "/a\tb",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cshw__static_clean_path(a, bad[i], &rel, NULL), CSHW_E_MAP_PATH_INVALID);
    cshw_arena_free(a);
}

static cshw_static_options opts(const char *root, int follow)
{
    cshw_static_options o;
    cshw_static_options_init(&o);
    o.root = root;
    o.follow_symlinks = follow;
    return o;
}

/* map `vp`; expect `rc` and, when 0, root + want */
static void check_map(const cshw_static_options *o, const char *vp, int rc, const char *want)
{
    cshw_arena *a = cshw_arena_new(0);
    const char *out = (const char *)1;
    int r = cshw_static_map_path(a, o, vp, &out);
    if (r != rc) fail_msg("%s: %s, want %s", vp, cshw_error_name(r), cshw_error_name(rc));
    if (rc == 0) {
        char exp[700];
        snprintf(exp, sizeof exp, "%s%s", o->root, want);
        assert_string_equal(out, exp);
    } else {
        assert_null(out);
    }
    cshw_arena_free(a);
}

static void test_map_lexical(void **state)
{
    (void)state;
    cshw_static_options o = opts(fx.root, 0);
    check_map(&o, "/hello.txt", 0, "/hello.txt");
    check_map(&o, "/", 0, "");
    check_map(&o, "//sub//./a.txt", 0, "/sub/a.txt");
    check_map(&o, "/sub/", 0, "/sub");
    check_map(&o, "/missing/deeper/x.txt", 0, "/missing/deeper/x.txt"); /* need not exist */
    check_map(&o, "/hello.txt/x", 0, "/hello.txt/x");
    check_map(&o, "/etc/passwd", 0, "/etc/passwd"); /* an absolute path stays under root */
    check_map(&o, "/..", CSHW_E_MAP_PATH_INVALID, NULL);
    check_map(&o, "/sub/../../outside.txt", CSHW_E_MAP_PATH_INVALID, NULL);
    check_map(&o, "/..\\outside.txt", CSHW_E_MAP_PATH_INVALID, NULL);
    check_map(&o, "/sub\\..\\..\\outside.txt", CSHW_E_MAP_PATH_INVALID, NULL);
    check_map(&o, "/a\x1b", CSHW_E_MAP_PATH_INVALID, NULL);
    /* the root's trailing slash is not doubled */
    char r2[400];
    snprintf(r2, sizeof r2, "%s/", fx.root);
    cshw_static_options o2 = opts(r2, 0);
    cshw_arena *a = cshw_arena_new(0);
    const char *out;
    assert_int_equal(cshw_static_map_path(a, &o2, "/hello.txt", &out), 0);
    char want[400];
    snprintf(want, sizeof want, "%s/hello.txt", fx.root);
    assert_string_equal(out, want);
    cshw_arena_free(a);
}

static void test_map_symlinks(void **state)
{
    (void)state;
    cshw_static_options o = opts(fx.root, 0);
    check_map(&o, "/link_in", 0, "/link_in");
    check_map(&o, "/link_abs_in", 0, "/link_abs_in");
    check_map(&o, "/sub/link_in_sub", 0, "/sub/link_in_sub");
    check_map(&o, "/link_out", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/link_out_abs", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/sub/link_out_sub", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/dir_out", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/dir_out/secret.txt", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/dir_out/not/there", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/devnull", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/dangling", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/dangling/x", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    check_map(&o, "/loop", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    /* <tmp>/rootx starts with <tmp>/root: a prefix is not a folder */
    check_map(&o, "/link_prefix", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    /* allowed by the option */
    cshw_static_options f = opts(fx.root, 1);
    check_map(&f, "/link_out", 0, "/link_out");
    check_map(&f, "/dir_out/secret.txt", 0, "/dir_out/secret.txt");
    check_map(&f, "/dangling", 0, "/dangling");
    /* still no ".." with the option */
    check_map(&f, "/../outside.txt", CSHW_E_MAP_PATH_INVALID, NULL);
}

static void test_map_root_forms(void **state)
{
    (void)state;
    /* a root reached through a link: the links inside are judged against
     * the folder it resolves to */
    char rl[400];
    snprintf(rl, sizeof rl, "%s/rootlink", fx.tmp);
    assert_int_equal(symlink(fx.root, rl), 0);
    cshw_static_options o = opts(rl, 0);
    check_map(&o, "/link_in", 0, "/link_in");
    check_map(&o, "/link_abs_in", 0, "/link_abs_in");
    check_map(&o, "/link_out", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    unlink(rl);
    /* a relative root */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(fx.tmp), 0);
    o = opts("root", 0);
    check_map(&o, "/hello.txt", 0, "/hello.txt");
    check_map(&o, "/link_out", CSHW_E_MAP_PATH_OUTSIDE, NULL);
    assert_int_equal(chdir(cwd), 0);
    /* "/" as the root */
    o = opts("/", 0);
    cshw_arena *a = cshw_arena_new(0);
    const char *out;
    assert_int_equal(cshw_static_map_path(a, &o, "/tmp/x", &out), 0);
    assert_string_equal(out, "/tmp/x");
    assert_int_equal(cshw_static_map_path(a, &o, "/", &out), 0);
    assert_string_equal(out, "/");
    cshw_arena_free(a);
}

static void test_map_arguments(void **state)
{
    (void)state;
    cshw_arena *a = cshw_arena_new(0);
    cshw_static_options o = opts(NULL, 0);
    const char *out = "x";
    assert_int_equal(cshw_static_map_path(a, &o, "/a", &out), CSHW_E_STATIC_NO_ROOT);
    assert_null(out);
    o.root = "";
    assert_int_equal(cshw_static_map_path(a, &o, "/a", &out), CSHW_E_STATIC_NO_ROOT);
    o.root = "/nonexistent/cshw/root";
    assert_int_equal(cshw_static_map_path(a, &o, "/a", &out), CSHW_E_STATIC_NO_ROOT);
    o.root = fx.root;
    assert_int_equal(cshw_static_map_path(NULL, &o, "/a", &out), -EINVAL);
    assert_int_equal(cshw_static_map_path(a, NULL, "/a", &out), -EINVAL);
    assert_int_equal(cshw_static_map_path(a, &o, NULL, &out), -EINVAL);
    assert_int_equal(cshw_static_map_path(a, &o, "/a", NULL), -EINVAL);
    cshw_arena_free(a);
}

/* ---- the open used for serving ---- */

typedef struct open_case {
    const char *rel;
    int rc;     /* no follow */
    int rc_fol; /* follow_symlinks */
    int kind;   /* S_IFREG, S_IFDIR, ... when it opens */
} open_case;

static const open_case open_cases[] = {
    {"hello.txt", 0, 0, S_IFREG},
    {"", 0, 0, S_IFDIR},
    {"sub", 0, 0, S_IFDIR},
    {"sub/a.txt", 0, 0, S_IFREG},
    {"link_in", 0, 0, S_IFREG},
    {"link_abs_in", 0, 0, S_IFREG},
    {"sub/link_in_sub", 0, 0, S_IFREG},
    {"fifo", 0, 0, S_IFIFO}, /* opened without waiting for a writer */
    {"missing.txt", CSHW_E_NOT_FOUND, CSHW_E_NOT_FOUND, 0},
    {"hello.txt/x", CSHW_E_NOT_FOUND, CSHW_E_NOT_FOUND, 0},
    {"sock", CSHW_E_NOT_FOUND, CSHW_E_NOT_FOUND, 0},
    {"dangling", CSHW_E_NOT_FOUND, CSHW_E_NOT_FOUND, 0},
    {"loop", CSHW_E_NOT_FOUND, CSHW_E_NOT_FOUND, 0},
    {"link_out", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFREG},
    {"link_out_abs", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFREG},
    {"sub/link_out_sub", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFREG},
    {"dir_out/secret.txt", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFREG},
    {"dir_out", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFDIR},
    {"devnull", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFCHR},
    {"link_prefix", CSHW_E_MAP_PATH_OUTSIDE, 0, S_IFREG},
};

/* An inotify descriptor that reports every open in the folders outside
 * the root: refusing a link out of the root must not open its target
 * first (a device can act on open alone). */
static int watch_outside(void)
{
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(in >= 0);
    const char *dirs[] = {"", "/outdir", "/rootx"};
    for (size_t i = 0; i < 3; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s%s", fx.tmp, dirs[i]);
        assert_true(inotify_add_watch(in, p, IN_OPEN) >= 0);
    }
    return in;
}

/* Fails on an open of anything but the root folder itself. */
static void expect_no_outside_open(int in)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (!(e->len && strcmp(e->name, "root") == 0))
                fail_msg("opened outside the root: %s", e->len ? e->name : "(a watched folder)");
            p += sizeof *e + e->len;
        }
    }
}

static void run_open_cases(void)
{
    int rootfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    int before = fix_fd_count();
    for (int follow = 0; follow < 2; follow++) {
        int in = follow ? -1 : watch_outside();
        for (size_t i = 0; i < sizeof open_cases / sizeof open_cases[0]; i++) {
            const open_case *c = &open_cases[i];
            int fd = -2;
            struct stat st;
            int want = follow ? c->rc_fol : c->rc;
            int r = cshw__static_open(rootfd, fx.root, c->rel, follow, &fd, &st);
            if (r != want)
                fail_msg("\"%s\" follow=%d openat2=%d: %s, want %s", c->rel, follow,
                         !cshw__static_no_openat2, cshw_error_name(r), cshw_error_name(want));
            if (r == 0) {
                assert_true(fd >= 0);
                assert_int_equal((int)(st.st_mode & S_IFMT), c->kind);
                struct stat again;
                assert_int_equal(fstat(fd, &again), 0);
                assert_true(again.st_ino == st.st_ino);
                close(fd);
            } else {
                assert_int_equal(fd, -1);
            }
        }
        if (in >= 0) {
            expect_no_outside_open(in);
            close(in);
        }
    }
    assert_int_equal(fix_fd_count(), before);
    close(rootfd);
}

static void test_open_openat2(void **state)
{
    (void)state;
    cshw__static_no_openat2 = 0;
    run_open_cases();
}

static void test_open_portable(void **state)
{
    (void)state;
    cshw__static_no_openat2 = 1;
    run_open_cases();
    cshw__static_no_openat2 = 0;
}

static char swap_dir[400], swap_bak[400];

/* What an attacker with write access to the root would do between a check
 * and an open: the folder checked becomes a link out of the root. */
static void swap_for_link(void)
{
    cshw__static_open_race = NULL;
    if (rename(swap_dir, swap_bak) != 0 || symlink("../outdir", swap_dir) != 0) abort();
}

static void unswap(void)
{
    unlink(swap_dir);
    assert_int_equal(rename(swap_bak, swap_dir), 0);
}

/* TOCTOU: the portable check opens what it checked or refuses */
static void test_open_race(void **state)
{
    (void)state;
    snprintf(swap_dir, sizeof swap_dir, "%s/swap", fx.root);
    snprintf(swap_bak, sizeof swap_bak, "%s/swap.bak", fx.root);
    int rootfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    int fd;
    struct stat st;
    /* no swap: served */
    cshw__static_no_openat2 = 1;
    assert_int_equal(cshw__static_open(rootfd, fx.root, "swap/f.txt", 0, &fd, &st), 0);
    close(fd);
    /* swapped between the check and the open: refused */
    cshw__static_open_race = swap_for_link;
    int r = cshw__static_open(rootfd, fx.root, "swap/f.txt", 0, &fd, &st);
    assert_null(cshw__static_open_race); /* the swap happened */
    unswap();
    assert_int_equal(r, CSHW_E_MAP_PATH_OUTSIDE);
    /* swapped before: both ways refuse */
    for (int mode = 0; mode < 2; mode++) {
        cshw__static_no_openat2 = mode;
        swap_for_link();
        r = cshw__static_open(rootfd, fx.root, "swap/f.txt", 0, &fd, &st);
        unswap();
        assert_int_equal(r, CSHW_E_MAP_PATH_OUTSIDE);
    }
    cshw__static_no_openat2 = 0;
    close(rootfd);
}

static int open_denied(void *arg)
{
    (void)arg;
    int rootfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) return 10;
    int fd;
    struct stat st;
    for (int mode = 0; mode < 2; mode++) {
        cshw__static_no_openat2 = mode;
        if (cshw__static_open(rootfd, fx.root, "noread.txt", 0, &fd, &st) !=
            CSHW_E_STATIC_FORBIDDEN)
            return 11 + mode;
        if (cshw__static_open(rootfd, fx.root, "closed/x.txt", 0, &fd, &st) !=
            CSHW_E_STATIC_FORBIDDEN)
            return 13 + mode;
        /* MapPath itself needs no permission on the file */
        cshw_static_options o = opts(fx.root, 0);
        cshw_arena *a = cshw_arena_new(0);
        const char *out;
        int r = cshw_static_map_path(a, &o, "/noread.txt", &out);
        cshw_arena_free(a);
        if (r != 0) return 15;
    }
    close(rootfd);
    return 0;
}

static void test_open_permission_denied(void **state)
{
    (void)state;
    assert_int_equal(fix_unprivileged(open_denied, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_path),
        cmocka_unit_test(test_map_lexical),
        cmocka_unit_test(test_map_symlinks),
        cmocka_unit_test(test_map_root_forms),
        cmocka_unit_test(test_map_arguments),
        cmocka_unit_test(test_open_openat2),
        cmocka_unit_test(test_open_portable),
        cmocka_unit_test(test_open_race),
        cmocka_unit_test(test_open_permission_denied),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
