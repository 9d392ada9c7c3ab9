/* The HTTP/1.1 message parser (RFC 9112): requests and responses, resumable,
 * zero-copy, strict by default.
 *
 * Use:
 *   csh_header fields[64];
 *   csh_parser p;
 *   csh_parser_init(&p, CSH_REQUEST, fields, 64, NULL, 0);
 *   for (;;) {                      // buf holds the first len bytes received
 *       int r = csh_parser_execute(&p, buf, len);
 *       if (r == CSH_OK) break;     // p.msg is the parsed head
 *       if (r < 0) answer(csh_error_status(r));
 *       receive more bytes at buf + len (buf may be realloc'd: spans are offsets)
 *   }
 *   the body starts at buf + p.msg.head_length; read it with csh_body (body.h).
 *
 * Ownership: the parser is a caller-owned struct; it never allocates, does no
 * I/O and has no global state. The field array passed to csh_parser_init
 * belongs to the caller and must outlive the parser. Every span in p.msg is an
 * offset into the caller's buffer, counted from the first byte of the message.
 *
 * Threads: a parser may be used by one thread at a time; different parsers may
 * be used concurrently. */
#ifndef CSHTTP_PARSER_H
#define CSHTTP_PARSER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "span.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits. Each is enforced before the bytes beyond it are examined, so a peer
 * cannot make the parser work past it. csh_limits_init gives the defaults
 * below, agreed on by the hardened peers (nginx, h2o, Node).
 *
 * Use:
 *   csh_limits l;
 *   csh_limits_init(&l);     // the defaults, and l.size
 *   l.max_head = 16384;      // then change the fields you want
 *   csh_parser_init(&p, CSH_REQUEST, fields, 64, &l, 0);
 *
 * The struct can grow without breaking callers: `size` is sizeof(csh_limits)
 * as the caller was compiled, set by csh_limits_init, and the library reads
 * only the fields that fit in it (a limit added after the caller was built
 * takes its default). So always fill the struct with csh_limits_init, never
 * with an initializer or memset alone: a size smaller than this first
 * version's (CSH_LIMITS_SIZE_0_2) makes the parser and the decoders fail with
 * CSH_E_INVALID_ARGUMENT. The rule for adding a limit: a new field goes at
 * the end, with its default in csh_limits_init; nothing is removed, reordered
 * or retyped (that is a new major version, see README.md). */
typedef struct csh_limits {
    size_t size;           /* sizeof(csh_limits) as the caller knew it: leave csh_limits_init's */
    size_t max_start_line; /* request or status line, without CRLF: 8192 (→ 414) */
    size_t max_field_line; /* one header or trailer field line, without CRLF: 8192 (→ 431) */
    size_t max_head;       /* whole head with every CRLF and leading empty lines: 32768 (→ 431) */
    size_t max_fields;     /* header fields in the head: 100 (→ 431) */
    size_t max_chunk_ext;  /* bytes of extensions on one chunk-size line: 1024 (→ 400) */
    size_t max_trailer;    /* the whole trailer section with its CRLFs: 8192 (→ 431) */
    size_t max_method;     /* request method token: 32 (→ 501, RFC 9112 §3: longer than any
                              method a server implements) */
} csh_limits;

/* The size of csh_limits in libcshttp 0.2, the first version with `size`:
 * the smallest size the library accepts. */
#define CSH_LIMITS_SIZE_0_2 (offsetof(csh_limits, max_method) + sizeof(size_t))

/* Fills the first `size` bytes of `limits` with the defaults (zeros past
 * the fields this library knows) and sets limits->size = size. Called
 * through csh_limits_init, which passes the caller's sizeof: a library
 * newer than the caller never writes past the caller's struct. */
CSH_EXPORT void csh_limits_init_sized(csh_limits *limits, size_t size);

/* Fills `limits` with the defaults and sets limits->size. */
static inline void csh_limits_init(csh_limits *limits)
{
    csh_limits_init_sized(limits, sizeof *limits);
}

/* Private: the limits a parser or a decoder keeps, csh_limits' fields with
 * room to spare, so that a new limit does not change the size of csh_parser
 * or csh_chunked (structs the caller allocates). A limit that does not fit
 * in spare_ is a new major version. */
