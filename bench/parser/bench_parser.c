/* bench_parser: libcshttp's request parser against Node's http_parser 2.9
 * (Debian's libhttp-parser-dev) on the shared parser corpus.
 *
 *   bench_parser [options] [CORPUS_DIR]
 *
 * CORPUS_DIR holds MANIFEST and the .http files it lists; without it,
 * $CSHTTP_PARSER_CORPUS. Every parser is first checked against MANIFEST on
 * every file (whole buffer, 64-byte pieces, one byte at a time); a mismatch
 * stops the program before anything is timed.
 *
 * Options:
 *   --verify-only        check MANIFEST and the resumption heads, time nothing
 *   --simd               time only the AVX2 copy against the portable one (and the
 *                        portable one against itself, the noise), with quartiles
 *   --rounds N           interleaved rounds per file (default 15, at least 7 advised)
 *   --round-ms MS        length of one configuration's turn in a round (default 50)
 *   --csv FILE           also write every figure as CSV
 *   --file NAME          time this corpus file only (repeatable; all are still verified);
 *                        lines:L names the synthetic request of --simd with L-byte lines
 *   --callgrind PARSER   parse one file --iters times with one parser only, for
 *                        valgrind --tool=callgrind --toggle-collect=bench_callgrind_region;
 *                        PARSER is cshttp, cshttp-nosimd or http_parser
 *   --file NAME          (callgrind) the corpus file, exactly one
 *   --piece N            (callgrind) feed N-byte pieces; 0 = whole buffer (default)
 *   --iters N            (callgrind) repetitions (default 1000)
 *
 * What is timed, per file and per feed (whole, 64-byte pieces): one pass over
 * the file as one connection — parser initialised, every pipelined request
 * parsed (cshttp: csh_parser_execute, then csh_body_next until the body ends,
 * then csh_parser_reset; one csh_body per connection, csh_body_reset per body; http_parser: one
 * http_parser_execute per piece, with callbacks that record the same spans cshttp returns). */
#define _POSIX_C_SOURCE 200809L

#include <cshttp/cshttp.h>
#include <http_parser.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FILES 64
#define CORPUS_FIELDS 128 /* header array for the corpus (cshttp caps it at max_fields) */
#define SYNTH_FIELDS 1024 /* header array for the synthetic resumption heads */
#define DEFAULT_PIECE 64

