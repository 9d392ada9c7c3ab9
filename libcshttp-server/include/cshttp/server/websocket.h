/* cshs_websocket: a WebSocket (RFC 6455, with permessage-deflate, RFC
 * 7692) on the engine: the toolkit's session (cshttp/web/websocket.h) on
 * a tunnel (tunnel.h), its callbacks on the connection's loop, no thread
 * held while it is open.
 *
 *   static void on_message(cshw_ws *ws, int type, const char *p, size_t n, void *arg)
 *   {
 *       if (cshw_ws_send(ws, type, p, n) == 1) { ... wait for drained ... }
 *   }
 *   static void on_closed(cshw_ws *ws, int code, const char *why, size_t n, void *arg) {}
 *   static const cshw_ws_handlers echo = {.message = on_message, .closed = on_closed};
 *
 *   static void handler(cshw_context *ctx)   // GET /ws
 *   {
 *       cshw_ws_options o;
 *       cshw_ws_options_init(&o);
 *       cshs_websocket(ctx, &o, &echo, NULL);  // answered either way
 *   }
 *
 * cshs_websocket, called by a handler (or a deferred handler's
 * continuation), checks the request as a WebSocket handshake
 * (cshw_ws_check), switches the connection with "101 Switching
 * Protocols", and once the handler returns runs the session on the
 * connection's loop: open, message, drained and closed are called there,
 * and cshw_ws_send, _send_part, _ping and _close are made there (from
 * those callbacks, or a watch armed on cshs_websocket_reactor). 0, or the
 * refusal, already answered: cshw_ws_check's errors with their statuses
 * (400, 403, 405, 426 with Sec-WebSocket-Version: 13), cshs_upgrade's
 * (-EINVAL, -EALREADY), -ENOMEM (500).
 *
 * The session's timers (ping_interval_ms, pong_timeout_ms,
 * close_timeout_ms) are run by the loop, within sweep_interval_ms; the
 * tunnel's own deadlines hold too: tunnel_idle_timeout_ms with no byte
 * either way (pings keep a live peer's socket busy when their interval is
 * shorter), send_timeout_ms for a peer that takes no output, whose
 * queue is bounded by write_high_water (a send returns 1 above it). A
 * graceful stop sends each socket a close frame, 1001 "going away", and
 * ends it once that is sent (closed() with 1001); a forced stop, or a
 * socket still there at the next sweep, is cut (1006).
 *
 * From another thread (a worker that did blocking work for a message):
 * cshs_websocket_post sends a message, cshs_websocket_post_close starts
 * the closing handshake. Both copy what they are given and return at
 * once: 0; 1 when the socket's queue is above write_high_water (slow
 * down); -EPIPE once the socket closed; -EAGAIN before open(); -EINVAL,
 * -ENOMEM. A message posted after a close began is dropped by the loop.
 * The caller holds a reference (cshw_ws_retain, taken on the loop while
 * the session is open, say in message(); cshw_ws_release when done), so
 * the session stays in memory: a post after closed() is -EPIPE, never a
 * use of freed memory. Posts from one thread go out in their order. The
 * first post makes an eventfd for the session (one descriptor, until it
 * closes). Only for sessions made by cshs_websocket. */
#ifndef CSHTTP_SERVER_WEBSOCKET_H
#define CSHTTP_SERVER_WEBSOCKET_H

#include <stddef.h>

#include <cshttp/web/context.h>
#include <cshttp/web/websocket.h>

#include "export.h"
#include "reactor.h"

#ifdef __cplusplus
extern "C" {
#endif

CSHS_EXPORT int cshs_websocket(cshw_context *ctx, const cshw_ws_options *o,
                               const cshw_ws_handlers *handlers, void *arg);
CSHS_EXPORT int cshs_websocket_post(cshw_ws *ws, int type, const void *data, size_t len);
CSHS_EXPORT int cshs_websocket_post_close(cshw_ws *ws, int code, const char *reason);
/* The loop the session runs on (its thread is the one to call cshw_ws_*
 * from), NULL before open(). */
CSHS_EXPORT cshs_reactor *cshs_websocket_reactor(cshw_ws *ws);

#ifdef __cplusplus
}
#endif

#endif
