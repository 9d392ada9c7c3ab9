/* The demo application of cshttpd: /demo/... (with --demo). */
#ifndef CSHTTPD_DEMO_H
#define CSHTTPD_DEMO_H

#include <cshttp/server.h>
#include <cshttp/web/router.h>

/* Adds the demo routes. 0 or the router's error. */
int demo_routes(cshw_router *r);

/* 1 when a request target (its raw bytes) goes to a demo route whose
 * handler blocks (/demo/sleep): the one kind of request of cshttpd's
 * that needs a thread of its own (cshs_server_set_quick). */
int demo_blocks(const char *target, size_t len);

#endif
