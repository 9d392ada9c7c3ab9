/* cshs_options: defaults, validation, and loading from argv and from a
 * config file, all driven by one table of the options. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cshttp/server/options.h>
#include <cshttp/version.h>
#include <cshttp/web/error.h>
#include <cshttp/web/version.h>

/* The headers of the tiers below this build sees are at least the versions
 * the build asks of find_package and pkg-config (CMakeLists.txt). */
#if CSHW_VERSION_HEX < CSHS_CSHTTP_WEB_MIN_HEX || CSH_VERSION_HEX < CSHS_CSHTTP_MIN_HEX
#error "libcshttp-web or libcshttp is older than libcshttp-server/CMakeLists.txt asks"
#endif

#include "options_impl.h"
#include "cshttp_internal/sized.h"

CSH__SIZED_NO_TAIL_PADDING(cshs_options, h2_max_resets);

void cshs_options_init_sized(cshs_options *options, size_t size)
{
    cshs_options d, *o = &d;
    memset(o, 0, sizeof *o);
    o->size = size;
    o->address = "127.0.0.1";
    o->address6 = NULL;
    o->port = 8080;
    o->unix_path = NULL;
    o->reuseport = 0;
    o->backlog = 511;
    o->tls_cert = NULL;
    o->tls_key = NULL;
    o->tls_port = 8443;
    o->tls_handshake_timeout_ms = 10000;
    o->loops = 0;
    o->offload_ms = 1000;
    o->min_threads = 2;
    o->max_threads = 256;
    o->grow_after_us = 1000;
    o->park_after_ms = 2000;
    o->max_connections = 10000;
    o->header_timeout_ms = 10000;
    o->keepalive_timeout_ms = 60000;
    o->min_body_rate = 240;
    o->body_grace_ms = 5000;
    o->read_timeout_ms = 30000;
    o->send_timeout_ms = 30000;
    o->stop_timeout_ms = 5000;
    o->sweep_interval_ms = 200;
    o->write_high_water = 262144;
    o->linger_ms = 2000;
    o->linger_bytes = 1u << 20;
    o->read_buffer = 8192;
    o->limits = NULL;
    o->web = NULL;
    o->next_request_wait_us = 1000;
    o->max_waiting_handlers = 1024;
    o->max_request_temp_bytes = (uint64_t)4 << 30;
    o->tunnel_idle_timeout_ms = 60000;
    o->http2 = 1;
    o->h2_max_streams = 128;
    o->h2_max_handlers = 8;
    o->h2_max_continuations = 8;
    o->h2_max_resets = 1000;
    /* the caller's struct is `size` bytes: older (smaller) or newer */
    memcpy(options, o, size < sizeof *o ? size : sizeof *o);
    if (size > sizeof *o) memset((char *)options + sizeof *o, 0, size - sizeof *o);
}

void cshs_options_release(cshs_options *o)
{
    for (size_t i = 0; i < o->nstrings_; i++) {
        if ((void *)o->limits == o->strings_[i]) o->limits = NULL;
        if ((void *)o->web == o->strings_[i]) o->web = NULL;
        free(o->strings_[i]);
    }
    free(o->strings_);
    o->strings_ = NULL;
    o->nstrings_ = 0;
}

/* Keeps `block` (malloc'd) until cshs_options_release; frees it on failure. */
static int keep_block(cshs_options *o, void *block)
{
    char **n = realloc(o->strings_, (o->nstrings_ + 1) * sizeof *n);
    if (!n) {
        free(block);
        return -ENOMEM;
    }
    o->strings_ = n;
    o->strings_[o->nstrings_++] = block;
    return 0;
}

/* A copy of a struct that starts with its size, owned by `o`: the defaults
 * of this build (`init`, `known` bytes), then every byte of `src` (when not
 * NULL), the fields newer than this build included, so that the library
 * that defines the struct still finds them. */
