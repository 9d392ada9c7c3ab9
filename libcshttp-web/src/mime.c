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
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    char ext[MIME_EXT_MAX]; /* zero-padded: compared as a key (ext_key_cmp) */
    const char *type;       /* the table's static string, or one of m->strings */
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
    size_t last_len;       /* its length */
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
    if (last && m->last_len == len + sl && memcmp(last, s, len) == 0 &&
        (!suffix || memcmp(last + len, suffix, sl) == 0))
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
    m->last_len = len + sl;
    return d;
}

/* Puts ext -> type from `from` unless a row of higher precedence holds
 * ext; a new row is appended, and the caller sorts the rows again. 1 when
 * taken, 0 when kept out, -ENOMEM. `lower` is the extension lower-cased,
 * zero-padded. */
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
    memcpy(r->ext, lower, MIME_EXT_MAX);
    r->type = type;
    r->from = from;
    return 1;
}

static void sort_rows(cshw_mime_types *m)
{
    qsort(m->rows, m->n, sizeof *m->rows, row_sort_cmp);
}

/* An extension and its type as a file gave them, in the file's order:
 * gathered, sorted once and merged (load_merge), so that a file of n
 * extensions costs a few passes over them, not a look through the rows
 * added so far for each (n squared, slow for a file as large as
 * Debian's). */
typedef struct file_pair {
    char ext[MIME_EXT_MAX]; /* lower case, zero-padded: the sort's key */
    const char *type;
    size_t len; /* of ext, 1 to MIME_EXT_MAX - 1 */
} file_pair;

/* The pairs of one load: the loader's, freed when it returns. */
typedef struct pair_list {
    file_pair *v;
    size_t n, cap;
    size_t longest; /* the longest extension's length: the bytes the sort looks at */
} pair_list;

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

/* The indices of the pairs in order of extension, and in the file's order
 * among equal ones: a counting sort by each byte of the key, the last
 * byte first (stable, so each pass keeps the order the later bytes gave).
 * The pass of byte `pos` looks only at the keys longer than pos: the
 * others are zero from pos on, so they come first, in the file's order,
 * whatever the passes before did. Work space, n indices each: `by_len`
 * (the indices by length, the file's order within each), `work1` and
 * `work2`; the result is in one of the last two, returned. */
static size_t *sort_pairs(const pair_list *pl, size_t *by_len, size_t *work1, size_t *work2)
{
    size_t n = pl->n;
    /* shorter[k]: the number of keys shorter than k bytes, the first
     * index in by_len of those k long */
    size_t shorter[MIME_EXT_MAX + 1] = {0};
    for (size_t i = 0; i < n; i++) shorter[pl->v[i].len + 1]++;
    for (size_t k = 1; k <= MIME_EXT_MAX; k++) shorter[k] += shorter[k - 1];
    size_t at_len[MIME_EXT_MAX];
    memcpy(at_len, shorter, sizeof at_len);
    for (size_t i = 0; i < n; i++) by_len[at_len[pl->v[i].len]++] = i;
    size_t *cur = work1, *tmp = work2;
    for (size_t pos = pl->longest; pos-- > 0;) {
        /* cur[lo .. n): the keys longer than pos; those pos + 1 long first,
         * then the longer ones as the passes before left them */
        size_t lo = shorter[pos + 1], hi = shorter[pos + 2];
        memcpy(cur + lo, by_len + lo, (hi - lo) * sizeof *cur);
        size_t at[256] = {0};
        for (size_t i = lo; i < n; i++) at[(unsigned char)pl->v[cur[i]].ext[pos]]++;
        /* a byte all of them share moves nothing */
        if (at[(unsigned char)pl->v[cur[lo]].ext[pos]] == n - lo) continue;
        size_t sum = lo;
        for (size_t c = 0; c < 256; c++) {
            size_t k = at[c];
            at[c] = sum;
            sum += k;
        }
        for (size_t i = lo; i < n; i++) {
            size_t k = cur[i];
            tmp[at[(unsigned char)pl->v[k].ext[pos]]++] = k;
        }
        size_t *t = cur;
        cur = tmp;
        tmp = t;
    }
    return cur;
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
        out[k++] = ext_key_cmp(m->rows[i].ext, m->rows[j].ext) < 0 ? m->rows[i++] : m->rows[j++];
    while (i < sorted) out[k++] = m->rows[i++];
    while (j < m->n) out[k++] = m->rows[j++];
    free(m->rows);
    m->rows = out;
}

/* The file's pairs into the table: for an extension given more than once
 * the last line wins, as when they were put one at a time; none of them
 * over a row of higher precedence. The number taken, counting each line's
 * pair (as put did), or -ENOMEM. */
