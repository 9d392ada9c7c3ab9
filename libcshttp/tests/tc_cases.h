/* Wire case files (the .case files in cases/): loader, runner and comparison, shared by
 * test_cases.c and test_parser.c. The format is described in cases/README.md.
 *
 * A case is run by simulating a connection: the input arrives in pieces
 * decided by a feed plan (whole, two pieces split at an offset, or a fixed
 * step such as one byte), and the runner parses every message in it with
 * csh_parser_execute and csh_body_read, as a server or client would. Each
 * call gets a freshly allocated copy of the bytes received so far, ending
 * exactly at the end of the allocation, so a read past `len` is caught by
 * AddressSanitizer and a span kept as a pointer instead of an offset goes
 * stale. The result of a run (an outcome) is compared with the case's
 * expectations and with the outcomes of every other feed plan. */
#ifndef CSH_TESTS_TC_CASES_H
#define CSH_TESTS_TC_CASES_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/cshttp.h>

typedef struct tc_bytes {
    char *p;
    size_t n;
    size_t cap;
} tc_bytes;

typedef struct tc_field {
    size_t index; /* expectations: position in the header or trailer array */
    tc_bytes name;
    tc_bytes value;
} tc_field;

/* One parsed message, copied out of the parser's spans. */
typedef struct tc_msg {
    int method;
    tc_bytes method_span;
    tc_bytes target;
    int target_form;
    int version_major;
    int version_minor;
    int status;
    tc_bytes reason;
    size_t num_headers;
    tc_field *headers;
    int body;
    uint64_t content_length;
    unsigned flags;
    tc_bytes host;
    tc_bytes upgrade;
    size_t head_length;
    tc_bytes data; /* body bytes returned as CSH_DATA spans */
    int body_done; /* the body reader returned CSH_OK or finished cleanly */
    size_t num_trailers;
    tc_field *trailers;
    uint64_t chunks;
} tc_msg;

/* What one run of a case produced. */
typedef struct tc_outcome {
    int result;       /* CSH_OK: input fully parsed; CSH_INCOMPLETE: input ended in a head;
                         or a negative error */
    size_t error_pos; /* errors: offset in the input of the byte where it was detected */
    size_t nmsgs;
    size_t cap;
    tc_msg *msgs;        /* messages whose head was parsed */
    tc_bytes tail;       /* bytes after a tunnel (CONNECT 2xx, 101) head */
    char violation[512]; /* first broken API contract seen, or "" */
} tc_outcome;

/* Expectation bits of a message (tc_expect_msg.set). */
enum {
    TC_X_METHOD = 1u << 0,
    TC_X_TARGET = 1u << 1,
    TC_X_FORM = 1u << 2,
    TC_X_VERSION = 1u << 3,
    TC_X_VERSION_MAJOR = 1u << 4,
    TC_X_STATUS = 1u << 5,
    TC_X_REASON = 1u << 6,
    TC_X_HEADERS = 1u << 7,
    TC_X_BODY = 1u << 8,
    TC_X_CL = 1u << 9,
    TC_X_FLAGS = 1u << 10,
    TC_X_HOST = 1u << 11,
    TC_X_UPGRADE = 1u << 12,
    TC_X_HEAD_LENGTH = 1u << 13,
    TC_X_DATA = 1u << 14,
    TC_X_DATA_LEN = 1u << 15,
    TC_X_TRAILERS = 1u << 16,
    TC_X_CHUNKS = 1u << 17,
};

typedef struct tc_expect_msg {
    unsigned set;
    tc_bytes method;
    tc_bytes target;
    int form;
    int version_major;
    int version_minor;
    int status;
    tc_bytes reason;
    size_t num_headers;
    tc_field *hdrs;
    size_t nhdrs;
    int body;
    uint64_t content_length;
    unsigned flags;     /* TC_X_FLAGS: the exact set */
    unsigned has_flags; /* flags that must be set */
    unsigned no_flags;  /* flags that must be clear */
    tc_bytes host;
    tc_bytes upgrade;
    size_t head_length;
    tc_bytes data;
    uint64_t data_len;
    size_t num_trailers;
    tc_field *trs;
    size_t ntrs;
    uint64_t chunks;
} tc_expect_msg;

enum { TC_MAX_ALTERNATIVES = 4, TC_MAX_METHODS = 16 };

typedef struct tc_case {
    char *file;
    int line;
    char *name;
    char *rfc;
    char *smuggling;                     /* the libcshttp/SMUGGLING.md row this case checks, or NULL */
    int type;                            /* CSH_REQUEST or CSH_RESPONSE */
    int request_methods[TC_MAX_METHODS]; /* responses: method of each request answered */
    size_t n_request_methods;
    unsigned parse_flags;
    csh_limits limits;
    size_t fields_cap;
    size_t trailers_cap;
    tc_bytes input;
    int result;                        /* CSH_OK, CSH_INCOMPLETE or 0 when errors are expected */
    int errors[TC_MAX_ALTERNATIVES];   /* expected error (or alternatives) */
    int statuses[TC_MAX_ALTERNATIVES]; /* and the HTTP status of each */
    size_t nerrors;
    int has_error_offset_max;
    size_t error_offset_max;
    size_t messages;
    tc_expect_msg *msgs;
    size_t nmsgs;
    int has_tail;
    tc_bytes tail;
} tc_case;

typedef struct tc_corpus {
    tc_case *cases;
    size_t n;
    size_t cap;
} tc_corpus;

/* How the input arrives. */
typedef struct tc_feed {
    enum { TC_FEED_WHOLE, TC_FEED_SPLIT, TC_FEED_STEP } kind;
    size_t arg; /* SPLIT: size of the first piece; STEP: bytes per piece */
} tc_feed;

/* Loads every *.case file of `dir` (sorted by name). Returns 0, or -1 with a
 * message in `err`. */
int tc_corpus_load(tc_corpus *corpus, const char *dir, char *err, size_t errlen);
void tc_corpus_free(tc_corpus *corpus);

/* Runs case `c` with parser flags `extra_flags` added to the case's own. */
void tc_run(const tc_case *c, unsigned extra_flags, tc_feed feed, tc_outcome *out);
void tc_outcome_free(tc_outcome *o);

/* 1 if the outcome matches the case's expectations; otherwise 0 and a
 * description of the first difference in `why`. */
int tc_check(const tc_case *c, const tc_outcome *o, char *why, size_t whylen);

/* 1 if two outcomes are identical; otherwise 0 and the first difference. */
int tc_same(const tc_outcome *a, const tc_outcome *b, char *why, size_t whylen);

/* Runs the case whole, split in two at every offset and byte by byte (with
 * `extra_flags`), checks that every run gives the same outcome as
 * `reference` (or as the whole run when `reference` is NULL) and, when
 * `check_expectations` is set, that the whole run matches the case. Returns
 * the number of failures, each printed with the case name. */
int tc_verify(const tc_case *c, unsigned extra_flags, const tc_outcome *reference,
              int check_expectations);

/* Names of the error codes, from CSH_ERROR_MAP: -1 if `name` is unknown. */
int tc_error_code(const char *name, int *status);
const char *tc_error_name(int code);

#endif
