/* cshw_response: the response of a context (System.Web's HttpResponse).
 *
 * Output is buffered (options.response_buffer): a response that ends inside
 * its buffer goes out with Content-Length; one that is flushed early or
 * outgrows the buffer goes out chunked (HTTP/1.1) or delimited by closing
 * the connection (HTTP/1.0). A HEAD request gets the same headers and no
 * body. Status, headers and cookies can change until the headers are sent
 * (the first flush); after that those calls fail with CSHW_E_HEADERS_SENT.
 *
 * Header names and values with CR, LF, NUL or other characters not allowed
 * on the wire are refused (CSHW_E_INVALID_HEADER), never written.
 * Ownership: strings passed in are copied. Threads: the request's thread. */
#ifndef CSHTTP_WEB_RESPONSE_H
#define CSHTTP_WEB_RESPONSE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "cookie.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The status (100..599; default 200). */
CSHW_EXPORT int cshw_response_set_status(cshw_response *res, int status);
CSHW_EXPORT int cshw_response_status(const cshw_response *res);

/* The standard reason phrase of a status ("Not Found"), "" when unknown. */
CSHW_EXPORT const char *cshw_status_reason(int status);

/* Replaces every field `name` with one (case-insensitive names). */
CSHW_EXPORT int cshw_response_set_header(cshw_response *res, const char *name, const char *value);
/* Adds a field line, keeping the others. */
CSHW_EXPORT int cshw_response_append_header(cshw_response *res, const char *name,
                                            const char *value);
/* Removes every field `name`; 0 even when there was none. */
CSHW_EXPORT int cshw_response_remove_header(cshw_response *res, const char *name);
/* The first value of a response field set so far, or NULL. */
CSHW_EXPORT const char *cshw_response_header(const cshw_response *res, const char *name);

/* Content-Type, with "; charset=..." when charset is not NULL. */
CSHW_EXPORT int cshw_response_set_content_type(cshw_response *res, const char *type,
                                               const char *charset);

/* Adds a Set-Cookie field (validated by cshw_cookie_format). */
CSHW_EXPORT int cshw_response_set_cookie(cshw_response *res, const cshw_cookie *cookie);

/* Body output. Each returns 0 or a negative cshw error (a failed write
 * makes the connection close). */
CSHW_EXPORT int cshw_response_write(cshw_response *res, const void *data, size_t len);
CSHW_EXPORT int cshw_response_puts(cshw_response *res, const char *s);
CSHW_EXPORT int cshw_response_printf(cshw_response *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CSHW_EXPORT int cshw_response_vprintf(cshw_response *res, const char *fmt, va_list ap);

/* Sends the headers (if not yet) and the buffered output now. */
CSHW_EXPORT int cshw_response_flush(cshw_response *res);

/* 1 once the headers have gone out. */
CSHW_EXPORT int cshw_response_headers_sent(const cshw_response *res);

/* Redirect: status 301, 302, 303, 307 or 308 with Location (a short HTML
 * body with the link); anything already buffered is discarded. */
CSHW_EXPORT int cshw_response_redirect(cshw_response *res, int status, const char *location);

/* An error page for `status` (the toolkit's own, small HTML), replacing
 * whatever was buffered; the connection is closed after a 4xx caused by a
 * bad request body. */
CSHW_EXPORT int cshw_response_send_error(cshw_response *res, int status);

/* The body is len bytes of the file fd from offset, sent through the
 * transport's send_file (sendfile(2)) after the headers; sets
 * Content-Length. The fd stays the caller's. Nothing may be written after
 * it. */
CSHW_EXPORT int cshw_response_send_file(cshw_response *res, int fd, off_t offset, uint64_t len);

/* Leave this response uncompressed (e.g. it is already compressed). */
CSHW_EXPORT void cshw_response_disable_gzip(cshw_response *res);

/* Ask for the connection to be closed after this response. */
CSHW_EXPORT void cshw_response_close_connection(cshw_response *res);

#ifdef __cplusplus
}
#endif

#endif