static int dup_sized(cshs_options *o, const void *src, size_t known, void (*init)(void *),
                     void **out)
{
    *out = NULL;
    size_t size = 0;
    if (src) memcpy(&size, src, sizeof size);
    size_t n = size > known ? size : known;
    void *d = malloc(n);
    if (!d) return -ENOMEM;
    memset(d, 0, n);
    init(d);
    if (src) memcpy(d, src, size);
    memcpy(d, &n, sizeof n);
    if (keep_block(o, d) < 0) return -ENOMEM;
    *out = d;
    return 0;
}

static void init_limits(void *p)
{
    csh_limits_init(p);
}

static void init_web(void *p)
{
    cshw_options_init(p);
}

int cshs__options_copy(cshs_options *dst, const cshs_options *src)
{
    cshs_options defaults;
    cshs_options_init(&defaults);
    cshs_options_init(dst);
    if (!src) src = &defaults;
    if (src->size < CSHS_OPTIONS_SIZE_0_2) return -EINVAL;
    /* the fields the caller knew; later ones keep their defaults */
    memcpy(dst, src, src->size < sizeof *dst ? src->size : sizeof *dst);
    dst->size = sizeof *dst;
    dst->strings_ = NULL; /* the caller's */
    dst->nstrings_ = 0;
    dst->limits = NULL;
    dst->web = NULL;
    if ((src->limits && src->limits->size < CSH_LIMITS_SIZE_0_2) ||
        (src->web && src->web->size < CSHW_OPTIONS_SIZE_0_2))
        return -EINVAL;
    void *l, *w;
    int r = dup_sized(dst, src->limits, sizeof(csh_limits), init_limits, &l);
    if (r == 0) r = dup_sized(dst, src->web, sizeof(cshw_options), init_web, &w);
    if (r < 0) {
        cshs_options_release(dst);
        return r;
    }
    dst->limits = l;
    dst->web = w;
    return 0;
}

int cshs_options_check(const cshs_options *options, const char **why)
{
    const char *w = NULL;
    cshs_options copy;
    cshs_options_init(&copy);
    const cshs_options *o = &copy;
    csh_limits limits;
    csh_limits_init(&limits);
    int r = options ? cshs__options_copy(&copy, options) : 0;
    if (r == 0 && o->limits)
        limits = *o->limits; /* this build's fields: the copy holds at least those */
    if (!options)
        w = "options must not be NULL";
    else if (r == -ENOMEM)
        w = "out of memory";
    else if (r < 0)
        w = options->size < CSHS_OPTIONS_SIZE_0_2 ? "size must be set by cshs_options_init"
            : options->limits && options->limits->size < CSH_LIMITS_SIZE_0_2
                ? "limits: size must be set by csh_limits_init"
                : "web: size must be set by cshw_options_init";
    else if (o->port > 65535)
        w = "port must be 0..65535";
    else if ((!o->address || !*o->address) && (!o->address6 || !*o->address6) &&
             (!o->unix_path || !*o->unix_path))
        w = "address, address6 or unix_path must be set";
    else if (o->tls_port > 65535)
        w = "tls_port must be 0..65535";
    else if ((o->tls_cert && *o->tls_cert) != (o->tls_key && *o->tls_key))
        w = "tls_cert and tls_key must be set together";
    else if (o->tls_cert && *o->tls_cert && (!o->address || !*o->address) &&
             (!o->address6 || !*o->address6))
        w = "tls_cert needs address or address6 to listen on";
    else if (o->backlog < 1)
        w = "backlog must be >= 1";
    else if (o->min_threads < 1 || o->min_threads > 4096)
        w = "min_threads must be 1..4096";
    else if (o->max_threads < o->min_threads || o->max_threads > 4096)
        w = "max_threads must be min_threads..4096";
    else if (o->loops > 1024)
        w = "loops must be 0..1024 (0: one per CPU)";
    else if (o->offload_ms > 3600000)
        w = "offload_ms must be 0..3600000";
    else if (o->park_after_ms < 1)
        w = "park_after_ms must be >= 1";
    else if (o->max_connections < 1)
        w = "max_connections must be >= 1";
    else if (o->sweep_interval_ms < 1 || o->sweep_interval_ms > 60000)
        w = "sweep_interval_ms must be 1..60000";
    else if (o->read_buffer < 1024 || o->read_buffer > (1u << 24))
        w = "read_buffer must be 1024..16777216";
    else if (limits.max_head < 64 || limits.max_fields < 1 || limits.max_fields > 65536)
        w = "max_head must be >= 64 and max_fields 1..65536";
    else if (o->write_high_water < 4096)
        w = "write_high_water must be >= 4096";
    else if (o->linger_ms > 60000)
        w = "linger_ms must be 0..60000";
    else if (o->next_request_wait_us > 1000000)
        w = "next_request_wait_us must be 0..1000000";
    else if (o->max_waiting_handlers > 1000000)
        w = "max_waiting_handlers must be 0..1000000";
    else if (o->h2_max_streams < 1 || o->h2_max_streams > 1024)
        w = "h2_max_streams must be 1..1024";
    else if (o->h2_max_handlers < 1 || o->h2_max_handlers > 1024)
        w = "h2_max_handlers must be 1..1024";
    else if (o->h2_max_continuations > 1024)
        w = "h2_max_continuations must be 0..1024";
    else if (o->h2_max_resets < 30 || o->h2_max_resets > 1000000)
        w = "h2_max_resets must be 30..1000000";
    if (!w && o->web && cshw_options_check(o->web, &w) < 0 && !w) w = "web options are not valid";
    cshs_options_release(&copy);
    if (why) *why = w;
    return w ? -EINVAL : 0;
}