/* ---------------------------------------------------------------- helpers */

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("bench_parser: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double tmp[256];
    if (n <= 0 || n > 256) return 0;
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* The q-quantile (0..1) of v, interpolated between the two nearest ranks. */
static double quantile(const double *v, int n, double q)
{
    double tmp[256];
    if (n <= 0 || n > 256) return 0;
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    double x = q * (n - 1);
    int i = (int)x;
    if (i >= n - 1) return tmp[n - 1];
    return tmp[i] + (x - i) * (tmp[i + 1] - tmp[i]);
}

static double vmin(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double vmax(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* Whatever the timed loops compute ends here, so none of it can be dropped. */
static volatile uint64_t g_sink;

/* ------------------------------------------------- what a parse yields */

/* MANIFEST's figures (corpus README): requests, header fields, decoded body
 * bytes, span bytes (method + target + names + values) and the FNV-1a 64 hash
 * carried across the requests of a file: body, method, 0, target, 0, minor
 * version digit, then name ":" value "\n" for each field. */
typedef struct tally {
    uint64_t requests;
    uint64_t headers;
    uint64_t body_bytes;
    uint64_t span_bytes;
    uint64_t hash;
} tally;

#define FNV_BASIS 0xcbf29ce484222325u
#define FNV_PRIME 0x100000001b3u

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_byte(uint64_t h, unsigned char c)
{
    return (h ^ c) * FNV_PRIME;
}

static void tally_init(tally *t)
{
    memset(t, 0, sizeof *t);
    t->hash = FNV_BASIS;
}

/* One complete message's head; `base` is the buffer the spans refer to. Its
 * body was already hashed as it arrived, which is the order MANIFEST wants. */
static void tally_head(tally *t, const char *method, size_t method_len, const char *base,
                       csh_span target, int minor, const csh_header *h, size_t n)
{
    uint64_t x = t->hash;
    t->span_bytes += method_len + target.len;
    x = fnv(x, method, method_len);
    x = fnv_byte(x, 0);
    x = fnv(x, base + target.off, target.len);
    x = fnv_byte(x, 0);
    x = fnv_byte(x, (unsigned char)('0' + minor));
    for (size_t i = 0; i < n; i++) {
        x = fnv(x, base + h[i].name.off, h[i].name.len);
        x = fnv_byte(x, ':');
        x = fnv(x, base + h[i].value.off, h[i].value.len);
        x = fnv_byte(x, '\n');
        t->span_bytes += h[i].name.len + h[i].value.len;
    }
    t->hash = x;
}

static void tally_body(tally *t, const char *p, size_t n, int full)
{
    t->body_bytes += n;
    if (full) t->hash = fnv(t->hash, p, n);
}

/* The parsers and feeds compared. */
enum { P_CSHTTP, P_HTTP_PARSER, P_CSHTTP_NOSIMD, P_COUNT };
static const char *const parser_names[P_COUNT] = {"cshttp", "http_parser", "cshttp-nosimd"};
static const char *const parser_titles[P_COUNT] = {"cshttp", "http_parser", "cshttp no-SIMD"};

/* A failed parse: the message is kept for the caller to print. */
static char g_err[512];

/* ------------------------------------------------------------ cshttp */

/* Parses src[0 .. len) as a connection's bytes arriving `piece` at a time
 * (piece >= len: all at once). With `rx`, the bytes are copied there as they
 * "arrive" and the parser only ever sees that receive buffer, whose tail is
 * still zero, so a read past the announced length would not go unnoticed;
 * without it (timing), the parser reads src directly. `full` also computes the
 * spans and hash. Returns 0, or -1 with g_err set. */
static inline int cshttp_run(const char *src, size_t len, size_t piece, unsigned flags, char *rx,
                             tally *t, int full)
{
    const char *buf = rx ? rx : src;
    csh_header fields[CORPUS_FIELDS];
    csh_parser p;
    csh_body b;
    size_t avail = 0; /* bytes received so far */
    size_t pos = 0;   /* first byte of the current message */
    size_t bpos = 0;  /* next body byte to hand to csh_body_next */
    int in_body = 0;
    int r;

    csh_parser_init(&p, CSH_REQUEST, fields, CORPUS_FIELDS, NULL, flags);
    int b_ready = 0; /* the body reader is prepared once, at the first body */
    while (avail < len) {
        size_t n = len - avail < piece ? len - avail : piece;
        if (rx) memcpy(rx + avail, src + avail, n);
        avail += n;
        for (;;) {
            if (!in_body) {
                if (pos == avail) break;
                r = csh_parser_execute(&p, buf + pos, avail - pos);
                if (r == CSH_INCOMPLETE) break;
                if (r != CSH_OK) {
                    snprintf(g_err, sizeof g_err,
                             "request %" PRIu64 " (at byte %zu): csh_parser_execute on %zu bytes "
                             "returned %s (%s) at byte %zu of the file",
                             t->requests + 1, pos, avail - pos, csh_error_name(r),
                             csh_error_message(r), pos + csh_parser_error_offset(&p));
                    return -1;
                }
                bpos = pos + p.msg.head_length;
                if (p.msg.body != CSH_BODY_NONE) {
                    if (b_ready)
                        csh_body_reset(&b, &p.msg);
                    else
                        csh_body_init(&b, &p.msg, NULL, flags, NULL, 0);
                    b_ready = in_body = 1;
                }
            }
            while (in_body) {
                size_t used = 0;
                csh_span d = {0, 0};
                r = csh_body_next(&b, buf + bpos, avail - bpos, &used, &d);
                if (r == CSH_DATA) {
                    tally_body(t, buf + bpos + d.off, d.len, full);
                    bpos += used;
                    /* body.h: all bytes used, the body not done: a call
                     * without new bytes could only say CSH_INCOMPLETE */
                    if (bpos == avail && !csh_body_done(&b)) break;
                } else if (r == CSH_INCOMPLETE) {
                    bpos += used;
                    break;
                } else if (r == CSH_OK) {
                    bpos += used;
                    in_body = 0;
                } else {
                    snprintf(g_err, sizeof g_err,
                             "request %" PRIu64 " (at byte %zu): csh_body_read on %zu bytes at "
                             "byte %zu returned %s (%s)",
                             t->requests + 1, pos, avail - bpos, bpos, csh_error_name(r),
                             csh_error_message(r));
                    return -1;
                }
            }
            if (in_body) break; /* wait for more body bytes */
            /* the message is complete: its head, then the next message */
            t->requests++;
            t->headers += p.msg.num_headers;
            if (full)
                tally_head(t, buf + pos + p.msg.method_span.off, p.msg.method_span.len, buf + pos,
                           p.msg.target, p.msg.version_minor, p.msg.headers, p.msg.num_headers);
            pos = bpos;
            csh_parser_reset(&p);
        }
    }
    if (in_body || pos != len) {
        snprintf(g_err, sizeof g_err,
                 "the input ended inside request %" PRIu64 " (which starts at byte %zu, %s)",
                 t->requests + 1, pos, in_body ? "in its body" : "in its head");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------- http_parser */

/* The callbacks record what cshttp returns: target, field names and values
 * as offsets in the buffer, and the body. A name, value or target may arrive
 * in several calls when the input comes in pieces; the pieces are contiguous
 * in our buffer, so they extend the span. */
typedef struct hp_state {
    const char *base;
    tally *t;
    int full;
    int last; /* 0: none, 1: url, 2: field name, 3: field value */
    int in_message;
    int broken; /* a piece was not contiguous with the previous one */
    csh_span url;
    size_t nh;
    csh_header hdr[SYNTH_FIELDS];
} hp_state;

static int hp_on_message_begin(http_parser *hp)
{
    hp_state *s = hp->data;
    s->nh = 0;
    s->last = 0;
    s->url.off = s->url.len = 0;
    s->in_message = 1;
    return 0;
}

static int hp_on_url(http_parser *hp, const char *at, size_t n)
{
    hp_state *s = hp->data;
    size_t off = (size_t)(at - s->base);
    if (s->last == 1) {
        if (s->url.off + s->url.len != off) return s->broken = 1;
        s->url.len += n;
    } else {
        s->url.off = off;
        s->url.len = n;
        s->last = 1;
    }
    return 0;
}

static int hp_on_header_field(http_parser *hp, const char *at, size_t n)
{
    hp_state *s = hp->data;
    size_t off = (size_t)(at - s->base);
    if (s->last == 2) {
        csh_span *name = &s->hdr[s->nh - 1].name;
        if (name->off + name->len != off) return s->broken = 1;
        name->len += n;
    } else {
        if (s->nh == SYNTH_FIELDS) return 1;
        s->hdr[s->nh].name.off = off;
        s->hdr[s->nh].name.len = n;
        s->hdr[s->nh].value.off = off;
        s->hdr[s->nh].value.len = 0;
        s->nh++;
        s->last = 2;
    }
    return 0;
}

static int hp_on_header_value(http_parser *hp, const char *at, size_t n)
{
    hp_state *s = hp->data;
    size_t off = (size_t)(at - s->base);
    csh_span *value = &s->hdr[s->nh - 1].value;
    if (s->last == 3) {
        if (value->off + value->len != off) return s->broken = 1;
        value->len += n;
    } else {
        value->off = off;
        value->len = n;
        s->last = 3;
    }
    return 0;
}

static int hp_on_body(http_parser *hp, const char *at, size_t n)
{
    hp_state *s = hp->data;
    tally_body(s->t, at, n, s->full);
    return 0;
}

static int hp_on_message_complete(http_parser *hp)
{
    hp_state *s = hp->data;
    tally *t = s->t;
    t->requests++;
    t->headers += s->nh;
    if (s->full) {
        const char *m = http_method_str((enum http_method)hp->method);
        tally_head(t, m, strlen(m), s->base, s->url, hp->http_minor, s->hdr, s->nh);
    }
    s->in_message = 0;
    return 0;
}

static http_parser_settings hp_settings;

static void hp_settings_setup(void)
{
    http_parser_settings_init(&hp_settings);
    hp_settings.on_message_begin = hp_on_message_begin;
    hp_settings.on_url = hp_on_url;
    hp_settings.on_header_field = hp_on_header_field;
    hp_settings.on_header_value = hp_on_header_value;
    hp_settings.on_body = hp_on_body;
    hp_settings.on_message_complete = hp_on_message_complete;
}

/* Same contract as cshttp_run. http_parser is a push parser: each piece is
 * handed over once and never again. */
static inline int hp_run(const char *src, size_t len, size_t piece, char *rx, tally *t, int full)
{
    hp_state s;
    http_parser hp;
    const char *buf = rx ? rx : src;

    s.base = buf;
    s.t = t;
    s.full = full;
    s.last = 0;
    s.in_message = 0;
    s.broken = 0;
    s.nh = 0;
    http_parser_init(&hp, HTTP_REQUEST);
    hp.data = &s;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < piece ? len - off : piece;
        if (rx) memcpy(rx + off, src + off, n);
        size_t done = http_parser_execute(&hp, &hp_settings, buf + off, n);
        if (done != n || HTTP_PARSER_ERRNO(&hp) != HPE_OK) {
            snprintf(g_err, sizeof g_err,
                     "request %" PRIu64 ": http_parser_execute stopped at byte %zu: %s (%s)%s",
                     t->requests + 1, off + done, http_errno_name(HTTP_PARSER_ERRNO(&hp)),
                     http_errno_description(HTTP_PARSER_ERRNO(&hp)),
                     s.broken ? "; a callback piece was not contiguous" : "");
            return -1;
        }
        off += n;
    }
    if (s.in_message) {
        snprintf(g_err, sizeof g_err, "the input ended inside request %" PRIu64, t->requests + 1);
        return -1;
    }
    return 0;
}

/* One pass of `parser` over src, as timed. */
static inline int run_parser(int parser, const char *src, size_t len, size_t piece, char *rx,
                             tally *t, int full)
{
    switch (parser) {
    case P_CSHTTP:
        return cshttp_run(src, len, piece, 0, rx, t, full);
    case P_CSHTTP_NOSIMD:
        return cshttp_run(src, len, piece, CSH_PARSE_NO_SIMD, rx, t, full);
    default:
        return hp_run(src, len, piece, rx, t, full);
    }
}

/* ------------------------------------------------------------- corpus */

typedef struct corpus_file {
    char name[256];
    char *data;
    size_t len;
    tally want;
} corpus_file;

static corpus_file g_files[MAX_FILES];
static int g_nfiles;
static int g_timed[MAX_FILES]; /* files to time (--file), all when none is named */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *p = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            char *q = realloc(p, cap *= 2);
            if (!q) die("out of memory reading %s", path);
            p = q;
        }
        size_t got = fread(p + n, 1, cap - n, f);
        if (got == 0) break;
        n += got;
    }
    if (ferror(f)) die("cannot read %s", path);
    fclose(f);
    *len = n;
    return p;
}

static void load_corpus(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    FILE *m = fopen(path, "r");
    if (!m)
        die("cannot open %s: %s (give the corpus folder as the last argument or in "
            "CSHTTP_PARSER_CORPUS)",
            path, strerror(errno));
    char line[1024];
    while (fgets(line, sizeof line, m)) {
        corpus_file *f = &g_files[g_nfiles];
        char name[256];
        uint64_t v[4], h;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == 0) continue;
        if (sscanf(line, "%255s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNx64, name,
                   &v[0], &v[1], &v[2], &v[3], &h) != 6)
            die("%s: cannot read the line: %s", path, line);
        if (g_nfiles == MAX_FILES) die("%s: more than %d files", path, MAX_FILES);
        snprintf(f->name, sizeof f->name, "%s", name);
        f->want.requests = v[0];
        f->want.headers = v[1];
        f->want.body_bytes = v[2];
        f->want.span_bytes = v[3];
        f->want.hash = h;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        f->data = read_file(path, &f->len);
        if (f->want.requests == 0) die("%s: %s has no requests", dir, name);
        g_nfiles++;
    }
    fclose(m);
    if (g_nfiles == 0) die("%s/MANIFEST lists no files", dir);
}

