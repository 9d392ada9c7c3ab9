/* The static-file handler: one file (or folder) of the root per request.
 *
 * The order of the decisions, each with the RFC 9110 section it follows:
 *   1. the path: decoded by the request (400 when it cannot be), cleaned
 *      and opened under the root (map_path.c), dotfiles refused unless
 *      hidden_files; what the open finds decides 404 or 403;
 *   2. a folder: 301 to add the slash, then the index file, then the
 *      listing when enabled, else 404;
 *   3. the method: GET and HEAD; any other gets 405 with Allow (§15.5.6)
 *      when the file exists;
 *   4. the representation: the ".gz" sibling when the client accepts gzip
 *      (§12.5.3), with Content-Encoding and Vary (§12.5.5);
 *   5. preconditions in the order of §13.2.2: If-Match, else
 *      If-Unmodified-Since (412); If-None-Match, else If-Modified-Since
 *      (304); then If-Range (§13.1.5) deciding whether Range applies;
 *   6. Range (§14.2): 206 with one part or multipart/byteranges (§14.6),
 *      416 (§15.5.17), or the whole file;
 *   7. the body through cshw_response_send_file (sendfile(2) where the
 *      transport can), or written in parts for multipart/byteranges.
 *
 * Every descriptor opened is closed by a cleanup on the request's arena, so
 * an early return cannot leak one, and the file served is the one opened
 * and fstat'ed (never a name looked up twice). */
#include "cshttp/web/static.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cshttp/web/buf.h"
#include "cshttp/web/error.h"
#include "cshttp/web/html.h"
#include "cshttp/web/mime.h"
#include "cshttp/web/request.h"
#include "cshttp/web/response.h"
#include "cshttp/web/url.h"
#include "cshttp_internal/sized.h"
#include "static_priv.h"

CSH__SIZED_NO_TAIL_PADDING(cshw_static_options, mime_types);

static const cshw_static_options defaults = {
    .size = sizeof(cshw_static_options),
    .index = "index.html",
    .precompressed = 1,
    .cache_control = "max-age=0",
    .etag = 1,
};

void cshw_static_options_init_sized(cshw_static_options *o, size_t size)
{
    csh__sized_init(o, size, &defaults, sizeof defaults);
}

int cshw__static_options_copy(cshw_static_options *dst, const cshw_static_options *src)
{
    *dst = defaults;
    return csh__sized_copy(dst, sizeof *dst, src, CSHW_STATIC_OPTIONS_SIZE_0_3) < 0 ? -EINVAL : 0;
}

typedef struct serve {
    cshw_context *ctx;
    cshw_request *req;
    cshw_response *res;
    cshw_arena *arena;
    const cshw_static_options *o;
    const char *path; /* decoded virtual path */
    int rootfd;
    int get;  /* GET */
    int head; /* HEAD */
} serve;