typedef struct csh_limits_kept_ {
    size_t max_start_line;
    size_t max_field_line;
    size_t max_head;
    size_t max_fields;
    size_t max_chunk_ext;
    size_t max_trailer;
    size_t max_method;
    size_t spare_[4];
} csh_limits_kept_;

typedef enum csh_parser_type {
    CSH_REQUEST = 0,
    CSH_RESPONSE = 1,
} csh_parser_type;

/* Flags for csh_parser_init (and the decoders). */
enum {
    /* Accept a bare LF as a line end (RFC 9112 §2.2 allows a recipient to);
     * off by default: a bare LF is CSH_E_BARE_LF. A bare CR is always an error. */
    CSH_PARSE_LENIENT_BARE_LF = 1u << 0,
    /* Use the portable scanner even where SIMD is available (tests, comparison). */
    CSH_PARSE_NO_SIMD = 1u << 1,
};

typedef enum csh_method {
    CSH_METHOD_OTHER = 0, /* any other token: see msg.method_span */
    CSH_METHOD_GET,
    CSH_METHOD_HEAD,
    CSH_METHOD_POST,
    CSH_METHOD_PUT,
    CSH_METHOD_DELETE,
    CSH_METHOD_CONNECT,
    CSH_METHOD_OPTIONS,
    CSH_METHOD_TRACE,
    CSH_METHOD_PATCH,
} csh_method;

/* RFC 9112 §3.2 */
typedef enum csh_target_form {
    CSH_TARGET_ORIGIN = 0, /* "/path?query" */
    CSH_TARGET_ABSOLUTE,   /* "http://host/path" */
    CSH_TARGET_AUTHORITY,  /* "host:port", CONNECT only */
    CSH_TARGET_ASTERISK,   /* "*", OPTIONS only */
} csh_target_form;

/* How the message body is delimited (RFC 9112 §6.3), decided once. */
typedef enum csh_body_kind {
    CSH_BODY_NONE = 0,    /* no body: the next message starts right after the head */
    CSH_BODY_LENGTH,      /* exactly msg.content_length bytes (> 0) */
    CSH_BODY_CHUNKED,     /* chunked transfer coding: decode with csh_body or csh_chunked */
    CSH_BODY_UNTIL_CLOSE, /* responses only: the body is everything until the connection closes */
} csh_body_kind;

/* msg.flags */
enum {
    CSH_MSG_KEEP_ALIVE = 1u << 0,        /* the connection may carry another message */
    CSH_MSG_CONNECTION_CLOSE = 1u << 1,  /* Connection: close was sent */
    CSH_MSG_EXPECT_CONTINUE = 1u << 2,   /* Expect: 100-continue */
    CSH_MSG_EXPECT_OTHER = 1u << 3,      /* another expectation: a server answers 417 */
    CSH_MSG_UPGRADE = 1u << 4,           /* Upgrade with Connection: upgrade (not in HTTP/1.0) */
    CSH_MSG_HAS_HOST = 1u << 5,          /* a Host field was present (msg.host) */
    CSH_MSG_HAS_CONTENT_LENGTH = 1u << 6,
    CSH_MSG_HAS_TRANSFER_ENCODING = 1u << 7,
    CSH_MSG_TE_OTHER_CODINGS = 1u << 8,  /* codings besides chunked (gzip...) to undo after it */
    CSH_MSG_INTERIM = 1u << 9,           /* 1xx response: the final response follows it */
    CSH_MSG_TUNNEL = 1u << 10,           /* 2xx to CONNECT, or 101: the bytes after the head
                                            belong to another protocol */
};

typedef struct csh_header {
    csh_span name;  /* the field name as sent (compare with csh_span_ieq) */
    csh_span value; /* the value without leading and trailing whitespace */
} csh_header;

