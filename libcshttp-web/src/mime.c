/* MIME types by file extension, for the static-file handler.
 *
 * One table sorted by extension (ASCII, lower case), searched with bsearch
 * after lower-casing the extension. Text types carry "; charset=utf-8":
 * the HTML, CSS, JavaScript, CSV, Markdown and WebVTT files a web root
 * holds are UTF-8 in practice. application/json has no charset
 * parameter (RFC 8259 §11 defines none), nor have XML types, whose
 * encoding the document itself declares (RFC 7303 §3.2). Anything else is
 * application/octet-stream, which a browser downloads rather than renders. */
#include "cshttp/web/static.h"

#include "static_priv.h"

#include <stdlib.h>
#include <string.h>

typedef struct mime_row {
    const char *ext;
    const char *type;
} mime_row;

#define UTF8 "; charset=utf-8"

/* Sorted by ext (strcmp order): test_mime checks it. */
static const mime_row mime_table[] = {
    {"7z", "application/x-7z-compressed"},
    {"aac", "audio/aac"},
    {"apng", "image/apng"},
    {"avif", "image/avif"},
    {"bmp", "image/bmp"},
    {"br", "application/x-br"},
    {"bz2", "application/x-bzip2"},
    {"css", "text/css" UTF8},
    {"csv", "text/csv" UTF8},
    {"eot", "application/vnd.ms-fontobject"},
    {"epub", "application/epub+zip"},
    {"flac", "audio/flac"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"htm", "text/html" UTF8},
    {"html", "text/html" UTF8},
    {"ico", "image/x-icon"},
    {"ics", "text/calendar" UTF8},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript" UTF8}, /* RFC 9239 §6 */
    {"json", "application/json"},
    {"jsonld", "application/ld+json"},
    {"jxl", "image/jxl"},
    {"log", "text/plain" UTF8},
    {"m4a", "audio/mp4"},
    {"m4v", "video/mp4"},
    {"map", "application/json"}, /* source maps */
    {"md", "text/markdown" UTF8},
    {"mjs", "text/javascript" UTF8},
    {"mov", "video/quicktime"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"mpeg", "video/mpeg"},
    {"oga", "audio/ogg"},
    {"ogg", "audio/ogg"},
    {"ogv", "video/ogg"},
    {"opus", "audio/opus"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"rss", "application/rss+xml"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"tgz", "application/gzip"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain" UTF8},
    {"vtt", "text/vtt" UTF8},
    {"wasm", "application/wasm"},
    {"wav", "audio/wav"},
    {"weba", "audio/webm"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json"},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xhtml", "application/xhtml+xml"},
    {"xml", "application/xml"},
    {"xz", "application/x-xz"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
    {"zip", "application/zip"},
    {"zst", "application/zstd"},
};

#undef UTF8

/* The longest extension in the table is 11 bytes ("webmanifest"). */
#define MIME_EXT_MAX 16

static int row_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const mime_row *)elem)->ext);
}

const char *cshw_mime_type(const char *filename)
{
    static const char fallback[] = "application/octet-stream";
    if (!filename) return fallback;
    const char *base = strrchr(filename, '/');
    base = base ? base + 1 : filename;
    const char *dot = strrchr(base, '.');
    /* ".profile" is a name without an extension; "a." has an empty one. */
    if (!dot || dot == base || dot[1] == '\0') return fallback;
    char ext[MIME_EXT_MAX];
    size_t n = 0;
    for (const char *p = dot + 1; *p; p++) {
        if (n + 1 >= sizeof ext) return fallback;
        char c = *p;
        ext[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    ext[n] = '\0';
    const mime_row *row = bsearch(ext, mime_table, sizeof mime_table / sizeof mime_table[0],
                                  sizeof mime_table[0], row_cmp);
    return row ? row->type : fallback;
}

/* Row i of the table (its extension, and its type in *type), or NULL past
 * the end: test_mime checks the order and every row. */
const char *cshw__mime_row(size_t i, const char **type)
{
    if (i >= sizeof mime_table / sizeof mime_table[0]) return NULL;
    if (type) *type = mime_table[i].type;
    return mime_table[i].ext;
}
