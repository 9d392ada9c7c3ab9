/* Result codes of libcshttp, built from one table.
 *
 * CSH_OK (0) means done, CSH_INCOMPLETE (1) "call again with more bytes" and
 * CSH_DATA (2) "here is a span of body data, call again"; none is an error.
 * Every error is negative and has a stable name ("CSH_E_BARE_CR"), a one-line
 * message and the HTTP status a server should answer when a request fails with
 * it. Errors that only a response can produce carry 502, the status a proxy
 * would answer its client. All functions here are pure and thread-safe.
 *
 * The errors lie in -6001 .. -6999 (CSH_E_FIRST downwards, one after the
 * other), below every -errno value (-4095 .. -1), so a field that carries
 * either, such as the toolkit's cshw_exchange_outcome.error, never means
 * two things (README.md, Result codes). A new error takes the next value
 * down; none is renumbered within a SONAME. */
#ifndef CSHTTP_ERROR_H
#define CSHTTP_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, status, message) */
#define CSH_ERROR_MAP(XX)                                                                          \
    XX(INVALID_METHOD, -6001, 400, "method is not a token")                                        \
    XX(INVALID_REQUEST_LINE, -6002, 400, "request line is not method SP target SP version")        \
    XX(INVALID_TARGET, -6003, 400, "request target has a character outside VCHAR")                 \
    XX(TARGET_FORM, -6004, 400, "request target form does not fit the method")                     \
    XX(URI_TOO_LONG, -6005, 414, "request line is longer than the limit")                          \
    XX(INVALID_VERSION, -6006, 400, "HTTP version is malformed")                                   \
    XX(UNSUPPORTED_VERSION, -6007, 505, "HTTP major version is not 1")                             \
    XX(INVALID_STATUS_LINE, -6008, 502, "status line is not version SP status SP reason")          \
    XX(INVALID_STATUS, -6009, 502, "status code is not three digits from 100 to 599")              \
    XX(HEAD_TOO_LARGE, -6010, 431, "message head is larger than the limit")                        \
    XX(FIELD_LINE_TOO_LONG, -6011, 431, "header field line is longer than the limit")              \
    XX(TOO_MANY_FIELDS, -6012, 431, "more header fields than the limit")                           \
    XX(INVALID_FIELD_NAME, -6013, 400, "header field name has a character that is not a token")    \
    XX(EMPTY_FIELD_NAME, -6014, 400, "header field name is empty")                                 \
    XX(WS_BEFORE_COLON, -6015, 400, "whitespace between header field name and colon")              \
    XX(MISSING_COLON, -6016, 400, "header field line has no colon")                                \
    XX(OBS_FOLD, -6017, 400, "obsolete line folding in a header field")                            \
    XX(WS_AFTER_START_LINE, -6018, 400, "whitespace before the first header field")                \
    XX(INVALID_FIELD_VALUE, -6019, 400, "header field value has a control character")              \
    XX(BARE_CR, -6020, 400, "CR not followed by LF")                                               \
    XX(BARE_LF, -6021, 400, "LF not preceded by CR")                                               \
    XX(INVALID_CONTENT_LENGTH, -6022, 400, "Content-Length is not a decimal number")               \
    XX(CONTENT_LENGTH_TOO_LARGE, -6023, 413, "Content-Length does not fit in 63 bits")             \
    XX(DUPLICATE_CONTENT_LENGTH, -6024, 400, "more than one Content-Length")                       \
    XX(CL_AND_TE, -6025, 400, "both Content-Length and Transfer-Encoding")                         \
    XX(DUPLICATE_TE, -6026, 400, "more than one Transfer-Encoding field")                          \
    XX(INVALID_TE, -6027, 400, "Transfer-Encoding is not a list of codings")                       \
    XX(TE_NOT_CHUNKED, -6028, 400, "final transfer coding of a request is not chunked")            \
    XX(CHUNKED_TWICE, -6029, 400, "chunked transfer coding applied more than once")                \
    XX(UNKNOWN_TE, -6030, 501, "unknown transfer coding")                                          \
    XX(TE_IN_HTTP10, -6031, 400, "Transfer-Encoding in an HTTP/1.0 message")                       \
    XX(MISSING_HOST, -6032, 400, "HTTP/1.1 request without Host")                                  \
    XX(DUPLICATE_HOST, -6033, 400, "more than one Host field")                                     \
    XX(INVALID_HOST, -6034, 400, "Host is not a valid authority")                                  \
    XX(INVALID_CONNECTION, -6035, 400, "Connection is not a list of tokens")                       \
    XX(INVALID_CHUNK_SIZE, -6036, 400, "chunk size is not hexadecimal digits")                     \
    XX(CHUNK_SIZE_TOO_LARGE, -6037, 413, "chunk size has more digits than fit in 63 bits")         \
    XX(INVALID_CHUNK_EXT, -6038, 400, "chunk extension is malformed")                              \
    XX(CHUNK_EXT_TOO_LONG, -6039, 400, "chunk extension is longer than the limit")                 \
    XX(MISSING_CHUNK_CRLF, -6040, 400, "chunk data is not followed by CRLF")                       \
    XX(TRAILER_TOO_LARGE, -6041, 431, "trailer section is larger than the limit")                  \
    XX(BODY_TRUNCATED, -6042, 400, "connection closed before the end of the body")                 \
    XX(INVALID_ARGUMENT, -6043, 500, "invalid argument")                                           \
    XX(METHOD_TOO_LONG, -6044, 501, "method is longer than the limit")                             \
    XX(INVALID_GRAMMAR, -6045, 400, "field value does not match its grammar")

/* The first error; the others follow it downwards without a gap. */
#define CSH_E_FIRST (-6001)
/* The end of libcshttp's range: no error of it is below this. */
#define CSH_E_LAST_OF_RANGE (-6999)

typedef enum csh_error {
    CSH_OK = 0,         /* done: head complete, body complete */
    CSH_INCOMPLETE = 1, /* not an error: call again with more bytes */
    CSH_DATA = 2,       /* not an error: a body data span was returned, call again */
#define CSH_ERROR_ENUM_(name, value, status, message) CSH_E_##name = (value),
    CSH_ERROR_MAP(CSH_ERROR_ENUM_)
#undef CSH_ERROR_ENUM_
} csh_error;

/* Stable name of a result code, e.g. "CSH_E_BARE_CR", "CSH_OK";
 * "CSH_E_UNKNOWN" for a value that is none of them. Never NULL, static. */
CSH_EXPORT const char *csh_error_name(int code);

/* One-line English message of a result code. Never NULL, static. */
CSH_EXPORT const char *csh_error_message(int code);

/* The HTTP status a server should answer for an error (400, 413, 414, 431,
 * 501, 505; 502 for response-only errors); 0 for a code that is not an error. */
CSH_EXPORT int csh_error_status(int code);

#ifdef __cplusplus
}
#endif

#endif
