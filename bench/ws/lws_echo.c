/* lws_echo: the WebSocket echo peer of the benchmark suite (bench/run WS),
 * on Debian's libwebsockets (4.1), as its own examples write one: one
 * service thread (lws's default poll() loop), one protocol that takes
 * every upgrade, every message queued whole (fragments joined) and written
 * back from LWS_CALLBACK_SERVER_WRITEABLE with the same type, text as
 * text and binary as binary. No extension (so no permessage-deflate).
 * Text messages are checked for UTF-8 as RFC 6455 asks (lws's
 * LWS_SERVER_OPTION_VALIDATE_UTF8; --no-utf8-check leaves that out).
 *
 *   lws_echo --port P [--host 127.0.0.1] [--path /demo/ws] [--no-utf8-check]
 *
 * Any path is upgraded unless --path names one; a request that does not
 * ask for an upgrade gets 404. It prints "listening on PORT" once it
 * accepts and stops on SIGTERM or SIGINT. Not a product: no TLS, no
 * logging beyond lws's errors and warnings. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#define QUEUE_MAX 64 /* messages queued on a connection before it stops reading */

struct msg {
    struct msg *next;
    size_t len;
    int binary;
    unsigned char *buf; /* LWS_PRE bytes, then the payload */
};

struct session {
    struct msg *head, *tail;
    int queued, paused;
    unsigned char *part; /* the message being received: LWS_PRE, then payload */
    size_t part_len, part_cap;
    int part_binary, in_message;
};

static volatile sig_atomic_t interrupted;
static const char *only_path;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void free_session(struct session *s)
{
    while (s->head) {
        struct msg *m = s->head;
        s->head = m->next;
        free(m->buf);
        free(m);
    }
    s->tail = NULL;
    s->queued = 0;
    free(s->part);
    s->part = NULL;
    s->part_len = s->part_cap = 0;
}

static int append(struct session *s, const void *in, size_t len)
{
    if (!s->part || s->part_len + len > s->part_cap) {
        size_t cap = s->part_cap ? s->part_cap : 256;
        while (cap < s->part_len + len) cap *= 2;
        unsigned char *p = realloc(s->part, LWS_PRE + cap);
        if (!p) return -1;
        s->part = p;
        s->part_cap = cap;
    }
    if (len) memcpy(s->part + LWS_PRE + s->part_len, in, len);
    s->part_len += len;
    return 0;
}

/* the message received whole, queued for the echo (its buffer handed over) */
static int enqueue(struct lws *wsi, struct session *s)
{
    struct msg *m = malloc(sizeof *m);
    if (!m || (!s->part && append(s, "", 0) < 0)) {
        free(m);
        return -1;
    }
    m->next = NULL;
    m->len = s->part_len;
    m->binary = s->part_binary;
    m->buf = s->part;
    s->part = NULL;
    s->part_len = s->part_cap = 0;
    if (s->tail)
        s->tail->next = m;
    else
        s->head = m;
    s->tail = m;
    if (++s->queued >= QUEUE_MAX && !s->paused) {
        lws_rx_flow_control(wsi, 0);
        s->paused = 1;
    }
    lws_callback_on_writable(wsi);
    return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct session *s = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        if (only_path) {
            char uri[256];
            int n = lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI);
            if (n < 0 || strcmp(uri, only_path) != 0) return 1; /* refused */
        }
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        memset(s, 0, sizeof *s);
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (!s->in_message) {
            s->in_message = 1;
            s->part_len = 0;
            s->part_binary = lws_frame_is_binary(wsi);
        }
        if (append(s, in, len) < 0) return -1;
        if (!lws_is_final_fragment(wsi)) return 0;
        s->in_message = 0;
        return enqueue(wsi, s);
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        struct msg *m = s->head;
        if (!m) return 0;
        int n =
            lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
        if (n < (int)m->len) return -1;
        s->head = m->next;
        if (!s->head) s->tail = NULL;
        s->queued--;
        free(m->buf);
        free(m);
        if (s->paused && s->queued < QUEUE_MAX / 2) {
            lws_rx_flow_control(wsi, 1);
            s->paused = 0;
        }
        if (s->head) lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_CLOSED:
        free_session(s);
        return 0;
    case LWS_CALLBACK_HTTP:
        /* a plain request, no upgrade asked */
        if (lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL)) return -1;
        return lws_http_transaction_completed(wsi);
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

static const struct lws_protocols protocols[] = {
    {.name = "echo", .callback = callback, .per_session_data_size = sizeof(struct session)},
    {.name = NULL, .callback = NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lws_echo --port P [--host ADDR] [--path PATH] [--no-utf8-check]\n"
               "  --port P          TCP port (required)\n"
               "  --host ADDR       address listened on (default 127.0.0.1)\n"
               "  --path PATH       upgrade this path only (default: any)\n"
               "  --no-utf8-check   do not check text messages for UTF-8\n");
}

int main(int argc, char **argv)
{
    int port = -1, utf8 = 1;
    const char *host = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-utf8-check")) {
            utf8 = 0;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--port")) {
            char *end;
            long p = strtol(v, &end, 10);
            if (*end || p < 0 || p > 65535) {
                fprintf(stderr, "lws_echo: bad port %s\n", v);
                return 2;
            }
            port = (int)p;
            i++;
        } else if (v && !strcmp(a, "--host")) {
            host = v;
            i++;
        } else if (v && !strcmp(a, "--path")) {
            only_path = v;
            i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (port < 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    lws_set_log_level(LLL_ERR | LLL_WARN, NULL);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = host;
    info.protocols = protocols;
    info.count_threads = 1;
    info.options = utf8 ? LWS_SERVER_OPTION_VALIDATE_UTF8 : 0;
    struct lws_context *ctx = lws_create_context(&info);
    if (!ctx) {
        fprintf(stderr, "lws_echo: lws_create_context failed (port %d taken?)\n", port);
        return 1;
    }
    printf("listening on %d\n", port);
    fflush(stdout);
    int n = 0;
    while (!interrupted && n >= 0) n = lws_service(ctx, 0);
    lws_context_destroy(ctx);
    return 0;
}
