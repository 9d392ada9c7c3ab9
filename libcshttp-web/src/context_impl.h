/* Private: the structs behind cshw_context, cshw_request and cshw_response,
 * and the calls between context.c, request.c, request_body.c,
 * request_form.c, response.c and gzip.c.
 *
 * A context embeds its request and response, so a request costs no malloc:
 * per-request memory comes from the arena (reset at the end), and the
 * buffers that every request needs (the response buffer, the head being
 * built, the deflate state) belong to the context and are reused. */
#ifndef CSHTTP_WEB_CONTEXT_IMPL_H
#define CSHTTP_WEB_CONTEXT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>

#include "cshttp/web/buf.h"
#include "cshttp/web/context.h"
#include "cshttp/web/request.h"
#include "cshttp/web/response.h"

/* the trailer fields of a request body kept (request.h) */
#define CSHW__TRAILERS 16

/* how the body is being read (request.h: a stream or a form, not both) */
enum { BODY_UNREAD = 0, BODY_STREAM, BODY_FORM };

struct cshw_request {
    cshw_context *ctx;
    const char *head; /* the head bytes: msg's spans refer to them */
    csh_message msg;  /* msg.headers is a copy in the arena */
    const char *method;
    const char *target;
    const char *query_string; /* in target's copy, "" when none */
    size_t path_raw_len;      /* the path part of target, before '?' */

    /* made on first use */
    const char **names, **values; /* NUL-terminated copies per header index */
    const char *path;
    int path_done, path_error;
    cshw_pairs query;
    int query_done, query_error;
    cshw_pairs cookies;
    int cookies_done, cookies_error;
    cshw_pairs form;
    cshw_file *files;
    size_t nfiles;
    int form_done, form_error;

    /* the body */
    csh_body body;
    int body_mode;      /* BODY_* */
    int body_done;      /* the whole body was read (or there is none) */
    int body_error;     /* a read failed: the connection cannot be kept */
    int continue_sent;  /* "100 Continue" went out */
    int expect_pending; /* Expect: 100-continue not yet answered */

    /* a chunked body's trailer fields: where the decoder puts them (spans
     * into its input), then copied in the arena when the body ends */
    csh_header trailer_spans[CSHW__TRAILERS];
    struct cshw_field *trailers;
    size_t ntrailers;
};

/* one response field line, name and value copied in the arena */
typedef struct cshw_field {
    const char *name;
    const char *value;
} cshw_field;

struct cshw_response {
    cshw_context *ctx;
    int status;
    int answered; /* the handler set a status or produced output */

    cshw_field *fields;
    size_t nfields, fields_cap;
    cshw_field *trailers; /* cshw_response_add_trailer, sent after a chunked body */
    size_t ntrailers, trailers_cap;

    /* output not yet sent (before the headers: all of it) */
    char *buf;
    size_t len, cap;
    uint64_t body_bytes; /* bytes the application wrote, before encoding */
    uint64_t head_bytes; /* heads written: 100 Continue, the status line and fields */
    uint64_t length;     /* cshw_response_set_content_length, when has_length */

    unsigned char headers_sent;
    unsigned char chunked;     /* streamed as chunks (HTTP/1.1) */
    unsigned char until_close; /* streamed, delimited by closing (HTTP/1.0) */
    unsigned char is_head;     /* HEAD: headers as for GET, no body on the wire */
    unsigned char no_body;     /* 1xx, 204, 205, 304: no content at all */
    unsigned char finished;    /* complete (end, or send_file) */
    unsigned char file_sent;
    unsigned char close;      /* close the connection after it */
    unsigned char abort;      /* close without completing the framing */
    unsigned char gzip_off;   /* cshw_response_disable_gzip */
    unsigned char gzip_on;    /* the body is being gzip-encoded */
    unsigned char has_length; /* the application declared the body's length */
    unsigned char switched;   /* 101 sent: the connection speaks another protocol */
    int error;                /* the first failed write: nothing more is sent */
};

typedef struct cshw_gzip cshw_gzip;

struct cshw_context {
    cshw_options options;
    cshw_arena *arena;
    cshw_transport transport;
    cshw_request req;
    cshw_response res;
    void *user_data; /* per request */
    void *app_data;  /* per context, the owner's (cshw_context_set_app_data) */
    /* the exchange read the whole body before the handler (exchange.c):
     * what the handler leaves unread is discarded, never a reason to close */
    int body_stored;
    struct cshw_exchange *exchange; /* the one running this request (exchange.c) */
    cshw_pairs params;
    int active;
    /* the handler returned before its answer (cshw_exchange_defer): the
     * exchange ends the request after its continuation */
    int deferred;

