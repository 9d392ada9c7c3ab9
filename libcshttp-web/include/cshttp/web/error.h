/* Result codes of libcshttp-web, built from one table.
 *
 * 0 is success; every error is negative and has a stable name, a one-line
 * message and the HTTP status the toolkit answers when a request fails
 * with it. System failures are -errno values (small negatives below 4096);
 * the toolkit's own codes start at -10000 so the two never collide.
 *
 * The table is grouped by the part of the library that raises a code; each
 * part keeps to its range:
 *   -10000 .. -10099  parsers and utilities (url, form, cookie, multipart, json)
 *   -10100 .. -10199  context, request, response, transport
 *   -10200 .. -10299  static files and MapPath
 *   -10300 .. -10399  routing
 * All functions here are pure and thread-safe. */
#ifndef CSHTTP_WEB_ERROR_H
#define CSHTTP_WEB_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, status, message) */
#define CSHW_ERROR_MAP(XX)                                                                         \
    /* parsers and utilities: -10000 .. -10099 */                                                 \
    /* context, request, response, transport: -10100 .. -10199 */                                 \
    XX(HEADERS_SENT, -10100, 500, "the response headers were already sent")                       \
    XX(INVALID_HEADER, -10101, 500, "a header name or value has characters not allowed")          \
    XX(INVALID_STATUS, -10102, 500, "status is not from 100 to 599")                              \
    /* static files and MapPath: -10200 .. -10299 */                                              \
    XX(NOT_FOUND, -10200, 404, "no such file")                                                     \
    /* routing: -10300 .. -10399 */

typedef enum cshw_error {
    CSHW_OK = 0,
#define CSHW_ERROR_ENUM_(name, value, status, message) CSHW_E_##name = (value),
    CSHW_ERROR_MAP(CSHW_ERROR_ENUM_)
#undef CSHW_ERROR_ENUM_
} cshw_error;

/* "CSHW_E_NOT_FOUND", "CSHW_OK", "ENOENT"-style names for -errno values
 * ("E" + the errno name where known, else "CSHW_E_SYSTEM"), "CSHW_E_UNKNOWN"
 * otherwise. Never NULL, static. */
CSHW_EXPORT const char *cshw_error_name(int code);

/* A one-line message (strerror for -errno values). Never NULL. */
CSHW_EXPORT const char *cshw_error_message(int code);

/* The HTTP status for an error (500 for -errno values); 0 for CSHW_OK. */
CSHW_EXPORT int cshw_error_status(int code);

#ifdef __cplusplus
}
#endif

#endif
