/* What cshttpd's handlers reach through cshw_context_app_data(ctx): the
 * server, its stats and the status page's settings. One per server, made in
 * main before cshs_server_start and never changed while it runs. */
#ifndef CSHTTPD_APP_H
#define CSHTTPD_APP_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/server.h>
#include <cshttp/server/client.h>
#include <cshttp/web/websocket.h>

#include "stats.h"

#define ACL_MAX 32

typedef struct acl_entry {
    int family;             /* 4 or 6 */
    unsigned char addr[16]; /* network, in network order */
    unsigned bits;
} acl_entry;

typedef struct acl {
    acl_entry e[ACL_MAX];
    size_t n;
    int unix_peers; /* peers on the Unix socket (local users) */
} acl;

struct proxy;
typedef struct status_push status_push;

typedef struct cshttpd_app {
    cshs_server *server;
    cshw_router *router;       /* what is not proxied */
    struct proxy *proxy;       /* NULL without --proxy */
    cshs_client *proxy_client; /* its client: the pools on the status page */
    stats *stats;
    acl status_allow;
    unsigned workers_min, workers_max;
    const cshw_ws_options *ws; /* the WebSockets' (--ws-...) */
    status_push *push;         /* the status page's sockets, with stats */
} cshttpd_app;

/* "CIDR,CIDR,..." (IPv4 or IPv6, a bare address is /32 or /128; "unix"
 * for the Unix socket's peers) into a. 0, or -1 with the bad item named in
 * err. */
int acl_parse(acl *a, const char *list, char *err, size_t errlen);
/* The loopback default: 127.0.0.0/8, ::1 and the Unix socket. */
void acl_loopback(acl *a);
/* Whether the peer (cshw_request_remote_addr) is allowed. */
int acl_allows(const acl *a, const char *remote_addr);

/* Adds the status page at `path` (HTML; ?format=json for JSON),
 * path + ".json", and path + ".ws", a WebSocket that pushes the JSON every
 * second. 0 or the router's error. */
int status_routes(cshw_router *r, const char *path);

/* The status sockets' list; status_push_tick, as an engine tick with the
 * app, pushes to them (once a second). */
status_push *status_push_new(void);
void status_push_free(status_push *p);
void status_push_tick(void *app);

#endif