/* ------------------------------------------------------- verification */

static const char *feed_name(size_t piece, size_t len, char *buf, size_t cap)
{
    if (piece >= len) return "whole";
    snprintf(buf, cap, "%zu-byte pieces", piece);
    return buf;
}

static void verify_one(int parser, const corpus_file *f, size_t piece)
{
    char feed[64];
    tally t;
    char *rx = calloc(f->len + 1, 1);
    if (!rx) die("out of memory");
    tally_init(&t);
    if (run_parser(parser, f->data, f->len, piece, rx, &t, 1) != 0)
        die("%s failed on %s fed %s: %s", parser_titles[parser], f->name,
            feed_name(piece, f->len, feed, sizeof feed), g_err);
    free(rx);

    char diff[512] = "";
    size_t o = 0;
#define CHECK(field, label)                                                                        \
    if (t.field != f->want.field)                                                                  \
        o += (size_t)snprintf(diff + o, sizeof diff - o,                                           \
                              "\n    " label ": got %" PRIu64 ", MANIFEST says %" PRIu64, t.field, \
                              f->want.field);
    CHECK(requests, "requests")
    CHECK(headers, "header fields")
    CHECK(body_bytes, "body bytes")
    CHECK(span_bytes, "span bytes")
#undef CHECK
    if (t.hash != f->want.hash)
        snprintf(diff + o, sizeof diff - o,
                 "\n    fnv1a64: got %016" PRIx64 ", MANIFEST says %016" PRIx64, t.hash,
                 f->want.hash);
    if (diff[0])
        die("MANIFEST mismatch: %s on %s fed %s:%s", parser_titles[parser], f->name,
            feed_name(piece, f->len, feed, sizeof feed), diff);
}

static void verify_corpus(void)
{
    const size_t pieces[] = {SIZE_MAX, DEFAULT_PIECE, 1};
    for (int i = 0; i < g_nfiles; i++)
        for (int p = 0; p < P_COUNT; p++)
            for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++)
                verify_one(p, &g_files[i], pieces[k]);
}

/* ------------------------------------------------------------ timing */

static int g_rounds = 15;
static double g_round_ms = 50;
static FILE *g_csv;

/* Runs `iters` passes and returns the elapsed ns. `expect` is what one pass
 * adds to the tally (requests + fields + body bytes), checked afterwards. */
static uint64_t time_passes(int parser, const corpus_file *f, size_t piece, uint64_t iters)
{
    tally t;
    tally_init(&t);
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++)
        if (run_parser(parser, f->data, f->len, piece, NULL, &t, 0) != 0)
            die("%s failed on %s while timed: %s", parser_titles[parser], f->name, g_err);
    uint64_t t1 = now_ns();
    if (t.requests != iters * f->want.requests || t.headers != iters * f->want.headers ||
        t.body_bytes != iters * f->want.body_bytes)
        die("%s on %s: the timed passes did not parse what MANIFEST says", parser_titles[parser],
            f->name);
    g_sink += t.requests + t.headers + t.body_bytes;
    return t1 - t0;
}

/* Passes in one round's turn of about g_round_ms. */
static uint64_t calibrate(int parser, const corpus_file *f, size_t piece)
{
    uint64_t iters = 1, ns;
    for (;;) {
        ns = time_passes(parser, f, piece, iters);
        if (ns >= 5000000 || iters >= (UINT64_C(1) << 40)) break;
        iters *= ns < 500000 ? 8 : 2;
    }
    double want = g_round_ms * 1e6 * (double)iters / (double)(ns ? ns : 1);
    return want < 1 ? 1 : (uint64_t)want;
}

