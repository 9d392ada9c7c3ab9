/* Result codes of libcshttp-web, built from one table.
 *
 * 0 is success; every error is negative and has a stable name, a one-line
 * message and the HTTP status the toolkit answers when a request fails
 * with it. A toolkit function returns one of these, a -errno value
 * (-4095 .. -1) for a system failure, or, where its header says so, a
 * libcshttp error (-6001 .. -6999, cshttp/error.h); the three ranges never
 * meet (README.md, Result codes), and the functions below name all three.
 *
 * The table is grouped by the part of the library that raises a code; each
 * part keeps to its range:
 *   -10000 .. -10099  parsers and utilities (url, form, cookie, multipart, json)
 *   -10100 .. -10199  context, request, response, transport
 *   -10200 .. -10299  static files and MapPath
 *   -10300 .. -10399  routing
 *   -10400 .. -10499  WebSockets (websocket.h)
 * All functions here are pure and thread-safe. */
#ifndef CSHTTP_WEB_ERROR_H
#define CSHTTP_WEB_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, status, message) */
#define CSHW_ERROR_MAP(XX)                                                                         \
    /* parsers and utilities: -10000 .. -10099 */                                                  \
    XX(PATH_NOT_ABSOLUTE, -10000, 400, "path does not start with '/'")                             \
    XX(PATH_CONTROL, -10001, 400, "path has a NUL or a control character, raw or percent-encoded") \
    XX(PATH_SEPARATOR, -10002, 400, "path has a percent-encoded '/' or '\\', or a '\\'")           \
    XX(PATH_TRAVERSAL, -10003, 400, "path climbs above the root with '..'")                        \
    XX(FORM_TOO_LARGE, -10004, 413, "form or query string is larger than the limit")               \
    XX(FORM_TOO_MANY_PAIRS, -10005, 413, "form or query string has more fields than the limit")    \
    XX(FORM_NAME_TOO_LONG, -10006, 413, "form field name is longer than the limit")                \
    XX(FORM_VALUE_TOO_LONG, -10007, 413, "form field value is longer than the limit")              \
    XX(COOKIE_TOO_LARGE, -10008, 431,                                                              \
       "Cookie header, or a cookie in it, is larger than the limit")                               \
    XX(COOKIE_TOO_MANY, -10009, 431, "Cookie header has more cookies than the limit")              \
    XX(COOKIE_INVALID_NAME, -10010, 500, "cookie name is not a token")                             \
    XX(COOKIE_INVALID_VALUE, -10011, 500, "cookie value has a character outside cookie-octet")     \
    XX(COOKIE_INVALID_PATH, -10012, 500, "cookie Path has a control character, ';' or non-ASCII")  \
    XX(COOKIE_INVALID_DOMAIN, -10013, 500, "cookie Domain is not letters, digits, '-' and '.'")    \
    XX(COOKIE_INVALID_EXPIRES, -10014, 500, "cookie Expires is not a year from 1601 to 9999")      \
    XX(COOKIE_SAMESITE_NONE_INSECURE, -10015, 500, "cookie has SameSite=None without Secure")      \
    XX(COOKIE_PREFIX, -10016, 500, "__Secure- or __Host- cookie without the attributes required")  \
    XX(COOKIE_TOO_LONG, -10017, 500, "cookie name and value, or an attribute, too long to set")    \
    XX(COOKIE_INVALID_SAME_SITE, -10018, 500, "cookie same_site is not a cshw_same_site value")    \
    XX(JSON_KEY_EXPECTED, -10019, 500, "JSON writer: a value where an object key is needed")       \
    XX(JSON_VALUE_EXPECTED, -10020, 500, "JSON writer: a key or an end where a value is needed")   \
    XX(JSON_MISMATCHED_END, -10021, 500,                                                           \
       "JSON writer: end of a container that is not the open one")                                 \
    XX(JSON_TOO_DEEP, -10022, 500, "JSON writer: containers nested deeper than the limit")         \
    XX(JSON_COMPLETE, -10023, 500, "JSON writer: a value after the complete top-level one")        \
    XX(JSON_INCOMPLETE, -10024, 500, "JSON writer: finished with no value or containers open")     \
    XX(MULTIPART_NOT_MULTIPART, -10025, 415, "Content-Type is not multipart/*")                    \
    XX(MULTIPART_INVALID_CONTENT_TYPE, -10026, 400,                                                \
       "multipart Content-Type parameters are malformed")                                          \
    XX(MULTIPART_NO_BOUNDARY, -10027, 400, "multipart Content-Type has no boundary parameter")     \
    XX(MULTIPART_INVALID_BOUNDARY, -10028, 400, "multipart boundary is not 1 to 70 bchars")        \
    XX(MULTIPART_INVALID_DELIMITER, -10029, 400,                                                   \
       "multipart boundary not followed by --, padding or CRLF")                                   \
    XX(MULTIPART_INVALID_HEADER, -10030, 400, "multipart part header is malformed or repeated")    \
    XX(MULTIPART_HEADER_TOO_LARGE, -10031, 413,                                                    \
       "multipart part headers are larger than the limit")                                         \
    XX(MULTIPART_TOO_MANY_HEADERS, -10032, 413,                                                    \
       "multipart part has more header fields than the limit")                                     \
    XX(MULTIPART_TOO_MANY_PARTS, -10033, 413, "multipart body has more parts than the limit")      \
    XX(MULTIPART_INVALID_DISPOSITION, -10034, 400,                                                 \
       "part lacks Content-Disposition: form-data; name=")                                         \
    XX(MULTIPART_TRUNCATED, -10035, 400, "multipart body ended before its close delimiter")        \
    /* context, request, response, transport: -10100 .. -10199 */                                  \
    XX(HEADERS_SENT, -10100, 500, "the response headers were already sent")                        \
    XX(INVALID_HEADER, -10101, 500, "a header name or value has characters not allowed")           \
    XX(INVALID_STATUS, -10102, 500,                                                                \
       "status is not from 200 to 599 (400 to 599 for an error page)")                             \
    XX(INVALID_OPTION, -10103, 500, "an option is out of range")                                   \
    XX(NOT_ACTIVE, -10104, 500, "no request is in progress on this context")                       \
    XX(RESERVED_HEADER, -10105, 500,                                                               \
       "Content-Length, Transfer-Encoding, Connection: the toolkit's")                             \
    XX(INVALID_REDIRECT, -10106, 500, "redirect status is not 301, 302, 303, 307 or 308")          \
    XX(BODY_AFTER_FILE, -10107, 500, "output after the response was completed by send_file")       \
    XX(BODY_CONSUMED, -10108, 500, "the body was already read, as a stream or as a form")          \
    XX(BODY_TRUNCATED, -10109, 400, "the connection ended before the end of the request body")     \
    XX(BAD_BODY, -10110, 400, "the request body's chunked framing is malformed")                   \
    XX(BODY_TOO_LARGE, -10111, 413, "a chunk size of the request body does not fit in 63 bits")    \
    XX(EXPECTATION_FAILED, -10112, 417, "the request expects something other than 100-continue")   \
    XX(UPLOAD_FAILED, -10113, 500, "an uploaded file could not be written to temp_dir")            \
    XX(FILE_READ, -10114, 500, "the file could not be read to the length announced")               \
    XX(TRANSFER_CODING, -10115, 501, "the request body has a transfer coding other than chunked")  \
    XX(HOST_INVALID, -10116, 400, "Host is not a valid host[:port] (port: digits up to 65535)")    \
    XX(TARGET_AUTHORITY, -10117, 400,                                                              \
       "target scheme is not http(s), or its host[:port] (CONNECT: host:port) is not valid")       \
    XX(TARGET_USERINFO, -10118, 400, "absolute-form target has userinfo (http://user@host/)")      \
    XX(TARGET_SYNTAX, -10119, 400,                                                                 \
       "target has a fragment ('#'), or a '%' in its path not followed by two hex digits")         \
    XX(BODY_LIMIT, -10120, 413, "the request body is larger than max_request_body")                \
    XX(BODY_LENGTH, -10121, 500, "output past the Content-Length the response declared")           \
    XX(OVERLOADED, -10122, 503, "no thread was free for the handler and its queue was full")       \
    XX(TEMP_FULL, -10123, 503, "request bodies' temporary files are at the server's bound")        \
    XX(UPGRADE_NOT_ASKED, -10124, 426,                                                             \
       "the request did not ask to switch to this protocol (Upgrade, Connection: upgrade)")        \
    XX(UPGRADE_BODY, -10125, 400, "the request's body is not read: it cannot switch protocols")    \
    XX(SWITCHED, -10126, 500, "the connection switched protocols: no more HTTP output")            \
    XX(TRAILER_FIELD, -10127, 500,                                                                 \
       "this field frames, routes or describes the content: it may not be a trailer")              \
    XX(TRAILER_LENGTH, -10128, 500,                                                                \
       "trailers need a chunked body: the response declared its Content-Length")                   \
    /* static files and MapPath: -10200 .. -10299 */                                               \
    XX(NOT_FOUND, -10200, 404, "no such file")                                                     \
    XX(STATIC_FORBIDDEN, -10201, 403, "the file may not be read (permission denied)")              \
    XX(MAP_PATH_INVALID, -10202, 400, "path has a '..' segment, a backslash or a control byte")    \
    XX(MAP_PATH_OUTSIDE, -10203, 404, "path resolves outside the root through a symbolic link")    \
    XX(STATIC_NO_ROOT, -10204, 500, "static options have no root, or it is not a folder")          \
    /* routing: -10300 .. -10399 */                                                                \
    XX(ROUTE_PATTERN_START, -10300, 500, "route pattern does not start with '/'")                  \
    XX(ROUTE_PARAM_EMPTY, -10301, 500, "route parameter has an empty name: {}")                    \
    XX(ROUTE_PARAM_INVALID, -10302, 500,                                                           \
       "route parameter is not a whole segment {name} of letters, digits, '_' and '-'")            \
    XX(ROUTE_PARAM_DUPLICATE, -10303, 500, "route pattern names two parameters the same")          \
    XX(ROUTE_WILDCARD_NOT_LAST, -10304, 500, "route wildcard '*' is not the whole last segment")   \
    XX(ROUTE_PATTERN_CHAR, -10305, 500,                                                            \
       "route pattern has a control, space, '%', '?', '#' or '\\' (it matches the decoded path)")  \
    XX(ROUTE_PATTERN_SEGMENT, -10306, 500, "route pattern has an empty, '.' or '..' segment")      \
    XX(ROUTE_METHOD_INVALID, -10307, 500, "route method is not a token (such as GET) or '*'")      \
    XX(ROUTE_DUPLICATE, -10308, 500, "a route with the same method and pattern shape exists")      \
    XX(ROUTE_TOO_MANY_METHODS, -10309, 500, "router already has 64 different methods")             \
    /* WebSockets: -10400 .. -10499 */                                                             \
    XX(WS_METHOD, -10400, 405, "a WebSocket handshake must be a GET")                              \
    XX(WS_VERSION, -10401, 426, "Sec-WebSocket-Version is not 13")                                 \
    XX(WS_KEY, -10402, 400, "Sec-WebSocket-Key is missing, repeated or not 16 bytes in base64")    \
    XX(WS_ORIGIN, -10403, 403, "the page's Origin may not open a WebSocket here")                  \
    XX(WS_OPTIONS, -10404, 500, "WebSocket options are invalid")

typedef enum cshw_error {
    CSHW_OK = 0,
#define CSHW_ERROR_ENUM_(name, value, status, message) CSHW_E_##name = (value),
    CSHW_ERROR_MAP(CSHW_ERROR_ENUM_)
#undef CSHW_ERROR_ENUM_
} cshw_error;

/* "CSHW_E_NOT_FOUND", "CSHW_OK"; for a -errno value the errno's name
 * ("ENOENT"; "CSHW_E_SYSTEM" for one the C library does not name); for a
 * libcshttp error its name ("CSH_E_BARE_CR"); "CSHW_E_UNKNOWN" otherwise.
 * Never NULL, static. */
CSHW_EXPORT const char *cshw_error_name(int code);

/* A one-line message (the C library's for -errno values, libcshttp's for
 * its errors). Never NULL, static. */
CSHW_EXPORT const char *cshw_error_message(int code);

/* The HTTP status for an error: the table's, libcshttp's for its errors,
 * 500 for -errno values and unknown codes; 0 for CSHW_OK. */
CSHW_EXPORT int cshw_error_status(int code);

#ifdef __cplusplus
}
#endif

#endif
