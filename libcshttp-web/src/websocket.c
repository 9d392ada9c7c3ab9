/* A WebSocket session (websocket.h): frames read as they come (RFC 6455
 * §5.2), messages put together from them, control frames answered, the
 * closing handshake (§7) and the timers of a live connection; frames
 * written for what the application sends.
 *
 *   input ─> head (2 to 14 bytes, checked) ─> payload, unmasked:
 *     data: onto the message (inflated when RSV1 says so, UTF-8 checked
 *           for text) ─> the last frame: message()
 *     control: into ctl ─> ping: a pong; close: a close, then the end
 *   a rule broken: a close frame with its code, then the end (§7.1.7)
 *
 * "The end" is transport->close: the owner closes the connection once
 * its queue is sent and then calls cshw_ws_end, which calls closed(). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/web/websocket.h>

#include "websocket_impl.h"

#define OP_CONT 0x0
#define OP_CLOSE 0x8
#define OP_PING 0x9
#define OP_PONG 0xA
#define FIN 0x80
#define RSV1 0x40
#define SMALL_FRAME 4096 /* header and payload written at once up to this */

struct cshw_ws {
    _Atomic unsigned refs;
    cshw_ws_handlers h;
    void *arg;
    cshw_ws_transport t;
    cshw_ws_handshake hs;
    uint64_t max_message;
    uint32_t max_fragments, deflate_min;
    uint32_t ping_interval_ms, pong_timeout_ms, close_timeout_ms;

    /* the frame being read */
    unsigned char head[14];
    unsigned char head_len, in_payload;
    unsigned char opcode, fin;
    unsigned char mask[4];
    unsigned mask_pos;
    uint64_t left; /* payload bytes still to come */

    /* the message being read: type 0 when none */
    unsigned char msg_type, msg_deflated;
    uint32_t frames;
    char *msg;
    size_t msg_len, msg_size;
    cshw__utf8 utf8;
    cshw__inflater *inflater;

    unsigned char ctl_len;
    char ctl[125];

    unsigned char sending_part; /* the type of a message sent in parts */
    unsigned char full;         /* a write said 1: drained() owed */
    unsigned char app_paused;   /* cshw_ws_pause(ws, 1) */
    unsigned char held;         /* reading paused until drained: pongs queued past the mark */
    unsigned char started, stopped, closed_called;
    unsigned char close_sent, close_received, failed;
    unsigned char heard, awaiting_pong;
    int code;                 /* the peer's close code, or ours when we failed */
    unsigned char reason_len; /* the peer's reason: ctl + 2, kept since no frame follows */
    int64_t last_heard, ping_at, close_at;
    uint64_t bytes_in, bytes_out;
};

size_t cshw_ws_idle_bytes(void)
{
    return sizeof(cshw_ws);
}

cshw_ws *cshw_ws_new(const cshw_ws_options *o, const cshw_ws_handshake *hs,
                     const cshw_ws_handlers *handlers, void *arg,
                     const cshw_ws_transport *transport)
{
    if (!cshw__ws_options_valid(o) || !hs || !handlers || !handlers->message || !handlers->closed ||
        !transport || !transport->write || !transport->close)
        return NULL;
    cshw_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    atomic_init(&ws->refs, 1);
    ws->h = *handlers;
    ws->arg = arg;
    ws->t = *transport;
    ws->hs = *hs;
    ws->hs.protocol[sizeof ws->hs.protocol - 1] = '\0';
    ws->max_message = o->max_message;
    ws->max_fragments = o->max_fragments;
    ws->deflate_min = o->deflate_min;
    ws->ping_interval_ms = o->ping_interval_ms;
    ws->pong_timeout_ms = o->pong_timeout_ms;
    ws->close_timeout_ms = o->close_timeout_ms;
    return ws;
}

static void message_reset(cshw_ws *ws)
{
    free(ws->msg);
    ws->msg = NULL;
    ws->msg_len = ws->msg_size = 0;
    ws->msg_type = ws->msg_deflated = 0;
    ws->frames = 0;
    memset(&ws->utf8, 0, sizeof ws->utf8);
    cshw__inflater_free(ws->inflater);
    ws->inflater = NULL;
}