    /* reused from request to request */
    char *out;       /* the response buffer (options.response_buffer bytes) */
    cshw_buf wire;   /* a head, or a chunk with its framing, being put together */
    cshw_buf pend;   /* an unfinished chunked trailer section, copied */
    cshw_gzip *gzip; /* deflate state, made on first use */
};

/* ---- context.c ---- */
/* cshw_context_run, except that a handler that deferred (ctx->deferred)
 * leaves the request active and gets CSHW__CONTEXT_DEFERRED. */
#define CSHW__CONTEXT_DEFERRED 2
int cshw__context_run(cshw_context *ctx, cshw_handler handler);

/* ---- request.c ---- */
int cshw__request_begin(cshw_request *req, const char *head, const csh_message *msg);
/* Copies `n` trailer fields, spans into `base`, into the arena as the
 * request's trailers (cshw_request_trailer). */
int cshw__request_keep_trailers(cshw_request *req, const char *base, const csh_header *f, size_t n);
/* The raw path of a request-target (n bytes, up to its '?'): the target
 * of origin form, what follows the authority of absolute form ("/" when
 * nothing does); CSHW_E_PATH_NOT_ABSOLUTE for the other forms. */
int cshw__target_path(const char *t, size_t n, csh_target_form form, const char **p, size_t *len);

/* ---- request_body.c ---- */
/* Reads up to cap de-chunked body bytes (answering 100-continue first):
 * the count, 0 at the end, or a negative cshw error. */
ssize_t cshw__body_read(cshw_request *req, void *buf, size_t cap);
/* Reads and discards what is left of the body, up to max bytes: 1 when the
 * body ended, 0 when it did not (the connection must close). */
int cshw__body_drain(cshw_request *req, uint64_t max);
/* 1 when the rest of the body cannot be skipped and the connection must
 * close: the client was told to wait (Expect: 100-continue never answered),
 * a read failed, or more is left than max_drain_bytes allows. */
int cshw__body_forces_close(const cshw_request *req);

/* ---- request_form.c ---- */
void cshw__form_load(cshw_request *req);

/* ---- response.c ---- */
void cshw__response_begin(cshw_response *res);
/* Completes the response: the headers if not sent, the rest of the body,
 * the last chunk. 0 or a negative cshw error. */
int cshw__response_end(cshw_response *res);
/* Sends the 101 head that switches the connection to `protocol` (RFC 9110
 * §7.8, §15.2.2): the handler's fields, Connection: Upgrade and Upgrade;
 * the response is complete and takes no more output. */
int cshw__response_switch(cshw_response *res, const char *protocol);
/* Sends the toolkit's error page for an error it found (a bad path, form,
 * body) when the handler gave no answer of its own. */
void cshw__response_auto_error(cshw_response *res, int code);
/* The toolkit's small HTML error page, for status, into b. */
int cshw__error_page(cshw_buf *b, int status, const char *detail);
/* An IMF-fixdate (RFC 9110 §5.6.7) for now: 29 characters and a NUL. */
void cshw__http_date(char out[30]);
/* Writes through the transport, remembering a failure (its -errno): after
 * one, nothing more is written and the connection closes. */
int cshw__transport_write(cshw_context *ctx, const void *data, size_t len);
/* A complete error response without a request (a head that failed to
 * parse, a body that failed before the handler, a refused connection):
 * the error page with `detail` (may be NULL), Date, Content-Length,
 * Connection: close; head_only: the answer to HEAD, without the page.
 * *written and *head (each may be NULL): the bytes written, and of those
 * the head's. */
int cshw__write_raw_error(const cshw_transport *t, const cshw_options *o, int status,
                          const char *detail, int head_only, uint64_t *written, uint64_t *head);

/* ---- gzip.c ---- */
/* 1 when the request's Accept-Encoding prefers gzip to identity. */
int cshw__accepts_gzip(cshw_request *req);
/* 1 for media types worth compressing (text/..., JSON, JavaScript, XML, SVG). */
int cshw__compressible(const char *content_type);
/* Where compressed bytes go. */
typedef int (*cshw_gzip_sink)(void *arg, const char *data, size_t len);
/* Starts a gzip member (deflateReset on a context's second use). */
int cshw__gzip_start(cshw_context *ctx);
/* Compresses data; flush: 0 none, 1 sync (push what was written), 2 finish.
 * Output goes to sink as it fills a buffer. 0 or a negative cshw error. */
int cshw__gzip_write(cshw_context *ctx, const void *data, size_t len, int flush,
                     cshw_gzip_sink sink, void *arg);
void cshw__gzip_free(cshw_gzip *gz);

/* ---- context.c ---- */
/* The transport's ops, never NULL during a request. */
static inline const cshw_transport *cshw__transport(const cshw_context *ctx)
{
    return &ctx->transport;
}

#endif