static int load_merge(cshw_mime_types *m, const pair_list *pl)
{
    size_t n = pl->n;
    if (n == 0) return 0;
    if (n > SIZE_MAX / (3 * sizeof(size_t))) return -ENOMEM;
    size_t *idx = malloc(3 * n * sizeof *idx);
    if (!idx) return -ENOMEM;
    const size_t *by_ext = sort_pairs(pl, idx, idx + n, idx + 2 * n);
    size_t sorted = m->n, t = 0; /* rows[0 .. sorted) in order, walked beside the pairs */
    int taken = 0;
    for (size_t i = 0; i < n;) {
        const char *ext = pl->v[by_ext[i]].ext;
        size_t j = i + 1;
        while (j < n && ext_key_cmp(pl->v[by_ext[j]].ext, ext) == 0) j++;
        /* by_ext[i .. j) are one extension's; by_ext[j - 1] its last line */
        int c = 1;
        while (t < sorted && (c = ext_key_cmp(m->rows[t].ext, ext)) < 0) t++;
        own_row *hit = t < sorted && c == 0 ? &m->rows[t] : NULL;
        if (!hit || hit->from <= FROM_FILE) {
            if (!hit) {
                if (m->n == m->cap) {
                    size_t cap = m->cap ? m->cap * 2 : 128;
                    own_row *p = realloc(m->rows, cap * sizeof *p);
                    if (!p) {
                        free(idx);
                        return -ENOMEM;
                    }
                    m->rows = p;
                    m->cap = cap;
                }
                hit = &m->rows[m->n++];
                memcpy(hit->ext, ext, MIME_EXT_MAX);
            }
            hit->type = pl->v[by_ext[j - 1]].type;
            hit->from = FROM_FILE;
            taken += (int)(j - i);
        }
        i = j;
    }
    free(idx);
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
    m->rows = calloc(n, sizeof *m->rows); /* zero-padded extensions */
    if (!m->rows) {
        free(m);
        return NULL;
    }
    m->cap = n;
    for (size_t i = 0; i < n; i++) {
        memcpy(m->rows[i].ext, mime_table[i].ext, strlen(mime_table[i].ext));
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

/* The bytes of a mime.types line, a lookup each: the loader looks at every
 * byte of the file with it. 0 for a tchar an extension may hold (letters,
 * digits, '-', '+', '_', '.'); LINE_NOEXT for the other tchars;
 * LINE_SPACE for isspace's bytes in the C locale but '\n'; LINE_END for
 * what ends the words of a line: its newline, a comment, the ';' of
 * nginx's format and NUL (every line the loader parses has one, so the
 * scans need no bounds); LINE_OTHER for the rest, '/' among them. */
enum { LINE_SPACE = 1, LINE_END = 2, LINE_OTHER = 4, LINE_NOEXT = 8 };

/* csh_is_tchar (grammar.h) as a constant expression; each shift count
 * kept within 0..63, as compilers check the branch not taken too */
#define LB_TCHAR(c)                                                                                \
    ((c) < 64    ? (CSH_TCHAR_LO >> ((c) & 63)) & 1u                                               \
     : (c) < 128 ? (CSH_TCHAR_HI >> ((c) & 63)) & 1u                                               \
                 : 0u)
#define LB_EXT(c)                                                                                  \
    (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9') ||     \
     (c) == '-' || (c) == '+' || (c) == '_' || (c) == '.')
#define LB(c)                                                                                      \
    ((c) == ' ' || (c) == '\t' || (c) == '\r' || (c) == '\v' || (c) == '\f' ? LINE_SPACE           \
     : (c) == '\n' || (c) == '#' || (c) == ';' || (c) == '\0'               ? LINE_END             \
     : !LB_TCHAR(c)                                                         ? LINE_OTHER           \
     : !LB_EXT(c)                                                           ? LINE_NOEXT           \
                                                                            : 0)
#define LB4(c) LB(c), LB((c) + 1), LB((c) + 2), LB((c) + 3)
#define LB16(c) LB4(c), LB4((c) + 4), LB4((c) + 8), LB4((c) + 12)
#define LB64(c) LB16(c), LB16((c) + 16), LB16((c) + 32), LB16((c) + 48)
static const unsigned char line_byte[256] = {LB64(0), LB64(64), LB64(128), LB64(192)};
#undef LB64
#undef LB16
#undef LB4
#undef LB
#undef LB_EXT
#undef LB_TCHAR

/* The pairs of one line, "type ext ext ..." up to its LINE_END byte, as
 * ext_ok and type_ok (without parameters) take them: a line whose type
 * is not one gives none. 0, or -ENOMEM. */
static int load_line(cshw_mime_types *m, const char *p, pair_list *pl)
{
    while (line_byte[(unsigned char)*p] == LINE_SPACE) p++;
    const char *type = p;
    while (!(line_byte[(unsigned char)*p] & (LINE_SPACE | LINE_END | LINE_OTHER))) p++;
    if (p == type || *p != '/') return 0;
    const char *sub = ++p;
    while (!(line_byte[(unsigned char)*p] & (LINE_SPACE | LINE_END | LINE_OTHER))) p++;
    if (p == sub || line_byte[(unsigned char)*p] == LINE_OTHER) return 0;
    size_t tlen = (size_t)(p - type);
    const char *kept = NULL; /* the type, kept once an extension follows */
    for (;;) {
        while (line_byte[(unsigned char)*p] == LINE_SPACE) p++;
        if (line_byte[(unsigned char)*p] == LINE_END) return 0;
        const char *ext = p;
        while (!line_byte[(unsigned char)*p]) p++;
        size_t elen = (size_t)(p - ext);
        if (!(line_byte[(unsigned char)*p] & (LINE_SPACE | LINE_END))) {
            /* a byte no extension holds: skip the word */
            while (!(line_byte[(unsigned char)*p] & (LINE_SPACE | LINE_END))) p++;
            continue;
        }
        if (elen >= MIME_EXT_MAX) continue;
        if (!kept) {
            kept =
                keep_string(m, type, tlen,
                            tlen > 5 && memcmp(type, "text/", 5) == 0 ? "; charset=utf-8" : NULL);
            if (!kept) return -ENOMEM;
        }
        if (pl->n == pl->cap) {
            size_t cap = pl->cap ? pl->cap * 2 : 256;
            if (cap > SIZE_MAX / sizeof *pl->v) return -ENOMEM;
            file_pair *q = realloc(pl->v, cap * sizeof *q);
            if (!q) return -ENOMEM;
            pl->v = q;
            pl->cap = cap;
        }
        file_pair *fp = &pl->v[pl->n++];
        memset(fp->ext, 0, sizeof fp->ext);
        lower_copy(fp->ext, ext, elen);
        fp->type = kept;
        fp->len = elen;
        if (elen > pl->longest) pl->longest = elen;
    }
}

/* The file is read through a buffer of LOAD_BUF bytes whatever its size: a
 * line not whole in it moves to its front before the next read. */
#define LOAD_BUF 65536

/* A line is read LOAD_LINE bytes at most at a time. One that has neither
 * its newline nor a NUL in its first LOAD_LINE bytes is skipped whole
 * (longer than any real line). A NUL ends the text of a line; in a line
 * that long, the text after its first LOAD_LINE bytes is read as a line
 * of its own. */
#define LOAD_LINE 4095

int cshw_mime_types_load(cshw_mime_types *m, const char *path, char *err, size_t errlen)
{
    if (!m || !path) return -EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    /* one byte more for the NUL that ends a last line without a newline */
    char *buf = malloc(LOAD_BUF + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    pair_list pl = {0};
    size_t have = 0, off = 0; /* buf[off .. have) not parsed yet */
    int r = 0, eof = 0, skipping = 0, read_error = 0;
    for (;;) {
        /* the lines whole in the buffer */
        while (r >= 0 && off < have) {
            char *p = buf + off;
            size_t avail = have - off;
            if (skipping) { /* the rest of a line too long */
                char *nl = memchr(p, '\n', avail);
                if (!nl) {
                    off = have;
                    break;
                }
                off += (size_t)(nl - p) + 1;
                skipping = 0;
                continue;
            }
            size_t lim = avail < LOAD_LINE ? avail : LOAD_LINE;
            char *nl = memchr(p, '\n', lim);
            if (nl) {
                r = load_line(m, p, &pl);
                off += (size_t)(nl - p) + 1;
            } else if (lim == LOAD_LINE) {
                if (memchr(p, '\0', LOAD_LINE))
                    r = load_line(m, p, &pl);
                else
                    skipping = 1;
                off += LOAD_LINE;
            } else if (eof) {
                buf[have] = '\0';
                r = load_line(m, p, &pl);
                off = have;
            } else {
                break; /* its end is still to read */
            }
        }
        if (r < 0 || eof) break;
        /* what is left is less than LOAD_LINE: there is room to read */
        memmove(buf, buf + off, have - off);
        have -= off;
        off = 0;
        ssize_t got;
        do {
            got = read(fd, buf + have, LOAD_BUF - have);
        } while (got < 0 && errno == EINTR);
        if (got < 0) {
            read_error = 1; /* the line read in part is dropped */
            break;
        }
        if (got == 0) eof = 1;
        have += (size_t)got;
    }
    free(buf);
    close(fd);
    int taken = r < 0 ? r : load_merge(m, &pl);
    free(pl.v);
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
    char lower[MIME_EXT_MAX] = {0};
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
