/* MIME types by file extension: the built-in table (cshw_static_mime_type), or a
 * table the application owns, built from it, a mime.types file and its own
 * overrides.
 *
 *   cshw_mime_types *m = cshw_mime_types_new();       // the built-in table
 *   cshw_mime_types_load(m, "/etc/mime.types", err, sizeof err);
 *   cshw_mime_types_set(m, "log", "text/plain; charset=utf-8");
 *   static_options.mime_types = m;                     // cshw_static_serve uses it
 *   ...
 *   cshw_mime_types_free(m);                           // after the last request
 *
 * Precedence, highest first: cshw_mime_types_set; the built-in types of
 * html, htm, css, js, mjs, json, wasm and svg (a page, its style, its
 * scripts and its data must never go out as something a browser refuses
 * or downloads); a loaded file; the rest of the built-in table. A "text/..."
 * type from a file without parameters gets "; charset=utf-8", as the
 * built-in text types have.
 *
 * Ownership: the table is the caller's (cshw_mime_types_free); the strings
 * it returns live as long as it does. Threads: build it on one thread; once
 * built, cshw_mime_types_lookup may be called from any number of threads
 * (it does not write). Loading or setting while lookups run is not allowed. */
#ifndef CSHTTP_WEB_MIME_H
#define CSHTTP_WEB_MIME_H

#include <stddef.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_mime_types cshw_mime_types;

/* A table holding the built-in types. NULL when out of memory. */
CSHW_EXPORT cshw_mime_types *cshw_mime_types_new(void);

/* Frees the table; NULL does nothing. */
CSHW_EXPORT void cshw_mime_types_free(cshw_mime_types *m);

/* Reads a mime.types file (Debian's media-types, Apache's, nginx's own
 * format without braces): "type ext ext ...;" lines, '#' comments, a
 * trailing ';' optional. A line without extensions is skipped; an
 * extension longer than 15 bytes or with bytes other than letters, digits,
 * '-', '+', '_' and '.' is skipped; a type that is not "a/b" with token
 * characters is skipped. Returns the number of extensions taken (those a
 * higher precedence keeps are not counted), -errno when the file cannot
 * be read (err: "path: reason"), -EINVAL or -ENOMEM. */
CSHW_EXPORT int cshw_mime_types_load(cshw_mime_types *m, const char *path, char *err,
                                     size_t errlen);

/* Sets the type of one extension (case-insensitive, without the dot),
 * above everything else. 0, -EINVAL for an extension or a type as
 * cshw_mime_types_load refuses them (a type may carry parameters: "text/
 * plain; charset=utf-8"), -ENOMEM. */
CSHW_EXPORT int cshw_mime_types_set(cshw_mime_types *m, const char *ext, const char *type);

/* "EXT=TYPE" (a command-line form) through cshw_mime_types_set; -EINVAL
 * without '='. */
CSHW_EXPORT int cshw_mime_types_set_pair(cshw_mime_types *m, const char *ext_eq_type);

/* The type for a file name by its extension, case-insensitive, as
 * cshw_static_mime_type answers it; m NULL: cshw_static_mime_type itself. A binary
 * search, no allocation. */
CSHW_EXPORT const char *cshw_mime_types_lookup(const cshw_mime_types *m, const char *filename);

/* The number of extensions the table holds. */
CSHW_EXPORT size_t cshw_mime_types_count(const cshw_mime_types *m);

#ifdef __cplusplus
}
#endif

#endif
