/* The path of a request-target as the proxy reads it: its dot segments
 * resolved (RFC 3986 §5.2.4), plain or percent-encoded ("%2e%2E"), under
 * one reading or another of what separates two segments. The proxy
 * matches a prefix on each reading and forwards the first
 * (proxy.h, "What the origin receives").
 *
 * Pure functions of their arguments, any thread. */
#ifndef CSHTTPD_PROXY_PATH_H
#define CSHTTPD_PROXY_PATH_H

#include <stddef.h>

/* Readings (proxy_path_resolve's flags). With none, only '/' separates
 * segments and empty segments are kept: the form forwarded, which keeps
 * every %XX as sent. */
#define PROXY_PATH_SLASHES 1u /* "%2f", "%5c" and '\' separate segments too */
#define PROXY_PATH_MERGE 2u   /* empty segments ("//") are dropped */

/* Resolves the dot segments of `path` (len bytes, starting with '/', no
 * query) into `out`, which has room for len + 1 bytes (the result is
 * never longer; it is NUL-terminated), under `flags`. A segment is a dot
 * segment when it is "." or "..", each '.' written as such or as %2e or
 * %2E; "." is dropped, ".." drops the segment before it, a final one
 * leaving its '/' ("/a/b/.." gives "/a/"). Other bytes are copied as they
 * are (under PROXY_PATH_SLASHES a separator is written '/'). 0 with
 * *out_len, or -1 when a ".." would climb above the root, which RFC 3986
 * clamps and the proxy refuses. */
int proxy_path_resolve(const char *path, size_t len, unsigned flags, char *out, size_t *out_len);

/* Whether the path holds an encoded NUL ("%00"). */
int proxy_path_has_nul(const char *path, size_t len);

#endif
