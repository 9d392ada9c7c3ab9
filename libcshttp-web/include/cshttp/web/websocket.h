/* cshw_ws: the WebSocket protocol (RFC 6455) with permessage-deflate
 * (RFC 7692), without sockets: the handshake's checks and answer, and a
 * session that turns the client's bytes into messages and messages into
 * frames. Whoever owns the connection (the engine, cshs_websocket in
 * cshttp/server/websocket.h, or a test) feeds it input and gives it a
 * transport for its output.
 *
 *   // in a handler, for GET /chat with Upgrade: websocket
 *   cshw_ws_handshake hs;
 *   int r = cshw_ws_check(ctx, &opts, &hs);  // sets the 101's fields
 *   if (r < 0) { ... answer cshw_error_status(r) ... }
 *   ... the connection switches (cshw_exchange_switch) ...
 *   cshw_ws *ws = cshw_ws_new(&opts, &hs, &handlers, arg, &transport);
 *   cshw_ws_input(ws, bytes, n);   // each read; n == 0 at the peer's FIN
 *   cshw_ws_tick(ws, now_ms);      // at the deadline cshw_ws_tick returned
 *
 * The handlers run from inside cshw_ws_start, cshw_ws_input, cshw_ws_tick,
 * cshw_ws_drained and cshw_ws_end, on the connection's thread:
 * - open(ws): the connection switched; the place for a first send;
 * - message(ws, type, data, len): a whole message, CSHW_WS_TEXT (valid
 *   UTF-8, checked across its fragments and after inflating) or
 *   CSHW_WS_BINARY; data is valid during the call only;
 * - drained(ws): the transport's queue went down after a send returned 1;
 * - closed(ws, code, reason, len): the last call, exactly once, when the
 *   owner ends the session (cshw_ws_end): the peer's close code (1005:
 *   its close frame had none), or ours when we failed the connection
 *   (1002, 1007, 1009...), or 1006 when the connection ended without a
 *   close frame (RFC 6455 §7.1.5); after our cshw_ws_close, the peer's
 *   answer, or our code when the owner ended the connection first (the
 *   engine at a graceful stop: 1001), or 1006 at the close timeout.
 *
 * What the session does itself:
 * - refuses, with a close frame and the code of RFC 6455 §7.4.1, then ends
 *   the connection: an unmasked client frame, reserved bits or opcodes
 *   (1002), a control frame over 125 bytes or fragmented (1002), a
 *   continuation with no message begun or a new message inside one
 *   (1002), invalid UTF-8 in a text message or a close reason (1007), a
 *   message over max_message bytes, after inflating (1009), a message of
 *   more than max_fragments frames (1009), a close frame with a code
 *   that may not be sent (1002);
 * - answers a ping with a pong, and a close with a close (the same code),
 *   then ends the connection (the server closes TCP first, §7.1.1);
 * - pings every ping_interval_ms of silence from the peer and ends the
 *   connection when no byte came within pong_timeout_ms after; ends it
 *   close_timeout_ms after our close frame if the peer's never came.
 *
 * Memory: the session holds what a message needs while it arrives
 * (max_message at most), a 125-byte control frame, and zlib's state only
 * while a message is inflated or deflated (the server asks for no context
 * takeover both ways, RFC 7692 §7.1.1), so an idle session holds
 * cshw_ws_idle_bytes() and nothing more.
 *
 * Ownership and threads: a session is used on one thread (the
 * connection's), except cshw_ws_retain and cshw_ws_release, which any
 * thread may call. cshw_ws_new's reference is the owner's, given up by
 * cshw_ws_end; the session is freed (and transport->release called) when
 * the last reference goes. After closed(), sends return -EPIPE. */
#ifndef CSHTTP_WEB_WEBSOCKET_H
#define CSHTTP_WEB_WEBSOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message types (the frame opcodes of RFC 6455 §5.2). */
#define CSHW_WS_TEXT 1
#define CSHW_WS_BINARY 2

/* Close codes (RFC 6455 §7.4.1). */
#define CSHW_WS_NORMAL 1000
#define CSHW_WS_GOING_AWAY 1001
#define CSHW_WS_PROTOCOL_ERROR 1002
#define CSHW_WS_UNSUPPORTED 1003
#define CSHW_WS_NO_STATUS 1005 /* received only: a close frame with no code */
#define CSHW_WS_ABNORMAL 1006  /* received only: no close frame at all */
#define CSHW_WS_INVALID_DATA 1007
#define CSHW_WS_POLICY 1008
#define CSHW_WS_TOO_BIG 1009
#define CSHW_WS_INTERNAL 1011