/* ---- the table ---- */

typedef enum { T_UINT, T_INT, T_BOOL, T_SIZE, T_U64, T_STR } opt_type;

/* Which struct an option lives in: cshs_options itself, *o->limits or *o->web. */
typedef enum { IN_SERVER, IN_LIMITS, IN_WEB } opt_in;

typedef struct opt_def {
    const char *name;
    opt_type type;
    opt_in in;
    size_t off;
    const char *help;
} opt_def;

#define O(f) IN_SERVER, offsetof(cshs_options, f)
#define L(f) IN_LIMITS, offsetof(csh_limits, f)
#define W(f) IN_WEB, offsetof(cshw_options, f)
static const opt_def defs[] = {
    {"address", T_STR, O(address), "IPv4 or IPv6 address to listen on (\"\": none)"},
    {"address6", T_STR, O(address6), "a second address, normally IPv6 (\"::1\", \"::\")"},
    {"port", T_UINT, O(port), "TCP port of both addresses (0: any free port)"},
    {"unix_path", T_STR, O(unix_path), "also listen on this Unix socket"},
    {"reuseport", T_BOOL, O(reuseport), "SO_REUSEPORT on the TCP listeners"},
    {"backlog", T_INT, O(backlog), "listen(2) backlog"},
    {"tls_cert", T_STR, O(tls_cert), "HTTPS: certificate chain, PEM"},
    {"tls_key", T_STR, O(tls_key), "HTTPS: private key, PEM"},
    {"tls_port", T_UINT, O(tls_port), "HTTPS port on address and address6"},
    {"tls_handshake_timeout_ms", T_UINT, O(tls_handshake_timeout_ms),
     "TLS handshake deadline (0: off)"},
    {"loops", T_UINT, O(loops), "event loops (0: one per CPU the process may use)"},
    {"offload_ms", T_UINT, O(offload_ms),
     "after a slow handler, run the loop's handlers on other threads this long (0: never)"},
    {"min_threads", T_UINT, O(min_threads), "threads kept (at least loops + 1)"},
    {"max_threads", T_UINT, O(max_threads), "most threads (blocked handlers each hold one)"},
    {"grow_after_us", T_UINT, O(grow_after_us),
     "hand a loop to another thread when its handler took this long and events wait"},
    {"next_request_wait_us", T_U64, O(next_request_wait_us),
     "after a job's handler waited, its thread waits this long for the next request (0: never)"},
    {"max_request_temp_bytes", T_U64, O(max_request_temp_bytes),
     "request bodies in temporary files, all together (503 past it; 0: no bound)"},
    {"tunnel_idle_timeout_ms", T_U64, O(tunnel_idle_timeout_ms),
     "a tunnel (switched protocols) closes after no byte either way this long (0: never)"},
    {"http2", T_BOOL, O(http2), "HTTP/2: h2 by ALPN over TLS, h2c by prior knowledge"},
    {"h2_max_streams", T_UINT, O(h2_max_streams), "HTTP/2 streams open at once per connection"},
    {"h2_max_handlers", T_UINT, O(h2_max_handlers),
     "HTTP/2 streams of one connection in handlers that may wait, at once"},
    {"h2_max_continuations", T_UINT, O(h2_max_continuations),
     "HTTP/2 CONTINUATION frames per header block, at most"},
    {"h2_max_resets", T_U64, O(h2_max_resets),
     "HTTP/2 streams a client may reset in a burst (a thirtieth of it a second after)"},
    {"max_waiting_handlers", T_SIZE, O(max_waiting_handlers),
     "handlers waiting for a thread at max_threads; beyond it: 503"},
    {"park_after_ms", T_UINT, O(park_after_ms),
     "a parked worker beyond min_threads leaves after idling this long"},
    {"max_connections", T_UINT, O(max_connections), "beyond it: 503 and close"},
    {"header_timeout_ms", T_UINT, O(header_timeout_ms), "request head deadline (0: off)"},
    {"keepalive_timeout_ms", T_UINT, O(keepalive_timeout_ms),
     "idle keep-alive connections close after it (0: off)"},
    {"min_body_rate", T_UINT, O(min_body_rate), "request body bytes/s in each window (0: off)"},
    {"body_grace_ms", T_UINT, O(body_grace_ms), "min_body_rate's window, the first a grace"},
    {"read_timeout_ms", T_UINT, O(read_timeout_ms), "longest wait for body bytes (0: off)"},
    {"send_timeout_ms", T_UINT, O(send_timeout_ms),
     "longest wait for the client to take bytes (0: off)"},
    {"stop_timeout_ms", T_UINT, O(stop_timeout_ms), "graceful stop deadline"},
    {"sweep_interval_ms", T_UINT, O(sweep_interval_ms), "how often deadlines are checked"},
    {"write_high_water", T_SIZE, O(write_high_water), "queued output a handler may leave, bytes"},
    {"linger_ms", T_UINT, O(linger_ms), "lingering close, at most (0: off)"},
    {"linger_bytes", T_U64, O(linger_bytes), "lingering close, bytes read at most"},
    {"read_buffer", T_SIZE, O(read_buffer), "read buffer of a busy connection, bytes"},
    {"max_start_line", T_SIZE, L(max_start_line), "request line limit (414)"},
    {"max_field_line", T_SIZE, L(max_field_line), "header line limit (431)"},
    {"max_head", T_SIZE, L(max_head), "whole head limit (431)"},
    {"max_fields", T_SIZE, L(max_fields), "header fields limit (431)"},
    {"response_buffer", T_SIZE, W(response_buffer), "response bytes buffered"},
    {"gzip", T_BOOL, W(gzip), "gzip responses when accepted"},
    {"max_form_bytes", T_U64, W(max_form_bytes), "form body limit (413)"},
    {"max_drain_bytes", T_U64, W(max_drain_bytes), "unread body drained to keep alive"},
    {"temp_dir", T_STR, W(temp_dir), "folder of large uploads and request bodies"},
    {"body_buffer", T_SIZE, W(body_buffer), "request body bytes kept in memory"},
    {"max_request_body", T_U64, W(max_request_body), "request body limit (413; 0: none)"},
    {"server_header", T_STR, W(server_header), "Server field value (empty: none)"},
};
#undef O
#undef L
#undef W

