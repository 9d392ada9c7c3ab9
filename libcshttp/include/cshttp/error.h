/* Result codes of libcshttp, built from one table.
 *
 * CSH_OK (0) means done, CSH_INCOMPLETE (1) "call again with more bytes" and
 * CSH_DATA (2) "here is a span of body data, call again"; none is an error.
 * Every error is negative and has a stable name ("CSH_E_BARE_CR"), a one-line
 * message and the HTTP status a server should answer when a request fails with
 * it. Errors that only a response can produce carry 502, the status a proxy
 * would answer its client. All functions here are pure and thread-safe. */
#ifndef CSHTTP_ERROR_H
#define CSHTTP_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, status, message) */
#define CSH_ERROR_MAP(XX)                                                                          \
    XX(INVALID_METHOD, -1, 400, "method is not a token")                                           \
    XX(INVALID_REQUEST_LINE, -2, 400, "request line is not method SP target SP version")           \
    XX(INVALID_TARGET, -3, 400, "request target has a character outside VCHAR")                    \
    XX(TARGET_FORM, -4, 400, "request target form does not fit the method")                        \
    XX(URI_TOO_LONG, -5, 414, "request line is longer than the limit")                             \
    XX(INVALID_VERSION, -6, 400, "HTTP version is malformed")                                      \
    XX(UNSUPPORTED_VERSION, -7, 505, "HTTP major version is not 1")                                \
    XX(INVALID_STATUS_LINE, -8, 502, "status line is not version SP status SP reason")             \
    XX(INVALID_STATUS, -9, 502, "status code is not three digits from 100 to 599")                 \
    XX(HEAD_TOO_LARGE, -10, 431, "message head is larger than the limit")                          \
    XX(FIELD_LINE_TOO_LONG, -11, 431, "header field line is longer than the limit")                \
    XX(TOO_MANY_FIELDS, -12, 431, "more header fields than the limit")                             \
    XX(INVALID_FIELD_NAME, -13, 400, "header field name has a character that is not a token")      \
    XX(EMPTY_FIELD_NAME, -14, 400, "header field name is empty")                                   \
    XX(WS_BEFORE_COLON, -15, 400, "whitespace between header field name and colon")                \
    XX(MISSING_COLON, -16, 400, "header field line has no colon")                                  \
    XX(OBS_FOLD, -17, 400, "obsolete line folding in a header field")                              \
    XX(WS_AFTER_START_LINE, -18, 400, "whitespace before the first header field")                  \
    XX(INVALID_FIELD_VALUE, -19, 400, "header field value has a control character")                \
    XX(BARE_CR, -20, 400, "CR not followed by LF")                                                 \
    XX(BARE_LF, -21, 400, "LF not preceded by CR")                                                 \
    XX(INVALID_CONTENT_LENGTH, -22, 400, "Content-Length is not a decimal number")                 \
    XX(CONTENT_LENGTH_TOO_LARGE, -23, 413, "Content-Length does not fit in 63 bits")               \
    XX(DUPLICATE_CONTENT_LENGTH, -24, 400, "more than one Content-Length")                         \
    XX(CL_AND_TE, -25, 400, "both Content-Length and Transfer-Encoding")                           \
    XX(DUPLICATE_TE, -26, 400, "more than one Transfer-Encoding field")                            \
    XX(INVALID_TE, -27, 400, "Transfer-Encoding is not a list of codings")                         \
    XX(TE_NOT_CHUNKED, -28, 400, "final transfer coding of a request is not chunked")              \
    XX(CHUNKED_TWICE, -29, 400, "chunked transfer coding applied more than once")                  \
    XX(UNKNOWN_TE, -30, 501, "unknown transfer coding")                                            \
    XX(TE_IN_HTTP10, -31, 400, "Transfer-Encoding in an HTTP/1.0 message")                         \
    XX(MISSING_HOST, -32, 400, "HTTP/1.1 request without Host")                                    \
    XX(DUPLICATE_HOST, -33, 400, "more than one Host field")                                       \
    XX(INVALID_HOST, -34, 400, "Host is not a valid authority")                                    \
    XX(INVALID_CONNECTION, -35, 400, "Connection is not a list of tokens")                         \
    XX(INVALID_CHUNK_SIZE, -36, 400, "chunk size is not hexadecimal digits")                       \
    XX(CHUNK_SIZE_TOO_LARGE, -37, 413, "chunk size has more digits than fit in 63 bits")           \
    XX(INVALID_CHUNK_EXT, -38, 400, "chunk extension is malformed")                                \
    XX(CHUNK_EXT_TOO_LONG, -39, 400, "chunk extension is longer than the limit")                   \
    XX(MISSING_CHUNK_CRLF, -40, 400, "chunk data is not followed by CRLF")                         \
    XX(TRAILER_TOO_LARGE, -41, 431, "trailer section is larger than the limit")                    \
    XX(BODY_TRUNCATED, -42, 400, "connection closed before the end of the body")                   \
    XX(INVALID_ARGUMENT, -43, 500, "invalid argument")                                             \
    XX(METHOD_TOO_LONG, -44, 501, "method is longer than the limit")                               \
    XX(INVALID_GRAMMAR, -45, 400, "field value does not match its grammar")

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
