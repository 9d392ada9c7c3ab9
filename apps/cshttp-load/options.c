#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cshttp/cshttp.h>

void load_options_usage(FILE *out)
{
    fputs("usage: cshttp-load [options] URL\n"
          "\n"
          "Loads an HTTP/1.1 server at URL (http://HOST[:PORT][/PATH] or https://...)\n"
          "and reports throughput, latency percentiles and errors by kind.\n"
          "\n"
          "load:\n"
          "  -c, --connections N    active connections (default 32; 0 only with --idle)\n"
          "  -d, --duration S       measured seconds per level (default 10)\n"
          "  -n, --requests N       stop each level after N responses instead\n"
          "  -w, --warmup S         seconds of load before measuring (default 0)\n"
          "  -t, --threads N        event-loop threads (default 1)\n"
          "      --no-keepalive     a new connection per request, with Connection: close\n"
          "  -p, --pipeline N       requests written ahead on a connection (default 1)\n"
          "      --timeout S        a response not complete S seconds after its request\n"
          "                         was sent is a timeout; the connection is reopened\n"
          "                         (default 10)\n"
          "      --idle N           N more keep-alive connections that each send one\n"
          "                         request, sit idle during the load, then send one more;\n"
          "                         the report says how many still answered\n"
          "      --levels L,L,...   concurrency sweep: one run per connection count\n"
          "      --source-addrs N   spread connections over 127.0.0.1 .. 127.0.0.N\n"
          "                         (loopback targets; default: as many as needed for\n"
          "                         more than 20,000 connections)\n"
          "request:\n"
          "  -m, --method M         method (default GET, POST with a body)\n"
          "  -H, --header 'N: V'    add a field (repeatable); Host and User-Agent replace\n"
          "                         the default ones\n"
          "  -b, --body TEXT        request body (Content-Length is added)\n"
          "      --body-file FILE   request body from a file\n"
          "      --cacert FILE      HTTPS: verify the server against these CA\n"
          "                         certificates and the host name (default: no check)\n"
          "output:\n"
          "      --report FILE      a Markdown report: machine, command, time, tables\n"
          "      --csv FILE         CSV: a header and one row per level\n"
          "      --label TEXT       the run's name in the report and CSV (default: URL)\n"
          "      --progress, --no-progress\n"
          "                         a live line on stderr (default: on a terminal only)\n"
          "  -h, --help, -V, --version\n"
          "\n"
          "exit status: 0 no error of any kind; 1 errors, non-2xx responses or idle\n"
          "connections that stopped answering were counted; 2 bad arguments; 3 the\n"
          "target cannot be reached.\n",
          out);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return LOAD_OPTIONS_BAD;
}

/* A whole decimal number in [min, max]. */
static int parse_uint(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *out)
{
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Seconds: a positive decimal (0 allowed when allow_zero), at most a day. */
static int parse_seconds(const char *s, bool allow_zero, double *out)
{
    if (!(*s >= '0' && *s <= '9') && *s != '.') return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > 86400 || (!allow_zero && v <= 0)) return -1;
    *out = v;
    return 0;
}