/* A parsed message head. Spans are offsets from the message's first byte. */
typedef struct csh_message {
    csh_method method;           /* requests */
    csh_span method_span;        /* requests: the method token as sent */
    csh_span target;             /* requests: the request-target as sent */
    csh_target_form target_form; /* requests */
    int version_major;           /* always 1 for a parsed message */
    int version_minor;           /* 0 to 9, as sent: 1.2 .. 1.9 are handled as 1.1 (RFC 9110
                                    §6.2), so test version_minor >= 1, not == 1 */
    int status;                  /* responses: 100..599 */
    csh_span reason;             /* responses: the reason phrase, may be empty */
    csh_header *headers;         /* the array given to csh_parser_init */
    size_t num_headers;          /* fields filled in, in order received */
    csh_body_kind body;
    uint64_t content_length; /* CSH_BODY_LENGTH: the length; else 0 */
    unsigned flags;          /* CSH_MSG_* */
    csh_span host;           /* the Host value when CSH_MSG_HAS_HOST */
    csh_span upgrade;        /* the Upgrade value, if any (see CSH_MSG_UPGRADE) */
    size_t head_length;      /* bytes of the head, from the message start to the body */
} csh_message;

/* Private: where the parse of a line stopped, as offsets in the buffer. */
typedef struct csh_line_state_ {
    size_t line;  /* first byte of the line */
    size_t pos;   /* next byte to examine */
    size_t mark;  /* end of the first token (method, name) */
    size_t mark2; /* start of the next part (target, value) */
    size_t mark3; /* end of that part */
    unsigned char sub;
} csh_line_state_;

/* The parser. Fields ending in an underscore are private state. */
typedef struct csh_parser {
    csh_message msg; /* the result; valid once csh_parser_execute returned CSH_OK */

    csh_limits_kept_ limits_;
    csh_header *fields_;
    size_t fields_cap_;  /* min(array capacity, limits.max_fields) */
    size_t len_;         /* len of the previous call */
    size_t error_offset_;
    size_t te_off_;      /* where the Transfer-Encoding value starts */
    csh_line_state_ ls_;
    unsigned flags_;
    unsigned seen_;      /* framing fields seen so far (parser.c) */
    int result_;         /* CSH_INCOMPLETE while parsing, then sticky */
    unsigned char type_;
    unsigned char state_;
    unsigned char simd_;
    unsigned char request_method_;
} csh_parser;

/* Prepares `p` to parse one message of `type`. `fields` (capacity
 * `fields_cap`) receives the header fields; the effective field limit is the
 * smaller of fields_cap and limits->max_fields. `limits` may be NULL for the
 * defaults and is copied (the fields within limits->size; a size below
 * CSH_LIMITS_SIZE_0_2 makes every csh_parser_execute return
 * CSH_E_INVALID_ARGUMENT). `flags` is a mask of CSH_PARSE_*. */
CSH_EXPORT void csh_parser_init(csh_parser *p, csh_parser_type type, csh_header *fields,
                                size_t fields_cap, const csh_limits *limits, unsigned flags);

/* Prepares `p` for the next message on the same connection, keeping its
 * configuration. The next call's buffer starts at the next message's first
 * byte (for a pipelined message: right after the previous body). */
CSH_EXPORT void csh_parser_reset(csh_parser *p);

/* Response parsers: the method of the request this response answers, which
 * decides framing (RFC 9112 §6.3: HEAD has no body, 2xx to CONNECT is a
 * tunnel). Call after init or reset, before the first execute. */
CSH_EXPORT void csh_parser_set_request_method(csh_parser *p, csh_method method);

/* Parses the head in buf[0 .. len). `buf` holds the message from its first
 * byte; each call must pass at least the bytes of the previous call, unchanged
 * (the buffer itself may move). Work resumes where the last call stopped, so
 * feeding a head in n pieces costs O(head length), not O(n * length).
 *
 * Returns CSH_OK when the head is complete (p->msg filled in, body after
 * p->msg.head_length), CSH_INCOMPLETE when more bytes are needed, or a
 * negative csh_error (see csh_parser_error_offset). Once CSH_OK or an error
 * is returned, later calls return it again until csh_parser_reset. A `len`
 * smaller than an earlier call's is CSH_E_INVALID_ARGUMENT; a call that
 * brings no new byte returns CSH_INCOMPLETE at once, without scanning.  */
CSH_EXPORT int csh_parser_execute(csh_parser *p, const char *buf, size_t len);

/* After an error: the offset in the message of the byte where it was
 * detected. */
CSH_EXPORT size_t csh_parser_error_offset(const csh_parser *p);

/* The method's name for a csh_method ("GET"), or "" for CSH_METHOD_OTHER. */
CSH_EXPORT const char *csh_method_name(csh_method method);

#ifdef __cplusplus
}
#endif

#endif