static void close_fd(void *p)
{
    int *fd = p;
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* The descriptor is closed when the request ends. 0, or -ENOMEM (closed). */
static int keep_fd(cshw_arena *a, int fd)
{
    int *p = cshw_arena_alloc(a, sizeof *p);
    if (!p) {
        close(fd);
        return -ENOMEM;
    }
    *p = fd;
    return cshw_arena_on_cleanup(a, close_fd, p);
}

/* ---- small encoders ---- */

/* A decoded path percent-encoded segment by segment for a Location
 * (RFC 3986 §2.1, cshw_url_encode), its slashes kept. */
static const char *encode_path(cshw_arena *a, const char *path)
{
    cshw_buf b;
    cshw_buf_init(&b, a);
    int rc = 0;
    for (const char *p = path; *p && rc == 0;) {
        const char *seg = p, *enc;
        size_t n;
        while (*p && *p != '/') p++;
        if (p > seg) {
            rc = cshw_url_encode(a, seg, (size_t)(p - seg), &enc, &n);
            if (rc == 0) rc = cshw_buf_append(&b, enc, n);
        }
        if (*p == '/' && rc == 0) rc = cshw_buf_append_byte(&b, *p++);
    }
    if (rc) return NULL;
    return b.data ? b.data : "";
}

static const char *html(cshw_arena *a, const char *s)
{
    const char *out;
    return cshw_html_encode(a, s, strlen(s), &out, NULL) == 0 ? out : NULL;
}

static const char *url_segment(cshw_arena *a, const char *s)
{
    const char *out;
    return cshw_url_encode(a, s, strlen(s), &out, NULL) == 0 ? out : NULL;
}

/* ---- answers without a file body ---- */

static int method_not_allowed(serve *s)
{
    int rc = cshw_response_set_header(s->res, "Allow", "GET, HEAD");
    return rc ? rc : cshw_response_send_error(s->res, 405);
}

/* §15.4.2: a folder asked for without its trailing slash. */
static int add_slash(serve *s)
{
    const char *loc = encode_path(s->arena, s->path);
    const char *q = cshw_request_query_string(s->req);
    if (loc) loc = cshw_arena_printf(s->arena, "%s/%s%s", loc, q[0] ? "?" : "", q);
    if (!loc) return -ENOMEM;
    return cshw_response_redirect(s->res, 301, loc);
}

/* A name the hidden-file policy refuses: a segment starting with '.',
 * except ".well-known" (RFC 8615), which is meant to be served. */
static int hidden_segment(const char *rel)
{
    for (const char *p = rel; *p;) {
        const char *seg = p;
        while (*p && *p != '/') p++;
        size_t n = (size_t)(p - seg);
        if (seg[0] == '.' && !(n == 11 && memcmp(seg, ".well-known", 11) == 0)) return 1;
        if (*p) p++;
    }
    return 0;
}

/* ---- preconditions (RFC 9110 §13.2.2) ---- */

enum { COND_PROCEED = 0, COND_NOT_MODIFIED = 304, COND_FAILED = 412 };

#define MAX_LIST_FIELDS 16

/* Every field line of a list-valued header joined with ", " (§5.3), or
 * NULL when there is none. */
static const char *header_list(serve *s, const char *name)
{
    const char *v[MAX_LIST_FIELDS];
    size_t n = cshw_request_header_all(s->req, name, v, MAX_LIST_FIELDS);
    if (n == 0) return NULL;
    if (n > MAX_LIST_FIELDS) n = MAX_LIST_FIELDS;
    const char *out = v[0];
    for (size_t i = 1; i < n && out; i++) out = cshw_arena_printf(s->arena, "%s, %s", out, v[i]);
    return out ? out : "";
}

/* A singleton date header: its time, or -1 when absent, repeated or not a
 * valid HTTP-date (§13.1.3, §13.1.4: then ignored). */
static int header_date(serve *s, const char *name, time_t *t)
{
    const char *v[2];
    if (cshw_request_header_all(s->req, name, v, 2) != 1) return -1;
    return cshw__date_parse(v[0], t);
}

static int preconditions(serve *s, const char *etag, time_t mtime)
{
    time_t t;
    /* steps 1 and 2: If-Match (strong comparison), else If-Unmodified-Since */
    const char *im = header_list(s, "If-Match");
    if (im) {
        if (!cshw__etag_match(im, etag, 0)) return COND_FAILED;
    } else if (header_date(s, "If-Unmodified-Since", &t) == 0) {
        if (mtime > t) return COND_FAILED;
    }
    /* steps 3 and 4: If-None-Match (weak comparison), else If-Modified-Since,
     * which only GET and HEAD evaluate */
    const char *inm = header_list(s, "If-None-Match");
    if (inm) {
        if (cshw__etag_match(inm, etag, 1)) return COND_NOT_MODIFIED;
    } else if (header_date(s, "If-Modified-Since", &t) == 0) {
        if (mtime <= t) return COND_NOT_MODIFIED;
    }
    return COND_PROCEED;
}

/* §13.1.5: whether Range applies. An entity-tag matches by strong
 * comparison; a date only when it equals Last-Modified exactly and that is
 * a strong validator: at least one second before the response's Date
 * (§8.8.2.2). A repeated or malformed If-Range is a failed one: the whole
 * representation is sent, which is never wrong. */
static int if_range_holds(serve *s, const char *etag, time_t mtime)
{
    const char *v[2];
    size_t n = cshw_request_header_all(s->req, "If-Range", v, 2);
    if (n == 0) return 1;
    if (n > 1) return 0;
    if (v[0][0] == '"') return etag && strcmp(v[0], etag) == 0;
    time_t t;
    if (cshw__date_parse(v[0], &t)) return 0;
    return t == mtime && mtime < time(NULL);
}

/* ---- the body ---- */

static int write_file_part(serve *s, int fd, uint64_t off, uint64_t len, char *buf, size_t cap)
{
    while (len > 0) {
        size_t want = len < cap ? (size_t)len : cap;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -errno;
        if (r == 0) return -EIO; /* the file shrank under us */
        int rc = cshw_response_write(s->res, buf, (size_t)r);
        if (rc) return rc;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return 0;
}

static void make_boundary(char out[40])
{
    static unsigned long counter;
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rnd = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)ts.tv_sec ^
              ((uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 32);
    }
    snprintf(out, 40, "cshttp-%016" PRIx64, rnd);
}

/* §14.6: several ranges as multipart/byteranges. The parts are written
 * (read with pread) rather than sent with send_file, which ends a response. */
static int send_multipart(serve *s, int fd, uint64_t size, const char *type, const cshw__range *r,
                          int n)
{
    char boundary[40];
    make_boundary(boundary);
    const char *ct = cshw_arena_printf(s->arena, "multipart/byteranges; boundary=%s", boundary);
    if (!ct) return -ENOMEM;
    int rc = cshw_response_set_status(s->res, 206);
    if (!rc) rc = cshw_response_set_header(s->res, "Content-Type", ct);
    if (rc) return rc;
    size_t cap = 65536;
    char *buf = cshw_arena_alloc(s->arena, cap);
    if (!buf) return -ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        rc =
            cshw_response_printf(s->res,
                                 "%s--%s\r\nContent-Type: %s\r\n"
                                 "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n\r\n",
                                 i ? "\r\n" : "", boundary, type, r[i].first, r[i].last, size);
        if (!rc) rc = write_file_part(s, fd, r[i].first, r[i].last - r[i].first + 1, buf, cap);
    }
    if (!rc) rc = cshw_response_printf(s->res, "\r\n--%s--\r\n", boundary);
    return rc;
}

