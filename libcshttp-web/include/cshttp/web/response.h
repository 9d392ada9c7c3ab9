/* cshw_response: the response of a context (System.Web's HttpResponse).
 *
 * Output is buffered (options.response_buffer): a response that ends inside
 * its buffer goes out in one write with Content-Length; one that is flushed
 * early or outgrows the buffer goes out chunked (HTTP/1.1) or delimited by
 * closing the connection (HTTP/1.0, with Connection: close). Status,
 * headers and cookies can change until the headers are sent (the first
 * flush, or the buffer overflowing); after that those calls fail with
 * CSHW_E_HEADERS_SENT.
 *
 * Every response gets a Date (IMF-fixdate, RFC 9110 §6.6.1) unless the
 * application set one, and a Server field only when options.server_header
 * is set. 204 and 304 responses have no body and no Content-Length (RFC
 * 9110 §8.6); 205 has Content-Length: 0; what is written to them is
 * discarded.
 *
 * gzip (RFC 9110 §8.4.1.3) is considered when options.gzip is on, the
 * application did not disable it or set a Content-Encoding or
 * Content-Range, the status has content and the Content-Type is
 * compressible (text/... except text/event-stream, JSON, JavaScript, XML,
 * SVG, wasm, fonts, and application/...+json / +xml). Whenever it is
 * considered, Vary: Accept-Encoding is sent (unless a Vary already covers
 * it). It is applied when the request's Accept-Encoding gives gzip (or
 * x-gzip, or "*") a q-value above 0 and not below identity's (RFC 9110
 * §12.5.3; no Accept-Encoding: no gzip), and the body is at least
 * options.gzip_min_bytes (a streamed body, whose size is unknown, always
 * is). A buffered body that does not shrink goes out as it is. A strong
 * ETag becomes weak (W/) on a gzip-encoded body (RFC 9110 §8.8.3).
 *
 * HEAD (RFC 9110 §9.3.2) gets the header section GET would get: the body
 * the handler writes goes through the same decisions (buffered or
 * streamed, gzip or not), so Content-Length is the length GET would send,
 * compressed when GET's would be (a buffered HEAD body is compressed only
 * to measure it); a streamed HEAD response says Transfer-Encoding: chunked
 * and is never compressed. No body byte is ever written for HEAD. A HEAD
 * handler that writes nothing gets no Content-Length (rather than a false
 * 0): write the body as for GET, or use cshw_response_send_file, to have
 * it.
 *
 * Header names must be tokens (RFC 9110 §5.6.2); values may hold visible
 * characters, obs-text, spaces and tabs only (§5.5): CR, LF, NUL or any
 * other control is refused (CSHW_E_INVALID_HEADER), never written.
 * Content-Length and Transfer-Encoding are the toolkit's (it frames the
 * body), refused with CSHW_E_RESERVED_HEADER (a handler that knows its
 * body's length says so with cshw_response_set_content_length, which the
 * toolkit keeps it to); "Connection: close" is
 * honoured as cshw_response_close_connection, other Connection values are
 * refused.
 *
 * Errors: functions return 0 or a negative code; -errno for a failed write
 * (the first one is kept: later writes return it, nothing more is sent and
 * the connection is closed), -ENOMEM, CSHW_E_NOT_ACTIVE outside a request.
 * Ownership: strings passed in are copied (into the request's arena).
 * Threads: the request's thread. */
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

/* The status (200..599; default 200). 1xx are interim responses, which the
 * toolkit sends itself (100 Continue): CSHW_E_INVALID_STATUS. */
CSHW_EXPORT int cshw_response_set_status(cshw_response *res, int status);
CSHW_EXPORT int cshw_response_status(const cshw_response *res);

/* The standard reason phrase of a status ("Not Found"), "" when unknown. */
CSHW_EXPORT const char *cshw_response_status_reason(int status);

/* Replaces every field `name` with one (case-insensitive names). */
CSHW_EXPORT int cshw_response_set_header(cshw_response *res, const char *name, const char *value);
/* Adds a field line, keeping the others. */
CSHW_EXPORT int cshw_response_append_header(cshw_response *res, const char *name,
                                            const char *value);
