/* Static files and MapPath.
 *
 * cshw_static_map_path turns a virtual path into a physical one under a root and
 * can never leave it. cshw_static_serve answers a GET or HEAD for a file
 * under the root: MIME type, ETag and Last-Modified, conditional requests
 * (304, RFC 9110 §13.2.2), byte ranges (206, multipart/byteranges, 416,
 * RFC 9110 §14), index files, an optional directory listing, precompressed
 * ".gz" siblings, Cache-Control, and sendfile through the transport.
 *
 * Choices, each one a default that can be reasoned about:
 *   - ETag: strong, from the size and the modification time in
 *     nanoseconds, "\"<size hex>-<mtime ns hex>\"", so it also serves
 *     If-Match and If-Range (which need a strong comparison, §8.8.3.2). A
 *     ".gz" sibling has its own size and time and the suffix "-gz": the
 *     two representations never share a tag. A file rewritten within the
 *     same nanosecond at the same size keeps its tag (as with every
 *     size+time tag, nginx's and Apache's included).
 *   - Last-Modified: the modification time as an IMF-fixdate (§5.6.7).
 *     If-Modified-Since and If-Unmodified-Since compare whole seconds;
 *     an invalid or repeated date header is ignored (§13.1.3, §13.1.4).
 *   - Preconditions in the order of §13.2.2: If-Match (412), else
 *     If-Unmodified-Since (412); If-None-Match (304), else
 *     If-Modified-Since (304); then If-Range. A 304 carries ETag,
 *     Last-Modified, Cache-Control and Vary, and no body (§15.4.5).
 *   - Ranges (§14): GET only (§14.2: HEAD gets the 200 headers, Range
 *     ignored); "bytes" only, other units ignored; a Range that is not
 *     valid (syntax, last-pos < first-pos, repeated field) is ignored and
 *     the whole file sent (200); at most CSHW_STATIC_MAX_RANGES range-specs,
 *     more are ignored (200), which bounds the work a request can ask for;
 *     ranges that overlap or touch are coalesced (then sent in ascending
 *     order, otherwise in the order asked); one satisfiable range is a 206
 *     with Content-Range, several a multipart/byteranges 206 (§14.6) with a
 *     random boundary; none satisfiable is 416 with "Content-Range: bytes
 *     *\/size" (§14.4); an empty file ignores Range (200).
 *     If-Range holds for an equal strong ETag, or for a date equal to
 *     Last-Modified when that is at least a second old (§13.1.5).
 *   - Folders: "/dir" is redirected (301) to "/dir/" (query kept); "/dir/"
 *     serves the index file (403 when it may not be read), else the
 *     listing when enabled, else 404. A file asked for with a trailing
 *     slash ("/a.txt/") is 404. The listing is HTML: names sorted bytewise
 *     and HTML-escaped, relative links percent-encoded, sizes in bytes;
 *     it shows what a request would serve (regular files, folders, links
 *     that stay inside the root), without validators.
 *   - Hidden files: a path with a segment starting with '.' is 404 unless
 *     hidden_files, except ".well-known" (RFC 8615), which is served and
 *     listed; the listing leaves the other dotfiles out too.
 *   - Precompressed: "x.gz" is served for "x" when "x" exists, "x.gz" is a
 *     regular file under the same rules, and the client's Accept-Encoding
 *     gives gzip (or "x-gzip", or "*" when gzip is not listed) a weight
 *     above 0. No Accept-Encoding means no gzip. The Content-Type is x's;
 *     "Vary: Accept-Encoding" goes with every answer for x while x.gz
 *     exists. Asked for by name, "x.gz" is application/gzip.
 *   - What is not served (404): a file that is not regular (FIFO, socket,
 *     device), opened with O_NONBLOCK so that a FIFO never blocks; a
 *     symlink whose target leaves the root (unless follow_symlinks), never
 *     opened: openat2(RESOLVE_BENEATH) refuses it, or a realpath check
 *     before the open, with the opened file's inode checked after it
 *     against a second realpath (no TOCTOU window); a dangling symlink.
 *     Permission denied is 403.
 *   - Methods: GET and HEAD; for any other, 405 with "Allow: GET, HEAD"
 *     when the path names a file or folder, CSHW_E_NOT_FOUND otherwise (so
 *     a router can go on).
 *   - Bodies go through cshw_response_send_file (sendfile(2) when the
 *     transport has it), except multipart/byteranges, written part by part
 *     (pread and cshw_response_write). The response's own gzip is disabled:
 *     files go out as they are stored.
 *
 * Ownership: options strings are the caller's and must outlive their use.
 * Threads: any; each call serves one request on its own thread. */
#ifndef CSHTTP_WEB_STATIC_H
#define CSHTTP_WEB_STATIC_H

#include <stddef.h>

#include "arena.h"
#include "context.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most range-specs a Range header may hold; more and it is ignored. */
#define CSHW_STATIC_MAX_RANGES 16