/* Opens name + ".gz" when it is a regular file: 0 and *fd, or -1. */
static int open_gz_sibling(serve *s, const char *name, int *fd, struct stat *st)
{
    const char *gz = cshw_arena_printf(s->arena, "%s.gz", name);
    if (!gz) return -1;
    if (cshw__static_open(s->rootfd, s->o->root, gz, s->o->follow_symlinks, fd, st)) return -1;
    if (!S_ISREG(st->st_mode)) {
        close(*fd);
        return -1;
    }
    return 0;
}

/* Serves the regular file `fd` found at `name` (relative to the root). */
static int serve_file(serve *s, const char *name, int fd, struct stat *st)
{
    const cshw_static_options *o = s->o;
    cshw_response *res = s->res;
    const char *type = cshw_mime_types_lookup(o->mime_types, name);
    int gzip = 0, vary = 0;
    struct stat gst; /* the sibling's, when it is served: st points here */
    const char *ae[MAX_LIST_FIELDS];
    size_t nae = o->precompressed
                     ? cshw_request_header_all(s->req, "Accept-Encoding", ae, MAX_LIST_FIELDS)
                     : 0;
    int accepts = cshw__accept_prefers(ae, nae < MAX_LIST_FIELDS ? nae : MAX_LIST_FIELDS, "gzip");
    /* The sibling is looked for when the client takes gzip, or when the
     * type is one that is stored compressed (text, scripts, SVG...): then
     * an identity answer says Vary too, since a gzip-capable client would
     * get other bytes. For other types (images, archives, octet-stream) a
     * client without gzip costs no extra open; its answer has no Vary. */
    if (o->precompressed && (accepts || cshw__compressible(type))) {
        int gfd;
        if (open_gz_sibling(s, name, &gfd, &gst) == 0) {
            vary = 1; /* the answer depends on Accept-Encoding either way */
            if (accepts) {
                int rc = keep_fd(s->arena, gfd);
                if (rc) return rc;
                fd = gfd;
                st = &gst;
                gzip = 1;
            } else {
                close(gfd);
            }
        }
    }
    cshw_response_disable_gzip(res); /* sent as stored */

    uint64_t size = (uint64_t)st->st_size;
    time_t mtime = st->st_mtim.tv_sec;
    const char *etag = NULL;
    if (o->etag) {
        uint64_t ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
        etag = cshw_arena_printf(s->arena, "\"%" PRIx64 "-%" PRIx64 "%s\"", size, ns,
                                 gzip ? "-gz" : "");
        if (!etag) return -ENOMEM;
    }
    int cond = preconditions(s, etag, mtime);
    if (cond == COND_FAILED) return cshw_response_send_error(res, 412);

    /* §15.4.5: a 304 carries the fields a 200 would have for caches */
    char date[CSHW__DATE_SIZE];
    cshw__date_format(mtime, date);
    int rc = 0;
    if (etag) rc = cshw_response_set_header(res, "ETag", etag);
    if (!rc) rc = cshw_response_set_header(res, "Last-Modified", date);
    if (!rc && o->cache_control)
        rc = cshw_response_set_header(res, "Cache-Control", o->cache_control);
    if (!rc && vary) rc = cshw_response_append_header(res, "Vary", "Accept-Encoding");
    if (rc) return rc;
    if (cond == COND_NOT_MODIFIED) return cshw_response_set_status(res, 304);

    rc = cshw_response_set_header(res, "Accept-Ranges", "bytes");
    if (!rc && gzip) rc = cshw_response_set_header(res, "Content-Encoding", "gzip");
    if (rc) return rc;

    /* §14.2: Range is defined for GET only; HEAD gets the 200 headers */
    const char *rv[2];
    if (s->get && cshw_request_header_all(s->req, "Range", rv, 2) == 1 &&
        if_range_holds(s, etag, mtime)) {
        cshw__range r[CSHW_STATIC_MAX_RANGES];
        int n = cshw__range_parse(rv[0], size, r, CSHW_STATIC_MAX_RANGES);
        if (n == 0) {
            /* §15.5.17: the error page, then Content-Range with the size
             * (the page drops the file's representation fields) */
            const char *cr = cshw_arena_printf(s->arena, "bytes */%" PRIu64, size);
            if (!cr) return -ENOMEM;
            rc = cshw_response_send_error(res, 416);
            return rc ? rc : cshw_response_set_header(res, "Content-Range", cr);
        }
        if (n > 1) return send_multipart(s, fd, size, type, r, n);
        if (n == 1) {
            const char *cr = cshw_arena_printf(s->arena, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
                                               r[0].first, r[0].last, size);
            if (!cr) return -ENOMEM;
            rc = cshw_response_set_status(res, 206);
            if (!rc) rc = cshw_response_set_header(res, "Content-Range", cr);
            if (!rc) rc = cshw_response_set_header(res, "Content-Type", type);
            if (rc) return rc;
            return cshw_response_send_file(res, fd, (off_t)r[0].first, r[0].last - r[0].first + 1);
        }
    }
    rc = cshw_response_set_header(res, "Content-Type", type);
    return rc ? rc : cshw_response_send_file(res, fd, 0, size);
}

