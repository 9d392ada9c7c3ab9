/* URL percent-encoding (RFC 3986 §2.1) and request path decoding.
 *
 * Every result is written into an arena (the request's), NUL-terminated, and
 * its length is returned as well: a decoded string may contain NUL bytes
 * (cshw_url_decode of "%00"), which only the length reveals.
 *
 * Bytes are bytes: nothing here validates or converts UTF-8. A decoded
 * string may hold any byte sequence, invalid UTF-8 included.
 *
 * Ownership: results belong to the arena and live until it is reset or freed.
 * Threads: pure functions; any thread, one arena per thread at a time. */
#ifndef CSHTTP_WEB_URL_H
#define CSHTTP_WEB_URL_H

#include <stddef.h>

#include "arena.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of cshw_url_decode. */
enum {
    /* '+' decodes to a space, as in application/x-www-form-urlencoded
     * (query strings and form bodies); without it '+' stays '+' (paths). */
    CSHW_URL_PLUS_SPACE = 1u << 0,
};

/* Percent-encodes data[0 .. len) as a URI component: the RFC 3986 §2.3
 * unreserved characters (ALPHA DIGIT - . _ ~) are kept, every other byte
 * becomes %XX with upper-case hex digits (§2.1), so '/', '?', '&', '=', '+'
 * and space ("%20") are all encoded: the result is safe in a path segment,
 * a query name or value, or a form field.
 * *out (and *out_len when not NULL) receive the result in the arena.
 * Returns 0, or -ENOMEM. */
CSHW_EXPORT int cshw_url_encode(cshw_arena *a, const char *data, size_t len, const char **out,
                                size_t *out_len);

/* Decodes data[0 .. len): "%XX" (either case of hex digit) becomes the byte
 * XX; with CSHW_URL_PLUS_SPACE, '+' becomes ' '. A '%' not followed by two
 * hex digits is kept as it is, with what follows it, as the WHATWG URL
 * standard's percent-decode does ("%zz" and a final "%4" stay as they are).
 * Decoding happens once: "%2541" gives "%41", not "A". Never fails on input.
 * *out (and *out_len when not NULL) receive the result in the arena.
 * Returns 0, or -ENOMEM. */
CSHW_EXPORT int cshw_url_decode(cshw_arena *a, const char *data, size_t len, unsigned flags,
                                const char **out, size_t *out_len);

/* cshw_url_decode without an arena: writes the decoded bytes of
 * src[0 .. len) to dst, which must have room for len bytes (decoding never
 * lengthens) and may be src itself (decoding in place). Writes no NUL.
 * Returns the decoded length. */
CSHW_EXPORT size_t cshw_url_decode_to(char *dst, const char *src, size_t len, unsigned flags);

/* Decodes and normalises a request path: the part of an origin-form request
 * target before '?' (RFC 9112 §3.2.1), e.g. "/a/./b/../%7Euser//x.html"
 * gives "/a/~user/x.html". What it does, in order:
 *   - the path must start with '/' (CSHW_E_PATH_NOT_ABSOLUTE, also for an
 *     empty path, "*" or an absolute URI: the caller extracts the path);
 *   - it is split into segments at each '/' of the raw input, and each
 *     segment is percent-decoded as by cshw_url_decode ('+' stays '+',
 *     a malformed escape is kept literally, decoding happens once);
 *   - refused: a NUL or any other control character (0x00-0x1F, 0x7F),
 *     raw or encoded ("%00", "%0a") (CSHW_E_PATH_CONTROL); an encoded '/'
 *     or '\' ("%2F", "%5c") and a raw '\' (CSHW_E_PATH_SEPARATOR): an
 *     encoded slash would make "/a%2Fb" a different resource from "/a/b"
 *     to a router yet the same file to a file system, and a backslash is a
 *     separator on Windows and to browsers, so both are refused rather than
 *     guessed at;
 *   - empty segments are dropped: repeated slashes are merged ("//a///b"
 *     gives "/a/b"), as a file system would read them, and so that a result
 *     never starts with "//" (a protocol-relative URL if echoed in a
 *     redirect);
 *   - the dot-segments "." and ".." are resolved (RFC 3986 §5.2.4), after
 *     decoding, so "%2e", "%2E%2e" and ".%2E" are dot-segments too; a ".."
 *     that would climb above the root ("/..", "/a/../..", "/%2e%2e/x") is
 *     refused (CSHW_E_PATH_TRAVERSAL) rather than clamped to the root as RFC
 *     3986 would. A final "." or ".." leaves a trailing slash ("/a/b/.."
 *     gives "/a/"), as in RFC 3986; a trailing slash is kept ("/a/" stays
 *     "/a/").
 * Not refused: bytes 0x80-0xFF, whether valid UTF-8 or not, which pass
 * through as bytes (an overlong "%C0%AE" is two bytes, not a '.', and
 * segments such as "..." or ".. " are names, not dot-segments); other
 * printable characters (Tier 1 has already limited a request target to
 * VCHAR). The result therefore starts with '/', has no empty, "." or ".."
 * segment, no NUL, control or '\' byte, and is never longer than the input.
 * *out (and *out_len when not NULL) receive it in the arena; on error they
 * are left unchanged.
 * Returns 0, CSHW_E_PATH_NOT_ABSOLUTE, CSHW_E_PATH_CONTROL,
 * CSHW_E_PATH_SEPARATOR, CSHW_E_PATH_TRAVERSAL (all 400) or -ENOMEM;
 * when a path has several faults, the first one from the left is reported. */
CSHW_EXPORT int cshw_path_decode(cshw_arena *a, const char *path, size_t len, const char **out,
                                 size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif
