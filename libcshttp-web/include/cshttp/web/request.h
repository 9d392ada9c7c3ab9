/* cshw_request: the request of a context (System.Web's HttpRequest).
 *
 * Strings are NUL-terminated and live in the request's arena until the
 * request ends. Query string, form, files and cookies are parsed on first
 * access, once; a request that never asks for them never pays for them.
 * Threads: the request's thread only. */
#ifndef CSHTTP_WEB_REQUEST_H
#define CSHTTP_WEB_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cshttp/parser.h>

#include "context.h"
#include "export.h"
#include "pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the request line and headers ---- */

/* "GET", "POST", ... as sent. */
CSHW_EXPORT const char *cshw_request_method(const cshw_request *req);
CSHW_EXPORT csh_method cshw_request_method_id(const cshw_request *req);

/* The request-target as sent ("/a%20b?x=1"). */
CSHW_EXPORT const char *cshw_request_target(const cshw_request *req);

/* The path, percent-decoded with dot-segments resolved ("/a b"), by
 * cshw_path_decode (url.h); for an absolute-form target
 * ("http://host/a?b", RFC 9112 §3.2.2) the path after the authority. NULL
 * when it cannot be decoded safely (an encoded NUL or control, a climb above
 * the root, an encoded slash) or the target has no path (authority or
 * asterisk form): cshw_request_path_error says why (a CSHW_E_PATH_* code),
 * and the toolkit answers 400 if the handler does not answer. Decoded on
 * first call, once. */
CSHW_EXPORT const char *cshw_request_path(cshw_request *req);
CSHW_EXPORT int cshw_request_path_error(cshw_request *req);

/* The raw query string after the first '?', "" when there is none. */
CSHW_EXPORT const char *cshw_request_query_string(const cshw_request *req);

/* The minor version as sent, 0 to 9 (csh_message.version_minor): 0 for
 * HTTP/1.0, 1 for HTTP/1.1, and 2 to 9 for HTTP/1.2 .. 1.9, which are
 * handled as 1.1 (RFC 9110 §6.2): test >= 1, not == 1. */
CSHW_EXPORT int cshw_request_version_minor(const cshw_request *req);

/* "http" or "https". */
CSHW_EXPORT const char *cshw_request_scheme(const cshw_request *req);

/* The peer's address as the transport gave it, or NULL. */
CSHW_EXPORT const char *cshw_request_remote_addr(const cshw_request *req);

/* The first value of header `name` (case-insensitive), or NULL. The value
 * is as received without surrounding whitespace; a NUL-terminated copy is
 * made on first use of each field. */
CSHW_EXPORT const char *cshw_request_header(cshw_request *req, const char *name);

/* Stores up to max values of `name` in order; returns how many there are. */
CSHW_EXPORT size_t cshw_request_header_all(cshw_request *req, const char *name,
                                           const char **values, size_t max);

/* Every header, in order: the number of them, and the i-th name (as sent)
 * and value; NULL (and *value NULL) past the end. */
CSHW_EXPORT size_t cshw_request_header_count(const cshw_request *req);
CSHW_EXPORT const char *cshw_request_header_at(cshw_request *req, size_t i, const char **value);

/* The trailer fields of the body (RFC 9110 §6.5): a chunked body's
 * trailer section (RFC 9112 §7.1.2), or over HTTP/2 the HEADERS that
 * follow the DATA. There are none until the body was read to its end: by
 * the exchange, before the handler, when it stores the body; otherwise
 * once cshw_request_read returned 0 (or the form was read). Kept apart
 * from the header fields (RFC 9110 §6.5.1 does not let them be merged);
 * the first 16, in order, names as sent, case-insensitive lookup; valid
 * until the request ends. */
CSHW_EXPORT size_t cshw_request_trailer_count(const cshw_request *req);
CSHW_EXPORT const char *cshw_request_trailer_at(const cshw_request *req, size_t i,
                                                const char **value);
CSHW_EXPORT const char *cshw_request_trailer(const cshw_request *req, const char *name);

/* The parsed head (framing, flags, spans into the head bytes given to
 * cshw_context_begin; its header array is the request's own copy). */
CSHW_EXPORT const csh_message *cshw_request_message(const cshw_request *req);

/* ---- lazy collections ---- */

/* The query string as pairs, parsed by cshw_form_parse with its default
 * limits (never NULL; empty when there is none or it could not be parsed:
 * see cshw_request_query_error, a CSHW_E_FORM_* code; the toolkit does not
 * answer for it, the handler decides). */
CSHW_EXPORT const cshw_pairs *cshw_request_query(cshw_request *req);
CSHW_EXPORT const char *cshw_request_query_get(cshw_request *req, const char *name);
CSHW_EXPORT int cshw_request_query_error(cshw_request *req);