/* Removes every field `name`; 0 even when there was none. */
CSHW_EXPORT int cshw_response_remove_header(cshw_response *res, const char *name);

/* Adds a trailer field, sent after the body (RFC 9110 §6.5): in the
 * trailer section of a chunked body over HTTP/1.1 (RFC 9112 §7.1.2), as a
 * HEADERS frame after the DATA over HTTP/2 (RFC 9113 §8.1), where gRPC
 * sends its grpc-status. A response with trailers is chunked, even one
 * that ends inside its buffer, and its head names those added by then in
 * a Trailer field (RFC 9110 §6.6.2). Until the response ends; field
 * rules as for a header.
 *
 * CSHW_E_TRAILER_FIELD for a field needed before the content (RFC 9110
 * §6.5.1: Content-Length, Transfer-Encoding, Host, Content-Type,
 * Content-Encoding, Content-Range, Cache-Control, Set-Cookie,
 * Authorization, Location, Vary, Date, ...); CSHW_E_TRAILER_LENGTH once
 * the response declared its length, and cshw_response_set_content_length
 * gives the same after a trailer. Dropped without an error where no
 * trailer section can be sent: to an HTTP/1.0 client, in the answer to
 * HEAD, in a 204, 205 or 304, and after cshw_response_send_file. */
CSHW_EXPORT int cshw_response_add_trailer(cshw_response *res, const char *name, const char *value);

/* The first value of a response field set so far (not those the toolkit
 * adds when sending: Date, Content-Length...), or NULL. Valid until the
 * field is changed or the request ends. */
CSHW_EXPORT const char *cshw_response_header(const cshw_response *res, const char *name);

/* Content-Type, with "; charset=..." when charset is not NULL (a token).
 * No Content-Type is sent unless one is set. */
CSHW_EXPORT int cshw_response_set_content_type(cshw_response *res, const char *type,
                                               const char *charset);

/* Adds a Set-Cookie field (validated by cshw_cookie_format: its
 * CSHW_E_COOKIE_* errors, and -EINVAL for a size below
 * CSHW_COOKIE_SIZE_0_3, are returned and nothing is added). */
CSHW_EXPORT int cshw_response_set_cookie(cshw_response *res, const cshw_cookie *cookie);

/* Body output. Each returns 0 or a negative error (a failed write makes
 * the connection close; CSHW_E_BODY_AFTER_FILE after send_file). */