#define FEEDS 2
#define CONFIGS (FEEDS * P_COUNT)
#define MAX_ROUNDS 256

typedef struct file_result {
    double ns_req[CONFIGS]; /* median ns per request */
    double mbs[CONFIGS];    /* at the median */
    double lo[CONFIGS], hi[CONFIGS];
    double hp_vs_csh[FEEDS]; /* median over rounds of http_parser / cshttp */
    double hp_vs_nosimd[FEEDS];
    double nosimd_vs_simd[FEEDS]; /* median over rounds of no-SIMD / SIMD: >= 1, SIMD not slower */
    double piece_vs_whole[P_COUNT]; /* median over rounds of 64-byte / whole, per parser */
} file_result;

static void bench_file(const corpus_file *f, file_result *res)
{
    size_t piece[FEEDS] = {f->len, DEFAULT_PIECE};
    uint64_t iters[CONFIGS];
    static double ns[CONFIGS][MAX_ROUNDS]; /* per pass */
    double ratio[MAX_ROUNDS];

    for (int c = 0; c < CONFIGS; c++) iters[c] = calibrate(c % P_COUNT, f, piece[c / P_COUNT]);
    /* Rounds interleave every configuration, so slow drifts of a shared
     * machine hit them all alike; per-round ratios cancel most of the rest. */
    /* The order of the turns rotates from round to round, so that no
     * configuration always runs first or right after the same other one. */
    for (int r = 0; r < g_rounds; r++)
        for (int k = 0; k < CONFIGS; k++) {
            int c = (k + r) % CONFIGS;
            ns[c][r] = (double)time_passes(c % P_COUNT, f, piece[c / P_COUNT], iters[c]) /
                       (double)iters[c];
        }
    for (int c = 0; c < CONFIGS; c++) {
        double med = median(ns[c], g_rounds);
        res->ns_req[c] = med / (double)f->want.requests;
        res->mbs[c] = (double)f->len / med * 1e3;
        res->lo[c] = vmin(ns[c], g_rounds) / (double)f->want.requests;
        res->hi[c] = vmax(ns[c], g_rounds) / (double)f->want.requests;
    }
    for (int fd = 0; fd < FEEDS; fd++) {
        int base = fd * P_COUNT;
        for (int r = 0; r < g_rounds; r++)
            ratio[r] = ns[base + P_HTTP_PARSER][r] / ns[base + P_CSHTTP][r];
        res->hp_vs_csh[fd] = median(ratio, g_rounds);
        for (int r = 0; r < g_rounds; r++)
            ratio[r] = ns[base + P_HTTP_PARSER][r] / ns[base + P_CSHTTP_NOSIMD][r];
        res->hp_vs_nosimd[fd] = median(ratio, g_rounds);
        for (int r = 0; r < g_rounds; r++)
            ratio[r] = ns[base + P_CSHTTP_NOSIMD][r] / ns[base + P_CSHTTP][r];
        res->nosimd_vs_simd[fd] = median(ratio, g_rounds);
    }
    for (int p = 0; p < P_COUNT; p++) {
        for (int r = 0; r < g_rounds; r++) ratio[r] = ns[P_COUNT + p][r] / ns[p][r];
        res->piece_vs_whole[p] = median(ratio, g_rounds);
    }
    if (g_csv)
        for (int c = 0; c < CONFIGS; c++)
            fprintf(g_csv, "corpus,%s,%zu,%" PRIu64 ",%s,%s,%.1f,%.1f,%.1f,%.1f,%" PRIu64 ",%d\n",
                    f->name, f->len, f->want.requests, c / P_COUNT ? "64" : "whole",
                    parser_names[c % P_COUNT], res->ns_req[c], res->lo[c], res->hi[c], res->mbs[c],
                    iters[c], g_rounds);
}

/* ---------------------------------------- the SIMD verdict: --simd */

/* The AVX2 copy against the portable one, in time, and the portable one
 * against itself (an A/A control: what the machine's noise alone does to the
 * same ratio). Each round times the six configurations (SIMD, no-SIMD,
 * no-SIMD again; whole and 64-byte) in turn, the order rotating. */
enum { S_SIMD, S_NOSIMD, S_NOSIMD2, S_COUNT };
#define S_CONFIGS (FEEDS * S_COUNT)

typedef struct simd_result {
    double ns_req[S_CONFIGS]; /* median ns per request */
    double ratio[FEEDS][5];   /* no-SIMD / SIMD per round: min, q1, median, q3, max */
    double control[FEEDS][5]; /* no-SIMD / no-SIMD again, the same */
} simd_result;

static void five(const double *v, int n, double out[5])
{
    out[0] = vmin(v, n);
    out[1] = quantile(v, n, 0.25);
    out[2] = median(v, n);
    out[3] = quantile(v, n, 0.75);
    out[4] = vmax(v, n);
}

static void bench_simd(const corpus_file *f, simd_result *res)
{
    size_t piece[FEEDS] = {f->len, DEFAULT_PIECE};
    static const int parser_of[S_COUNT] = {P_CSHTTP, P_CSHTTP_NOSIMD, P_CSHTTP_NOSIMD};
    uint64_t iters[S_CONFIGS];
    static double ns[S_CONFIGS][MAX_ROUNDS];
    double ratio[MAX_ROUNDS];

    for (int c = 0; c < S_CONFIGS; c++)
        iters[c] = calibrate(parser_of[c % S_COUNT], f, piece[c / S_COUNT]);
    /* both no-SIMD turns make the same passes, so that the control compares
     * like with like */
    for (int fd = 0; fd < FEEDS; fd++)
        iters[fd * S_COUNT + S_NOSIMD2] = iters[fd * S_COUNT + S_NOSIMD];
    for (int r = 0; r < g_rounds; r++)
        for (int k = 0; k < S_CONFIGS; k++) {
            int c = (k + r) % S_CONFIGS;
            ns[c][r] =
                (double)time_passes(parser_of[c % S_COUNT], f, piece[c / S_COUNT], iters[c]) /
                (double)iters[c];
        }
    for (int c = 0; c < S_CONFIGS; c++)
        res->ns_req[c] = median(ns[c], g_rounds) / (double)f->want.requests;
    for (int fd = 0; fd < FEEDS; fd++) {
        int b = fd * S_COUNT;
        for (int r = 0; r < g_rounds; r++) ratio[r] = ns[b + S_NOSIMD][r] / ns[b + S_SIMD][r];
        five(ratio, g_rounds, res->ratio[fd]);
        for (int r = 0; r < g_rounds; r++) ratio[r] = ns[b + S_NOSIMD2][r] / ns[b + S_NOSIMD][r];
        five(ratio, g_rounds, res->control[fd]);
    }
    if (g_csv)
        for (int fd = 0; fd < FEEDS; fd++)
            fprintf(
                g_csv,
                "simd,%s,%zu,%s,%.1f,%.1f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d\n",
                f->name, f->len, fd ? "64" : "whole", res->ns_req[fd * S_COUNT + S_SIMD],
                res->ns_req[fd * S_COUNT + S_NOSIMD], res->ratio[fd][0], res->ratio[fd][1],
                res->ratio[fd][2], res->ratio[fd][3], res->ratio[fd][4], res->control[fd][0],
                res->control[fd][1], res->control[fd][2], res->control[fd][3], res->control[fd][4],
                g_rounds);
}