static int same_name(const char *a, const char *b, size_t blen)
{
    size_t i = 0;
    for (; i < blen && a[i]; i++) {
        char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
        if (x != y) return 0;
    }
    return i == blen && a[i] == '\0';
}

static const opt_def *find_def(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (same_name(defs[i].name, name, len)) return &defs[i];
    return NULL;
}

static int keep_string(cshs_options *o, const char *v, const char **out)
{
    char *c = strdup(v);
    if (!c || keep_block(o, c) < 0) return -ENOMEM;
    *out = c;
    return 0;
}

static size_t type_size(opt_type t)
{
    switch (t) {
    case T_UINT:
        return sizeof(unsigned);
    case T_INT:
    case T_BOOL:
        return sizeof(int);
    case T_SIZE:
        return sizeof(size_t);
    case T_U64:
        return sizeof(uint64_t);
    case T_STR:
        return sizeof(const char *);
    }
    return 0;
}

/* Where option `d` lives in `o`, given an o->limits or o->web of the
 * loaders' own when there is none; NULL with a message when the struct, as
 * its owner was compiled, is too old to hold the option, or -ENOMEM. */
static char *def_place(cshs_options *o, const opt_def *d, int *r, char *err, size_t errlen)
{
    *r = 0;
    char *base;
    size_t size;
    if (d->in == IN_LIMITS) {
        if (!o->limits) {
            csh_limits *l = malloc(sizeof *l);
            if (!l || keep_block(o, l) < 0) goto nomem;
            csh_limits_init(l);
            o->limits = l;
        }
        base = (char *)o->limits;
        size = o->limits->size;
    } else if (d->in == IN_WEB) {
        if (!o->web) {
            cshw_options *w = malloc(sizeof *w);
            if (!w || keep_block(o, w) < 0) goto nomem;
            cshw_options_init(w);
            o->web = w;
        }
        base = (char *)o->web;
        size = o->web->size;
    } else {
        base = (char *)o;
        size = o->size;
    }
    if (d->off + type_size(d->type) > size) {
        snprintf(err, errlen, "%s is newer than this program's %s", d->name,
                 d->in == IN_LIMITS ? "csh_limits"
                 : d->in == IN_WEB  ? "cshw_options"
                                    : "cshs_options");
        *r = -EINVAL;
        return NULL;
    }
    return base + d->off;
nomem:
    snprintf(err, errlen, "%s: out of memory", d->name);
    *r = -ENOMEM;
    return NULL;
}

