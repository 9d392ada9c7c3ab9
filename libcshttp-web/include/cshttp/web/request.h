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

/* The path, percent-decoded with dot-segments resolved ("/a b"); NULL when
 * it cannot be decoded safely (an encoded NUL, a climb above the root, an
 * encoded slash): cshw_request_path_error says why, and the toolkit answers
 * 400 if the handler does not. */
CSHW_EXPORT const char *cshw_request_path(cshw_request *req);
CSHW_EXPORT int cshw_request_path_error(cshw_request *req);

/* The raw query string after '?', "" when there is none. */
CSHW_EXPORT const char *cshw_request_query_string(const cshw_request *req);

/* 0 for HTTP/1.0, 1 for HTTP/1.1. */
CSHW_EXPORT int cshw_request_version_minor(const cshw_request *req);

/* "http" or "https". */
CSHW_EXPORT const char *cshw_request_scheme(const cshw_request *req);

/* The peer's address as the transport gave it, or NULL. */
CSHW_EXPORT const char *cshw_request_remote_addr(const cshw_request *req);

/* The first value of header `name` (case-insensitive), or NULL. */
CSHW_EXPORT const char *cshw_request_header(cshw_request *req, const char *name);

/* Stores up to max values of `name` in order; returns how many there are. */
CSHW_EXPORT size_t cshw_request_header_all(cshw_request *req, const char *name,
                                           const char **values, size_t max);

/* Every header, in order: the number of them, and the i-th name and value. */
CSHW_EXPORT size_t cshw_request_header_count(const cshw_request *req);
CSHW_EXPORT const char *cshw_request_header_at(cshw_request *req, size_t i, const char **value);

/* The parsed head (framing, flags, spans into the head bytes). */
CSHW_EXPORT const csh_message *cshw_request_message(const cshw_request *req);

/* ---- lazy collections ---- */

/* The query string as pairs (never NULL; empty when there is none or it
 * could not be parsed: see cshw_request_query_error). */
CSHW_EXPORT const cshw_pairs *cshw_request_query(cshw_request *req);
CSHW_EXPORT const char *cshw_request_query_get(cshw_request *req, const char *name);
CSHW_EXPORT int cshw_request_query_error(cshw_request *req);

/* The form: application/x-www-form-urlencoded or multipart/form-data
 * fields (files apart). Reading it reads the body. Never NULL; on a
 * malformed or too large body it is empty and cshw_request_form_error says
 * why (the toolkit answers 400 or 413 if the handler does not). */
CSHW_EXPORT const cshw_pairs *cshw_request_form(cshw_request *req);
CSHW_EXPORT const char *cshw_request_form_get(cshw_request *req, const char *name);
CSHW_EXPORT int cshw_request_form_error(cshw_request *req);

/* An uploaded file of a multipart/form-data body. Small files are in
 * memory (data), larger ones in a temporary file (path) that is removed
 * when the request ends. */
typedef struct cshw_file {
    const char *field;        /* the form field name */
    const char *filename;     /* as the client sent it: never trust it as a path */
    const char *content_type; /* "application/octet-stream" when not given */
    uint64_t size;
    const void *data;         /* the bytes, or NULL when in a file */
    const char *path;         /* the temporary file, or NULL when in memory */
} cshw_file;

/* The uploaded files, in order (reading them reads the body). */
CSHW_EXPORT size_t cshw_request_files(cshw_request *req, const cshw_file **files);
CSHW_EXPORT const cshw_file *cshw_request_file(cshw_request *req, const char *field);

/* Cookies from the Cookie header(s) (RFC 6265 §5.4). Never NULL. */
CSHW_EXPORT const cshw_pairs *cshw_request_cookies(cshw_request *req);
CSHW_EXPORT const char *cshw_request_cookie(cshw_request *req, const char *name);

/* ---- the body as a stream ---- */

/* The declared body length, or -1 when it is chunked (unknown). */
CSHW_EXPORT int64_t cshw_request_content_length(const cshw_request *req);

/* Reads up to cap bytes of the (de-chunked) body. Returns the number read,
 * 0 at the end of the body, or a negative cshw error. The first read
 * answers "Expect: 100-continue" (so a handler that rejects a request
 * before reading its body never receives it). The body is read either as a
 * stream or as a form, not both: after one, the other reports an error. */
CSHW_EXPORT ssize_t cshw_request_read(cshw_request *req, void *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