CSHW_EXPORT int cshw_response_write(cshw_response *res, const void *data, size_t len);
CSHW_EXPORT int cshw_response_puts(cshw_response *res, const char *s);
CSHW_EXPORT int cshw_response_printf(cshw_response *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CSHW_EXPORT int cshw_response_vprintf(cshw_response *res, const char *fmt, va_list ap);

/* Sends the headers (if not yet: the response is then streamed) and the
 * buffered output now (a gzip stream is sync-flushed), then the
 * transport's flush. */
CSHW_EXPORT int cshw_response_flush(cshw_response *res);

/* 1 once the headers have gone out. */
CSHW_EXPORT int cshw_response_headers_sent(const cshw_response *res);

/* Redirect: status 301, 302, 303, 307 or 308 (else
 * CSHW_E_INVALID_REDIRECT) with Location (a valid field value, else
 * CSHW_E_INVALID_HEADER; sent as given: make it absolute or
 * origin-relative yourself) and a short HTML body with the link
 * (HTML-escaped); anything already buffered is discarded, with the
 * representation fields (Content-*, ETag, Last-Modified). */
CSHW_EXPORT int cshw_response_redirect(cshw_response *res, int status, const char *location);

/* An error page for `status` (400..599, else CSHW_E_INVALID_STATUS; the
 * toolkit's own small HTML page, text/html; charset=utf-8), replacing
 * whatever was buffered and the representation fields (Content-*, ETag,
 * Last-Modified); other fields (Allow, Set-Cookie, ...) are kept. After the
 * headers were sent it is too late: CSHW_E_HEADERS_SENT, and the response
 * is cut short (no last chunk, connection closed) so that the client cannot
 * take it for complete. The toolkit sends the same pages itself for the
 * errors it finds (a bad path or form, a bad body, an unmet Expect) when
 * the handler did not answer; after an error in the request body the
 * connection is closed. */
CSHW_EXPORT int cshw_response_send_error(cshw_response *res, int status);

/* The body is len bytes of the file fd from offset, sent at once through
 * the transport's send_file (sendfile(2)), or read and written when it has
 * none, after the headers; sets Content-Length (none for 204/304; headers
 * only for HEAD); never compressed. Anything buffered is discarded. The fd
 * stays the caller's and may be closed on return. The response is then
 * complete: later writes return CSHW_E_BODY_AFTER_FILE. If the file turns
 * out shorter than len, CSHW_E_FILE_READ and the connection is closed. */
CSHW_EXPORT int cshw_response_send_file(cshw_response *res, int fd, off_t offset, uint64_t len);

/* Body bytes written and not yet taken by the client (0.4.1): those in
 * the response's buffer, and those the transport holds because the
 * client reads slower than the handler writes (cshw_transport_ops'
 * queued; 0 for a transport without it). A handler passing a stream on
 * writes on while it is 0 and, past that, keeps what comes elsewhere (a
 * proxy's temporary file) rather than wait. */
CSHW_EXPORT uint64_t cshw_response_queued(const cshw_response *res);

/* Appends len bytes of the file fd from offset to the body, and the
 * response goes on (0.4.1): what cshw_response_write would do with those
 * bytes, but through the transport's send_file, so a driver can send
 * them later from the file without holding them in memory or the
 * handler's thread (the engine queues the range on its loop when the
 * client is slow: a proxy buffering an origin's answer in a temporary
 * file). Starts the response as a flush does (chunked, unless a length
 * was declared); anything buffered goes first; never compressed when the
 * head is still to go (a body already compressing reads the range
 * through). The fd stays the caller's; the bytes in the range must not
 * change until the response ends. 0; CSHW_E_BODY_LENGTH past a declared
 * length; CSHW_E_BODY_AFTER_FILE after send_file or the end;
 * CSHW_E_FILE_READ (and the connection is cut) when the file is shorter;
 * -EINVAL for a bad fd, offset or length; a write error. */
CSHW_EXPORT int cshw_response_write_file(cshw_response *res, int fd, off_t offset, uint64_t len);

/* Declares the body's length before it is written (a proxy passing on an
 * origin's Content-Length, a handler streaming a file it measured): the
 * head says Content-Length: length, whether the body ends in the buffer or
 * is flushed early or outgrows it (then it is streamed as it is written,
 * not chunked, and for HTTP/1.0 the connection may stay open). The toolkit
 * keeps the handler to it (RFC 9112 §6.2, §8): a write past `length` fails
 * with CSHW_E_BODY_LENGTH and sends none of its bytes; a handler that ends
 * having written less leaves the response short, and the connection is
 * closed after it (said with Connection: close when the whole body was
 * still in the buffer), never reused with its framing broken. No gzip for
 * such a body (the length is the identity body's). HEAD gets the length
 * as GET would (RFC 9110 §9.3.2, §8.6) and no body bytes, so writing less,
 * or nothing, is no error; 204 and 304 send no Content-Length, 205 sends
 * 0, whatever was declared. An error page, a redirect or
 * cshw_response_send_file replaces the declaration with its own length.
 * Until the headers are sent (CSHW_E_HEADERS_SENT after); may be called
 * again to change it; CSHW_E_BODY_LENGTH when more than `length` was
 * written already, -EINVAL above INT64_MAX. */
CSHW_EXPORT int cshw_response_set_content_length(cshw_response *res, uint64_t length);

/* Leave this response uncompressed (e.g. it is already compressed);
 * effective until the headers are sent. */
CSHW_EXPORT void cshw_response_disable_gzip(cshw_response *res);

/* Ask for the connection to be closed after this response (Connection:
 * close is sent when the headers have not gone out yet). */
CSHW_EXPORT void cshw_response_close_connection(cshw_response *res);

#ifdef __cplusplus
}
#endif

#endif
