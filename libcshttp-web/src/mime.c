/* MIME types by file extension, for the static-file handler.
 *
 * One table sorted by extension (ASCII, lower case), searched with bsearch
 * after lower-casing the extension. Text types carry "; charset=utf-8":
 * the HTML, CSS, JavaScript, CSV, Markdown and WebVTT files a web root
 * holds are UTF-8 in practice. application/json has no charset
 * parameter (RFC 8259 §11 defines none), nor have XML types, whose
 * encoding the document itself declares (RFC 7303 §3.2). Anything else is
 * application/octet-stream, which a browser downloads rather than renders.
 *
 * cshw_mime_types (mime.h) is a copy of the table the application owns,
 * grown from a mime.types file and its own overrides: a sorted array
 * searched the same way, nothing global. */
#include "cshttp/web/mime.h"
#include "cshttp/web/static.h"

#include "static_priv.h"
#include "util.h"

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
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

/* The longest extension in the table is 11 bytes ("webmanifest"); a
 * loaded or set extension is at most MIME_EXT_MAX - 1. */
#define MIME_EXT_MAX 16

static const char octet[] = "application/octet-stream";

static int row_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const mime_row *)elem)->ext);
}

/* The lower-cased extension of a file name into ext[MIME_EXT_MAX]: 1, or 0
 * when there is none or it is too long. */
static int file_ext(const char *filename, char ext[MIME_EXT_MAX])
{
    if (!filename) return 0;
    const char *base = strrchr(filename, '/');
    base = base ? base + 1 : filename;
    const char *dot = strrchr(base, '.');
    /* ".profile" is a name without an extension; "a." has an empty one. */
    if (!dot || dot == base || dot[1] == '\0') return 0;
    size_t n = 0;
    for (const char *p = dot + 1; *p; p++) {
        if (n + 1 >= MIME_EXT_MAX) return 0;
        char c = *p;
        ext[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    ext[n] = '\0';
    return 1;
}

const char *cshw_static_mime_type(const char *filename)
{
    char ext[MIME_EXT_MAX];
    if (!file_ext(filename, ext)) return octet;
    const mime_row *row = bsearch(ext, mime_table, sizeof mime_table / sizeof mime_table[0],
                                  sizeof mime_table[0], row_cmp);
    return row ? row->type : octet;
}

/* ---- a table the application owns ---- */

/* Precedence of a row's source: a higher one replaces a lower one. */
enum { FROM_TABLE = 0, FROM_FILE = 1, FROM_CORE = 2, FROM_SET = 3 };

/* The built-in types that a file never replaces. */
static const char *const core_ext[] = {"css", "htm", "html", "js", "json", "mjs", "svg", "wasm"};

typedef struct own_row {
    char ext[MIME_EXT_MAX];
    const char *type; /* the table's static string, or one of m->strings */
    int from;
} own_row;

/* The types copied from files and cshw_mime_types_set, packed in chunks
 * (a file names hundreds of types: one allocation each would cost more
 * than the rest of the load). */
typedef struct string_chunk {
    struct string_chunk *next;
    size_t used, cap;
    char data[];
} string_chunk;

#define STRING_CHUNK 8192

struct cshw_mime_types {
    own_row *rows; /* sorted by ext, unique */
    size_t n, cap;
    string_chunk *strings; /* newest first */
    const char *last;      /* the string kept last */
};

static int own_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const own_row *)elem)->ext);
}

static int row_sort_cmp(const void *a, const void *b)
{
    return strcmp(((const own_row *)a)->ext, ((const own_row *)b)->ext);
}

static int is_core(const char *ext)
{
    for (size_t i = 0; i < sizeof core_ext / sizeof core_ext[0]; i++)
        if (strcmp(core_ext[i], ext) == 0) return 1;
    return 0;
}

static int ext_ok(const char *ext, size_t len)
{
    if (len == 0 || len >= MIME_EXT_MAX) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)ext[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '+' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* "type/subtype" of tchars (RFC 9110 §8.3.1), then (with params) anything printable. */
static int type_ok(const char *t, size_t len, int params)
{
    size_t i = 0, slash = 0;
    while (i < len && cshw__tchar((unsigned char)t[i])) i++;
    if (i == 0 || i == len || t[i] != '/') return 0;
    slash = ++i;
    while (i < len && cshw__tchar((unsigned char)t[i])) i++;
    if (i == slash) return 0;
    if (i == len) return 1;
    if (!params || t[i] != ';') return 0;
    for (; i < len; i++)
        if ((unsigned char)t[i] < 0x20 || (unsigned char)t[i] > 0x7e) return 0;
    return 1;
}

static const char *keep_string(cshw_mime_types *m, const char *s, size_t len, const char *suffix)
{
    size_t sl = suffix ? strlen(suffix) : 0;
    /* the same type is kept once for its many extensions */
    const char *last = m->last;
    if (last && strlen(last) == len + sl && memcmp(last, s, len) == 0 &&
        (!suffix || strcmp(last + len, suffix) == 0))
        return last;
    size_t need = len + sl + 1;
    string_chunk *c = m->strings;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > STRING_CHUNK ? need : STRING_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = m->strings;
        c->used = 0;
        c->cap = cap;
        m->strings = c;
    }
    char *d = c->data + c->used;
    c->used += need;
    memcpy(d, s, len);
    if (sl) memcpy(d + len, suffix, sl);
    d[len + sl] = '\0';
    m->last = d;
    return d;
}

/* Puts ext -> type from `from` unless a row of higher precedence holds
 * ext; a new row is appended, and the caller sorts the rows again. 1 when
 * taken, 0 when kept out, -ENOMEM. `lower` is the extension lower-cased. */
static int put(cshw_mime_types *m, const char *lower, const char *type, int from)
{
    own_row *hit = bsearch(lower, m->rows, m->n, sizeof *m->rows, own_cmp);
    if (hit) {
        if (hit->from > from) return 0;
        hit->type = type;
        hit->from = from;
        return 1;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 128;
        own_row *p = realloc(m->rows, cap * sizeof *p);
        if (!p) return -ENOMEM;
        m->rows = p;
        m->cap = cap;
    }
    own_row *r = &m->rows[m->n++];
    strcpy(r->ext, lower);
    r->type = type;
    r->from = from;
    return 1;
}

static void sort_rows(cshw_mime_types *m)
{
    qsort(m->rows, m->n, sizeof *m->rows, row_sort_cmp);
}

/* An extension and its type as a file gave them, in the file's order
 * (seq): gathered, sorted once and merged (load_merge), so that a file of
 * n extensions costs n log n, not a look through the rows added so far
 * for each (n squared, slow for a file as large as Debian's). */
typedef struct file_pair {
    char ext[MIME_EXT_MAX];
    const char *type;
    size_t seq;
} file_pair;

/* Two extensions zero-padded to MIME_EXT_MAX, compared in strcmp's
 * order a word at a time. */