void cshw_ws_retain(cshw_ws *ws)
{
    if (ws) atomic_fetch_add(&ws->refs, 1);
}

void cshw_ws_release(cshw_ws *ws)
{
    if (!ws || atomic_fetch_sub(&ws->refs, 1) != 1) return;
    message_reset(ws);
    if (ws->t.release) ws->t.release(ws->t.io);
    free(ws);
}

/* One frame from the server: never masked (§5.1). 0, 1 (above the
 * transport's mark) or -errno. */
static int write_frame(cshw_ws *ws, unsigned char b0, const void *data, size_t len)
{
    unsigned char small[10 + SMALL_FRAME];
    unsigned char *h = small;
    size_t hl;
    h[0] = b0;
    if (len < 126) {
        h[1] = (unsigned char)len;
        hl = 2;
    } else if (len < 65536) {
        h[1] = 126;
        h[2] = (unsigned char)(len >> 8);
        h[3] = (unsigned char)len;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
        hl = 10;
    }
    int r;
    if (len <= SMALL_FRAME) {
        /* one write: one send for a small message */
        if (len) memcpy(small + hl, data, len);
        r = ws->t.write(ws->t.io, small, hl + len);
    } else {
        r = ws->t.write(ws->t.io, small, hl);
        if (r >= 0) {
            int r2 = ws->t.write(ws->t.io, data, len);
            r = r2 < 0 ? r2 : (r | r2);
        }
    }
    if (r == 1) ws->full = 1;
    return r;
}

/* The connection ends (transport->close): nothing more is read or sent. */
static void stop(cshw_ws *ws)
{
    if (ws->stopped) return;
    ws->stopped = 1;
    ws->t.close(ws->t.io);
}

static int code_valid(int code)
{
    /* §7.4.1 and IANA's registry: what a close frame may carry */
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

static int send_close(cshw_ws *ws, int code, const char *reason, size_t len)
{
    unsigned char p[125];
    size_t n = 0;
    if (code) {
        p[0] = (unsigned char)(code >> 8);
        p[1] = (unsigned char)code;
        /* §5.5: 125 bytes with the code; cut before a code point, not
         * inside one: a reason that is not UTF-8 is failed with 1007
         * (§5.5.1, §8.1) */
        if (len > 123) {
            len = 123;
            while (len > 0 && ((unsigned char)reason[len] & 0xC0) == 0x80) len--;
        }
        if (len) memcpy(p + 2, reason, len);
        n = 2 + len;
    }
    ws->close_sent = 1;
    return write_frame(ws, FIN | OP_CLOSE, p, n);
}

/* _Fail the WebSocket Connection_ (§7.1.7): our close frame with the
 * code, then the end. */
static void fail(cshw_ws *ws, int code)
{
    if (ws->failed || ws->stopped) return;
    ws->failed = 1;
    ws->code = code;
    ws->reason_len = 0;
    if (!ws->close_sent) send_close(ws, code, NULL, 0);
    stop(ws);
}

/* Room for n more message bytes, growing by doubling up to the limit. */
static int message_room(cshw_ws *ws, size_t n)
{
    size_t need = ws->msg_len + n;
    if (need <= ws->msg_size) return 0;
    size_t size = ws->msg_size ? ws->msg_size : 256;
    while (size < need) size *= 2;
    if (size > ws->max_message && need <= ws->max_message) size = (size_t)ws->max_message;
    char *p = realloc(ws->msg, size);
    if (!p) return -ENOMEM;
    ws->msg = p;
    ws->msg_size = size;
    return 0;
}

/* The head is whole: its rules (§5.2, §5.4, §5.5; RFC 7692 §6.1 for
 * RSV1). 0, or the close code that fails the connection. */
static int frame_begin(cshw_ws *ws)
{
    unsigned char b0 = ws->head[0], b1 = ws->head[1];
    unsigned op = b0 & 0x0F, rsv = (b0 >> 4) & 7;
    ws->fin = (unsigned char)(b0 >> 7);
    ws->opcode = (unsigned char)op;
    uint64_t len = b1 & 0x7F;
    const unsigned char *m = ws->head + 2;
    if (len == 126) {
        len = (uint64_t)m[0] << 8 | m[1];
        m += 2;
    } else if (len == 127) {
        len = 0;
        for (int i = 0; i < 8; i++) len = len << 8 | m[i];
        m += 8;
        if (len >> 63) return CSHW_WS_PROTOCOL_ERROR;
    }
    memcpy(ws->mask, m, 4);
    ws->mask_pos = 0;
    ws->left = len;
    if (!(b1 & 0x80)) return CSHW_WS_PROTOCOL_ERROR; /* §5.1: a client masks */
    if (op >= 8) {
        if (op > OP_PONG || !ws->fin || len > 125 || rsv) return CSHW_WS_PROTOCOL_ERROR;
        ws->ctl_len = 0;
        return 0;
    }
    if (op > CSHW_WS_BINARY || (rsv & 3)) return CSHW_WS_PROTOCOL_ERROR;
    if (op == OP_CONT) {
        if (!ws->msg_type || rsv) return CSHW_WS_PROTOCOL_ERROR;
    } else {
        if (ws->msg_type) return CSHW_WS_PROTOCOL_ERROR;
        if ((rsv & 4) && !ws->hs.deflate) return CSHW_WS_PROTOCOL_ERROR;
        ws->msg_type = (unsigned char)op;
        ws->msg_deflated = (rsv & 4) != 0;
        if (ws->msg_deflated && !(ws->inflater = cshw__inflater_new(ws->hs.client_window)))
            return CSHW_WS_INTERNAL;
    }
    if (++ws->frames > ws->max_fragments) return CSHW_WS_TOO_BIG;
    if (!ws->msg_deflated && ws->msg_len + len > ws->max_message) return CSHW_WS_TOO_BIG;
    return 0;
}

static void unmask(cshw_ws *ws, unsigned char *p, const char *in, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)in[i] ^ ws->mask[(ws->mask_pos + i) & 3];
    ws->mask_pos = (unsigned)((ws->mask_pos + n) & 3);
}