/* ---- folders ---- */

typedef struct entry {
    const char *name;
    uint64_t size;
    int dir;
} entry;

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* What the listing shows of one name: 0 and *e, or -1 to leave it out
 * (what a request for it would not serve). */
static int describe(serve *s, int dfd, const char *rel, const char *name, entry *e)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
        /* only links that would be served, judged as serving judges them */
        const char *full = rel[0] ? cshw_arena_printf(s->arena, "%s/%s", rel, name) : name;
        int fd;
        if (!full ||
            cshw__static_open(s->rootfd, s->o->root, full, s->o->follow_symlinks, &fd, &st))
            return -1;
        close(fd);
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return -1;
    e->dir = S_ISDIR(st.st_mode);
    e->size = (uint64_t)st.st_size;
    e->name = cshw_arena_strdup(s->arena, name);
    return e->name ? 0 : -1;
}

/* An HTML list of the folder: names sorted bytewise, HTML-escaped, links
 * percent-encoded and relative (so "a:b" is not read as a scheme). */
static int listing(serve *s, int fd, const char *rel)
{
    int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return -e;
    }
    entry *list = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (!s->o->hidden_files && hidden_segment(name)) continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            entry *nl = cshw_arena_alloc(s->arena, ncap * sizeof *nl);
            if (!nl) {
                rc = -ENOMEM;
                break;
            }
            if (n) memcpy(nl, list, n * sizeof *nl);
            list = nl;
            cap = ncap;
        }
        if (describe(s, dirfd(d), rel, name, &list[n]) == 0) n++;
    }
    closedir(d);
    if (rc) return rc;
    if (n) qsort(list, n, sizeof *list, entry_cmp);

    cshw_response *res = s->res;
    const char *title = html(s->arena, s->path);
    if (!title) return -ENOMEM;
    rc = cshw_response_set_content_type(res, "text/html", "utf-8");
    if (!rc && s->o->cache_control)
        rc = cshw_response_set_header(res, "Cache-Control", s->o->cache_control);
    if (!rc)
        rc = cshw_response_printf(res,
                                  "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                                  "<title>Index of %s</title></head>\n<body><h1>Index of %s</h1>\n"
                                  "<table>\n<tr><th>Name</th><th>Size</th></tr>\n",
                                  title, title);
    if (!rc && rel[0])
        rc = cshw_response_puts(res, "<tr><td><a href=\"../\">../</a></td><td></td></tr>\n");
    for (size_t i = 0; i < n && !rc; i++) {
        const char *href = url_segment(s->arena, list[i].name);
        const char *text = html(s->arena, list[i].name);
        if (!href || !text) return -ENOMEM;
        if (list[i].dir)
            rc = cshw_response_printf(res, "<tr><td><a href=\"%s/\">%s/</a></td><td>-</td></tr>\n",
                                      href, text);
        else
            rc = cshw_response_printf(
                res, "<tr><td><a href=\"%s\">%s</a></td><td>%" PRIu64 "</td></tr>\n", href, text,
                list[i].size);
    }
    if (!rc) rc = cshw_response_puts(res, "</table>\n</body></html>\n");
    return rc;
}

