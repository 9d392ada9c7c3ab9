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
 *                 a pipe in memory ──> a connection of the same loop
 *                   ▲                  without a socket: the toolkit's
 *                   │                  exchange, the handler, static
 *                   │                  files, deferred handlers, the
 *                   │                  proxy, as for any HTTP/1.1 request
 *                   │ its answer parsed back with libcshttp: the head
 *                   │ becomes HEADERS, the body DATA frames
 *
 * So every stream is an exchange of the toolkit's, with the deadlines,
 * body limits, 413 and 408 of HTTP/1.1, and a stream's handler holds a
 * thread only as an HTTP/1.1 request's does.
 *
 * The pipe stands for the socket an HTTP/1.1 connection would have: the
 * stream's connection reads the request from it and writes the answer
 * into it, from the loop's thread or a handler's, never waiting there
 * (-EAGAIN, and io_wait, as a socket says); a handler's thread that has
 * to wait (a streamed body, output past the high-water mark) waits on the
 * pipe's condition. What a socket's event would say is said by the
 * session to the connection (cshs__conn_signal), on the loop's thread;
 * what the connection did is said to the session through the loop's
 * kicked list (under the loop's lock; the loop is woken when the kicker is
 * another thread), which the loop's owner takes after the batch.
 *
 * Ownership: a cshs_h2 belongs to its connection (c->h2), made by
 * cshs__h2_start and freed with the connection's struct, after the
 * batch. A stream belongs to its session, freed when libnghttp2 closes it
 * (or with the session). A pipe is counted: its stream, its connection,
 * and the kicked list while it is on it, each hold it; the stream and the
 * session are reachable from it (under its lock) only while attached.
 * Threads: the session, its streams and the loop's side of the pipes on
 * the loop's owner; a pipe's other side on whichever thread has its
 * connection. Locks: a pipe's, then the loop's. */
#ifndef CSHS_H2_IMPL_H
#define CSHS_H2_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>

#include "server_impl.h"

#define H2_RESPONSE_FIELDS 128 /* fields of a response head, at most */
#define H2_TRAILERS 16         /* trailer fields of an answer, at most */

typedef struct h2_stream h2_stream;

typedef struct h2_pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a handler's thread waits here (cshs__h2_pipe_wait) */
    _Atomic int refs;
    /* attached: the stream and its session (under mu; NULL once detached) */
    struct cshs_h2 *h;
    h2_stream *st;
    cshs_conn *c;    /* the stream's connection, until it closes (c_closed) */
    cshs_loop *loop; /* the connection's */
    struct h2_pipe *next_kicked;
    /* the request: in[in_pos .. in_len) not yet read by the connection */
    char *in;
    size_t in_pos, in_len, in_cap;
    /* the answer: out[0 .. out_len) not yet taken by the session */
    char *out;
    size_t out_len, out_cap;
    size_t unacked; /* DATA payload bytes in `in`, not yet given back to the window */
    char in_end;    /* the request is whole: reads meet its end after in */
    char gone;      /* the stream ended: reads meet the end, writes fail */
    char c_closed;  /* the connection closed: the answer has ended */
    char kicked;    /* on the loop's kicked list */
    char out_full;  /* a write found no room: the session says when there is */
    char out_end;   /* the connection ended its answer and still reads (a tunnel's shutdown) */
} h2_pipe;

typedef struct cshs_h2 {
    cshs_conn *c;
    nghttp2_session *ses; /* NULL once closed */
    h2_stream **slots;    /* the open streams (NULL: a free slot) */
    unsigned nslots, nopen;
    h2_stream *ready, *ready_tail; /* heads complete: their pairs open after the input, or
                                    * once a handler's place is free (h2_max_handlers) */
    unsigned handlers;             /* streams counted against h2_max_handlers */
    char eof;                      /* the client's input ended with streams open */
    struct cshs_h2 *next_dirty;    /* cshs__h2_take_kicked's list */
    char dirty;                    /* on it */
    char goaway;                   /* GOAWAY sent: no new stream */
    char failed;                   /* the session ended on an error: close once sent */
    unsigned empty_data;           /* DATA frames in a row without a byte or END_STREAM */
    double reset_tokens;           /* streams the client may still reset (reset_flood) */
    int64_t reset_ms;              /* when they were counted */
} cshs_h2;

