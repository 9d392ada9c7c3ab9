/* The proxy's WebSocket tunnel (proxy_ws.h): after the origin's 101, the
 * client's connection (an engine tunnel) and the origin's (the call's,
 * switched) carry each other's bytes on the loop's thread, as nginx's
 * proxy does with `proxy_set_header Upgrade $http_upgrade`.
 *
 *   client ─data()─> write to the origin; what it does not take waits in
 *     up[], the client paused, until the origin's socket takes it
 *   origin ─read─> cshs_tunnel_write to the client; above the client's
 *     write_high_water, the origin is not read until drained()
 *   either end (FIN) is passed on as a half-close once what precedes it
 *   went; an error or the client tunnel's idle deadline closes both
 *
 * One wait on the origin's socket at a time, for what is wanted now
 * (its input, its output, or both). The tunnel's memory is its own
 * (malloc), freed in closed(), with the call. */
#include "proxy_ws.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cshttp/grammar.h>
#include <cshttp/server/tunnel.h>
#include <cshttp/span.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

#include "log.h"

#define PIECE 16384 /* one read from the origin */

typedef struct ws_tunnel {
    const proxy *p;
    proxy_origin *o;
    cshs_call *call;
    cshs_tunnel *t;
    /* the client's bytes the origin has not taken yet */
    char *up;
    size_t up_len, up_cap;
    int client_ended;  /* the client's FIN: passed on once up[] went */
    int origin_ended;  /* the origin's FIN: passed on to the client */
    int origin_paused; /* the client's queue is full: the origin is not read */
    int waiting;       /* a wait on the origin's socket is armed */
    int closed;        /* closed() came: no more waits */
} ws_tunnel;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A token in the comma-separated lists of every `name` field (RFC 9110
 * §5.6.1), compared without case. */
static int lists(cshw_request *req, const char *name, const char *token)
{
    const char *values[16];
    size_t n = cshw_request_header_all(req, name, values, 16), tl = strlen(token);
    for (size_t i = 0; i < n && i < 16; i++) {
        csh_list l;
        csh_span e;
        csh_list_init(&l, values[i], strlen(values[i]));
        while (csh_list_next(&l, &e))
            if (e.len == tl && csh_mem_ieq(values[i] + e.off, token, tl)) return 1;
    }
    return 0;
}

int proxy_ws_asked(cshw_request *req)
{
    return strcmp(cshw_request_method(req), "GET") == 0 && cshw_request_version_minor(req) >= 1 &&
           lists(req, "Upgrade", "websocket") && lists(req, "Connection", "upgrade");
}

static void arm(ws_tunnel *w);

/* What the client sent that the origin did not take yet, offered again:
 * 0 all went (the client reads on), 1 some waits, or -errno. */
static int push_up(ws_tunnel *w)
{
    while (w->up_len) {
        ssize_t n = cshs_call_tunnel_write(w->call, w->up, w->up_len);
        if (n == -EAGAIN) return 1;
        if (n < 0) return (int)n;
        memmove(w->up, w->up + n, w->up_len - (size_t)n);
        w->up_len -= (size_t)n;
    }
    if (w->client_ended) cshs_call_tunnel_shutdown(w->call);
    return 0;
}

/* The origin's bytes to the client, until EAGAIN (the next bytes bring
 * an event: its registration is edge-triggered, so reading stops nowhere
 * else but at) its end or a full client queue (write_high_water bounds
 * the run; drained() reads on): 0, or -errno. */
static int pull_down(ws_tunnel *w)
{
    char buf[PIECE];
    while (!w->origin_paused && !w->origin_ended) {
        ssize_t n = cshs_call_tunnel_read(w->call, buf, sizeof buf);
        if (n == -EAGAIN) return 0;
        if (n < 0) return (int)n;
        if (n == 0) {
            w->origin_ended = 1;
            cshs_tunnel_shutdown(w->t); /* after what is queued */
            return 0;
        }
        int r = cshs_tunnel_write(w->t, buf, (size_t)n);
        if (r < 0) return r;
        if (r == 1) w->origin_paused = 1; /* until drained() */
    }
    return 0;
}

