/* Private to the engine: HTTP/2 (RFC 9113) on libnghttp2.
 *
 * libnghttp2 does the framing, HPACK, flow control, the stream states and
 * the checks of RFC 9113 §8 that it knows (pseudo-header fields, lowercase
 * names, connection-specific fields, content-length against DATA). The
 * engine owns the socket, the deadlines and the limits, and serves each
 * stream as the HTTP/1.1 request it stands for:
 *
 *   client ─h2─> connection (CP_H2, h2.c: the session)
 *                   │ one stream's fields, validated, written as an
 *                   │ HTTP/1.1 head (h2_stream.c), its DATA as the body
 *                   ▼
 *                 a socket pair ──> a connection of the same loop
 *                   ▲               (h2_stream set): the toolkit's
 *                   │               exchange, the handler, static files,
 *                   │               deferred handlers, the proxy, as for
 *                   │               any HTTP/1.1 request
 *                   │ its answer parsed back with libcshttp: the head
 *                   │ becomes HEADERS, the body DATA frames
 *
 * So every stream is an exchange of the toolkit's, with the deadlines,
 * body limits, 413 and 408 of HTTP/1.1, and a stream's handler holds a
 * thread only as an HTTP/1.1 request's does.
 *
 * Ownership: a cshs_h2 belongs to its connection (c->h2), made by
 * cshs__h2_start and freed with the connection's struct, after the batch
 * of events that may still point at it. A stream belongs to its session,
 * freed when libnghttp2 closes it (or with the session); its socket pair's
 * registration points at the session and carries the stream's slot, so an
 * event for a stream gone finds its slot empty. Threads: the loop's owner
 * only; nothing here runs a handler. */
#ifndef CSHS_H2_IMPL_H
#define CSHS_H2_IMPL_H

#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>

#include "server_impl.h"

#define H2_RESPONSE_FIELDS 128 /* fields of a response head, at most */

typedef struct h2_stream h2_stream;

typedef struct cshs_h2 {
    int tag; /* TAG_H2: what the socket pairs' registrations point at */
    cshs_conn *c;
    nghttp2_session *ses; /* NULL once closed */
    h2_stream **slots;    /* the open streams (NULL: a free slot) */
    unsigned nslots, nopen;
    h2_stream *ready, *ready_tail; /* heads complete: their pairs open after the input, or
                                    * once a handler's place is free (h2_max_handlers) */
    unsigned handlers;             /* streams counted against h2_max_handlers */
    char goaway;                   /* GOAWAY sent: no new stream */
    char failed;                   /* the session ended on an error: close once sent */
    unsigned empty_data;           /* DATA frames in a row without a byte or END_STREAM */
} cshs_h2;

/* One stream: the request as it goes into the pair, the answer as it
 * comes out. */
struct h2_stream {
    cshs_h2 *h;
    int32_t id;
    unsigned slot;
    int fd; /* our end of the pair: -1 before it opens and after the answer */
    h2_stream *next_ready;
    char queued;   /* on the ready list */
    char bad;      /* a field RFC 9113 §8.2 refuses: PROTOCOL_ERROR */
    char too_big;  /* its fields passed max_head: 431 */
    char chunked;  /* the body goes into the pair chunked (no content-length) */
    char in_ended; /* END_STREAM came */
    char opened;   /* its pair was opened */
    char trailers; /* the body's last chunk was written (trailers follow) */
    char counted;  /* counted in h->handlers until its answer is whole */
    char quick;    /* the application says its handler never waits */
    /* the request's pseudo-header fields, and its fields as HTTP/1.1
     * lines ("name: value\r\n"), the cookies joined (§8.2.3) */
    char *method, *path, *authority, *host;
    char *fields, *cookie;
    size_t fields_len, fields_cap, cookie_len, cookie_cap, field_bytes;
    /* bytes for the pair: out[out_pos .. out_len), and of them the DATA
     * payload bytes not yet given back to the client's window */
    char *out;
    size_t out_pos, out_len, out_cap;
    size_t unacked;
    /* the answer: its head parsed from raw, its body decoded into body */
    csh_parser rp;
    csh_header rfields[H2_RESPONSE_FIELDS];
    csh_body rb;
    char *raw;
    size_t raw_len, raw_cap;
    char *body;
    size_t body_pos, body_len;
    char answer;    /* A_HEAD, A_BODY, A_DONE */
    char eof;       /* the pair's input ended */
    char deferred;  /* the data source said DEFERRED: resume it when bytes come */
    char refill;    /* body was emptied: read the pair again (it may hold more) */
    char head_only; /* a HEAD request */
};

enum { A_HEAD = 0, A_BODY, A_DONE };

/* h2_stream.c */
h2_stream *cshs__h2_stream_new(cshs_h2 *h, int32_t id, unsigned slot);
void cshs__h2_stream_free(h2_stream *st);
/* One field of the request's head or trailers (`trailer`): 0, or it is
 * refused (st->bad or st->too_big set). */
void cshs__h2_stream_field(h2_stream *st, const uint8_t *name, size_t nlen, const uint8_t *value,
                           size_t vlen, int trailer);
/* The head is complete: the HTTP/1.1 head written into out. 0, or
 * -EPROTO (refused: a stream error), -ENOMEM. */
int cshs__h2_stream_head(h2_stream *st);
/* DATA payload, and the body's end (trailers included). 0 or -ENOMEM. */
int cshs__h2_stream_data(h2_stream *st, const uint8_t *data, size_t len);
int cshs__h2_stream_end(h2_stream *st);
/* The pair opens: a connection of the loop takes its other end. 0, or
 * -errno. */
int cshs__h2_stream_open(h2_stream *st);
/* What the pair takes of out now, and what it answered: 0, or < 0 when
 * the stream must be reset. */
int cshs__h2_stream_write(h2_stream *st);
int cshs__h2_stream_read(h2_stream *st);
/* Closes the pair (the stream's connection sees its input end). */
void cshs__h2_stream_close_pair(h2_stream *st);

/* h2.c: the stream's reset with `code`, counted. */
void cshs__h2_reset(cshs_h2 *h, int32_t id, uint32_t code);

#endif