/* cshw__inflate's failure as a close code: past max_message, not
 * deflate data, no memory. */
static int inflate_code(int r)
{
    return r == 1 ? CSHW_WS_TOO_BIG : r == -1 ? CSHW_WS_INVALID_DATA : CSHW_WS_INTERNAL;
}

/* n payload bytes of the frame: 0, or a close code. */
static int payload(cshw_ws *ws, const char *in, size_t n)
{
    if (ws->opcode >= 8) {
        unmask(ws, (unsigned char *)ws->ctl + ws->ctl_len, in, n);
        ws->ctl_len = (unsigned char)(ws->ctl_len + n);
        return 0;
    }
    if (!ws->msg_deflated) {
        if (message_room(ws, n) < 0) return CSHW_WS_INTERNAL;
        unsigned char *p = (unsigned char *)ws->msg + ws->msg_len;
        unmask(ws, p, in, n);
        ws->msg_len += n;
        if (ws->msg_type == CSHW_WS_TEXT && cshw__utf8_feed(&ws->utf8, p, n) < 0)
            return CSHW_WS_INVALID_DATA;
        return 0;
    }
    unsigned char piece[4096];
    while (n > 0) {
        size_t k = n < sizeof piece ? n : sizeof piece;
        unmask(ws, piece, in, k);
        size_t before = ws->msg_len;
        int r = cshw__inflate(ws->inflater, piece, k, 0, &ws->msg, &ws->msg_len, &ws->msg_size,
                              ws->max_message);
        /* what came out is checked before a limit passed is: the first
         * rule its bytes break, however they arrive */
        if (ws->msg_type == CSHW_WS_TEXT && (r == 0 || r == 1) &&
            cshw__utf8_feed(&ws->utf8, (unsigned char *)ws->msg + before, ws->msg_len - before) < 0)
            return CSHW_WS_INVALID_DATA;
        if (r) return inflate_code(r);
        in += k;
        n -= k;
    }
    return 0;
}