enum { NO_INDEX = 1 };

/* The folder's index file: 0 when it answered, NO_INDEX when there is none
 * to serve (missing, not a regular file, a link out of the root, an index
 * option that is not a file name), or an error (403 when it may not be
 * read: not a reason to show the listing instead). */
static int serve_index(serve *s, const char *rel)
{
    if (!s->o->index || !s->o->index[0]) return NO_INDEX;
    const char *joined = cshw_arena_printf(s->arena, "%s/%s", rel, s->o->index), *name;
    if (!joined) return -ENOMEM;
    int rc = cshw__static_clean_path(s->arena, joined, &name, NULL);
    if (rc) return rc == -ENOMEM ? rc : NO_INDEX;
    int fd;
    struct stat st;
    rc = cshw__static_open(s->rootfd, s->o->root, name, s->o->follow_symlinks, &fd, &st);
    if (rc == CSHW_E_NOT_FOUND || rc == CSHW_E_MAP_PATH_OUTSIDE) return NO_INDEX;
    if (rc) return rc;
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return NO_INDEX;
    }
    rc = keep_fd(s->arena, fd);
    return rc ? rc : serve_file(s, name, fd, &st);
}

static int serve_folder(serve *s, const char *rel, int trailing_slash, int fd)
{
    if (!s->get && !s->head) return method_not_allowed(s);
    if (!trailing_slash) return add_slash(s);
    int rc = serve_index(s, rel);
    if (rc != NO_INDEX) return rc;
    if (s->o->directory_listing) return listing(s, fd, rel);
    return CSHW_E_NOT_FOUND;
}

int cshw_static_serve(cshw_context *ctx, const cshw_static_options *options)
{
    cshw_static_options copy, *o = &copy; /* the caller's, read by its size */
    if (!ctx || !options || cshw__static_options_copy(o, options) < 0) return -EINVAL;
    if (!o->root || !o->root[0]) return CSHW_E_STATIC_NO_ROOT;
    serve s = {ctx,
               cshw_context_request(ctx),
               cshw_context_response(ctx),
               cshw_context_arena(ctx),
               o,
               NULL,
               -1,
               0,
               0};
    csh_method m = cshw_request_method_id(s.req);
    s.get = m == CSH_METHOD_GET;
    s.head = m == CSH_METHOD_HEAD;
    s.path = cshw_request_path(s.req);
    if (!s.path) {
        int e = cshw_request_path_error(s.req);
        return e ? e : CSHW_E_MAP_PATH_INVALID;
    }
    const char *rel;
    int trailing;
    int rc = cshw__static_clean_path(s.arena, s.path, &rel, &trailing);
    if (rc) return rc;
    if (!o->hidden_files && hidden_segment(rel)) return CSHW_E_NOT_FOUND;

    s.rootfd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s.rootfd < 0)
        return (errno == EMFILE || errno == ENFILE || errno == ENOMEM) ? -errno
                                                                       : CSHW_E_STATIC_NO_ROOT;
    if ((rc = keep_fd(s.arena, s.rootfd)) != 0) return rc;

    int fd;
    struct stat st;
    rc = cshw__static_open(s.rootfd, o->root, rel, o->follow_symlinks, &fd, &st);
    if (rc) return rc;
    if ((rc = keep_fd(s.arena, fd)) != 0) return rc;

    if (S_ISDIR(st.st_mode)) return serve_folder(&s, rel, trailing, fd);
    /* devices, FIFOs and sockets are not files to serve; "/a.txt/" names
     * a folder that a file is not */
    if (!S_ISREG(st.st_mode) || trailing) return CSHW_E_NOT_FOUND;
    if (!s.get && !s.head) return method_not_allowed(&s);
    return serve_file(&s, rel, fd, &st);
}
