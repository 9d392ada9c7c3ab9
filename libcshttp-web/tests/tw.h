/* Test helpers for libcshttp-web: serve raw requests through the memory
 * transport and read the raw output back with libcshttp's response parser
 * (so every response is also checked to be well framed, RFC 9112 §6.3). */
#ifndef CSHW_TESTS_TW_H
#define CSHW_TESTS_TW_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>

#include "cshttp/web/context.h"
#include "cshttp/web/error.h"
#include "cshttp/web/memory.h"
#include "cshttp/web/options.h"
#include "cshttp/web/request.h"
#include "cshttp/web/response.h"

#define TW_MAX_RESPONSES 32
#define TW_MAX_FIELDS 64

typedef struct tw_response {
    int status;
    size_t nfields;
    char *names[TW_MAX_FIELDS];
    char *values[TW_MAX_FIELDS];
    char *body; /* NUL-terminated copy, de-chunked */
    size_t body_len;
    csh_body_kind framing;
    char *head; /* the raw head */
    size_t ntrailers; /* a chunked body's trailer fields */
    char *tnames[16];
    char *tvalues[16];
} tw_response;

typedef struct tw_run {
    int served; /* cshw_memory_serve's result */
    char *out;  /* the raw output, NUL-terminated */
    size_t out_len;
    tw_response r[TW_MAX_RESPONSES];
    size_t n;        /* responses parsed, 1xx included */
    int error;       /* the output did not parse: a csh error, or 1 for leftover bytes */
    size_t leftover; /* bytes after the last complete response */
} tw_run;

static inline char *tw_dup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* The methods of the requests in `in`, in order (for HEAD's framing). */
static inline size_t tw_methods(const char *in, size_t len, csh_method *out, size_t max)
{
    csh_header fields[100];
    size_t n = 0, pos = 0;
    while (n < max && pos < len) {
        csh_parser p;
        csh_parser_init(&p, CSH_REQUEST, fields, 100, NULL, 0);
        if (csh_parser_execute(&p, in + pos, len - pos) != CSH_OK) break;
        out[n++] = p.msg.method;
        pos += p.msg.head_length;
        csh_body b;
        csh_body_init(&b, &p.msg, NULL, 0, NULL, 0);
        for (;;) {
            size_t used;
            csh_span d;
            int r = csh_body_read(&b, in + pos, len - pos, &used, &d);
            pos += used;
            if (r != CSH_DATA) break;
        }
    }
    return n;
}

/* Parses raw output into run->r, knowing the request methods. */
static inline void tw_parse(tw_run *run, const csh_method *methods, size_t nmethods)
{
    const char *out = run->out;
    size_t len = run->out_len, pos = 0, req = 0;
    csh_header fields[TW_MAX_FIELDS];
    while (pos < len && run->n < TW_MAX_RESPONSES) {
        csh_parser p;
        csh_parser_init(&p, CSH_RESPONSE, fields, TW_MAX_FIELDS, NULL, 0);
        csh_parser_set_request_method(&p, req < nmethods ? methods[req] : CSH_METHOD_GET);
        int r = csh_parser_execute(&p, out + pos, len - pos);
        if (r != CSH_OK) {
            run->error = r == CSH_INCOMPLETE ? 1 : r;
            break;
        }
        tw_response *t = &run->r[run->n++];
        memset(t, 0, sizeof *t);
        const char *base = out + pos;
        t->status = p.msg.status;
        t->framing = p.msg.body;
        t->head = tw_dup(base, p.msg.head_length);
        t->nfields = p.msg.num_headers;
        for (size_t i = 0; i < p.msg.num_headers; i++) {
            t->names[i] = tw_dup(base + fields[i].name.off, fields[i].name.len);
            t->values[i] = tw_dup(base + fields[i].value.off, fields[i].value.len);
        }
        pos += p.msg.head_length;
        csh_body b;
        csh_header trailers[16];
        csh_body_init(&b, &p.msg, NULL, 0, trailers, 16);
        char *body = malloc(len - pos + 1);
        size_t blen = 0;
        for (;;) {
            size_t used;
            csh_span d;
            r = csh_body_read(&b, out + pos, len - pos, &used, &d);
            if (r == CSH_DATA) memcpy(body + blen, out + pos + d.off, d.len), blen += d.len;
            if (r == CSH_OK && p.msg.body == CSH_BODY_CHUNKED) {
                /* the trailer fields: spans into this call's input */
                t->ntrailers = b.chunked.num_trailers < 16 ? b.chunked.num_trailers : 16;
                for (size_t i = 0; i < t->ntrailers; i++) {
                    const csh_header *f = &trailers[i];
                    t->tnames[i] = tw_dup(out + pos + f->name.off, f->name.len);
                    t->tvalues[i] = tw_dup(out + pos + f->value.off, f->value.len);
                }
            }
            pos += used;
            if (r != CSH_DATA) break;
        }
        body[blen] = '\0';
        t->body = body;
        t->body_len = blen;
        if (r == CSH_INCOMPLETE) r = csh_body_finish(&b);
        if (r < 0) {
            run->error = r;
            break;
        }
        if (!(p.msg.flags & CSH_MSG_INTERIM)) req++;
    }
    run->leftover = len - pos;
    if (run->leftover && !run->error) run->error = 1;
}

/* Serves in[0 .. len) with `handler`, `piece` bytes per peek. */
static inline void tw_serve_m(tw_run *run, cshw_memory *m, const char *in, size_t len,
                              const cshw_options *o, cshw_handler handler)
{
    memset(run, 0, sizeof *run);
    run->served = cshw_memory_serve(m, o, handler);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    run->out = tw_dup(out, n);
    run->out_len = n;
    csh_method methods[TW_MAX_RESPONSES];
    size_t nm = tw_methods(in, len, methods, TW_MAX_RESPONSES);
    tw_parse(run, methods, nm);
}

static inline void tw_serve(tw_run *run, const char *in, size_t len, size_t piece,
                            const cshw_options *o, cshw_handler handler)
{
    cshw_memory *m = cshw_memory_new(in, len, piece);
    tw_serve_m(run, m, in, len, o, handler);
    cshw_memory_free(m);
}

static inline void tw_serve_str(tw_run *run, const char *in, size_t piece, cshw_handler handler)
{
    tw_serve(run, in, strlen(in), piece, NULL, handler);
}

/* One request with the context API, on a transport of the caller's (whose
 * input holds the request): parse the head from `head`, begin, run, end.
 * Returns cshw_context_run's result, or -1000 when the head did not parse. */
static inline int tw_run_one(cshw_context *ctx, const cshw_transport *t, const char *head,
                             cshw_handler handler)
{
    static csh_header fields[100];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 100, NULL, 0);
    if (csh_parser_execute(&p, head, strlen(head)) != CSH_OK) return -1000;
    int r = cshw_context_begin(ctx, head, &p.msg, t);
    if (r < 0) return r;
    return cshw_context_run(ctx, handler);
}

