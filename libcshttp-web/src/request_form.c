/* The form and the uploaded files: the body read once, on first access,
 * as application/x-www-form-urlencoded (form.h) or multipart/form-data
 * (multipart.h, RFC 7578), within options.max_form_bytes.
 *
 * A multipart body is parsed as it arrives, through a window of the
 * body: fields are kept in the arena, a file in the arena up to
 * options.upload_memory_threshold and in a temporary file beyond it
 * (mkstemp in options.temp_dir; an arena cleanup removes it when the
 * request ends, whatever happened). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "cshttp/web/form.h"
#include "cshttp/web/multipart.h"
#include "util.h"

static const cshw_pairs no_pairs = {NULL, 0};

/* the media type of a Content-Type value is `type` (ASCII case-insensitive) */
static int media_type_is(const char *value, const char *type)
{
    while (cshw__is_ws((unsigned char)*value)) value++;
    size_t n = 0;
    while (value[n] && value[n] != ';' && !cshw__is_ws((unsigned char)value[n])) n++;
    return cshw__ieq(value, n, type);
}

/* The whole body into the arena, at most max bytes. */
static int read_all(cshw_request *req, uint64_t max, cshw_buf *out)
{
    for (;;) {
        if (cshw_buf_reserve(out, 16384) < 0) return -ENOMEM;
        size_t room = out->cap - out->len - 1;
        ssize_t n = cshw__body_read(req, out->data + out->len, room);
        if (n < 0) return (int)n;
        if (n == 0) return 0;
        out->len += (size_t)n;
        out->data[out->len] = '\0';
        if (out->len > max) return CSHW_E_FORM_TOO_LARGE;
    }
}

static int load_urlencoded(cshw_request *req)
{
    const cshw_options *o = &req->ctx->options;
    cshw_buf body;
    cshw_buf_init(&body, req->ctx->arena);
    int r = read_all(req, o->max_form_bytes, &body);
    if (r < 0) return r;
    cshw_form_limits limits;
    cshw_form_limits_init(&limits);
    limits.max_bytes = o->max_form_bytes > SIZE_MAX ? SIZE_MAX : (size_t)o->max_form_bytes;
    limits.max_pairs = o->max_form_parts;
    limits.max_value_len = 0; /* max_form_bytes bounds it */
    return cshw_form_parse(req->ctx->arena, body.data ? body.data : "", body.len, &limits,
                           &req->form);
}

/* ---- multipart ---- */

typedef struct upload {
    char *path;
    int fd;
} upload;

static void remove_upload(void *arg)
{
    upload *u = arg;
    if (u->fd >= 0) close(u->fd);
    unlink(u->path);
    free(u->path);
    free(u);
}

/* growing arrays in the arena */
typedef struct collector {
    cshw_request *req;
    cshw_pair *fields;
    size_t nfields, fields_cap;
    cshw_file *files;
    size_t nfiles, files_cap;
    /* the part being read */
    cshw_buf value;
    cshw_file *file;
    upload *up;
} collector;