/* A close frame came (§5.5.1): its code checked, ours sent back when we
 * had not sent one, then the end. 0, or a close code. */
static int close_received(cshw_ws *ws)
{
    ws->close_received = 1;
    ws->code = CSHW_WS_NO_STATUS;
    if (ws->ctl_len == 1) return CSHW_WS_PROTOCOL_ERROR;
    if (ws->ctl_len >= 2) {
        int code = (unsigned char)ws->ctl[0] << 8 | (unsigned char)ws->ctl[1];
        if (!code_valid(code)) return CSHW_WS_PROTOCOL_ERROR;
        cshw__utf8 u = {0, 0, 0};
        size_t rl = ws->ctl_len - 2u;
        if (cshw__utf8_feed(&u, (unsigned char *)ws->ctl + 2, rl) < 0 || u.need)
            return CSHW_WS_INVALID_DATA;
        ws->code = code;
        ws->reason_len = (unsigned char)rl;
    }
    /* §5.5.1: the same code back (none for none) */
    if (!ws->close_sent) send_close(ws, ws->code == CSHW_WS_NO_STATUS ? 0 : ws->code, NULL, 0);
    stop(ws);
    return 0;
}

/* The frame's payload is whole. 0, or a close code. */
static int frame_end(cshw_ws *ws)
{
    switch (ws->opcode) {
    case OP_PING:
        /* §5.5.2: a pong with the ping's bytes, our close sent or not
         * (theirs ends the input). A peer that pings and never reads
         * would grow the queue without end (and each read would put off
         * the send timeout): past the transport's mark, its input waits
         * until the queue drains. */
        if (write_frame(ws, FIN | OP_PONG, ws->ctl, ws->ctl_len) == 1 && !ws->held) {
            ws->held = 1;
            if (ws->t.pause) ws->t.pause(ws->t.io, 1);
        }
        return 0;
    case OP_PONG:
        return 0; /* heard from the peer: that is all a pong says */
    case OP_CLOSE:
        return close_received(ws);
    default:
        break;
    }
    if (!ws->fin) return 0;
    if (ws->msg_deflated) {
        size_t before = ws->msg_len;
        int r = cshw__inflate(ws->inflater, NULL, 0, 1, &ws->msg, &ws->msg_len, &ws->msg_size,
                              ws->max_message);
        if (ws->msg_type == CSHW_WS_TEXT && (r == 0 || r == 1) &&
            cshw__utf8_feed(&ws->utf8, (unsigned char *)ws->msg + before, ws->msg_len - before) < 0)
            return CSHW_WS_INVALID_DATA;
        if (r) return inflate_code(r);
    }
    if (ws->msg_type == CSHW_WS_TEXT && ws->utf8.need) return CSHW_WS_INVALID_DATA;
    int type = ws->msg_type;
    ws->bytes_in += ws->msg_len;
    /* the message's memory goes with it: an idle session holds none */
    char *msg = ws->msg;
    size_t len = ws->msg_len;
    ws->msg = NULL;
    message_reset(ws);
    ws->h.message(ws, type, msg ? msg : "", len, ws->arg);
    free(msg);
    return 0;
}

void cshw_ws_start(cshw_ws *ws)
{
    if (!ws || ws->started) return;
    ws->started = 1;
    if (ws->h.open) ws->h.open(ws, ws->arg);
}