static void on_origin(void *arg, int events)
{
    ws_tunnel *w = arg;
    w->waiting = 0;
    if (w->closed) return;
    if (events == 0) { /* the loop stops: the tunnel's close follows */
        cshs_tunnel_close(w->t);
        return;
    }
    int r = 0;
    if ((events & CSHS_TUNNEL_OUT) && w->up_len) {
        /* the client was paused for these bytes: it reads on once they went */
        r = push_up(w);
        if (r == 0) cshs_tunnel_resume(w->t);
    }
    if (r >= 0 && (events & CSHS_TUNNEL_IN)) r = pull_down(w);
    if (r < 0) {
        error_log_printf(LOG_INFO, "proxy websocket -> %s: the origin's connection failed (%s)",
                         w->o->url, strerror(-r));
        cshs_tunnel_close(w->t);
        return;
    }
    arm(w);
}

/* The one wait on the origin's socket, for what is wanted now. */
static void arm(ws_tunnel *w)
{
    if (w->waiting || w->closed) return;
    int ev = 0;
    if (!w->origin_paused && !w->origin_ended) ev |= CSHS_TUNNEL_IN;
    if (w->up_len) ev |= CSHS_TUNNEL_OUT;
    if (!ev) return;
    int r = cshs_call_tunnel_wait(w->call, cshs_tunnel_reactor(w->t), ev, 0, on_origin, w);
    if (r < 0) {
        error_log_printf(LOG_WARN, "proxy websocket -> %s: cannot watch the origin's socket (%s)",
                         w->o->url, strerror(-r));
        cshs_tunnel_close(w->t);
        return;
    }
    w->waiting = 1;
}

static void on_open(cshs_tunnel *t, void *arg)
{
    ws_tunnel *w = arg;
    w->t = t;
    /* the origin may have sent its first bytes with the 101 */
    int r = pull_down(w);
    if (r < 0) {
        cshs_tunnel_close(t);
        return;
    }
    arm(w);
}

static void on_data(cshs_tunnel *t, const char *data, size_t len, void *arg)
{
    ws_tunnel *w = arg;
    if (len == 0) {
        w->client_ended = 1;
        if (!w->up_len) cshs_call_tunnel_shutdown(w->call);
        if (w->origin_ended) cshs_tunnel_close(t);
        return;
    }
    if (!w->up_len) {
        ssize_t n = cshs_call_tunnel_write(w->call, data, len);
        if (n < 0 && n != -EAGAIN) {
            cshs_tunnel_close(t);
            return;
        }
        if (n > 0) {
            data += n;
            len -= (size_t)n;
        }
        if (len == 0) return;
    }
    /* the rest waits for the origin; the client's next bytes wait in its
     * socket meanwhile */
    if (w->up_len + len > w->up_cap) {
        size_t cap = w->up_len + len;
        char *b = realloc(w->up, cap);
        if (!b) {
            cshs_tunnel_close(t);
            return;
        }
        w->up = b;
        w->up_cap = cap;
    }
    memcpy(w->up + w->up_len, data, len);
    w->up_len += len;
    cshs_tunnel_pause(t);
    /* a wait for the origin's input alone becomes one for both */
    w->waiting = 0;
    arm(w);
}

static void on_drained(cshs_tunnel *t, void *arg)
{
    (void)t;
    ws_tunnel *w = arg;
    if (!w->origin_paused) return;
    w->origin_paused = 0;
    int r = pull_down(w);
    if (r < 0) {
        cshs_tunnel_close(w->t);
        return;
    }
    arm(w);
}

static void on_closed(cshs_tunnel *t, int why, void *arg)
{
    (void)t;
    ws_tunnel *w = arg;
    w->closed = 1;
    if (why < 0 && why != -ECANCELED && why != -ECONNABORTED)
        error_log_printf(LOG_INFO, "proxy websocket -> %s: closed (%s)", w->o->url, strerror(-why));
    /* a wait still armed is given up by the call's free (this thread) */
    cshs_call_free(w->call);
    proxy_origin_done(w->p, w->o, 0, mono_ms());
    free(w->up);
    free(w);
}

static const cshs_tunnel_ops ws_ops = {on_open, on_data, on_drained, on_closed};

int proxy_ws_start(cshw_context *ctx, const proxy *p, proxy_origin *o, cshs_call *call)
{
    ws_tunnel *w = calloc(1, sizeof *w);
    int r = w ? cshs_upgrade(ctx, "websocket", &ws_ops, w) : -ENOMEM;
    if (r < 0) {
        free(w);
        return r;
    }
    w->p = p;
    w->o = o;
    w->call = call;
    return 0;
}
