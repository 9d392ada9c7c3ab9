/* Static files and MapPath.
 *
 * cshw_map_path turns a virtual path into a physical one under a root and
 * can never leave it. cshw_static_serve answers a GET or HEAD for a file
 * under the root: MIME type, ETag and Last-Modified, conditional requests
 * (304, RFC 9110 §13.2.2), byte ranges (206, multipart/byteranges, 416,
 * RFC 9110 §14), index files, an optional directory listing, precompressed
 * ".gz" siblings, Cache-Control, and sendfile through the transport.
 *
 * Ownership: options strings are the caller's and must outlive their use.
 * Threads: any; each call serves one request on its own thread. */
#ifndef CSHTTP_WEB_STATIC_H
#define CSHTTP_WEB_STATIC_H

#include <stddef.h>

#include "context.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_static_options {
    const char *root;          /* the folder served (required) */
    const char *index;         /* served for a folder; default "index.html"; NULL: none */
    int directory_listing;     /* list folders without an index (default 0) */
    int follow_symlinks;       /* allow links that point outside the root (default 0) */
    int precompressed;         /* serve "x.gz" for "x" when gzip is accepted (default 1) */
    const char *cache_control; /* Cache-Control value, NULL: none (default "max-age=0") */
    int etag;                  /* send ETag and honour If-None-Match (default 1) */
} cshw_static_options;

/* Fills the defaults; root stays NULL until set. */
CSHW_EXPORT void cshw_static_options_init(cshw_static_options *o);

/* Maps a virtual path ("/img/a.png", already decoded) to a physical path
 * under root, in the arena. Refuses (negative cshw error, *out NULL) a path
 * with "..", a NUL, a backslash, or one that resolves (through symlinks)
 * outside the root unless follow_symlinks. The file need not exist
 * (CSHW_E_NOT_FOUND is for cshw_static_serve). */
CSHW_EXPORT int cshw_map_path(cshw_arena *arena, const cshw_static_options *o,
                              const char *virtual_path, const char **out);

/* Serves the request's path from the root. Returns 0 when it answered
 * (200, 206, 304, 416, ...), CSHW_E_NOT_FOUND when there is no such file
 * (nothing was sent: the caller may answer 404 or go on), or another
 * negative cshw error. */
CSHW_EXPORT int cshw_static_serve(cshw_context *ctx, const cshw_static_options *o);

/* The MIME type for a file name by extension ("text/html; charset=utf-8"),
 * "application/octet-stream" when unknown. Static. */
CSHW_EXPORT const char *cshw_mime_type(const char *filename);

#ifdef __cplusplus
}
#endif

#endif