static char *dup_range(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static bool is_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* http://HOST[:PORT][/PATH][?QUERY] or https://..., HOST a name, IPv4 or
 * [IPv6]. No user info, no fragment (they are never sent). */
static int parse_url(load_options *o, const char *url, char *err, size_t errlen)
{
    const char *p;
    if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        p = url + 8;
        o->https = true;
    } else {
        return fail(err, errlen, "URL '%s': must start with http:// or https://", url);
    }
    size_t alen = strcspn(p, "/?#");
    const char *rest = p + alen;
    if (alen == 0) return fail(err, errlen, "URL '%s': no host", url);
    if (memchr(p, '@', alen)) return fail(err, errlen, "URL '%s': user info is not supported", url);
    const char *host = p, *port = NULL;
    size_t hlen;
    if (*p == '[') {
        const char *close = memchr(p, ']', alen);
        if (!close) return fail(err, errlen, "URL '%s': '[' without ']'", url);
        host = p + 1;
        hlen = (size_t)(close - host);
        if (close + 1 < p + alen) {
            if (close[1] != ':') return fail(err, errlen, "URL '%s': bytes after ']'", url);
            port = close + 2;
        }
    } else {
        const char *colon = memchr(p, ':', alen);
        hlen = colon ? (size_t)(colon - p) : alen;
        if (colon) port = colon + 1;
    }
    if (hlen == 0) return fail(err, errlen, "URL '%s': no host", url);
    for (size_t i = 0; i < hlen; i++)
        if ((unsigned char)host[i] <= ' ' || host[i] == 0x7f)
            return fail(err, errlen, "URL '%s': a space or control byte in the host", url);
    unsigned long long portnum = o->https ? 443 : 80;
    if (port) {
        size_t plen = (size_t)(p + alen - port);
        char digits[8];
        if (plen == 0 || plen > 5)
            return fail(err, errlen, "URL '%s': the port must be 1 to 65535", url);
        memcpy(digits, port, plen);
        digits[plen] = 0;
        if (parse_uint(digits, 1, 65535, &portnum))
            return fail(err, errlen, "URL '%s': the port must be 1 to 65535", url);
    }
    const char *frag = strchr(rest, '#');
    size_t plen = frag ? (size_t)(frag - rest) : strlen(rest);
    for (size_t i = 0; i < plen; i++)
        if ((unsigned char)rest[i] <= ' ' || (unsigned char)rest[i] >= 0x7f)
            return fail(err, errlen,
                        "URL '%s': a space, control or non-ASCII byte in the path "
                        "(percent-encode it)",
                        url);
    char portbuf[8];
    snprintf(portbuf, sizeof portbuf, "%llu", portnum);
    o->host = dup_range(host, hlen);
    o->port = strdup(portbuf);
    o->authority = dup_range(p, alen);
    if (plen == 0 || rest[0] == '?') {
        o->path = malloc(plen + 2);
        if (o->path) {
            o->path[0] = '/';
            memcpy(o->path + 1, rest, plen);
            o->path[plen + 1] = 0;
        }
    } else {
        o->path = dup_range(rest, plen);
    }
    if (!o->host || !o->port || !o->authority || !o->path)
        return fail(err, errlen, "out of memory");
    o->url = url;
    return LOAD_OPTIONS_OK;
}

/* -H 'Name: value': a token, a colon, a value without CR, LF or NUL. */
static int add_header(load_options *o, const char *h, char *err, size_t errlen)
{
    const char *colon = strchr(h, ':');
    if (!colon || colon == h) return fail(err, errlen, "--header '%s': expected 'Name: value'", h);
    size_t nlen = (size_t)(colon - h);
    for (size_t i = 0; i < nlen; i++)
        if (!is_tchar((unsigned char)h[i]))
            return fail(err, errlen, "--header '%s': the name has a byte not allowed in a token",
                        h);
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t vlen = strlen(v);
    while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) vlen--;
    for (size_t i = 0; i < vlen; i++)
        if (v[i] == '\r' || v[i] == '\n' || v[i] == 0x7f)
            return fail(err, errlen, "--header '%s': a CR, LF or DEL in the value", h);
    if (name_is(h, nlen, "Content-Length") || name_is(h, nlen, "Transfer-Encoding"))
        return fail(err, errlen,
                    "--header '%.*s': set from the body (--body, --body-file), not by hand",
                    (int)nlen, h);
    if (name_is(h, nlen, "Host")) {
        if (o->has_host) return fail(err, errlen, "--header: Host given twice");
        o->has_host = true;
    }
    if (name_is(h, nlen, "User-Agent")) o->has_agent = true;
    size_t old = o->headers ? strlen(o->headers) : 0;
    char *n = realloc(o->headers, old + nlen + vlen + 5);
    if (!n) return fail(err, errlen, "out of memory");
    o->headers = n;
    sprintf(n + old, "%.*s: %.*s\r\n", (int)nlen, h, (int)vlen, v);
    return LOAD_OPTIONS_OK;
}

static int read_body_file(load_options *o, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(err, errlen, "--body-file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "--body-file '%s': not a regular file", path);
    }
    if (st.st_size > (off_t)1 << 30) {
        close(fd);
        return fail(err, errlen, "--body-file '%s': larger than 1 GiB", path);
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return fail(err, errlen, "--body-file '%s': out of memory", path);
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            free(buf);
            close(fd);
            return fail(err, errlen, "--body-file '%s': %s", path, strerror(e));
        }
        got += (size_t)n;
    }
    close(fd);
    free(o->body);
    o->body = buf;
    o->body_len = size;
    o->has_body = true;
    return LOAD_OPTIONS_OK;
}