static int set_def(cshs_options *o, const opt_def *d, const char *value, char *err, size_t errlen)
{
    int r;
    char *p = def_place(o, d, &r, err, errlen);
    if (!p) return r;
    if (d->type == T_STR) {
        const char *s;
        if (keep_string(o, value, &s) < 0) {
            snprintf(err, errlen, "%s: out of memory", d->name);
            return -ENOMEM;
        }
        if (*s == '\0' && d->in == IN_WEB && d->off == offsetof(cshw_options, server_header))
            s = NULL;
        memcpy(p, &s, sizeof s);
        return 0;
    }
    if (d->type == T_BOOL) {
        int b;
        if (!strcmp(value, "1") || !strcmp(value, "yes") || !strcmp(value, "on") ||
            !strcmp(value, "true"))
            b = 1;
        else if (!strcmp(value, "0") || !strcmp(value, "no") || !strcmp(value, "off") ||
                 !strcmp(value, "false"))
            b = 0;
        else {
            snprintf(err, errlen, "%s must be on or off, not '%s'", d->name, value);
            return -EINVAL;
        }
        memcpy(p, &b, sizeof b);
        return 0;
    }
    errno = 0;
    char *end;
    if (!isdigit((unsigned char)*value)) goto bad;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end) goto bad;
    if (d->type == T_UINT) {
        if (v > UINT_MAX) goto bad;
        unsigned u = (unsigned)v;
        memcpy(p, &u, sizeof u);
    } else if (d->type == T_INT) {
        if (v > INT_MAX) goto bad;
        int i = (int)v;
        memcpy(p, &i, sizeof i);
    } else if (d->type == T_SIZE) {
        if (v > SIZE_MAX) goto bad;
        size_t z = (size_t)v;
        memcpy(p, &z, sizeof z);
    } else {
        uint64_t u = (uint64_t)v;
        memcpy(p, &u, sizeof u);
    }
    return 0;
