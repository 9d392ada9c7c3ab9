/* The proxy's WebSocket tunnel: a request with "Upgrade: websocket" (and
 * "Connection: upgrade") goes to its origin asking for the same switch
 * (the client's `upgrade`); when the origin answers 101, the client gets
 * that 101 with the origin's fields (Sec-WebSocket-Accept, -Protocol,
 * -Extensions) and both connections are tunnelled on the loop, holding no
 * thread, until either side closes, fails, or no byte goes either way for
 * tunnel_idle_timeout_ms. Any other answer goes back as an HTTP response. */
#ifndef CSHTTPD_PROXY_WS_H
#define CSHTTPD_PROXY_WS_H

#include <cshttp/server/client.h>
#include <cshttp/web/context.h>
#include <cshttp/web/request.h>

#include "proxy.h"

/* Whether req asks to switch to WebSocket: GET, HTTP/1.1, "websocket" in
 * Upgrade and "upgrade" in Connection (RFC 6455 §4.1). */
int proxy_ws_asked(cshw_request *req);

/* The origin answered call with 101: the tunnel from ctx's handler (its
 * response's fields set already). 0: the call is the tunnel's from here,
 * and so is o's request in flight (proxy_origin_done at its end); or
 * cshs_upgrade's error, the call still the caller's. */
int proxy_ws_start(cshw_context *ctx, const proxy *p, proxy_origin *o, cshs_call *call);

#endif
