/* cshs_options: defaults, checks naming the field, argv and config file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/server.h>

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

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

int main(void)
{
    cshs_options o;
    const char *why = NULL;
    char err[256];
    cshs_options_init(&o);
    CHECK(cshs_options_check(&o, &why) == 0 && why == NULL);
    CHECK(o.port == 8080 && o.min_threads == 2 && o.header_timeout_ms == 10000);
    CHECK(o.min_body_rate == 240 && o.body_grace_ms == 5000);

    o.max_threads = 1;
    CHECK(cshs_options_check(&o, &why) == -EINVAL && strstr(why, "max_threads"));
    cshs_options_init(&o);
    o.port = 70000;
    CHECK(cshs_options_check(&o, &why) == -EINVAL && strstr(why, "port"));
    cshs_options_init(&o);
    o.address = NULL;
    CHECK(cshs_options_check(&o, &why) == -EINVAL && strstr(why, "address"));
    cshs_options_init(&o);
    o.web.gzip_level = 42;
    CHECK(cshs_options_check(&o, &why) == -EINVAL && strstr(why, "gzip_level"));

    cshs_options_init(&o);
    char a0[] = "prog", a1[] = "--port", a2[] = "9000", a3[] = "--keep",
         a4[] = "--header-timeout-ms=50", a5[] = "--address6", a6[] = "::1";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
    int argc = 7;
    CHECK(cshs_options_parse_args(&o, &argc, argv, err, sizeof err) == 0);
    CHECK(o.port == 9000 && o.header_timeout_ms == 50 && strcmp(o.address6, "::1") == 0);
    CHECK(argc == 2 && strcmp(argv[1], "--keep") == 0 && argv[2] == NULL);
    char b1[] = "--port", b2[] = "x";
    char *argv2[] = {a0, b1, b2, NULL};
    argc = 3;
    CHECK(cshs_options_parse_args(&o, &argc, argv2, err, sizeof err) == -EINVAL &&
          strstr(err, "port"));
    CHECK(cshs_options_set(&o, "nope", "1", err, sizeof err) == -EINVAL && strstr(err, "nope"));
    CHECK(cshs_options_set(&o, "gzip", "maybe", err, sizeof err) == -EINVAL && strstr(err, "gzip"));

    const char *path = "test_options.conf";
    FILE *f = fopen(path, "w");
    fprintf(f, "# a comment\n\nport = 1234\nkeepalive-timeout-ms = 77  # idle\n"
               "server_header = \"cshttpd\"\n");
    fclose(f);
    CHECK(cshs_options_load_file(&o, path, err, sizeof err) == 0);
    CHECK(o.port == 1234 && o.keepalive_timeout_ms == 77 &&
          strcmp(o.web.server_header, "cshttpd") == 0);
    f = fopen(path, "w");
    fprintf(f, "port = 1\nbogus line\n");
    fclose(f);
    CHECK(cshs_options_load_file(&o, path, err, sizeof err) == -EINVAL && strstr(err, ":2:"));
    /* an application's own names in the same file */
    f = fopen(path, "w");
    fprintf(f, "port = 4321\nroot = /srv/www\n");
    fclose(f);
    CHECK(cshs_options_load_file(&o, path, err, sizeof err) == -EINVAL && strstr(err, "root"));
    app_seen[0] = '\0';
    CHECK(cshs_options_load_file_with(&o, path, app_root, app_seen, err, sizeof err) == 0);
    CHECK(o.port == 4321 && strcmp(app_seen, "/srv/www") == 0);
    f = fopen(path, "w");
    fprintf(f, "port = 1\nnot-the-app = 1\n");
    fclose(f);
    CHECK(cshs_options_load_file_with(&o, path, app_root, app_seen, err, sizeof err) == -EINVAL &&
          strstr(err, ":2:") && strstr(err, "not-the-app"));
    remove(path);
    CHECK(cshs_options_load_file(&o, "/nonexistent/x.conf", err, sizeof err) == -ENOENT);
    cshs_options_release(&o);

    FILE *h = tmpfile();
    cshs_options_help(h);
    long n = ftell(h);
    CHECK(n > 500);
    fclose(h);
    CHECK(cshs_version() == CSHS_VERSION_HEX);
    CHECK(cshs_server_new(NULL, NULL, NULL) == NULL);

    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