typedef struct cshw_ws_options {
    size_t size; /* sizeof(cshw_ws_options), set by cshw_ws_options_init */
    /* The largest message, after inflating: 1009 past it. 1 MiB. */
    uint64_t max_message;
    /* The most frames in one message (a flood of empty fragments): 1009
     * past it. 4096. */
    uint32_t max_fragments;
    /* The origins whose pages may open a socket (RFC 6455 §10.2, against
     * cross-site WebSocket hijacking), a space-separated list such as
     * "https://example.com https://app.example.com:8443"; "*": any. NULL
     * (the default): the request's own origin only, the Origin's
     * host[:port] equal to Host. A request without Origin (not from a
     * browser) is always let in. Refused: 403. */
    const char *allowed_origins;
    /* The subprotocols the application speaks, space-separated, in its
     * order of preference ("chat.v2 chat"); the first the client offers
     * is chosen (Sec-WebSocket-Protocol). NULL: none is chosen, whatever
     * the client offers. */
    const char *protocols;
    /* Accept permessage-deflate when the client offers it: 1 (default). */
    int deflate;
    /* The largest LZ77 window (8..15) our compressor uses and the client's
     * may use (server_max_window_bits, client_max_window_bits): 15. */
    int deflate_window_bits;
    /* Messages shorter than this are sent uncompressed: 64 bytes. */
    uint32_t deflate_min;
    /* A ping after this much silence from the peer: 30 s; 0: none. */
    uint32_t ping_interval_ms;
    /* The connection ends when no byte came within this after a ping: 20 s. */
    uint32_t pong_timeout_ms;
    /* The connection ends this long after our close frame if the peer's
     * did not come: 5 s. */
    uint32_t close_timeout_ms;
} cshw_ws_options;

CSHW_EXPORT void cshw_ws_options_init(cshw_ws_options *o);

/* What cshw_ws_check agreed with the client, for cshw_ws_new. */
typedef struct cshw_ws_handshake {
    int deflate;       /* permessage-deflate in use */
    int client_window; /* the client's window bits (8..15) */
    int server_window; /* ours (9..15: zlib's raw deflate has no 8) */
    char protocol[64]; /* the subprotocol chosen, or "" */
} cshw_ws_handshake;

/* Checks the request of ctx as an opening handshake (RFC 6455 §4.2.1) and,
 * when it is one, sets the response's Sec-WebSocket-Accept and, if agreed,
 * Sec-WebSocket-Protocol and Sec-WebSocket-Extensions (the switch itself,
 * 101 with Upgrade and Connection, is cshw_exchange_switch's). 0, or:
 * CSHW_E_WS_METHOD (405: not GET), CSHW_E_UPGRADE_NOT_ASKED (426: no
 * Upgrade: websocket or Connection: upgrade, or not HTTP/1.1),
 * CSHW_E_WS_VERSION (426: Sec-WebSocket-Version is not 13; the response
 * then carries Sec-WebSocket-Version: 13, §4.4), CSHW_E_WS_KEY (400:
 * Sec-WebSocket-Key missing, repeated or not 16 bytes in base64),
 * CSHW_E_WS_ORIGIN (403: Origin not allowed), CSHW_E_WS_OPTIONS (500: o
 * invalid), -ENOMEM. On the request's thread. */
CSHW_EXPORT int cshw_ws_check(cshw_context *ctx, const cshw_ws_options *o, cshw_ws_handshake *hs);

/* Sec-WebSocket-Accept for a key (RFC 6455 §4.2.2: base64 of the SHA-1 of
 * the key and the GUID): 28 characters and a NUL into out. */
CSHW_EXPORT void cshw_ws_accept_value(const char *key, size_t key_len, char out[29]);

typedef struct cshw_ws cshw_ws;

typedef struct cshw_ws_handlers {
    void (*open)(cshw_ws *ws, void *arg); /* optional: cshw_ws_start */
    void (*message)(cshw_ws *ws, int type, const char *data, size_t len, void *arg);
    void (*drained)(cshw_ws *ws, void *arg); /* optional */
    void (*closed)(cshw_ws *ws, int code, const char *reason, size_t len, void *arg);
} cshw_ws_handlers;

/* The session's output. write queues what the connection does not take
 * now: 0, 1 when the queue is above the owner's mark (the session says 1
 * to the sender: wait for drained), or -errno (the connection failed).
 * close ends the connection once the queue is sent. release: the session
 * was freed (its last reference went); may be NULL. pause: stop reading
 * the client (1) or go on (0); may be NULL. */
typedef struct cshw_ws_transport {
    int (*write)(void *io, const void *data, size_t len);
    void (*close)(void *io);
    void (*release)(void *io);
    void (*pause)(void *io, int paused);
    void *io;
} cshw_ws_transport;