static int ext_key_cmp(const char *a, const char *b)
{
    for (size_t h = 0; h < MIME_EXT_MAX; h += 8) {
        uint64_t x, y;
        memcpy(&x, a + h, 8);
        memcpy(&y, b + h, 8);
        x = be64toh(x);
        y = be64toh(y);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

/* By extension, then the file's order (the array sorted holds pointers:
 * qsort moves them, not the pairs). */
static int pair_cmp(const void *a, const void *b)
{
    const file_pair *x = *(const file_pair *const *)a, *y = *(const file_pair *const *)b;
    int c = ext_key_cmp(x->ext, y->ext);
    if (c) return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The rows past `sorted`, in order themselves, merged with those before
 * (no extension is in both): one pass, not a sort of them all. */
static void merge_rows(cshw_mime_types *m, size_t sorted)
{
    if (sorted == m->n || sorted == 0) return;
    own_row *out = malloc(m->cap * sizeof *out);
    if (!out) { /* the same order, the slow way */
        sort_rows(m);
        return;
    }
    size_t i = 0, j = sorted, k = 0;
    while (i < sorted && j < m->n)
        out[k++] = strcmp(m->rows[i].ext, m->rows[j].ext) < 0 ? m->rows[i++] : m->rows[j++];
    while (i < sorted) out[k++] = m->rows[i++];
    while (j < m->n) out[k++] = m->rows[j++];
    free(m->rows);
    m->rows = out;
}

/* The file's pairs into the table: for an extension given more than once
 * the last line wins, as when they were put one at a time; none of them
 * over a row of higher precedence. The number taken, counting each line's
 * pair (as put did), or -ENOMEM. */
static int load_merge(cshw_mime_types *m, file_pair *pairs, size_t n)
{
    file_pair **by_ext = malloc((n ? n : 1) * sizeof *by_ext);
    if (!by_ext) return -ENOMEM;
    for (size_t i = 0; i < n; i++) by_ext[i] = &pairs[i];
    qsort(by_ext, n, sizeof *by_ext, pair_cmp);
    size_t sorted = m->n, t = 0; /* rows[0 .. sorted) in order, walked beside the pairs */
    int taken = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && ext_key_cmp(by_ext[j]->ext, by_ext[i]->ext) == 0) j++;
        /* by_ext[i .. j) are one extension's; by_ext[j - 1] its last line */
        const char *ext = by_ext[i]->ext;
        int c = 1;
        while (t < sorted && (c = strcmp(m->rows[t].ext, ext)) < 0) t++;
        own_row *hit = t < sorted && c == 0 ? &m->rows[t] : NULL;
        if (!hit || hit->from <= FROM_FILE) {
            if (!hit) {
                if (m->n == m->cap) {
                    size_t cap = m->cap ? m->cap * 2 : 128;
                    own_row *p = realloc(m->rows, cap * sizeof *p);
                    if (!p) {
                        free(by_ext);
                        return -ENOMEM;
                    }
                    m->rows = p;
                    m->cap = cap;
                }
                hit = &m->rows[m->n++];
                strcpy(hit->ext, ext);
            }
            hit->type = by_ext[j - 1]->type;
            hit->from = FROM_FILE;
            taken += (int)(j - i);
        }
        i = j;
    }
    free(by_ext);
    merge_rows(m, sorted);
    return taken;
}

static void lower_copy(char *dst, const char *src, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        dst[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    dst[len] = '\0';
}

cshw_mime_types *cshw_mime_types_new(void)
{
    cshw_mime_types *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    size_t n = sizeof mime_table / sizeof mime_table[0];
    m->rows = malloc(n * sizeof *m->rows);
    if (!m->rows) {
        free(m);
        return NULL;
    }
    m->cap = n;
    for (size_t i = 0; i < n; i++) {
        strcpy(m->rows[i].ext, mime_table[i].ext);
        m->rows[i].type = mime_table[i].type;
        m->rows[i].from = is_core(mime_table[i].ext) ? FROM_CORE : FROM_TABLE;
    }
    m->n = n; /* the table is sorted */
    return m;
}

void cshw_mime_types_free(cshw_mime_types *m)
{
    if (!m) return;
    for (string_chunk *c = m->strings, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(m->rows);
    free(m);
}

/* isspace's bytes in the C locale, a lookup each: the loader looks at
 * every byte of the file with it */
static const unsigned char space_byte[256] = {
    [' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1, ['\v'] = 1, ['\f'] = 1,
};

static int is_space(char c)
{
    return space_byte[(unsigned char)c];
}

int cshw_mime_types_load(cshw_mime_types *m, const char *path, char *err, size_t errlen)
{
    if (!m || !path) return -EINVAL;
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    file_pair *pairs = NULL;
    size_t npairs = 0, cappairs = 0;
    int r = 0;
    char line[4096];
    while (r >= 0 && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            /* a line longer than any real one: skip the rest of it */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n') {
            }
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *semi = strchr(line, ';');
        if (semi) *semi = '\0';
        char *p = line;
        while (is_space(*p)) p++;
        char *type = p;
        while (*p && !is_space(*p)) p++;
        size_t tlen = (size_t)(p - type);
        if (tlen == 0) continue;
        const char *kept = NULL; /* the type, checked once an extension follows */
        for (;;) {
            while (is_space(*p)) p++;
            if (!*p) break;
            char *ext = p;
            while (*p && !is_space(*p)) p++;
            size_t elen = (size_t)(p - ext);
            if (!ext_ok(ext, elen)) continue;
            if (!kept) {
                if (!type_ok(type, tlen, 0)) break;
                kept = keep_string(m, type, tlen,
                                   tlen > 5 && strncmp(type, "text/", 5) == 0 ? "; charset=utf-8"
                                                                              : NULL);
                if (!kept) {
                    r = -ENOMEM;
                    break;
                }
            }
            if (npairs == cappairs) {
                size_t cap = cappairs ? cappairs * 2 : 256;
                file_pair *q = realloc(pairs, cap * sizeof *q);
                if (!q) {
                    r = -ENOMEM;
                    break;
                }
                pairs = q;
                cappairs = cap;
            }
            file_pair *fp = &pairs[npairs];
            memset(fp->ext, 0, sizeof fp->ext); /* the key ext_key_cmp compares */
            lower_copy(fp->ext, ext, elen);
            fp->type = kept;
            fp->seq = npairs++;
        }
    }
    int read_error = ferror(f);
    fclose(f);
    int taken = r < 0 ? r : load_merge(m, pairs, npairs);
    free(pairs);
    if (taken < 0) return taken;
    if (read_error) {
        if (err && errlen) snprintf(err, errlen, "%s: read error", path);
        return -EIO;
    }
    return taken;
}

int cshw_mime_types_set(cshw_mime_types *m, const char *ext, const char *type)
{
    if (!m || !ext || !type) return -EINVAL;
    if (*ext == '.') ext++;
    size_t elen = strlen(ext), tlen = strlen(type);
    if (!ext_ok(ext, elen) || !type_ok(type, tlen, 1)) return -EINVAL;
    const char *kept = keep_string(m, type, tlen, NULL);
    if (!kept) return -ENOMEM;
    char lower[MIME_EXT_MAX];
    lower_copy(lower, ext, elen);
    int r = put(m, lower, kept, FROM_SET);
    if (r < 0) return r;
    sort_rows(m);
    return 0;
}

int cshw_mime_types_set_pair(cshw_mime_types *m, const char *ext_eq_type)
{
    if (!m || !ext_eq_type) return -EINVAL;
    const char *eq = strchr(ext_eq_type, '=');
    if (!eq || eq == ext_eq_type || (size_t)(eq - ext_eq_type) >= MIME_EXT_MAX + 1) return -EINVAL;
    char ext[MIME_EXT_MAX + 1];
    memcpy(ext, ext_eq_type, (size_t)(eq - ext_eq_type));
    ext[eq - ext_eq_type] = '\0';
    return cshw_mime_types_set(m, ext, eq + 1);
}

const char *cshw_mime_types_lookup(const cshw_mime_types *m, const char *filename)
{
    if (!m) return cshw_static_mime_type(filename);
    char ext[MIME_EXT_MAX];
    if (!file_ext(filename, ext)) return octet;
    const own_row *row = bsearch(ext, m->rows, m->n, sizeof *m->rows, own_cmp);
    return row ? row->type : octet;
}

size_t cshw_mime_types_count(const cshw_mime_types *m)
{
    return m ? m->n : 0;
}

/* Row i of the table (its extension, and its type in *type), or NULL past
 * the end: test_mime checks the order and every row. */
const char *cshw__mime_row(size_t i, const char **type)
{
    if (i >= sizeof mime_table / sizeof mime_table[0]) return NULL;
    if (type) *type = mime_table[i].type;
    return mime_table[i].ext;
}