static int parse_levels(load_options *o, const char *s, char *err, size_t errlen)
{
    o->num_levels = 0;
    const char *p = s;
    for (;;) {
        size_t n = strcspn(p, ",");
        char item[16];
        unsigned long long v;
        if (n == 0 || n >= sizeof item)
            return fail(err, errlen, "--levels '%s': expected connection counts like 1,2,4,8", s);
        memcpy(item, p, n);
        item[n] = 0;
        if (parse_uint(item, 1, 1000000, &v))
            return fail(err, errlen, "--levels '%s': '%s' is not a count from 1 to 1000000", s,
                        item);
        if (o->num_levels == LOAD_MAX_LEVELS)
            return fail(err, errlen, "--levels '%s': more than %d levels", s, LOAD_MAX_LEVELS);
        o->levels[o->num_levels++] = (unsigned)v;
        if (p[n] == 0) break;
        p += n + 1;
    }
    return LOAD_OPTIONS_OK;
}

/* The options that take a value, by long and short name. */
typedef struct spec {
    const char *name;
    char short_name;
    bool has_value;
} spec;

static const spec specs[] = {
    {"connections", 'c', true}, {"duration", 'd', true}, {"requests", 'n', true},
    {"warmup", 'w', true},      {"threads", 't', true},  {"no-keepalive", 0, false},
    {"keepalive", 'k', false},  {"pipeline", 'p', true}, {"timeout", 0, true},
    {"idle", 0, true},          {"levels", 0, true},     {"source-addrs", 0, true},
    {"method", 'm', true},      {"header", 'H', true},   {"body", 'b', true},
    {"body-file", 0, true},     {"cacert", 0, true},     {"report", 0, true},
    {"csv", 0, true},           {"label", 0, true},      {"progress", 0, false},
    {"no-progress", 0, false},  {"help", 'h', false},    {"version", 'V', false},
};

static int apply(load_options *o, const spec *sp, const char *shown, const char *v, bool *gave_c,
                 char *err, size_t errlen)
{
    unsigned long long u;
    const char *n = sp->name;
    if (!strcmp(n, "connections")) {
        if (parse_uint(v, 0, 1000000, &u))
            return fail(err, errlen, "%s '%s': expected a number of connections, 0 to 1000000",
                        shown, v);
        o->levels[0] = (unsigned)u;
        o->num_levels = 1;
        *gave_c = true;
    } else if (!strcmp(n, "duration")) {
        if (parse_seconds(v, false, &o->duration_s))
            return fail(err, errlen, "%s '%s': expected seconds above 0 (e.g. 10 or 0.5)", shown,
                        v);
    } else if (!strcmp(n, "requests")) {
        if (parse_uint(v, 1, 1000000000000ull, &o->requests))
            return fail(err, errlen, "%s '%s': expected a number of requests above 0", shown, v);
    } else if (!strcmp(n, "warmup")) {
        if (parse_seconds(v, true, &o->warmup_s))
            return fail(err, errlen, "%s '%s': expected seconds, 0 or more", shown, v);
    } else if (!strcmp(n, "threads")) {
        if (parse_uint(v, 1, 256, &u))
            return fail(err, errlen, "%s '%s': expected 1 to 256 threads", shown, v);
        o->threads = (unsigned)u;
    } else if (!strcmp(n, "no-keepalive")) {
        o->keepalive = false;
    } else if (!strcmp(n, "keepalive")) {
        o->keepalive = true;
    } else if (!strcmp(n, "pipeline")) {
        if (parse_uint(v, 1, LOAD_MAX_PIPELINE, &u))
            return fail(err, errlen, "%s '%s': expected a depth from 1 to %d", shown, v,
                        LOAD_MAX_PIPELINE);
        o->pipeline = (unsigned)u;
    } else if (!strcmp(n, "timeout")) {
        if (parse_seconds(v, false, &o->timeout_s))
            return fail(err, errlen, "%s '%s': expected seconds above 0", shown, v);
    } else if (!strcmp(n, "idle")) {
        if (parse_uint(v, 0, 1000000, &u))
            return fail(err, errlen, "%s '%s': expected a number of connections", shown, v);
        o->idle = (unsigned)u;
    } else if (!strcmp(n, "levels")) {
        return parse_levels(o, v, err, errlen);
    } else if (!strcmp(n, "source-addrs")) {
        if (parse_uint(v, 1, 254, &u))
            return fail(err, errlen, "%s '%s': expected 1 to 254 addresses", shown, v);
        o->source_addrs = (unsigned)u;
    } else if (!strcmp(n, "method")) {
        if (!*v) return fail(err, errlen, "%s: empty method", shown);
        for (const char *c = v; *c; c++)
            if (!is_tchar((unsigned char)*c))
                return fail(err, errlen, "%s '%s': a method is a token (letters, digits, !#$%%...)",
                            shown, v);
        o->method = v;
    } else if (!strcmp(n, "header")) {
        return add_header(o, v, err, errlen);
    } else if (!strcmp(n, "body")) {
        free(o->body);
        o->body_len = strlen(v);
        o->body = dup_range(v, o->body_len);
        if (!o->body) return fail(err, errlen, "out of memory");
        o->has_body = true;
    } else if (!strcmp(n, "body-file")) {
        return read_body_file(o, v, err, errlen);
    } else if (!strcmp(n, "cacert")) {
        if (access(v, R_OK)) return fail(err, errlen, "%s '%s': %s", shown, v, strerror(errno));
        o->cacert = v;
    } else if (!strcmp(n, "report")) {
        o->report_path = v;
    } else if (!strcmp(n, "csv")) {
        o->csv_path = v;
    } else if (!strcmp(n, "label")) {
        o->label = v;
    } else if (!strcmp(n, "progress")) {
        o->progress = 1;
    } else if (!strcmp(n, "no-progress")) {
        o->progress = 0;
    }
    return LOAD_OPTIONS_OK;
}