/* One stream: the request as it goes into the pair, the answer as it
 * comes out. */
struct h2_stream {
    cshs_h2 *h;
    int32_t id;
    unsigned slot;
    h2_pipe *pipe; /* NULL before it opens and after the answer */
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
    char headed;   /* its request head came whole */
    /* the request's pseudo-header fields, and its fields as HTTP/1.1
     * lines ("name: value\r\n"), the cookies joined (§8.2.3) */
    char *pseudo; /* their values, each ended by a NUL, at at[P_*] (-1: none) */
    size_t pseudo_len, pseudo_cap;
    int32_t at[5];
    int64_t length;    /* its content-length, -1: none */
    uint64_t received; /* DATA payload bytes so far */
    char *fields, *cookie;
    size_t fields_len, fields_cap, cookie_len, cookie_cap, field_bytes;
    /* the request's bytes until the pipe opens: out[out_pos .. out_len);
     * the DATA payload bytes not yet given back to the client's window */
    char *out;
    size_t out_pos, out_len, out_cap;
    size_t unacked;
    /* the answer: its head parsed from raw, its body decoded into body */
    csh_body rb;
    char *raw;
    size_t raw_len, raw_cap;
    char *body;
    size_t body_pos, body_len, body_cap;
    int64_t data_ms; /* when body bytes last went out, or came while none waited */
    char answer;    /* A_HEAD, A_BODY, A_DONE */
    char eof;       /* the answer ended (its connection closed) */
    char deferred;  /* the data source said DEFERRED: resume it when bytes come */
    char refill;    /* body was emptied: take more of the pipe's answer */
    char head_only; /* a HEAD request */
    /* an extended CONNECT (RFC 8441): written as an HTTP/1.1 Upgrade; once
     * its answer is 101 (sent as 200) the stream carries the switched
     * protocol's bytes both ways as they come */
    char tunnel;
    char raw_answer; /* the answer's body is the pipe's bytes, unframed */
    /* the answer's trailer fields (a chunked body's trailer section):
     * the decoder's spans, then the section's bytes they refer to, copied
     * when the body ends and sent as HEADERS after the DATA (§8.1) */
    csh_header trailer_spans[H2_TRAILERS];
    char *trailer_bytes;
    size_t ntrailers;
};

enum { A_HEAD = 0, A_BODY, A_DONE };
/* h2_stream.at: :method, :path, :authority, Host, :protocol (RFC 8441) */
enum { P_METHOD = 0, P_PATH, P_AUTHORITY, P_HOST, P_PROTOCOL };

/* A pseudo-header field's value (P_*), or NULL when the request had none. */
static inline const char *h2_pseudo(const h2_stream *st, int which)
{
    return st->at[which] < 0 ? NULL : st->pseudo + st->at[which];
}

/* The stream's connection has not closed yet. */
int cshs__h2_pipe_attached(h2_stream *st);

/* h2_stream.c (and h2_pipe.c: open, write, close_pair, kicked) */
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
/* The pipe opens: a connection of the loop, without a socket, takes the
 * request. 0, or -ENOMEM. */
int cshs__h2_stream_open(h2_stream *st);
/* What the stream has for its pipe (its request's bytes so far) goes in,
 * and the connection is told. */
void cshs__h2_stream_write(h2_stream *st);
/* What the connection answered so far: parsed, submitted, decoded. 0,
 * or < 0 when the stream must be reset. */
int cshs__h2_stream_read(h2_stream *st);
/* The stream ends: its pipe detached, the connection told (its reads
 * meet the end, its writes fail, a request that waits hears its client
 * left). */
void cshs__h2_stream_close_pair(h2_stream *st);
/* The loop's owner takes the pipe's news: request bytes the connection
 * read (the window given back), its answer. */
void cshs__h2_stream_kicked(h2_stream *st);

/* h2_pipe.c: one hold on the pipe let go (the last frees it); what the
 * pipe holds of the answer, as much as `cap` (the bytes, and *eof once
 * the connection closed and all is taken). */
void cshs__h2_pipe_unref(h2_pipe *p);
size_t cshs__h2_pipe_take(h2_stream *st, char *dst, size_t cap, char *eof);

/* h2.c: the stream's reset with `code`, counted. */
void cshs__h2_reset(cshs_h2 *h, int32_t id, uint32_t code);

#endif