int cshw_ws_input(cshw_ws *ws, const char *data, size_t len)
{
    if (!ws || ws->stopped) return 1;
    if (len == 0) {
        /* the peer's FIN: without its close frame, 1006 (§7.1.5) */
        if (!ws->close_received && !ws->failed) ws->code = CSHW_WS_ABNORMAL;
        stop(ws);
        return 1;
    }
    ws->heard = 1;
    while (len > 0 && !ws->stopped) {
        int code = 0;
        if (!ws->in_payload) {
            /* 2 bytes, then the extended length and the mask they announce */
            size_t need = 2;
            if (ws->head_len >= 2) {
                unsigned l7 = ws->head[1] & 0x7F;
                need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) + 4;
            }
            size_t k = need - ws->head_len;
            if (k > len) k = len;
            memcpy(ws->head + ws->head_len, data, k);
            ws->head_len = (unsigned char)(ws->head_len + k);
            data += k;
            len -= k;
            if (ws->head_len < need) continue;
            if (need == 2) {
                /* §5.1: a client masks every frame. An unmasked one has no
                 * mask bytes to wait for (an empty frame has nothing
                 * after its two): it fails now. */
                if (ws->head[1] & 0x80) continue;
                code = CSHW_WS_PROTOCOL_ERROR;
            } else {
                ws->head_len = 0;
                code = frame_begin(ws);
                ws->in_payload = 1;
            }
        } else if (ws->opcode < 8 && ws->fin && ws->frames == 1 && !ws->msg_deflated &&
                   !ws->msg_len && ws->left <= SMALL_FRAME && ws->left <= len) {
            /* a whole message of one small frame in this piece (an echo's,
             * a chat's): checked and delivered from the stack, with no
             * allocation; the same rules as below */
            unsigned char m[SMALL_FRAME];
            size_t k = (size_t)ws->left;
            unmask(ws, m, data, k);
            data += k;
            len -= k;
            ws->left = 0;
            ws->in_payload = 0;
            int type = ws->msg_type;
            if (type == CSHW_WS_TEXT && (cshw__utf8_feed(&ws->utf8, m, k) < 0 || ws->utf8.need)) {
                code = CSHW_WS_INVALID_DATA;
            } else {
                ws->bytes_in += k;
                message_reset(ws);
                ws->h.message(ws, type, (const char *)m, k, ws->arg);
            }
        } else {
            size_t k = ws->left < len ? (size_t)ws->left : len;
            code = payload(ws, data, k);
            ws->left -= k;
            data += k;
            len -= k;
        }
        if (!code && ws->in_payload && ws->left == 0) {
            ws->in_payload = 0;
            code = frame_end(ws);
        }
        if (code) fail(ws, code);
    }
    return ws->stopped;
}

int64_t cshw_ws_tick(cshw_ws *ws, int64_t now_ms)
{
    if (!ws || ws->stopped) return 0;
    if (ws->heard || !ws->last_heard) {
        ws->heard = 0;
        ws->last_heard = now_ms;
        ws->awaiting_pong = 0;
    }
    if (ws->close_sent) {
        /* §7.1.1: the peer's close frame, then the end; or the timeout */
        if (!ws->close_timeout_ms) return 0;
        if (!ws->close_at) ws->close_at = now_ms + ws->close_timeout_ms;
        if (now_ms < ws->close_at) return ws->close_at;
        ws->code = CSHW_WS_ABNORMAL;
        stop(ws);
        return 0;
    }
    if (ws->app_paused || ws->held) {
        /* not reading: a pong could not be heard, so silence says
         * nothing (a peer that takes no output meets the owner's send
         * deadline instead) */
        ws->awaiting_pong = 0;
        ws->last_heard = now_ms;
        return ws->ping_interval_ms ? now_ms + ws->ping_interval_ms : 0;
    }
    if (ws->awaiting_pong && ws->pong_timeout_ms) {
        int64_t due = ws->ping_at + ws->pong_timeout_ms;
        if (now_ms < due) return due;
        ws->code = CSHW_WS_ABNORMAL; /* a dead peer: no frame to send it */
        stop(ws);
        return 0;
    }
    if (!ws->ping_interval_ms || ws->awaiting_pong) return 0;
    int64_t due = ws->last_heard + ws->ping_interval_ms;
    if (now_ms < due) return due;
    write_frame(ws, FIN | OP_PING, NULL, 0);
    ws->awaiting_pong = 1;
    ws->ping_at = now_ms;
    return ws->pong_timeout_ms ? now_ms + ws->pong_timeout_ms : 0;
}

void cshw_ws_drained(cshw_ws *ws)
{
    if (!ws || !ws->full) return;
    ws->full = 0;
    if (ws->held) {
        /* the pongs went: input again, unless the application paused it */
        ws->held = 0;
        if (!ws->app_paused && ws->t.pause && !ws->stopped) ws->t.pause(ws->t.io, 0);
    }
    if (ws->h.drained && !ws->closed_called) ws->h.drained(ws, ws->arg);
}