int load_options_parse(load_options *o, int argc, char **argv, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->levels[0] = 32;
    o->num_levels = 1;
    o->duration_s = 10;
    o->threads = 1;
    o->keepalive = true;
    o->pipeline = 1;
    o->timeout_s = 10;
    o->progress = -1;
    bool gave_c = false, gave_levels = false, gave_pipeline = false;
    const char *url = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const spec *sp = NULL;
        const char *value = NULL;
        char shown[64];
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
                if (strlen(specs[k].name) == nlen && !strncmp(specs[k].name, a + 2, nlen))
                    sp = &specs[k];
            if (!sp) return fail(err, errlen, "unknown option '%s' (see --help)", a);
            snprintf(shown, sizeof shown, "--%s", sp->name);
            if (eq) {
                if (!sp->has_value) return fail(err, errlen, "%s takes no value", shown);
                value = eq + 1;
            }
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
                if (specs[k].short_name == a[1]) sp = &specs[k];
            if (!sp) return fail(err, errlen, "unknown option '%s' (see --help)", a);
            snprintf(shown, sizeof shown, "-%c", a[1]);
            if (a[2]) {
                if (!sp->has_value) return fail(err, errlen, "unknown option '%s' (see --help)", a);
                value = a + 2;
            }
        } else {
            if (url) return fail(err, errlen, "two URLs: '%s' and '%s'", url, a);
            url = a;
            continue;
        }
        if (!strcmp(sp->name, "help")) {
            load_options_usage(stdout);
            return LOAD_OPTIONS_EXIT;
        }
        if (!strcmp(sp->name, "version")) {
            printf("cshttp-load %s (libcshttp %s)\n", CSH_VERSION_STRING, csh_version_string());
            return LOAD_OPTIONS_EXIT;
        }
        if (sp->has_value && !value) {
            if (i + 1 >= argc) return fail(err, errlen, "%s needs a value", shown);
            value = argv[++i];
        }
        if (!strcmp(sp->name, "levels")) gave_levels = true;
        if (!strcmp(sp->name, "pipeline")) gave_pipeline = true;
        int r = apply(o, sp, shown, value, &gave_c, err, errlen);
        if (r) return r;
    }

    if (!url) return fail(err, errlen, "no URL given (usage: cshttp-load [options] URL)");
    if (gave_c && gave_levels)
        return fail(err, errlen, "--levels and -c both give the connections");
    if (!o->keepalive && gave_pipeline && o->pipeline > 1)
        return fail(err, errlen, "--pipeline needs keep-alive (drop --no-keepalive)");
    if (!o->keepalive && o->idle)
        return fail(err, errlen, "--idle holds keep-alive connections (drop --no-keepalive)");
    if (o->num_levels == 1 && o->levels[0] == 0 && !o->idle)
        return fail(err, errlen, "--connections 0: only with --idle (nothing else to do)");
    if (o->num_levels == 1 && o->levels[0] == 0 && o->requests)
        return fail(err, errlen, "--requests with --connections 0: no one would send them");
    if (!o->method) o->method = o->has_body ? "POST" : "GET";
    int r = parse_url(o, url, err, errlen);
    if (r) return r;
    if (o->cacert && !o->https) return fail(err, errlen, "--cacert: the URL is not https://");
    if (!o->label) o->label = o->url;
    return LOAD_OPTIONS_OK;
}

void load_options_free(load_options *o)
{
    free(o->host);
    free(o->port);
    free(o->path);
    free(o->authority);
    free(o->headers);
    free(o->body);
    memset(o, 0, sizeof *o);
}