/* What cshw_static_serve, cshw_static_map_path and cshw_router_set_static
 * serve, and how. Fill it with cshw_static_options_init, then set root and
 * change the fields wanted.
 *
 * The struct can grow without breaking callers: `size` is
 * sizeof(cshw_static_options) as the caller was compiled, set by
 * cshw_static_options_init, and the toolkit reads only the fields within it
 * (a field added after the caller was built takes its default). So always
 * fill it with cshw_static_options_init, never with an initializer or
 * memset alone: a size below CSHW_STATIC_OPTIONS_SIZE_0_3 is -EINVAL from
 * every function that takes it. A new field goes at the end, with its
 * default in cshw_static_options_init; nothing is removed, reordered or
 * retyped (README.md, Versioning). */
typedef struct cshw_static_options {
    size_t size;               /* sizeof as the caller knew it: leave _init's */
    const char *root;          /* the folder served (required) */
    const char *index;         /* served for a folder; default "index.html"; NULL: none */
    int directory_listing;     /* list folders without an index (default 0) */
    int follow_symlinks;       /* allow links that point outside the root (default 0) */
    int precompressed;         /* serve "x.gz" for "x" when gzip is accepted (default 1) */
    const char *cache_control; /* Cache-Control value, NULL: none (default "max-age=0") */
    int etag;                  /* send ETag and honour If-None-Match (default 1) */
    int hidden_files;          /* serve names starting with '.' (default 0: 404) */
    /* Content-Type by extension from this table (mime.h; the caller's, it
     * must outlive the options' use); NULL (default): cshw_static_mime_type. */
    const struct cshw_mime_types *mime_types;
} cshw_static_options;

/* The size of cshw_static_options in libcshttp-web 0.3, the first version
 * with `size`: the smallest size the toolkit accepts. */
#define CSHW_STATIC_OPTIONS_SIZE_0_3                                                               \
    (offsetof(cshw_static_options, mime_types) + sizeof(const struct cshw_mime_types *))

/* Fills the first `size` bytes of `o` with the defaults (zeros past the
 * fields this library knows) and sets o->size = size. Called through
 * cshw_static_options_init, which passes the caller's sizeof: a library
 * newer than the caller never writes past the caller's struct. */
CSHW_EXPORT void cshw_static_options_init_sized(cshw_static_options *o, size_t size);

/* Fills the defaults and o->size; root stays NULL until set. */
static inline void cshw_static_options_init(cshw_static_options *o)
{
    cshw_static_options_init_sized(o, sizeof *o);
}

/* Maps a virtual path ("/img/a.png", already decoded) to a physical path
 * under root, in the arena: root, a '/', and the path's segments without
 * empty or "." ones ("/" gives root itself; no trailing slash). Refuses
 * (*out NULL) a path with a ".." segment, a backslash or a control byte
 * (CSHW_E_MAP_PATH_INVALID), and one that resolves through a symlink
 * outside the root unless follow_symlinks (CSHW_E_MAP_PATH_OUTSIDE; a
 * dangling link on the way counts as outside, its target cannot be
 * checked). The file need not exist (CSHW_E_NOT_FOUND is for
 * cshw_static_serve): a missing path is judged by its deepest existing
 * folder. CSHW_E_STATIC_NO_ROOT when root is unset or does not exist,
 * -EINVAL for a NULL argument or o->size below
 * CSHW_STATIC_OPTIONS_SIZE_0_3, -ENOMEM.
 * The answer describes the file system at the moment of the call: to open
 * what it names safely, do as cshw_static_serve does (it opens the file
 * itself with openat2(RESOLVE_BENEATH) or an equivalent check, and serves
 * that descriptor). */
CSHW_EXPORT int cshw_static_map_path(cshw_arena *arena, const cshw_static_options *o,
                                     const char *virtual_path, const char **out);

/* Serves the request's path (cshw_request_path) from the root.
 * Returns 0 when it answered: 200, 206, 301, 304, 405, 412 or 416.
 * Otherwise nothing was sent, and the code's cshw_error_status is the
 * answer to give: CSHW_E_NOT_FOUND (404: no such file, a hidden or
 * non-regular one, a link out of the root, a folder with neither index nor
 * listing; the caller may answer 404 or go on), CSHW_E_MAP_PATH_OUTSIDE
 * (404), CSHW_E_STATIC_FORBIDDEN (403), the request's path error or
 * CSHW_E_MAP_PATH_INVALID (400), CSHW_E_STATIC_NO_ROOT (500), -EINVAL (a
 * NULL argument, or o->size below CSHW_STATIC_OPTIONS_SIZE_0_3).
 * A failure while answering (a write, -ENOMEM, -errno) is returned too;
 * cshw_response_headers_sent then tells whether something went out. */
CSHW_EXPORT int cshw_static_serve(cshw_context *ctx, const cshw_static_options *o);

/* The MIME type for a file name by extension, case-insensitive
 * ("text/html; charset=utf-8": text types carry the charset),
 * "application/octet-stream" when unknown or without an extension
 * (".profile" has none). Static. */
CSHW_EXPORT const char *cshw_static_mime_type(const char *filename);

#ifdef __cplusplus
}
#endif

#endif