bad:
    snprintf(err, errlen, "%s must be a non-negative integer, not '%s'", d->name, value);
    return -EINVAL;
}

int cshs_options_set(cshs_options *o, const char *name, const char *value, char *err, size_t errlen)
{
    const opt_def *d = find_def(name, strlen(name));
    if (!d) {
        snprintf(err, errlen, "unknown option '%s'", name);
        return -EINVAL;
    }
    return set_def(o, d, value, err, errlen);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int cshs_options_load_file(cshs_options *o, const char *path, char *err, size_t errlen)
{
    return cshs_options_load_file_with(o, path, NULL, NULL, err, errlen);
}

/* The longest config line read; a longer one is refused, not split. */
#define CONF_LINE_MAX 65536

typedef void (*problem_fn)(void *data, const char *message);

/* The loaders' one reading of a config file: each problem to `problem`
 * ("file:line: message", or "file: message"); at the first one it stops
 * when `stop` is set, and goes on to the next line otherwise (a bad line
 * sets nothing). The number of problems, or -errno when the file cannot be
 * opened or read (a problem was given then too). */
static int load_file(cshs_options *o, const char *path, cshs_app_option_fn app, void *app_data,
                     problem_fn problem, void *pdata, int stop)
{
    char msg[600];
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(msg, sizeof msg, "%s: %s", path,
                 strerrordesc_np(e) ? strerrordesc_np(e) : "cannot be read");
        problem(pdata, msg);
        return -e;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, sizeof msg, "%s: is a folder, not a config file", path);
        problem(pdata, msg);
        fclose(f);
        return -EISDIR;
    }
    /* the line each engine option was set on: a second one is refused, as
     * nginx refuses a directive twice (the last would win in silence) */
    int set_on[sizeof defs / sizeof defs[0]];
    memset(set_on, 0, sizeof set_on);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, problems = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        char why[256];
        why[0] = '\0';
        if (len > CONF_LINE_MAX) {
            snprintf(why, sizeof why, "line longer than %d bytes", CONF_LINE_MAX);
        } else if (memchr(line, '\0', (size_t)len)) {
            snprintf(why, sizeof why, "a NUL byte in the line");
        } else {
            char *hash = strchr(line, '#');
            if (hash) *hash = '\0';
            char *s = trim(line);
            if (!*s) continue;
            char *eq = strchr(s, '=');
            if (!eq) {
                snprintf(why, sizeof why, "expected 'name = value'");
            } else {
                *eq = '\0';
                char *name = trim(s), *value = trim(eq + 1);
                size_t vl = strlen(value);
                if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') {
                    value[vl - 1] = '\0';
                    value++;
                }
                /* the engine's names first; the application's own after them */
                const opt_def *d = find_def(name, strlen(name));
                int r;
                if (!d && app) {
                    r = app(app_data, name, value, why, sizeof why);
                    if (r == 0) snprintf(why, sizeof why, "unknown option '%s'", name);
                    if (r < 0 && !why[0]) snprintf(why, sizeof why, "'%s' refused", name);
                    if (r > 0) why[0] = '\0';
                } else if (d && set_on[d - defs]) {
                    snprintf(why, sizeof why, "'%s' is set twice (first on line %d)", d->name,
                             set_on[d - defs]);
                } else {
                    r = cshs_options_set(o, name, value, why, sizeof why);
                    if (r == 0 && d) set_on[d - defs] = lineno;
                    if (r == 0) why[0] = '\0';
                }
            }
        }
        if (!why[0]) continue;
        snprintf(msg, sizeof msg, "%s:%d: %s", path, lineno, why);
        problem(pdata, msg);
        problems++;
        if (stop) break;
    }
    int e = ferror(f) ? (errno ? errno : EIO) : 0;
    free(line);
    fclose(f);
    if (e) {
        snprintf(msg, sizeof msg, "%s: %s", path,
                 strerrordesc_np(e) ? strerrordesc_np(e) : "read error");
        problem(pdata, msg);
        return -e;
    }
    return problems;
}

