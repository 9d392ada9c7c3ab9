/* cshs_tunnel: a connection that switched protocols (0.4.2; RFC 9110
 * §7.8, §15.2.2), its bytes both ways on its loop's thread, with no
 * thread held while it is open: the base of WebSockets, of a proxy's
 * tunnel, of any protocol a client asks for with Upgrade.
 *
 *   static void on_data(cshs_tunnel *t, const char *p, size_t n, void *arg)
 *   {
 *       if (n == 0) { cshs_tunnel_shutdown(t); return; }  // the client's end
 *       if (cshs_tunnel_write(t, p, n) == 1) cshs_tunnel_pause(t);
 *   }
 *   static void on_drained(cshs_tunnel *t, void *arg) { cshs_tunnel_resume(t); }
 *   static void on_closed(cshs_tunnel *t, int why, void *arg) { ... free arg ... }
 *   static const cshs_tunnel_ops echo = {NULL, on_data, on_drained, on_closed};
 *
 *   static void handler(cshw_context *ctx)   // GET with Upgrade: echo
 *   {
 *       int r = cshs_upgrade(ctx, "echo", &echo, NULL);
 *       if (r < 0) cshw_response_send_error(cshw_context_response(ctx),
 *                                           cshw_error_status(r)); // 426, ...
 *   }
 *
 * cshs_upgrade, called by a handler (or a deferred handler's
 * continuation) of a request that asked for `protocol`, sends "101
 * Switching Protocols" with the fields the handler set (a
 * Sec-WebSocket-Accept, say), and the connection becomes a tunnel once
 * the handler returns; 0, or: the toolkit's errors of
 * cshw_exchange_switch (exchange.h: CSHW_E_UPGRADE_NOT_ASKED, 426, when
 * the client did not ask for it; CSHW_E_UPGRADE_BODY; CSHW_E_HEADERS_SENT),
 * -EINVAL (no handler of the engine's runs on this thread for ctx, ops
 * without data or closed), -EALREADY (a second call), -ENOMEM. When it
 * fails nothing was sent: the handler answers as it likes.
 *
 * Then, on the loop's thread, in this order:
 * - open(t): the tunnel is there; the place for a first write (optional);
 * - data(t, bytes, n): what the client sent, the bytes the request's
 *   reading took past its head first; n == 0 once: the client's input
 *   ended (its FIN). Bytes are valid during the call only;
 * - drained(t): output went under half the write_high_water mark after a
 *   write returned 1 (optional);
 * - closed(t, why): the last call, exactly once for each cshs_upgrade
 *   that returned 0; t is freed when it returns. why: 0 after
 *   cshs_tunnel_close, or both sides ended (cshs_tunnel_shutdown and the
 *   client's end); -ETIMEDOUT: no byte either way for
 *   tunnel_idle_timeout_ms (options.h), or the client took no output for
 *   send_timeout_ms; -ECANCELED: the server stops (or the request ended
 *   as HTTP after all: the handler set Connection: close, or the server
 *   was stopping); -ECONNABORTED: a forced stop; another -errno: the
 *   socket failed.
 *
 * The calls below are made on the loop's thread: from those callbacks,
 * or from a watch armed on cshs_tunnel_reactor (another thread wakes the
 * tunnel with a watch on an eventfd, say). Nothing is called back from
 * inside them.
 *
 * cshs_tunnel_write: what the socket takes now is sent, the rest queued
 * and sent by the loop. 0; 1 when the queue is above write_high_water
 * (the data is queued all the same): stop producing (pause the side
 * that feeds it) until drained; -EPIPE after close or shutdown, or the
 * socket's error (the tunnel then closes with it).
 * cshs_tunnel_pause / _resume: data stops (the client's bytes wait in
 * the socket, and TCP's window slows it down) and goes on.
 * cshs_tunnel_shutdown: once the queue is sent, our side ends (FIN; TLS:
 * close_notify); data goes on until the client's end, then closed(0).
 * cshs_tunnel_close: the queue is sent (within send_timeout_ms), then the
 * connection closes; closed(0) comes after the current callback.
 * cshs_tunnel_queued: bytes queued, not yet taken by the client.
 * cshs_tunnel_reactor: the loop, for the tunnel's other sockets (a
 * proxy's origin: reactor.h). */
#ifndef CSHTTP_SERVER_TUNNEL_H
#define CSHTTP_SERVER_TUNNEL_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/web/context.h>

#include "export.h"
#include "reactor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshs_tunnel cshs_tunnel;

/* The application's callbacks (copied by cshs_upgrade); arg is its own. */
typedef struct cshs_tunnel_ops {
    void (*open)(cshs_tunnel *t, void *arg);
    void (*data)(cshs_tunnel *t, const char *data, size_t len, void *arg);
    void (*drained)(cshs_tunnel *t, void *arg);
    void (*closed)(cshs_tunnel *t, int why, void *arg);
} cshs_tunnel_ops;

CSHS_EXPORT int cshs_upgrade(cshw_context *ctx, const char *protocol, const cshs_tunnel_ops *ops,
                             void *arg);
CSHS_EXPORT int cshs_tunnel_write(cshs_tunnel *t, const void *data, size_t len);
CSHS_EXPORT void cshs_tunnel_pause(cshs_tunnel *t);
CSHS_EXPORT void cshs_tunnel_resume(cshs_tunnel *t);
CSHS_EXPORT void cshs_tunnel_shutdown(cshs_tunnel *t);
CSHS_EXPORT void cshs_tunnel_close(cshs_tunnel *t);
CSHS_EXPORT uint64_t cshs_tunnel_queued(const cshs_tunnel *t);
CSHS_EXPORT cshs_reactor *cshs_tunnel_reactor(cshs_tunnel *t);

#ifdef __cplusplus
}
#endif

#endif
