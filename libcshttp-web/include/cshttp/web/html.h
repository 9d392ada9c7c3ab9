/* HTML escaping of text for element content and quoted attribute values.
 *
 * The five characters that matter there are replaced by character
 * references: & → &amp;  < → &lt;  > → &gt;  " → &quot;  ' → &#39;
 * (&#39; rather than &apos;, which HTML 4 lacks). Every other byte, UTF-8
 * or not, NUL included, is copied as it is: the escaped text is safe inside
 * an element or inside a single- or double-quoted attribute value, not in an
 * unquoted attribute, a <script> or <style> body, a URL attribute (use
 * cshw_url_encode for the parts of a URL first) or a comment.
 *
 * Threads: pure functions; any thread, one arena or buffer per thread at a
 * time. */
#ifndef CSHTTP_WEB_HTML_H
#define CSHTTP_WEB_HTML_H

#include <stddef.h>

#include "arena.h"
#include "buf.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Escapes s[0 .. len) into the arena: *out (and *out_len when not NULL)
 * receive the NUL-terminated result, which belongs to the arena.
 * Returns 0, or -ENOMEM. */
CSHW_EXPORT int cshw_html_encode(cshw_arena *a, const char *s, size_t len, const char **out,
                                 size_t *out_len);

/* Escapes s[0 .. len) onto the end of a growable buffer.
 * Returns 0, or -ENOMEM (the buffer then holds what it held before). */
CSHW_EXPORT int cshw_html_encode_buf(cshw_buf *b, const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