typedef struct first_problem {
    char *err;
    size_t errlen;
} first_problem;

static void keep_first(void *data, const char *message)
{
    first_problem *fp = data;
    if (fp->err && fp->errlen) snprintf(fp->err, fp->errlen, "%s", message);
}

int cshs_options_load_file_with(cshs_options *o, const char *path, cshs_app_option_fn app,
                                void *app_data, char *err, size_t errlen)
{
    first_problem fp = {err, errlen};
    int r = load_file(o, path, app, app_data, keep_first, &fp, 1);
    return r > 0 ? -EINVAL : r;
}

int cshs_options_load_file_each(cshs_options *o, const char *path, cshs_app_option_fn app,
                                void *app_data, void (*problem)(void *data, const char *message),
                                void *problem_data)
{
    if (!o || !path || !problem) return -EINVAL;
    return load_file(o, path, app, app_data, problem, problem_data, 0);
}

int cshs_options_parse_args(cshs_options *o, int *argc, char **argv, char *err, size_t errlen)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const opt_def *d = NULL;
        const char *value = NULL;
        if (a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            d = find_def(a + 2, nl);
            if (d) {
                if (eq)
                    value = eq + 1;
                else if (i + 1 < *argc)
                    value = argv[++i];
                else {
                    snprintf(err, errlen, "--%s needs a value", a + 2);
                    return -EINVAL;
                }
            }
        }
        if (!d) {
            argv[out++] = argv[i];
            continue;
        }
        int r = set_def(o, d, value, err, errlen);
        if (r < 0) return r;
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

void cshs_options_help(FILE *out)
{
    cshs_options o;
    csh_limits l;
    cshw_options w;
    cshs_options_init(&o);
    csh_limits_init(&l);
    cshw_options_init(&w);
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        const opt_def *d = &defs[i];
        const char *base = d->in == IN_LIMITS ? (const char *)&l
                           : d->in == IN_WEB  ? (const char *)&w
                                              : (const char *)&o;
        const char *p = base + d->off;
        char name[64], def[64];
        size_t k = 0;
        for (; d->name[k] && k < sizeof name - 1; k++)
            name[k] = d->name[k] == '_' ? '-' : d->name[k];
        name[k] = '\0';
        switch (d->type) {
        case T_STR: {
            const char *s;
            memcpy(&s, p, sizeof s);
            snprintf(def, sizeof def, "%s", s ? s : "none");
            break;
        }
        case T_BOOL:
        case T_INT: {
            int v;
            memcpy(&v, p, sizeof v);
            snprintf(def, sizeof def, d->type == T_BOOL ? (v ? "on" : "off") : "%d", v);
            break;
        }
        case T_UINT: {
            unsigned v;
            memcpy(&v, p, sizeof v);
            snprintf(def, sizeof def, "%u", v);
            break;
        }
        case T_SIZE: {
            size_t v;
            memcpy(&v, p, sizeof v);
            snprintf(def, sizeof def, "%zu", v);
            break;
        }
        case T_U64: {
            uint64_t v;
            memcpy(&v, p, sizeof v);
            snprintf(def, sizeof def, "%" PRIu64, v);
            break;
        }
        }
        fprintf(out, "  --%-22s %s (default: %s)\n", name, d->help, def);
    }
}