/* The form: application/x-www-form-urlencoded (form.h) or
 * multipart/form-data (multipart.h, RFC 7578) fields, files apart. Any
 * other Content-Type, or no body, gives an empty form and no error. Reading
 * it reads the whole body (answering Expect: 100-continue first), within
 * options.max_form_bytes (a larger Content-Length is refused before
 * anything is read), options.max_form_parts and options.max_part_header.
 * Never NULL; on a malformed or too large body, a body that ended early or
 * one already read as a stream, it is empty and cshw_request_form_error
 * says why (a CSHW_E_FORM_*, CSHW_E_MULTIPART_* or CSHW_E_BODY_* code, or
 * -errno). If the handler does not answer, the toolkit answers with the
 * code's status (400, 413, 415) and an error page; after a form error the
 * connection is closed. */
CSHW_EXPORT const cshw_pairs *cshw_request_form(cshw_request *req);
CSHW_EXPORT const char *cshw_request_form_get(cshw_request *req, const char *name);
CSHW_EXPORT int cshw_request_form_error(cshw_request *req);

/* An uploaded file of a multipart/form-data body: a part with a filename
 * parameter. Files up to options.upload_memory_threshold bytes are in
 * memory (data, in the arena, followed by a NUL not counted in size); a
 * larger one is in a temporary file (path: mkstemp in options.temp_dir,
 * mode 0600, closed) that is removed when the request ends: move or copy it
 * before then to keep it. */
typedef struct cshw_file {
    const char *field;        /* the form field name */
    const char *filename;     /* as the client sent it: never trust it as a path */
    const char *content_type; /* as sent; "text/plain" when not given (RFC 7578 §4.4) */
    uint64_t size;
    const void *data;         /* the bytes, or NULL when in a file */
    const char *path;         /* the temporary file, or NULL when in memory */
} cshw_file;

/* The uploaded files, in order (reading them reads the body). */
CSHW_EXPORT size_t cshw_request_files(cshw_request *req, const cshw_file **files);
CSHW_EXPORT const cshw_file *cshw_request_file(cshw_request *req, const char *field);

/* Cookies from the Cookie header(s) (RFC 6265 §5.4; several Cookie lines
 * are joined with "; "), parsed by cshw_cookie_parse with its default
 * limits. Never NULL; empty when there are none or the header is past the
 * limits (cshw_request_cookie_error: CSHW_E_COOKIE_TOO_LARGE or _TOO_MANY;
 * the toolkit does not answer for it). */
CSHW_EXPORT const cshw_pairs *cshw_request_cookies(cshw_request *req);
CSHW_EXPORT const char *cshw_request_cookie(cshw_request *req, const char *name);
CSHW_EXPORT int cshw_request_cookie_error(cshw_request *req);

/* ---- the body as a stream ---- */

/* The body as the exchange stored it before the handler ran (0.4.2),
 * for a handler that passes it on whole (a proxy sends it from there):
 * 1 and *len its decoded length, with the bytes at *data (*fd -1) or in
 * the temporary file *fd from offset 0 (*data NULL; read it with pread or
 * sendfile, never with read or lseek: the stream reads share it). Valid
 * until the request ends; the handler's reads of the body do not change
 * it. 0 when the body was not stored (a handler that streams it, a
 * context not run by an exchange); CSHW_E_NOT_ACTIVE outside a request,
 * -EINVAL for a NULL argument. */
CSHW_EXPORT int cshw_request_body_whole(cshw_request *req, const char **data, int *fd,
                                        uint64_t *len);

/* The declared body length (0 when there is no body), or -1 when it is
 * chunked (unknown). */
CSHW_EXPORT int64_t cshw_request_content_length(const cshw_request *req);

/* Reads up to cap bytes of the (de-chunked) body. Returns the number read
 * (at least 1), 0 at the end of the body, or a negative error:
 * CSHW_E_BODY_TRUNCATED (the client closed early), CSHW_E_BAD_BODY (bad
 * chunked framing), CSHW_E_BODY_TOO_LARGE, CSHW_E_BODY_LIMIT (the body
 * crossed options.max_request_body: no byte past it is returned, and the
 * request is answered 413), CSHW_E_BODY_CONSUMED (the form was read),
 * -errno from the transport (-ETIMEDOUT...). After an error the
 * connection is closed at the end of the request. -EAGAIN (0.4.2) is not
 * an error: a transport that does not wait has no byte of the body yet
 * (the engine's, for a handler on its loop that reads its body as it
 * comes: cshs_deferred_on_body); read again later. The first read answers
 * "Expect: 100-continue" (RFC 9110 §10.1.1) unless the response headers
 * were already sent, so a handler that rejects a request before reading its
 * body never receives it; a body never read is then not drained, the
 * connection is closed instead. The body is read either as a stream or as
 * a form, not both: after one, the other reports CSHW_E_BODY_CONSUMED. */
CSHW_EXPORT ssize_t cshw_request_read(cshw_request *req, void *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