static void print_simd(const simd_result *sr)
{
    printf("\n### SIMD against portable, in time (%d interleaved rounds, rotated order)\n\n",
           g_rounds);
    printf("no-SIMD/SIMD: the portable copy's time over the AVX2 copy's, per round (above 1, "
           "the AVX2 copy is faster): median, [quartiles] and (min - max) of the rounds. A/A: the "
           "portable copy over itself in the same rounds, the noise alone. \"slower\" only where "
           "the upper quartile of no-SIMD/SIMD is below 1, \"within noise\" where the median is "
           "below 1 but not that.\n\n");
    printf("| file | feed | SIMD ns/req | no-SIMD ns/req | no-SIMD/SIMD | quartiles | range | A/A "
           "| A/A quartiles | verdict |\n");
    printf("|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for (int i = 0; i < g_nfiles; i++) {
        if (!g_timed[i]) continue;
        for (int fd = 0; fd < FEEDS; fd++) {
            const double *q = sr[i].ratio[fd], *a = sr[i].control[fd];
            const char *v = q[3] < 1 ? "**slower**" : q[2] < 1 ? "within noise" : "not slower";
            printf("| %s | %s | %.0f | %.0f | %.3fx | [%.3f, %.3f] | (%.3f - %.3f) | %.3fx "
                   "| [%.3f, %.3f] | %s |\n",
                   g_files[i].name, fd ? "64 B" : "whole", sr[i].ns_req[fd * S_COUNT + S_SIMD],
                   sr[i].ns_req[fd * S_COUNT + S_NOSIMD], q[2], q[1], q[3], q[0], q[4], a[2], a[1],
                   a[3], v);
        }
    }
}

/* The same, on synthetic requests whose field lines all have one length:
 * where (if anywhere) the AVX2 copy stops paying for itself. A request line,
 * Host, then SIMD_LINES_FIELDS lines of exactly `line` bytes before the CRLF
 * ("X-F01: " and value bytes). */
#define SIMD_LINES_FIELDS 20
static const size_t simd_line_lengths[] = {8, 12, 16, 24, 32, 48, 64, 96, 128};
#define SIMD_LINE_COUNT (sizeof simd_line_lengths / sizeof simd_line_lengths[0])

static void synth_lines(corpus_file *f, size_t line)
{
    size_t cap = 64 + SIMD_LINES_FIELDS * (line + 2) + 2;
    char *p = xmalloc(cap);
    size_t n = (size_t)sprintf(p, "GET /s HTTP/1.1\r\nHost: b\r\n");
    for (int k = 1; k <= SIMD_LINES_FIELDS; k++) {
        n += (size_t)sprintf(p + n, "X-F%02d: ", k);
        for (size_t i = 7; i < line; i++) p[n++] = (char)('a' + i % 26);
        p[n++] = '\r';
        p[n++] = '\n';
    }
    p[n++] = '\r';
    p[n++] = '\n';
    snprintf(f->name, sizeof f->name, "%zu-byte lines", line);
    f->data = p;
    f->len = n;
    /* http_parser's reading is the reference both cshttp copies must match */
    char *rx = calloc(n + 1, 1);
    if (!rx) die("out of memory");
    tally_init(&f->want);
    if (run_parser(P_HTTP_PARSER, p, n, n, rx, &f->want, 1) != 0 || f->want.requests != 1 ||
        f->want.headers != SIMD_LINES_FIELDS + 1)
        die("http_parser did not read the synthetic %s as expected", f->name);
    free(rx);
    verify_one(P_CSHTTP, f, f->len);
    verify_one(P_CSHTTP, f, DEFAULT_PIECE);
    verify_one(P_CSHTTP_NOSIMD, f, f->len);
    verify_one(P_CSHTTP_NOSIMD, f, DEFAULT_PIECE);
}

static void print_simd_lines(const simd_result *sr)
{
    printf("\n### SIMD against portable by line length (synthetic requests: %d field lines of "
           "one length, %d interleaved rounds)\n\n",
           SIMD_LINES_FIELDS, g_rounds);
    printf("| line bytes | feed | SIMD ns/req | no-SIMD ns/req | no-SIMD/SIMD | quartiles | A/A "
           "| A/A quartiles | verdict |\n");
    printf("|--:|---|--:|--:|--:|--:|--:|--:|---|\n");
    for (size_t i = 0; i < SIMD_LINE_COUNT; i++)
        for (int fd = 0; fd < FEEDS; fd++) {
            const double *q = sr[i].ratio[fd], *a = sr[i].control[fd];
            const char *v = q[3] < 1 ? "**slower**" : q[2] < 1 ? "within noise" : "not slower";
            printf(
                "| %zu | %s | %.0f | %.0f | %.3fx | [%.3f, %.3f] | %.3fx | [%.3f, %.3f] | %s |\n",
                simd_line_lengths[i], fd ? "64 B" : "whole", sr[i].ns_req[fd * S_COUNT + S_SIMD],
                sr[i].ns_req[fd * S_COUNT + S_NOSIMD], q[2], q[1], q[3], a[2], a[1], a[3], v);
        }
}

/* ------------------------------------------ resumption: O(n) or O(n^2) */

/* A request head of exactly `size` bytes made of many short fields. */
static char *synth_head(size_t size, size_t *nfields)
{
    char *p = xmalloc(size + 1);
    size_t n = 0, k = 0;
    n += (size_t)sprintf(p, "GET /resumption HTTP/1.1\r\nHost: bench.example\r\n");
    *nfields = 1;
    /* "X-Field-0001: " + 24 value bytes + CRLF = 40 bytes */
    while (n + 40 + 60 + 2 <= size) {
        n += (size_t)sprintf(p + n, "X-Field-%04zu: abcdefghijklmnopqrstuvwx\r\n", ++k);
        ++*nfields;
    }
    size_t pad = size - n - 2 - strlen("X-Last: ") - 2;
    n += (size_t)sprintf(p + n, "X-Last: ");
    for (size_t i = 0; i < pad; i++) p[n++] = (char)('a' + i % 26);
    memcpy(p + n, "\r\n\r\n", 4);
    n += 4;
    ++*nfields;
    if (n != size) die("synthetic head is %zu bytes, not %zu", n, size);
    return p;
}

