/* A WebSocket on a tunnel (websocket.h): the toolkit's session gets the
 * tunnel's bytes and writes through it; its timers run at the tunnel's
 * serves; other threads' messages come through a mailbox and an eventfd
 * watched by the loop.
 *
 *   cshs_websocket: cshw_ws_check ─> cshw_ws_new ─> cshs_upgrade
 *   open ─> cshw_ws_start; data ─> cshw_ws_input; drained ─> cshw_ws_drained
 *   a serve ─> cshw_ws_tick (pings, deadlines) ─> the next due time
 *   closed ─> the mailbox shut, cshw_ws_end ─> closed()
 *   post (any thread) ─> mailbox ─> eventfd ─> the loop sends it
 *
 * The link belongs to the session: freed with it, when its last
 * reference goes (the loop's, given up at the end, or a poster's). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cshttp/server/websocket.h>
#include <cshttp/web/error.h>
#include <cshttp/web/response.h>

#include "list.h"
#include "server_impl.h"

typedef struct post {
    struct post *next;
    int type; /* CSHW_WS_TEXT or _BINARY; 0: a close */
    int code; /* the close's */
    size_t len;
    char data[];
} post;

typedef struct ws_link {
    cshw_ws *ws;
    cshs_tunnel *tunnel; /* NULL until open and after closed (the loop's) */
    cshs_reactor *reactor; /* set at open, under mu */
    _Atomic int full; /* the tunnel's queue is above high_water */
    pthread_mutex_t mu;
    /* under mu: */
    post *head, *tail;
    int efd;    /* -1 until the first post */
    int kicked; /* the eventfd was written and not yet read */
    int shut;   /* the session closed: posts refused */
    cshs_watch watch;
} ws_link;

static int link_write(void *io, const void *data, size_t len)
{
    ws_link *l = io;
    if (!l->tunnel) return -EPIPE;
    int r = cshs_tunnel_write(l->tunnel, data, len);
    if (r == 1) atomic_store(&l->full, 1);
    return r;
}

static void link_close(void *io)
{
    ws_link *l = io;
    if (l->tunnel) cshs_tunnel_close(l->tunnel);
}

static void link_pause(void *io, int paused)
{
    ws_link *l = io;
    if (!l->tunnel) return;
    if (paused)
        cshs_tunnel_pause(l->tunnel);
    else
        cshs_tunnel_resume(l->tunnel);
}

