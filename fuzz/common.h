/* Shared machinery of the libcshttp fuzz targets.
 *
 * fz_run() plays a connection the way a server (requests) or a client
 * (responses) would: parse a head, read its body with csh_body, then parse the
 * next message from the first byte after that body, until the input ends, an
 * error stops the connection, or a response turns the connection into a
 * tunnel. On every call it checks what the public headers promise (spans
 * inside the buffer, consumed <= len, error statuses, framing consistency)
 * and aborts with a message on the first broken promise.
 *
 * The input can be given whole (one call per step, on all the bytes left) or
 * in pieces (fz_config.split != 0): then bytes "arrive" in pieces whose sizes
 * come from a generator seeded from the input, the head is parsed on a growing
 * buffer and the body decoder gets its unconsumed bytes again, as body.h
 * says. In split mode every call gets a fresh heap copy of exactly the bytes
 * it may look at, so a read past `len` or a pointer kept into an old buffer is
 * caught by AddressSanitizer.
 *
 * What happened can be written to a transcript (text, one line per event)
 * that does not depend on how the input was split: fuzz_split compares
 * transcripts. */
#ifndef CSHTTP_FUZZ_COMMON_H
#define CSHTTP_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/cshttp.h>

/* Aborts with a message when `cond` is false. Not assert(): fuzz builds are
 * RelWithDebInfo, where NDEBUG would turn assert() off. */
#define FZ_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                              \
    } while (0)

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 4, 5)))
#endif
void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...);

/* A growable byte buffer (transcripts, collected body bytes). */
typedef struct fz_buf {
    char *data;
    size_t len;
    size_t cap;
} fz_buf;

void fz_buf_free(fz_buf *b);
void fz_buf_clear(fz_buf *b);
void fz_buf_put(fz_buf *b, const void *data, size_t len);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void fz_buf_printf(fz_buf *b, const char *fmt, ...);
/* Appends `len` bytes of `data` escaped: printable ASCII as is, the rest as
 * \xHH (and backslash as \\). */
void fz_buf_escaped(fz_buf *b, const void *data, size_t len);

/* Prints `len` bytes to stderr escaped as a C string, for reports. */
void fz_print_escaped(const char *label, const void *data, size_t len);

/* A small deterministic generator (xorshift32) for split points. */
typedef struct fz_rng {
    uint32_t s;
} fz_rng;

void fz_rng_seed(fz_rng *r, uint32_t seed);
uint32_t fz_rng_next(fz_rng *r);

/* How fz_run feeds bytes in split mode. */
enum {
    FZ_SPLIT_WHOLE = 0, /* one call on everything that is left */
    FZ_SPLIT_BYTES = 1, /* one byte at a time */
    FZ_SPLIT_SMALL = 2, /* pieces of 1..16 bytes */
    FZ_SPLIT_LARGE = 3, /* pieces of 1..512 bytes */
};

/* The size of the next piece for `mode` (>= 1). */
size_t fz_piece(fz_rng *r, int mode);

/* 1 if span `s` lies within a buffer of `len` bytes. */
static inline int fz_span_in(csh_span s, size_t len)
{
    return s.off <= len && s.len <= len - s.off;
}

/* 1 if `status` is one a server may answer for a request error. */
int fz_request_status_ok(int status);

/* One message as fz_run saw it; handed to fz_config.on_message. */
typedef struct fz_message {
    size_t index;        /* 0 for the first message of the input */
    size_t start;        /* offset of its first byte in the input */
    size_t end;          /* offset after its last byte (valid when complete) */
    int complete;        /* head and body both ended (CSH_OK) */
    int head_result;     /* csh_parser_execute's last result */
    int body_result;     /* the body reader's last result, or csh_body_finish's */
    csh_message msg;     /* the head (spans relative to `start`), when head_result == CSH_OK */
    const fz_buf *body;  /* the de-chunked body bytes */
    int framing_bare_lf; /* a chunked body had an LF without CR outside its data */
    const char *input;   /* the whole input: message bytes are input + start */
} fz_message;

typedef struct fz_config {
    csh_parser_type type;
    unsigned flags;            /* CSH_PARSE_* for the parser and the body decoder */
    const csh_limits *limits;  /* NULL for the defaults */
    csh_method request_method; /* responses: the method they answer */
    int split;                 /* FZ_SPLIT_* */
    uint32_t seed;             /* split mode: seeds the piece sizes */
    size_t trailers_cap;       /* trailer fields to store (<= FZ_MAX_TRAILERS) */
    fz_buf *transcript;        /* may be NULL */
    /* Called for every message whose head parsed (complete or not), in order;
     * return non-zero to stop the run. May be NULL. */
    int (*on_message)(void *ctx, const fz_message *m);
    void *ctx;
} fz_config;

#define FZ_MAX_FIELDS 128
#define FZ_MAX_TRAILERS 8

/* Results of a run. */
typedef struct fz_result {
    size_t messages; /* messages whose head parsed */
    size_t complete; /* messages complete, head and body */
    size_t end;      /* offset after the last complete message */
    int last;        /* the result that ended the run: an error, CSH_INCOMPLETE, CSH_OK */
} fz_result;

/* Plays `data` as a connection; see the top of this file. */
void fz_run(const fz_config *cfg, const uint8_t *data, size_t size, fz_result *res);

/* Checks the promises of parser.h about a parsed head: spans within the
 * head, tokens, framing consistency. `head` is the message's first byte. */
void fz_check_message(const csh_message *m, const char *head, size_t len, csh_parser_type type,
                      csh_method request_method);

/* Small limits, to reach every limit with inputs of a few hundred bytes. */
void fz_limits_tiny(csh_limits *l);

/* 1 if the environment has FUZZ_VERBOSE set: targets then print what they
 * compared (for reading a reproducer), not only what differed. */
int fz_verbose(void);

#endif