enum { R_WHOLE, R_BYTES, R_FEEDS };

/* One parse of the synthetic head: whole, or one byte at a time from a
 * growing buffer (cshttp) / one byte per call (http_parser). Returns the
 * number of fields, 0 on failure. */
static size_t resume_once(int parser, const char *head, size_t len, int feed)
{
    if (parser == P_HTTP_PARSER) {
        tally t;
        tally_init(&t);
        if (hp_run(head, len, feed == R_WHOLE ? len : 1, NULL, &t, 0) != 0 || t.requests != 1)
            return 0;
        return (size_t)t.headers;
    }
    static csh_header fields[SYNTH_FIELDS];
    csh_limits lim;
    csh_parser p;
    int r = CSH_INCOMPLETE;
    csh_limits_init(&lim);
    lim.max_fields = SYNTH_FIELDS;
    csh_parser_init(&p, CSH_REQUEST, fields, SYNTH_FIELDS, &lim,
                    parser == P_CSHTTP_NOSIMD ? CSH_PARSE_NO_SIMD : 0);
    if (feed == R_WHOLE) {
        r = csh_parser_execute(&p, head, len);
    } else {
        for (size_t n = 1; n <= len; n++) {
            r = csh_parser_execute(&p, head, n);
            if (r != CSH_INCOMPLETE) break;
        }
    }
    if (r != CSH_OK || p.msg.head_length != len) {
        snprintf(g_err, sizeof g_err, "%s at byte %zu", csh_error_name(r),
                 csh_parser_error_offset(&p));
        return 0;
    }
    return p.msg.num_headers;
}

static uint64_t resume_time(int parser, const char *head, size_t len, int feed, uint64_t iters,
                            size_t nfields)
{
    uint64_t got = 0;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++) got += resume_once(parser, head, len, feed);
    uint64_t t1 = now_ns();
    if (got != iters * nfields)
        die("%s: the synthetic %zu-byte head did not parse while timed", parser_titles[parser],
            len);
    g_sink += got;
    return t1 - t0;
}

typedef struct resume_result {
    size_t size, nfields;
    double ns[P_COUNT][R_FEEDS]; /* median ns per parse */
    double ratio[P_COUNT];       /* median over rounds of bytes / whole */
} resume_result;

static void verify_resumption(const size_t *sizes, int nsizes)
{
    for (int s = 0; s < nsizes; s++) {
        size_t nf;
        char *head = synth_head(sizes[s], &nf);
        for (int p = 0; p < P_COUNT; p++)
            for (int fd = 0; fd < R_FEEDS; fd++) {
                g_err[0] = 0;
                size_t got = resume_once(p, head, sizes[s], fd);
                if (got != nf)
                    die("%s on the synthetic %zu-byte head fed %s: %zu fields, expected %zu %s",
                        parser_titles[p], sizes[s], fd == R_WHOLE ? "whole" : "byte by byte", got,
                        nf, g_err);
            }
        free(head);
    }
}

static void bench_resumption(size_t size, resume_result *res)
{
    size_t nf;
    char *head = synth_head(size, &nf);
    uint64_t iters[P_COUNT][R_FEEDS];
    static double ns[P_COUNT][R_FEEDS][MAX_ROUNDS];
    double ratio[MAX_ROUNDS];
    double turn_ms = g_round_ms / 2;

    res->size = size;
    res->nfields = nf;
    for (int p = 0; p < P_COUNT; p++)
        for (int fd = 0; fd < R_FEEDS; fd++) {
            uint64_t it = 1, t;
            for (;;) {
                t = resume_time(p, head, size, fd, it, nf);
                if (t >= 5000000 || it >= (UINT64_C(1) << 40)) break;
                it *= t < 500000 ? 8 : 2;
            }
            double want = turn_ms * 1e6 * (double)it / (double)(t ? t : 1);
            iters[p][fd] = want < 1 ? 1 : (uint64_t)want;
        }
    for (int r = 0; r < g_rounds; r++)
        for (int p = 0; p < P_COUNT; p++)
            for (int fd = 0; fd < R_FEEDS; fd++)
                ns[p][fd][r] =
                    (double)resume_time(p, head, size, fd, iters[p][fd], nf) / (double)iters[p][fd];
    for (int p = 0; p < P_COUNT; p++) {
        for (int fd = 0; fd < R_FEEDS; fd++) res->ns[p][fd] = median(ns[p][fd], g_rounds);
        for (int r = 0; r < g_rounds; r++) ratio[r] = ns[p][R_BYTES][r] / ns[p][R_WHOLE][r];
        res->ratio[p] = median(ratio, g_rounds);
        if (g_csv)
            for (int fd = 0; fd < R_FEEDS; fd++)
                fprintf(g_csv,
                        "resumption,synthetic-%zu,%zu,1,%s,%s,%.1f,%.1f,%.1f,%.1f,%" PRIu64 ",%d\n",
                        size, size, fd == R_WHOLE ? "whole" : "1", parser_names[p], res->ns[p][fd],
                        vmin(ns[p][fd], g_rounds), vmax(ns[p][fd], g_rounds),
                        (double)size / res->ns[p][fd] * 1e3, iters[p][fd], g_rounds);
    }
    free(head);
}

/* ----------------------------------------------------------- callgrind */

/* The only code callgrind counts (--toggle-collect=bench_callgrind_region). */
__attribute__((noinline)) uint64_t bench_callgrind_region(int parser, const corpus_file *f,
                                                          size_t piece, uint64_t iters);
__attribute__((noinline)) uint64_t bench_callgrind_region(int parser, const corpus_file *f,
                                                          size_t piece, uint64_t iters)
{
    tally t;
    tally_init(&t);
    for (uint64_t i = 0; i < iters; i++)
        if (run_parser(parser, f->data, f->len, piece, NULL, &t, 0) != 0) return 0;
    return t.requests;
}