void cshw_ws_end(cshw_ws *ws, int why)
{
    if (!ws) return;
    ws->stopped = 1;
    if (!ws->closed_called) {
        ws->closed_called = 1;
        int code = ws->code ? ws->code : CSHW_WS_ABNORMAL;
        (void)why;
        ws->h.closed(ws, code, ws->ctl + 2, ws->reason_len, ws->arg);
    }
    message_reset(ws);
    cshw_ws_release(ws);
}

static int can_send(const cshw_ws *ws)
{
    return !ws->stopped && !ws->close_sent;
}

int cshw_ws_send(cshw_ws *ws, int type, const void *data, size_t len)
{
    if (!ws || (type != CSHW_WS_TEXT && type != CSHW_WS_BINARY) || (len && !data)) return -EINVAL;
    if (!can_send(ws)) return -EPIPE;
    if (ws->sending_part) return -EBUSY;
    ws->bytes_out += len;
    if (ws->hs.deflate && len >= ws->deflate_min && len <= UINT32_MAX) {
        unsigned char *z;
        size_t zlen;
        if (cshw__deflate(data, len, ws->hs.server_window, &z, &zlen) == 0) {
            int r = write_frame(ws, (unsigned char)(FIN | RSV1 | type), z, zlen);
            free(z);
            return r;
        }
        /* no memory for zlib: the message goes as it is */
    }
    return write_frame(ws, (unsigned char)(FIN | type), data, len);
}

int cshw_ws_send_part(cshw_ws *ws, int type, const void *data, size_t len, int fin)
{
    if (!ws || (len && !data)) return -EINVAL;
    if (!can_send(ws)) return -EPIPE;
    unsigned char op = OP_CONT;
    if (!ws->sending_part) {
        if (type != CSHW_WS_TEXT && type != CSHW_WS_BINARY) return -EINVAL;
        op = (unsigned char)type;
    } else if (type != ws->sending_part) {
        return -EBUSY;
    }
    ws->sending_part = fin ? 0 : (unsigned char)type;
    ws->bytes_out += len;
    return write_frame(ws, (unsigned char)((fin ? FIN : 0) | op), data, len);
}

void cshw_ws_pause(cshw_ws *ws, int paused)
{
    if (!ws) return;
    ws->app_paused = paused != 0;
    /* a resume waits for the pongs' drain when those hold the input */
    if (ws->t.pause && !ws->stopped && (paused || !ws->held)) ws->t.pause(ws->t.io, paused != 0);
}

int cshw_ws_ping(cshw_ws *ws, const void *data, size_t len)
{
    if (!ws || len > 125 || (len && !data)) return -EINVAL;
    if (!can_send(ws)) return -EPIPE;
    return write_frame(ws, FIN | OP_PING, data, len);
}

int cshw_ws_close(cshw_ws *ws, int code, const char *reason)
{
    if (!ws || !code_valid(code)) return -EINVAL;
    if (!can_send(ws)) return -EPIPE;
    size_t n = reason ? strlen(reason) : 0;
    int r = send_close(ws, code, reason, n);
    /* closed()'s code if the connection ends before the peer answers
     * (the peer's code replaces it; the close timeout says 1006) */
    ws->code = code;
    return r < 0 ? r : 0;
}

void *cshw_ws_arg(const cshw_ws *ws)
{
    return ws ? ws->arg : NULL;
}

const char *cshw_ws_protocol(const cshw_ws *ws)
{
    return ws ? ws->hs.protocol : "";
}

int cshw_ws_deflate(const cshw_ws *ws)
{
    return ws ? ws->hs.deflate : 0;
}

void *cshw_ws_io(const cshw_ws *ws)
{
    return ws ? ws->t.io : NULL;
}

uint64_t cshw_ws_bytes_in(const cshw_ws *ws)
{
    return ws ? ws->bytes_in : 0;
}

uint64_t cshw_ws_bytes_out(const cshw_ws *ws)
{
    return ws ? ws->bytes_out : 0;
}