static int grow(cshw_arena *a, void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 8;
    void *p = cshw_arena_alloc(a, c * size);
    if (!p) return -ENOMEM;
    if (n) memcpy(p, *items, n * size);
    *items = p;
    *cap = c;
    return 0;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return CSHW_E_UPLOAD_FAILED;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The file has outgrown memory: into a temporary file, removed at the end
 * of the request by the arena's cleanup. */
static int spill(collector *c)
{
    cshw_context *ctx = c->req->ctx;
    upload *u = calloc(1, sizeof *u);
    if (!u) return -ENOMEM;
    u->fd = -1;
    size_t n = strlen(ctx->options.temp_dir) + sizeof "/cshw-upload-XXXXXX";
    u->path = malloc(n);
    if (!u->path) {
        free(u);
        return -ENOMEM;
    }
    snprintf(u->path, n, "%s/cshw-upload-XXXXXX", ctx->options.temp_dir);
    u->fd = mkstemp(u->path);
    if (u->fd < 0) {
        free(u->path);
        free(u);
        return CSHW_E_UPLOAD_FAILED;
    }
    if (cshw_arena_on_cleanup(ctx->arena, remove_upload, u) < 0) return -ENOMEM;
    c->up = u;
    c->file->path = cshw_arena_strdup(ctx->arena, u->path);
    if (!c->file->path) return -ENOMEM;
    int r = write_all(u->fd, c->value.data, c->value.len);
    cshw_buf_clear(&c->value);
    return r;
}

static int on_part(collector *c, const cshw_multipart_part *p)
{
    cshw_arena *a = c->req->ctx->arena;
    cshw_buf_init(&c->value, a);
    c->file = NULL;
    c->up = NULL;
    if (!p->filename) return 0;
    int r = grow(a, (void **)&c->files, &c->files_cap, c->nfiles, sizeof *c->files);
    if (r < 0) return r;
    cshw_file *f = &c->files[c->nfiles++];
    memset(f, 0, sizeof *f);
    f->field = p->name;
    f->filename = p->filename;
    f->content_type = p->content_type;
    c->file = f;
    return 0;
}

static int on_data(collector *c, const char *data, size_t len)
{
    if (!c->file) return cshw_buf_append(&c->value, data, len);
    c->file->size += len;
    if (c->up) return write_all(c->up->fd, data, len);
    int r = cshw_buf_append(&c->value, data, len);
    if (r == 0 && c->file->size > c->req->ctx->options.upload_memory_threshold) r = spill(c);
    return r;
}

static int on_part_end(collector *c, const cshw_multipart_part *p)
{
    cshw_arena *a = c->req->ctx->arena;
    if (c->file) {
        if (c->up) {
            /* the bytes are in the file: the descriptor is not needed */
            close(c->up->fd);
            c->up->fd = -1;
        } else {
            c->file->data = c->value.data ? c->value.data : "";
        }
        c->file = NULL;
        return 0;
    }
    int r = grow(a, (void **)&c->fields, &c->fields_cap, c->nfields, sizeof *c->fields);
    if (r < 0) return r;
    cshw_pair *f = &c->fields[c->nfields++];
    f->name = p->name;
    f->name_len = p->name_len;
    f->value = c->value.data ? c->value.data : "";
    f->value_len = c->value.len;
    return 0;
}

static int load_multipart(cshw_request *req, const char *content_type)
{
    cshw_context *ctx = req->ctx;
    const cshw_options *o = &ctx->options;
    const char *boundary;
    size_t blen;
    int r = cshw_multipart_boundary(content_type, strlen(content_type), &boundary, &blen);
    if (r < 0) return r;
    cshw_multipart_limits limits;
    cshw_multipart_limits_init(&limits);
    limits.max_parts = o->max_form_parts;
    limits.max_header_bytes = o->max_part_header;
    cshw_multipart m;
    r = cshw_multipart_init(&m, ctx->arena, boundary, blen, &limits);
    if (r < 0) return r;

    collector c;
    memset(&c, 0, sizeof c);
    c.req = req;
    /* held-back bytes are at most a part's header section or a delimiter */
    size_t cap = o->max_part_header + 32768;
    char *w = cshw_arena_alloc(ctx->arena, cap);
    if (!w) return -ENOMEM;
    size_t len = 0;
    uint64_t total = 0;
    int eof = 0;
    while (r >= 0) {
        if (!eof) {
            ssize_t n = cshw__body_read(req, w + len, cap - len);
            if (n < 0) return (int)n;
            if (n == 0) eof = 1;
            len += (size_t)n;
            total += (uint64_t)n;
            if (total > o->max_form_bytes) return CSHW_E_FORM_TOO_LARGE;
        }
        size_t off = 0;
        for (;;) {
            size_t used;
            csh_span span;
            r = cshw_multipart_feed(&m, w + off, len - off, &used, &span);
            if (r < 0) return r;
            if (r == CSHW_MULTIPART_PART)
                r = on_part(&c, &m.part);
            else if (r == CSHW_MULTIPART_DATA)
                r = on_data(&c, w + off + span.off, span.len);
            else if (r == CSHW_MULTIPART_PART_END)
                r = on_part_end(&c, &m.part);
            else if (r == CSHW_MULTIPART_INCOMPLETE || r == CSHW_MULTIPART_DONE) {
                off += used;
                break;
            }
            if (r < 0) return r;
            off += used;
        }
        if (off) memmove(w, w + off, len - off);
        len -= off;
        if (r == CSHW_MULTIPART_DONE) break; /* the epilogue is ignored (drained at the end) */
        if (eof) {
            r = cshw_multipart_finish(&m);
            if (r < 0) return r;
            break;
        }
        if (len == cap) return CSHW_E_MULTIPART_HEADER_TOO_LARGE; /* cannot happen: limits */
    }
    req->form.items = c.fields;
    req->form.count = c.nfields;
    req->files = c.files;
    req->nfiles = c.nfiles;
    return 0;
}

void cshw__form_load(cshw_request *req)
{
    if (req->form_done) return;
    req->form_done = 1;
    req->form = no_pairs;
    if (req->msg.body == CSH_BODY_NONE) return;
    if (req->body_mode == BODY_STREAM) {
        req->form_error = CSHW_E_BODY_CONSUMED;
        return;
    }
    const char *type = cshw_request_header(req, "content-type");
    int urlencoded = type && media_type_is(type, "application/x-www-form-urlencoded");
    int multipart = type && media_type_is(type, "multipart/form-data");
    if (!urlencoded && !multipart) return; /* not a form: the body is the handler's */
    req->body_mode = BODY_FORM;
    /* a declared length past the limit is refused before anything is read,
     * and before 100 Continue could invite it */
    int r;
    if (req->msg.body == CSH_BODY_LENGTH &&
        req->msg.content_length > req->ctx->options.max_form_bytes)
        r = CSHW_E_FORM_TOO_LARGE;
    else
        r = urlencoded ? load_urlencoded(req) : load_multipart(req, type);
    if (r < 0) {
        req->form = no_pairs;
        req->files = NULL;
        req->nfiles = 0;
        req->form_error = r;
    }
}

const cshw_pairs *cshw_request_form(cshw_request *req)
{
    cshw__form_load(req);
    return &req->form;
}

const char *cshw_request_form_get(cshw_request *req, const char *name)
{
    return cshw_pairs_get(cshw_request_form(req), name);
}

int cshw_request_form_error(cshw_request *req)
{
    cshw__form_load(req);
    return req->form_error;
}

size_t cshw_request_files(cshw_request *req, const cshw_file **files)
{
    cshw__form_load(req);
    if (files) *files = req->files;
    return req->nfiles;
}

const cshw_file *cshw_request_file(cshw_request *req, const char *field)
{
    cshw__form_load(req);
    for (size_t i = 0; i < req->nfiles; i++)
        if (strcmp(req->files[i].field, field) == 0) return &req->files[i];
    return NULL;
}
