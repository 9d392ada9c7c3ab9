/* cshw_json: a small streaming JSON writer (RFC 8259) for handlers.
 *
 *   cshw_buf out;
 *   cshw_buf_init(&out, arena);
 *   cshw_json j;
 *   cshw_json_init_buf(&j, &out);
 *   cshw_json_object_begin(&j);
 *   cshw_json_key(&j, "id");     cshw_json_int(&j, 42);
 *   cshw_json_key(&j, "tags");   cshw_json_array_begin(&j);
 *   cshw_json_string(&j, "a");   cshw_json_array_end(&j);
 *   cshw_json_object_end(&j);
 *   if (cshw_json_finish(&j) == 0) ... out.data holds {"id":42,"tags":["a"]}
 *
 * Output goes to a growable buffer (cshw_buf: arena- or malloc-backed, the
 * caller's choice) or through a write callback (a response body, a file).
 * It is compact: no whitespace between tokens.
 *
 * The writer tracks nesting, so misuse is an error and never corrupt output:
 * a value where an object needs a key, a key outside an object or twice in a
 * row, ending a container that is not the innermost open one, a second
 * top-level value, nesting deeper than CSHW_JSON_MAX_DEPTH. Errors are
 * sticky: the first one (or the first failure of the buffer or callback) is
 * kept, every later call returns it and writes nothing, and cshw_json_finish
 * reports it. Output written before an error is a prefix of valid JSON, not
 * a whole document: check cshw_json_finish before using it.
 *
 * Strings (values and keys) are escaped per RFC 8259 §7: '"' and '\' as \"
 * and \\, the controls U+0000-U+001F as \b \f \n \r \t or \u00XX; also
 * U+2028 and U+2029 as \u2028 and \u2029 (valid JSON either way, but not
 * valid JavaScript before ES2019). Other characters are written as UTF-8.
 * Invalid UTF-8 (a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate, a code point past U+10FFFF) is replaced by
 * U+FFFD, one per maximal invalid subpart (the Unicode "best practice"
 * that the WHATWG decoder follows), so the output is always valid UTF-8.
 * Numbers: integers exactly; doubles with 15, 16 or 17 significant digits,
 * the fewest of these that read back as the same double ("0.1",
 * "0.30000000000000004", "1e+300", "-0"), whatever the locale's decimal
 * point;
 * NaN and infinities, which JSON cannot express, are written as null, as
 * JavaScript's JSON.stringify does.
 *
 * Ownership: the struct is the caller's and allocates nothing itself.
 * Threads: one thread at a time per writer. */
#ifndef CSHTTP_WEB_JSON_H
#define CSHTTP_WEB_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest nesting of objects and arrays. */
#define CSHW_JSON_MAX_DEPTH 64

/* A write callback: writes data[0 .. len) (len > 0) and returns 0, or a
 * negative code that the writer keeps as its error and returns from then
 * on. Pieces can be as small as one byte: give it a buffered sink. */
typedef int (*cshw_json_write_fn)(void *user, const char *data, size_t len);

typedef struct cshw_json {
    cshw_buf *buf_;
    cshw_json_write_fn fn_;
    void *user_;
    int error_;
    int depth_;     /* open containers */
    int done_;      /* the top-level value is complete */
    int after_key_; /* in an object: a key was written, its value comes next */
    unsigned char object_[CSHW_JSON_MAX_DEPTH];   /* per open container: 1 object, 0 array */
    unsigned char nonempty_[CSHW_JSON_MAX_DEPTH]; /* per open container: 1 once it has an item */
} cshw_json;

/* Prepares a writer that appends to `out` (see buf.h). */
CSHW_EXPORT void cshw_json_init_buf(cshw_json *j, cshw_buf *out);

/* Prepares a writer that hands its output to fn(user, data, len). */
CSHW_EXPORT void cshw_json_init_fn(cshw_json *j, cshw_json_write_fn fn, void *user);

/* Each call below returns 0, or the writer's (sticky) error: a
 * CSHW_E_JSON_* misuse code (all 500), -ENOMEM from the buffer, or the
 * callback's code. */

/* '{' and '}'. */
CSHW_EXPORT int cshw_json_object_begin(cshw_json *j);
CSHW_EXPORT int cshw_json_object_end(cshw_json *j);

/* '[' and ']'. */
CSHW_EXPORT int cshw_json_array_begin(cshw_json *j);
CSHW_EXPORT int cshw_json_array_end(cshw_json *j);

/* An object member's name; its value must follow. cshw_json_key takes a C
 * string, cshw_json_key_n key[0 .. len) (NULs in it written as \u0000); a
 * NULL key is the empty name "". */
CSHW_EXPORT int cshw_json_key(cshw_json *j, const char *key);
CSHW_EXPORT int cshw_json_key_n(cshw_json *j, const char *key, size_t len);

/* A string value: a C string, or s[0 .. len) (NULs in it written as
 * \u0000). A NULL pointer writes null. */
CSHW_EXPORT int cshw_json_string(cshw_json *j, const char *s);
CSHW_EXPORT int cshw_json_string_n(cshw_json *j, const char *s, size_t len);

/* Numbers, booleans (0 false, anything else true) and null. */
CSHW_EXPORT int cshw_json_int(cshw_json *j, int64_t v);
CSHW_EXPORT int cshw_json_uint(cshw_json *j, uint64_t v);
CSHW_EXPORT int cshw_json_double(cshw_json *j, double v);
CSHW_EXPORT int cshw_json_bool(cshw_json *j, int v);
CSHW_EXPORT int cshw_json_null(cshw_json *j);

/* Checks that exactly one complete value was written: 0, the sticky error,
 * or CSHW_E_JSON_INCOMPLETE (nothing written, or containers still open). */
CSHW_EXPORT int cshw_json_finish(const cshw_json *j);

/* The sticky error, or 0. */
CSHW_EXPORT int cshw_json_error(const cshw_json *j);

#ifdef __cplusplus
}
#endif

#endif