/* A session for a handshake cshw_ws_check accepted (o and hs as given to
 * it; both are copied, allowed_origins and protocols are not kept).
 * handlers and transport are copied; arg is the application's. NULL when
 * out of memory. */
CSHW_EXPORT cshw_ws *cshw_ws_new(const cshw_ws_options *o, const cshw_ws_handshake *hs,
                                 const cshw_ws_handlers *handlers, void *arg,
                                 const cshw_ws_transport *transport);

/* The connection switched: open() runs, the place for a first send. Once,
 * before any input. */
CSHW_EXPORT void cshw_ws_start(cshw_ws *ws);

/* The client's bytes, as they come, in pieces of any size; len == 0: its
 * input ended. The bytes are used before the call returns. 0 while the
 * session goes on; 1 once it has ended the connection (a protocol error,
 * the close handshake: transport->close was called) and reads nothing
 * more. */
CSHW_EXPORT int cshw_ws_input(cshw_ws *ws, const char *data, size_t len);

/* Runs the timers at now_ms (CLOCK_MONOTONIC): a ping due, a pong or a
 * close that did not come. Returns the next deadline (ms), or 0: none. */
CSHW_EXPORT int64_t cshw_ws_tick(cshw_ws *ws, int64_t now_ms);

/* The transport's queue went under its mark after a write said 1. */
CSHW_EXPORT void cshw_ws_drained(cshw_ws *ws);

/* The owner ends the session: the connection is gone (why: 0, or its
 * -errno). closed() runs if it has not, and the owner's reference goes. */
CSHW_EXPORT void cshw_ws_end(cshw_ws *ws, int why);

/* Sends a message (compressed when agreed and worth it). 0; 1: queued
 * above the transport's mark (stop producing until drained); -EPIPE
 * after a close or the end; -EINVAL: type not TEXT or BINARY (a TEXT
 * message is not checked for UTF-8: the sender's promise). */
CSHW_EXPORT int cshw_ws_send(cshw_ws *ws, int type, const void *data, size_t len);

/* A message in pieces, never compressed (RFC 6455 §5.4): the first piece
 * gives the type, the last says fin = 1. Pieces of another message may not
 * come between: -EBUSY; cshw_ws_send meanwhile is -EBUSY too. */
CSHW_EXPORT int cshw_ws_send_part(cshw_ws *ws, int type, const void *data, size_t len, int fin);

/* Stops reading the client (paused 1: its bytes wait in the socket and
 * TCP slows it down) or goes on (0): an echo that got 1 from a send
 * pauses until drained(). Pings and closes wait too while paused. The
 * session pauses the input itself while the pongs it owes a peer that
 * pings and does not read are queued past the mark, and goes on at
 * drained(); a resume of the application's then waits for that too. */
CSHW_EXPORT void cshw_ws_pause(cshw_ws *ws, int paused);

/* A ping with up to 125 bytes (-EINVAL past it). */
CSHW_EXPORT int cshw_ws_ping(cshw_ws *ws, const void *data, size_t len);

/* Starts the closing handshake (§7.1.2): a close frame with code (one a
 * close frame may carry: 1000..1003, 1007..1014, 3000..4999; -EINVAL
 * otherwise) and a reason
 * of up to 123 bytes (cut there); the connection ends when the peer
 * answers, or close_timeout_ms later. -EPIPE when closing already. */
CSHW_EXPORT int cshw_ws_close(cshw_ws *ws, int code, const char *reason);

/* Another reference (any thread): the session stays in memory, closed or
 * not, until cshw_ws_release. */
CSHW_EXPORT void cshw_ws_retain(cshw_ws *ws);
CSHW_EXPORT void cshw_ws_release(cshw_ws *ws);

/* The application's arg; the subprotocol chosen ("" for none); whether
 * permessage-deflate is in use. Any thread while a reference is held. */
CSHW_EXPORT void *cshw_ws_arg(const cshw_ws *ws);
CSHW_EXPORT const char *cshw_ws_protocol(const cshw_ws *ws);
CSHW_EXPORT int cshw_ws_deflate(const cshw_ws *ws);

/* The transport's io (cshw_ws_new's), for its owner. */
CSHW_EXPORT void *cshw_ws_io(const cshw_ws *ws);

/* Message bytes each way so far: received (as the application got them,
 * inflated) and sent (as given to send). */
CSHW_EXPORT uint64_t cshw_ws_bytes_in(const cshw_ws *ws);
CSHW_EXPORT uint64_t cshw_ws_bytes_out(const cshw_ws *ws);

/* Bytes of an idle session (no message arriving, no zlib state). */
CSHW_EXPORT size_t cshw_ws_idle_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