static int callgrind_mode(const char *parser_name, const char *file, size_t piece, uint64_t iters)
{
    int parser = -1;
    for (int p = 0; p < P_COUNT; p++)
        if (strcmp(parser_name, parser_names[p]) == 0) parser = p;
    if (parser < 0)
        die("--callgrind: unknown parser '%s' (cshttp, cshttp-nosimd, http_parser)", parser_name);
    const corpus_file *f = NULL;
    for (int i = 0; i < g_nfiles; i++)
        if (strcmp(g_files[i].name, file) == 0) f = &g_files[i];
    if (!f) die("--callgrind: %s is not in MANIFEST", file);
    if (piece == 0) piece = f->len;
    verify_one(parser, f, piece);
    verify_one(parser, f, f->len);
    if (bench_callgrind_region(parser, f, piece, 1) != f->want.requests) /* warm-up, not counted */
        die("--callgrind: %s failed on %s: %s", parser_names[parser], f->name, g_err);
    uint64_t reqs = bench_callgrind_region(parser, f, piece, iters);
    if (reqs != iters * f->want.requests)
        die("--callgrind: %s failed on %s: %s", parser_names[parser], f->name, g_err);
    printf("parser=%s file=%s piece=%zu iters=%" PRIu64 " requests=%" PRIu64 " bytes=%" PRIu64 "\n",
           parser_names[parser], f->name, piece, iters, reqs, (uint64_t)f->len * iters);
    return 0;
}

/* --------------------------------------------------------------- report */

static void print_report(const file_result *fr, const resume_result *rr, int nres)
{
    printf("\n### Parse time per request (median of %d interleaved rounds)\n\n", g_rounds);
    printf("Each round runs every parser and feed of a file in turn, ~%.0f ms each.\n", g_round_ms);
    printf("hp/cshttp = http_parser time / cshttp time, the median of the per-round ratios: "
           "above 1, cshttp is faster; no-SIMD/SIMD likewise: at least 1, the AVX2 copy is not "
           "slower than the portable one.\n\n");
    printf("| file | bytes | req | feed | cshttp ns/req | MB/s | http_parser ns/req | MB/s "
           "| cshttp no-SIMD ns/req | MB/s | hp/cshttp | hp/no-SIMD | no-SIMD/SIMD |\n");
    printf("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < g_nfiles; i++) {
        const corpus_file *f = &g_files[i];
        const file_result *r = &fr[i];
        if (!g_timed[i]) continue;
        for (int fd = 0; fd < FEEDS; fd++) {
            int b = fd * P_COUNT;
            printf("| %s | %zu | %" PRIu64 " | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f "
                   "| %.2fx | %.2fx | %.2fx |\n",
                   f->name, f->len, f->want.requests, fd ? "64 B" : "whole",
                   r->ns_req[b + P_CSHTTP], r->mbs[b + P_CSHTTP], r->ns_req[b + P_HTTP_PARSER],
                   r->mbs[b + P_HTTP_PARSER], r->ns_req[b + P_CSHTTP_NOSIMD],
                   r->mbs[b + P_CSHTTP_NOSIMD], r->hp_vs_csh[fd], r->hp_vs_nosimd[fd],
                   r->nosimd_vs_simd[fd]);
        }
    }

    printf("\n### Resumption cost: 64-byte pieces / whole buffer (median of per-round ratios)\n\n");
    printf("| file | cshttp | cshttp no-SIMD | http_parser |\n|---|--:|--:|--:|\n");
    for (int i = 0; i < g_nfiles; i++)
        if (g_timed[i])
            printf("| %s | %.2fx | %.2fx | %.2fx |\n", g_files[i].name,
                   fr[i].piece_vs_whole[P_CSHTTP], fr[i].piece_vs_whole[P_CSHTTP_NOSIMD],
                   fr[i].piece_vs_whole[P_HTTP_PARSER]);

    printf("\n### O(n) resumption: synthetic head, one byte at a time vs whole\n\n");
    printf("cshttp: csh_parser_execute on a buffer growing by one byte per call; http_parser: "
           "one byte per call. ns per head.\n\n");
    printf("| head | fields | cshttp whole | cshttp 1 B | ratio | no-SIMD whole | no-SIMD 1 B "
           "| ratio | http_parser whole | http_parser 1 B | ratio |\n");
    printf("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < nres; i++) {
        const resume_result *r = &rr[i];
        printf("| %zu | %zu", r->size, r->nfields);
        const int order[P_COUNT] = {P_CSHTTP, P_CSHTTP_NOSIMD, P_HTTP_PARSER};
        for (int k = 0; k < P_COUNT; k++) {
            int p = order[k];
            printf(" | %.0f | %.0f | %.1fx", r->ns[p][R_WHOLE], r->ns[p][R_BYTES], r->ratio[p]);
        }
        printf(" |\n");
    }
    if (nres == 2)
        printf("\nGrowth of the ratio from %zu to %zu bytes (O(n): about 1; a parser that rescans "
               "from the start: about %zux): cshttp %.2f, no-SIMD %.2f, http_parser %.2f\n",
               rr[0].size, rr[1].size, rr[1].size / rr[0].size,
               rr[1].ratio[P_CSHTTP] / rr[0].ratio[P_CSHTTP],
               rr[1].ratio[P_CSHTTP_NOSIMD] / rr[0].ratio[P_CSHTTP_NOSIMD],
               rr[1].ratio[P_HTTP_PARSER] / rr[0].ratio[P_HTTP_PARSER]);

    printf("\n### Goals, in time (run.sh adds them in instructions)\n\n");
    for (int i = 0; i < g_nfiles; i++)
        if (g_timed[i] && strcmp(g_files[i].name, "b_chrome_get.http") == 0)
            printf("- browser GET (b_chrome_get.http), whole: http_parser / cshttp time = %.2fx "
                   "(goal >= 7x): %s\n",
                   fr[i].hp_vs_csh[0], fr[i].hp_vs_csh[0] >= 7 ? "met" : "NOT met");
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < g_nfiles; i++)
        if (g_timed[i] && fr[i].piece_vs_whole[P_CSHTTP] > worst) {
            worst = fr[i].piece_vs_whole[P_CSHTTP];
            worst_name = g_files[i].name;
        }
    printf("- cshttp 64-byte pieces / whole time, worst file (%s): %.2fx (goal <= 1.5x): %s\n",
           worst_name, worst, worst <= 1.5 ? "met" : "NOT met");
}

