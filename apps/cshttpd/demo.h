/* The demo application of cshttpd: /demo/... (with --demo). */
#ifndef CSHTTPD_DEMO_H
#define CSHTTPD_DEMO_H

#include <cshttp/server.h>
#include <cshttp/web/router.h>

/* Adds the demo routes. 0 or the router's error. */
int demo_routes(cshw_router *r);

#endif