/* Parses the raw output of a memory transport into run (for tw_run_one). */
static inline void tw_collect(tw_run *run, cshw_memory *m, const char *in)
{
    memset(run, 0, sizeof *run);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    run->out = tw_dup(out, n);
    run->out_len = n;
    csh_method methods[TW_MAX_RESPONSES];
    size_t nm = tw_methods(in, strlen(in), methods, TW_MAX_RESPONSES);
    tw_parse(run, methods, nm);
}

static inline void tw_free(tw_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        tw_response *t = &run->r[i];
        for (size_t j = 0; j < t->nfields; j++) free(t->names[j]), free(t->values[j]);
        for (size_t j = 0; j < t->ntrailers; j++) free(t->tnames[j]), free(t->tvalues[j]);
        free(t->body);
        free(t->head);
    }
    free(run->out);
    memset(run, 0, sizeof *run);
}

/* The first value of a response field (case-insensitive), or NULL. */
static inline const char *tw_field(const tw_response *t, const char *name)
{
    for (size_t i = 0; i < t->nfields; i++)
        if (strcasecmp(t->names[i], name) == 0) return t->values[i];
    return NULL;
}

static inline size_t tw_field_count(const tw_response *t, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nfields; i++) n += strcasecmp(t->names[i], name) == 0;
    return n;
}

/* Inflates a gzip body; returns a malloc'd NUL-terminated buffer, or NULL
 * when it is not a valid gzip stream. */
static inline char *tw_gunzip(const char *data, size_t len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) return NULL;
    size_t cap = 4096 + len * 8, n = 0;
    char *out = malloc(cap + 1);
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    int r;
    do {
        if (n == cap) out = realloc(out, (cap *= 2) + 1);
        z.next_out = (Bytef *)out + n;
        z.avail_out = (uInt)(cap - n);
        r = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
    } while (r == Z_OK);
    int ok = r == Z_STREAM_END && z.avail_in == 0;
    inflateEnd(&z);
    if (!ok) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    if (out_len) *out_len = n;
    return out;
}

#endif