/* ----------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: bench_parser [--verify-only | --simd] [--rounds N] [--round-ms MS] [--csv FILE]\n"
        "                    [--file NAME]... [CORPUS_DIR]\n"
        "       bench_parser --callgrind cshttp|cshttp-nosimd|http_parser --file NAME\n"
        "                    [--piece N] [--iters N] [CORPUS_DIR]\n"
        "CORPUS_DIR defaults to $CSHTTP_PARSER_CORPUS.\n");
    exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') die("%s: not a number: '%s'", opt, s);
    return (uint64_t)v;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *csv = NULL, *cg_parser = NULL, *cg_file = NULL;
    const char *only[MAX_FILES];
    int nonly = 0;
    int verify_only = 0, simd_only = 0;
    uint64_t cg_iters = 1000, cg_piece = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (strcmp(a, "--verify-only") == 0)
            verify_only = 1;
        else if (strcmp(a, "--simd") == 0)
            simd_only = 1;
        else if (strcmp(a, "--rounds") == 0)
            g_rounds = (int)parse_u64(a, NEXT());
        else if (strcmp(a, "--round-ms") == 0)
            g_round_ms = (double)parse_u64(a, NEXT());
        else if (strcmp(a, "--csv") == 0)
            csv = NEXT();
        else if (strcmp(a, "--callgrind") == 0)
            cg_parser = NEXT();
        else if (strcmp(a, "--file") == 0) {
            if (nonly == MAX_FILES) die("--file: too many");
            cg_file = only[nonly++] = NEXT();
        } else if (strcmp(a, "--piece") == 0)
            cg_piece = parse_u64(a, NEXT());
        else if (strcmp(a, "--iters") == 0)
            cg_iters = parse_u64(a, NEXT());
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            usage();
        else if (a[0] == '-') {
            fprintf(stderr, "bench_parser: unknown option %s\n", a);
            usage();
        } else if (!dir)
            dir = a;
        else
            usage();
#undef NEXT
    }
    if (!dir) dir = getenv("CSHTTP_PARSER_CORPUS");
    if (!dir || !*dir) {
        fprintf(stderr, "bench_parser: no corpus folder (argument or CSHTTP_PARSER_CORPUS)\n");
        usage();
    }
    if (g_rounds < 1 || g_rounds > MAX_ROUNDS) die("--rounds: 1 .. %d", MAX_ROUNDS);
    if (g_round_ms < 1) die("--round-ms: at least 1");

    hp_settings_setup();
    load_corpus(dir);

    /* "--file lines:L": the synthetic request of the SIMD verdict whose field
     * lines are all L bytes, as a corpus file (for --callgrind) */
    for (int k = 0; k < nonly; k++)
        if (strncmp(only[k], "lines:", 6) == 0) {
            if (g_nfiles == MAX_FILES) die("--file: too many");
            uint64_t l = parse_u64("--file lines:", only[k] + 6);
            if (l < 8 || l > 4096) die("--file lines:L: L from 8 to 4096");
            corpus_file *f = &g_files[g_nfiles++];
            synth_lines(f, (size_t)l);
            snprintf(f->name, sizeof f->name, "%s", only[k]);
        }
    for (int k = 0; k < nonly; k++) {
        int found = 0;
        for (int i = 0; i < g_nfiles; i++)
            if (strcmp(g_files[i].name, only[k]) == 0) found = g_timed[i] = 1;
        if (!found) die("--file: %s is not in MANIFEST", only[k]);
    }
    if (nonly == 0)
        for (int i = 0; i < g_nfiles; i++) g_timed[i] = 1;

    if (cg_parser) {
        if (nonly != 1) die("--callgrind needs exactly one --file NAME");
        return callgrind_mode(cg_parser, cg_file, (size_t)cg_piece, cg_iters ? cg_iters : 1);
    }

    const size_t sizes[2] = {4096, 16384};
    verify_corpus();
    verify_resumption(sizes, 2);
    printf("MANIFEST verified: %d files; cshttp, cshttp no-SIMD and http_parser %d.%d.%d each "
           "whole, in %d-byte pieces and one byte at a time.\n",
           g_nfiles, HTTP_PARSER_VERSION_MAJOR, HTTP_PARSER_VERSION_MINOR,
           HTTP_PARSER_VERSION_PATCH, DEFAULT_PIECE);
    fflush(stdout);
    if (verify_only) return 0;

    if (g_rounds < 7)
        fprintf(stderr, "bench_parser: warning: %d rounds (at least 7 advised)\n", g_rounds);
    if (csv) {
        g_csv = fopen(csv, "w");
        if (!g_csv) die("cannot write %s: %s", csv, strerror(errno));
        if (simd_only)
            fprintf(g_csv, "section,file,bytes,feed,simd_ns_per_request,nosimd_ns_per_request,"
                           "ratio_min,ratio_q1,ratio_median,ratio_q3,ratio_max,aa_min,aa_q1,"
                           "aa_median,aa_q3,aa_max,rounds\n");
        else
            fprintf(g_csv, "section,file,bytes,requests,feed,parser,ns_per_request_median,"
                           "ns_per_request_min,ns_per_request_max,mb_per_s,iters_per_round,"
                           "rounds\n");
    }
    printf("cshttp %s, http_parser %d.%d.%d; %d rounds, ~%.0f ms per configuration and round.\n",
           csh_version_string(), HTTP_PARSER_VERSION_MAJOR, HTTP_PARSER_VERSION_MINOR,
           HTTP_PARSER_VERSION_PATCH, g_rounds, g_round_ms);
    fflush(stdout);

    if (simd_only) {
        static simd_result sr[MAX_FILES];
        for (int i = 0; i < g_nfiles; i++) {
            if (!g_timed[i]) continue;
            fprintf(stderr, "timing %s (SIMD against portable) ...\n", g_files[i].name);
            bench_simd(&g_files[i], &sr[i]);
        }
        print_simd(sr);
        static simd_result lr[SIMD_LINE_COUNT];
        for (size_t i = 0; i < SIMD_LINE_COUNT; i++) {
            corpus_file f;
            synth_lines(&f, simd_line_lengths[i]);
            fprintf(stderr, "timing %s (SIMD against portable) ...\n", f.name);
            bench_simd(&f, &lr[i]);
            free(f.data);
        }
        print_simd_lines(lr);
        if (g_csv) fclose(g_csv);
        for (int i = 0; i < g_nfiles; i++) free(g_files[i].data);
        return g_sink == 0xffffffffffffffffu;
    }

    static file_result fr[MAX_FILES];
    resume_result rr[2];
    for (int i = 0; i < g_nfiles; i++) {
        if (!g_timed[i]) continue;
        fprintf(stderr, "timing %s ...\n", g_files[i].name);
        bench_file(&g_files[i], &fr[i]);
    }
    for (int s = 0; s < 2; s++) {
        fprintf(stderr, "timing the synthetic %zu-byte head ...\n", sizes[s]);
        bench_resumption(sizes[s], &rr[s]);
    }
    print_report(fr, rr, 2);
    if (g_csv) fclose(g_csv);
    for (int i = 0; i < g_nfiles; i++) free(g_files[i].data);
    return g_sink == 0xffffffffffffffffu; /* keeps the sink observable */
}