static void link_release(void *io)
{
    ws_link *l = io;
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static int64_t link_timer(void *arg, int64_t now_ms)
{
    ws_link *l = arg;
    return cshw_ws_tick(l->ws, now_ms);
}

/* A graceful stop: "going away" (RFC 6455 §7.4.1, 1001), then the end
 * once it is sent, without waiting for the peer's answer. */
static void link_stop(void *arg)
{
    ws_link *l = arg;
    cshw_ws_close(l->ws, CSHW_WS_GOING_AWAY, "the server is stopping");
    if (l->tunnel) cshs_tunnel_close(l->tunnel);
}

static void on_open(cshs_tunnel *t, void *arg)
{
    ws_link *l = arg;
    l->tunnel = t;
    pthread_mutex_lock(&l->mu);
    l->reactor = cshs_tunnel_reactor(t);
    pthread_mutex_unlock(&l->mu);
    cshs__tunnel_set_timer(t, link_timer, l);
    cshs__tunnel_set_stop(t, link_stop, l);
    cshw_ws_start(l->ws);
}

static void on_data(cshs_tunnel *t, const char *data, size_t len, void *arg)
{
    (void)t;
    ws_link *l = arg;
    cshw_ws_input(l->ws, data, len);
}

static void on_drained(cshs_tunnel *t, void *arg)
{
    (void)t;
    ws_link *l = arg;
    atomic_store(&l->full, 0);
    cshw_ws_drained(l->ws);
}

static void free_posts(post *p)
{
    while (p) {
        post *next = p->next;
        free(p);
        p = next;
    }
}

static void on_closed(cshs_tunnel *t, int why, void *arg)
{
    (void)t;
    ws_link *l = arg;
    pthread_mutex_lock(&l->mu);
    l->shut = 1;
    post *p = l->head;
    l->head = l->tail = NULL;
    int efd = l->efd;
    l->efd = -1;
    pthread_mutex_unlock(&l->mu);
    free_posts(p);
    if (efd >= 0) {
        cshs_reactor_disarm(&l->watch);
        close(efd);
    }
    l->tunnel = NULL;
    cshw_ws_end(l->ws, why);
}

static const cshs_tunnel_ops link_ops = {on_open, on_data, on_drained, on_closed};

/* The eventfd: other threads' posts, sent on the loop in their order. */
static void on_kick(cshs_watch *w, uint32_t events)
{
    ws_link *l = w->arg;
    pthread_mutex_lock(&l->mu);
    if (l->shut) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    uint64_t n;
    if (read(l->efd, &n, sizeof n) < 0) { /* EAGAIN: nothing to read */
    }
    post *p = l->head;
    l->head = l->tail = NULL;
    l->kicked = 0;
    pthread_mutex_unlock(&l->mu);
    for (post *q = p; q; q = q->next) {
        if (q->type)
            cshw_ws_send(l->ws, q->type, q->data, q->len);
        else
            cshw_ws_close(l->ws, q->code, q->data);
    }
    free_posts(p);
    /* events 0: the server stops; the tunnel's close follows */
    if (events) cshs_reactor_arm(l->reactor, w);
}

static int post_one(cshw_ws *ws, int type, int code, const void *data, size_t len)
{
    ws_link *l = ws ? cshw_ws_io(ws) : NULL;
    if (!l) return -EINVAL;
    post *p = malloc(sizeof *p + len + 1);
    if (!p) return -ENOMEM;
    p->next = NULL;
    p->type = type;
    p->code = code;
    p->len = len;
    if (len) memcpy(p->data, data, len);
    p->data[len] = '\0';
    pthread_mutex_lock(&l->mu);
    int r = 0;
    if (l->shut || !l->reactor) {
        r = l->shut ? -EPIPE : -EAGAIN;
    } else if (l->efd < 0) {
        l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (l->efd < 0) {
            r = -errno;
        } else {
            l->watch.fd = l->efd;
            l->watch.events = EPOLLIN;
            l->watch.ready = on_kick;
            l->watch.arg = l;
            if ((r = cshs_reactor_arm(l->reactor, &l->watch)) < 0) {
                close(l->efd);
                l->efd = -1;
            }
        }
    }
    if (r < 0) {
        pthread_mutex_unlock(&l->mu);
        free(p);
        return r;
    }
    CSHS_FIFO_APPEND(l->head, l->tail, p, next);
    if (!l->kicked) {
        uint64_t one = 1;
        l->kicked = 1;
        if (write(l->efd, &one, sizeof one) < 0) { /* a full counter is a kick all the same */
        }
    }
    pthread_mutex_unlock(&l->mu);
    return atomic_load(&l->full) ? 1 : 0;
}

int cshs_websocket_post(cshw_ws *ws, int type, const void *data, size_t len)
{
    if ((type != CSHW_WS_TEXT && type != CSHW_WS_BINARY) || (len && !data)) return -EINVAL;
    return post_one(ws, type, 0, data, len);
}

int cshs_websocket_post_close(cshw_ws *ws, int code, const char *reason)
{
    size_t n = reason ? strlen(reason) : 0;
    return post_one(ws, 0, code, reason, n > 123 ? 123 : n);
}

cshs_reactor *cshs_websocket_reactor(cshw_ws *ws)
{
    ws_link *l = ws ? cshw_ws_io(ws) : NULL;
    if (!l) return NULL;
    pthread_mutex_lock(&l->mu);
    cshs_reactor *r = l->reactor;
    pthread_mutex_unlock(&l->mu);
    return r;
}

/* The refusal's answer: the status of r, without the fields of a switch
 * that did not happen. */
static int refuse(cshw_context *ctx, int r)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_remove_header(res, "Sec-WebSocket-Accept");
    cshw_response_remove_header(res, "Sec-WebSocket-Protocol");
    cshw_response_remove_header(res, "Sec-WebSocket-Extensions");
    int status = cshw_error_status(r);
    /* RFC 9110 §15.5.22: a 426 names the protocol to switch to */
    if (status == 426) cshw_response_set_header(res, "Upgrade", "websocket");
    cshw_response_send_error(res, status >= 400 ? status : 500);
    return r;
}

int cshs_websocket(cshw_context *ctx, const cshw_ws_options *o, const cshw_ws_handlers *handlers,
                   void *arg)
{
    if (!ctx || !handlers || !handlers->message || !handlers->closed) return -EINVAL;
    cshw_ws_handshake hs;
    int r = cshw_ws_check(ctx, o, &hs);
    if (r < 0) return refuse(ctx, r);
    ws_link *l = calloc(1, sizeof *l);
    if (!l) return refuse(ctx, -ENOMEM);
    pthread_mutex_init(&l->mu, NULL);
    l->efd = -1;
    cshw_ws_transport t = {link_write, link_close, link_release, link_pause, l};
    l->ws = cshw_ws_new(o, &hs, handlers, arg, &t);
    if (!l->ws) {
        link_release(l);
        return refuse(ctx, -ENOMEM);
    }
    r = cshs_upgrade(ctx, "websocket", &link_ops, l);
    if (r < 0) {
        cshw_ws_release(l->ws); /* frees l */
        return refuse(ctx, r);
    }
    return 0;
}
