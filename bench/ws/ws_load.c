/* ws_load: the WebSocket (RFC 6455) echo load of the benchmark suite
 * (bench/run WS). One thread, epoll, libc, and OpenSSL's SHA-1 for the
 * handshake's check.
 *
 * It opens --conns sockets to --host:--port, upgrades each with GET --path
 * (Upgrade: websocket, Connection: Upgrade, a random Sec-WebSocket-Key,
 * Sec-WebSocket-Version: 13, no extension offered) and checks the answer:
 * 101, Upgrade: websocket, Connection: upgrade, Sec-WebSocket-Accept, no
 * extension. Then every socket sends one masked message of --size bytes
 * (text, or binary with --binary), waits for its echo, checks it byte for
 * byte and sends the next: --warmup seconds unmeasured, then --duration
 * seconds measured. Each message differs from the one before (it starts
 * with its number), so that a stale or misrouted echo is caught.
 *
 * Output: one JSON line at the end of the measured time (messages, seconds,
 * msgs_per_s, p50/p90/p99/max latency in µs, the errors by kind, the
 * first error's text, this process's CPU over the measured time). With
 * --mark, a line "measure" first, printed when the measured time begins
 * (the suite reads the server's CPU time at both lines).
 *
 * Errors are counted, never dropped: a connect or handshake that fails,
 * a close or reset, an echo that differs, a protocol error, an echo that
 * takes longer than --timeout. A connection that fails is not reopened.
 * Exit status: 0 no error, 1 errors, 2 usage, 3 no connection upgraded
 * (the reason on stderr). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define HEAD_MAX 8192
#define HIST_US 1000000 /* latencies of 1 µs resolution up to 1 s, then one bucket */

/* -- base64, and Sec-WebSocket-Accept with OpenSSL's SHA-1 (not the
 * server's own code: a check that shares the server's bug passes it) -- */

/* out holds 4 * ((len + 2) / 3) + 1 bytes */
static void base64(const unsigned char *in, size_t len, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0, o = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = tab[(v >> 6) & 63];
        out[o++] = tab[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = 0;
}

/* Sec-WebSocket-Accept for a key: base64(SHA-1(key GUID)); out[29] */
static void ws_accept(const char *key, char out[29])
{
    char in[128];
    unsigned char d[SHA_DIGEST_LENGTH];
    int n = snprintf(in, sizeof in, "%s%s", key, WS_GUID);
    SHA1((const unsigned char *)in, (size_t)n, d);
    base64(d, sizeof d, out);
}

/* -- options, counters ------------------------------------------------- */

static struct {
    const char *host, *port, *path;
    int conns;
    size_t size;
    double duration, warmup, timeout;
    int binary, mark;
} opt = {"127.0.0.1", "8080", "/", 256, 64, 5.0, 1.0, 10.0, 0, 0};

enum { E_CONNECT, E_HANDSHAKE, E_CLOSED, E_ECHO, E_PROTOCOL, E_TIMEOUT, E_KINDS };
static const char *const e_names[E_KINDS] = {"err_connect", "err_handshake", "err_closed",
                                             "err_echo",    "err_protocol",  "err_timeout"};
static uint64_t errs[E_KINDS];
static char first_error[256];
static uint32_t hist[HIST_US + 1];
static uint64_t measured, warm_msgs, max_us;
static int upgraded, open_conns;

enum phase { P_HANDSHAKES, P_WARMUP, P_MEASURE, P_DONE };
static enum phase phase = P_HANDSHAKES;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

__attribute__((format(printf, 3, 4))) static void fail_note(int kind, int conn, const char *fmt,
                                                            ...)
{
    errs[kind]++;
    if (first_error[0]) return;
    int n = snprintf(first_error, sizeof first_error, "connection %d: ", conn);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof first_error)
        vsnprintf(first_error + n, sizeof first_error - (size_t)n, fmt, ap);
    va_end(ap);
}

/* -- connections -------------------------------------------------------- */

enum state { S_CONNECTING, S_HEAD, S_OPEN, S_DEAD };

struct conn {
    int fd, id;
    enum state st;
    char key[25];
    unsigned char *in; /* bytes read, not yet used */
    size_t in_len, in_cap;
    unsigned char *out; /* bytes to write */
    size_t out_len, out_off, out_cap;
    unsigned char *sent; /* the payload of the message in flight, unmasked */
    uint64_t seq;        /* messages sent */
    uint64_t sent_us;    /* when the one in flight was sent; 0: none */
    size_t got;          /* payload bytes of its echo seen so far */
    int echo_started;    /* its first frame seen */
    int watching_out;
};

static struct conn *conns;
static int ep;
static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ws_load: out of memory\n");
        exit(2);
    }
    return p;
}

static void watch(struct conn *c, int want_out)
{
    if (c->watching_out == want_out) return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0u), .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->watching_out = want_out;
}

static void conn_close(struct conn *c)
{
    if (c->st == S_DEAD) return;
    if (c->st == S_OPEN) open_conns--;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->st = S_DEAD;
    c->sent_us = 0;
}

static void out_reserve(struct conn *c, size_t more)
{
    if (c->out_off && c->out_off == c->out_len) c->out_off = c->out_len = 0;
    if (c->out_len + more <= c->out_cap) return;
    size_t cap = c->out_cap ? c->out_cap : 256;
    while (cap < c->out_len + more) cap *= 2;
    unsigned char *p = realloc(c->out, cap);
    if (!p) {
        fprintf(stderr, "ws_load: out of memory\n");
        exit(2);
    }
    c->out = p;
    c->out_cap = cap;
}

/* writes what is queued; 0, or -1 when the connection failed */
static int flush_out(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            watch(c, 1);
            return 0;
        }
        fail_note(E_CLOSED, c->id, "send: %s", strerror(errno));
        conn_close(c);
        return -1;
    }
    c->out_off = c->out_len = 0;
    watch(c, 0);
    return 0;
}

/* a masked frame (FIN set) of opcode op with payload p (len bytes) queued */
static void queue_frame(struct conn *c, int op, const unsigned char *p, size_t len)
{
    out_reserve(c, len + 14);
    unsigned char *h = c->out + c->out_len;
    size_t n = 0;
    h[n++] = (unsigned char)(0x80 | op);
    if (len < 126) {
        h[n++] = (unsigned char)(0x80 | len);
    } else if (len <= 0xFFFF) {
        h[n++] = 0x80 | 126;
        h[n++] = (unsigned char)(len >> 8);
        h[n++] = (unsigned char)len;
    } else {
        h[n++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) h[n++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    uint32_t m = rnd32();
    unsigned char mask[4] = {(unsigned char)(m >> 24), (unsigned char)(m >> 16),
                             (unsigned char)(m >> 8), (unsigned char)m};
    memcpy(h + n, mask, 4);
    n += 4;
    unsigned char m8[8] = {mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3]};
    uint64_t m64;
    memcpy(&m64, m8, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) { /* eight bytes at a time: the mask repeats every four */
        uint64_t v;
        memcpy(&v, p + i, 8);
        v ^= m64;
        memcpy(h + n + i, &v, 8);
    }
    for (; i < len; i++) h[n + i] = p[i] ^ mask[i & 3];
    c->out_len += n + len;
}

/* the next message: its number in 16 hex digits, then the connection's
 * pattern, written once (printable ASCII: valid UTF-8 for a text message) */
static int send_message(struct conn *c)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t seq = c->seq++;
    for (size_t i = 0; i < opt.size && i < 16; i++)
        c->sent[i] = (unsigned char)hex[(seq >> (4 * (15 - i))) & 15];
    c->got = 0;
    c->echo_started = 0;
    c->sent_us = now_us();
    queue_frame(c, opt.binary ? 2 : 1, c->sent, opt.size);
    return flush_out(c);
}

static void record_echo(struct conn *c)
{
    uint64_t t = now_us() - c->sent_us;
    c->sent_us = 0;
    if (phase == P_MEASURE) {
        measured++;
        hist[t < HIST_US ? t : HIST_US]++;
        if (t > max_us) max_us = t;
    } else if (phase == P_WARMUP) {
        warm_msgs++;
    }
}

static void start_handshake(struct conn *c)
{
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        for (int i = 0; i < 16; i++) raw[i] = (unsigned char)rnd32();
    base64(raw, 16, c->key);
    out_reserve(c, 512 + strlen(opt.path) + strlen(opt.host));
    int n = snprintf((char *)c->out + c->out_len, c->out_cap - c->out_len,
                     "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     opt.path, opt.host, opt.port, c->key);
    c->out_len += (size_t)n;
    c->st = S_HEAD;
    flush_out(c);
}

/* the value of header name in head (lines after the first), or NULL;
 * *len its length, spaces trimmed */
static const char *header(const char *head, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    const char *p = strstr(head, "\r\n");
    while (p && p[2] != '\r') {
        const char *line = p + 2;
        const char *end = strstr(line, "\r\n");
        if (!end) break;
        if ((size_t)(end - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (v < end && (*v == ' ' || *v == '\t')) v++;
            const char *e = end;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
            *len = (size_t)(e - v);
            return v;
        }
        p = end;
    }
    return NULL;
}

static int has_token(const char *v, size_t len, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= len; i++)
        if (strncasecmp(v + i, tok, tl) == 0 && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + tl == len || v[i + tl] == ',' || v[i + tl] == ' '))
            return 1;
    return 0;
}

/* the response head, once whole: 1 upgraded, 0 more to read, -1 failed */
static int read_head(struct conn *c)
{
    unsigned char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end) {
        if (c->in_len >= HEAD_MAX) {
            fail_note(E_HANDSHAKE, c->id, "response head over %d bytes", HEAD_MAX);
            return -1;
        }
        return 0;
    }
    size_t hl = (size_t)(end - c->in) + 4;
    char *head = xmalloc(hl + 1);
    memcpy(head, c->in, hl);
    head[hl] = 0;
    char *eol = strstr(head, "\r\n");
    int ok = -1;
    size_t vl = 0;
    const char *v;
    char want[29];
    ws_accept(c->key, want);
    if (strncmp(head, "HTTP/1.1 101", 12) != 0 || (head[12] != ' ' && head[12] != '\r')) {
        *eol = 0;
        fail_note(E_HANDSHAKE, c->id, "not upgraded: %s", head);
    } else if (!(v = header(head, "Upgrade", &vl)) || !has_token(v, vl, "websocket")) {
        fail_note(E_HANDSHAKE, c->id, "101 without Upgrade: websocket");
    } else if (!(v = header(head, "Connection", &vl)) || !has_token(v, vl, "upgrade")) {
        fail_note(E_HANDSHAKE, c->id, "101 without Connection: upgrade");
    } else if (!(v = header(head, "Sec-WebSocket-Accept", &vl)) || vl != 28 ||
               memcmp(v, want, 28) != 0) {
        fail_note(E_HANDSHAKE, c->id, "Sec-WebSocket-Accept %.*s, not %s", v ? (int)vl : 1,
                  v ? v : "-", want);
    } else if ((v = header(head, "Sec-WebSocket-Extensions", &vl))) {
        fail_note(E_HANDSHAKE, c->id, "an extension none was offered: %.*s", (int)vl, v);
    } else {
        ok = 1;
    }
    free(head);
    if (ok < 0) return -1;
    memmove(c->in, c->in + hl, c->in_len - hl);
    c->in_len -= hl;
    return 1;
}

/* the frames in c->in; 0, or -1 when the connection is done */
static int read_frames(struct conn *c)
{
    size_t off = 0;
    int rc = 0;
    while (c->in_len - off >= 2) {
        unsigned char *f = c->in + off;
        size_t avail = c->in_len - off;
        int fin = f[0] >> 7, op = f[0] & 15;
        uint64_t len = f[1] & 127;
        size_t hl = 2;
        if (f[0] & 0x70) {
            fail_note(E_PROTOCOL, c->id, "RSV bits set (no extension was agreed)");
            rc = -1;
            break;
        }
        if (f[1] & 0x80) {
            fail_note(E_PROTOCOL, c->id, "a masked frame from the server");
            rc = -1;
            break;
        }
        if (len == 126) {
            if (avail < 4) break;
            len = (uint64_t)f[2] << 8 | f[3];
            hl = 4;
        } else if (len == 127) {
            if (avail < 10) break;
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | f[2 + i];
            hl = 10;
        }
        if (len > (1u << 30)) {
            fail_note(E_PROTOCOL, c->id, "a frame of %llu bytes", (unsigned long long)len);
            rc = -1;
            break;
        }
        /* a data frame is checked as it comes; a control frame whole */
        if (avail < hl + len) {
            size_t need = hl + (size_t)len;
            if (need > c->in_cap) {
                size_t cap = c->in_cap;
                while (cap < need) cap *= 2;
                unsigned char *p = realloc(c->in, cap);
                if (!p) {
                    fprintf(stderr, "ws_load: out of memory\n");
                    exit(2);
                }
                c->in = p;
                c->in_cap = cap;
            }
            break;
        }
        const unsigned char *p = f + hl;
        off += hl + (size_t)len;
        if (op == 8) {
            unsigned code = len >= 2 ? (unsigned)p[0] << 8 | p[1] : 0;
            fail_note(E_CLOSED, c->id, "close frame from the server, code %u%s%.*s", code,
                      len > 2 ? ": " : "", len > 2 ? (int)(len - 2) : 0, (const char *)p + 2);
            rc = -1;
            break;
        }
        if (op == 9) { /* ping: the same payload back */
            queue_frame(c, 10, p, (size_t)len);
            if (flush_out(c) < 0) return -1;
            continue;
        }
        if (op == 10) continue;
        if (op != 0 && op != 1 && op != 2) {
            fail_note(E_PROTOCOL, c->id, "unknown opcode %d", op);
            rc = -1;
            break;
        }
        if (!c->sent_us) {
            fail_note(E_ECHO, c->id, "a message when none was in flight");
            rc = -1;
            break;
        }
        if (!c->echo_started && op != (opt.binary ? 2 : 1)) {
            fail_note(E_ECHO, c->id, "an echo of opcode %d, not %d", op, opt.binary ? 2 : 1);
            rc = -1;
            break;
        }
        if (c->echo_started && op != 0) {
            fail_note(E_PROTOCOL, c->id, "a new message inside a fragmented one");
            rc = -1;
            break;
        }
        c->echo_started = 1;
        if (c->got + len > opt.size || memcmp(p, c->sent + c->got, (size_t)len) != 0) {
            fail_note(E_ECHO, c->id, "echo of message %llu differs from what was sent",
                      (unsigned long long)(c->seq - 1));
            rc = -1;
            break;
        }
        c->got += (size_t)len;
        if (!fin) continue;
        if (c->got != opt.size) {
            fail_note(E_ECHO, c->id, "echo of %zu bytes, not %zu", c->got, opt.size);
            rc = -1;
            break;
        }
        record_echo(c);
        if (phase != P_DONE && phase != P_HANDSHAKES && send_message(c) < 0) return -1;
    }
    if (rc < 0) {
        conn_close(c);
        return -1;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 0;
}

static void on_readable(struct conn *c)
{
    if (c->in_len == c->in_cap) {
        size_t cap = c->in_cap * 2;
        unsigned char *p = realloc(c->in, cap);
        if (!p) {
            fprintf(stderr, "ws_load: out of memory\n");
            exit(2);
        }
        c->in = p;
        c->in_cap = cap;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
        if (c->st == S_HEAD)
            fail_note(E_HANDSHAKE, c->id, "%s before a response head",
                      n == 0 ? "closed" : strerror(errno));
        else
            fail_note(E_CLOSED, c->id, "%s by the server", n == 0 ? "closed" : strerror(errno));
        conn_close(c);
        return;
    }
    c->in_len += (size_t)n;
    if (c->st == S_HEAD) {
        int r = read_head(c);
        if (r == 0) return;
        if (r < 0) {
            conn_close(c);
            return;
        }
        c->st = S_OPEN;
        upgraded++;
        open_conns++;
        /* the messages start when every handshake is done */
        if (phase != P_HANDSHAKES && send_message(c) < 0) return;
    }
    read_frames(c);
}

static void on_event(struct conn *c, uint32_t ev)
{
    if (c->st == S_DEAD) return; /* closed earlier in this batch */
    if (c->st == S_CONNECTING) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err || (ev & (EPOLLERR | EPOLLHUP))) {
            fail_note(E_CONNECT, c->id, "connect: %s", strerror(err ? err : ECONNRESET));
            conn_close(c);
            return;
        }
        start_handshake(c);
        return;
    }
    if (ev & EPOLLOUT) {
        if (flush_out(c) < 0) return;
    }
    if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
}

static int open_conn(struct conn *c, const struct addrinfo *ai)
{
    c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        fail_note(E_CONNECT, c->id, "socket: %s", strerror(errno));
        c->st = S_DEAD;
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->st = S_CONNECTING;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    c->watching_out = 1;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        fail_note(E_CONNECT, c->id, "epoll_ctl: %s", strerror(errno));
        close(c->fd);
        c->st = S_DEAD;
        return -1;
    }
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
        fail_note(E_CONNECT, c->id, "connect: %s", strerror(errno));
        conn_close(c);
        return -1;
    }
    return 0;
}

/* echoes awaited longer than --timeout: counted, and the connection closed */
static void check_stalls(void)
{
    uint64_t t = now_us(), lim = (uint64_t)(opt.timeout * 1e6);
    for (int i = 0; i < opt.conns; i++) {
        struct conn *c = &conns[i];
        if (c->st == S_OPEN && c->sent_us && t - c->sent_us > lim) {
            fail_note(E_TIMEOUT, c->id, "no echo within %g s", opt.timeout);
            conn_close(c);
        }
    }
}

static uint64_t percentile(double q)
{
    if (!measured) return 0;
    uint64_t want = (uint64_t)((double)measured * q);
    if (want >= measured) want = measured - 1;
    uint64_t seen = 0;
    for (uint64_t i = 0; i <= HIST_US; i++) {
        seen += hist[i];
        if (seen > want) return i < HIST_US ? i : max_us;
    }
    return max_us;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ws_load [options]\n"
               "  --host H        server address (default 127.0.0.1)\n"
               "  --port P        server port (default 8080)\n"
               "  --path P        the path upgraded (default /)\n"
               "  --conns N       WebSockets, each with one message in flight (default 256)\n"
               "  --size N        message payload bytes (default 64)\n"
               "  --binary        binary messages (default: text)\n"
               "  --duration S    measured seconds (default 5)\n"
               "  --warmup S      unmeasured seconds before (default 1)\n"
               "  --timeout S     handshakes, and each echo, within S seconds (default 10)\n"
               "  --mark          print a line \"measure\" when the measured time begins\n"
               "  --self-test     check Sec-WebSocket-Accept (RFC 6455 §1.3), then exit\n"
               "Prints one JSON line; exit 0 no error, 1 errors, 2 usage, 3 nothing upgraded.\n");
}

static int self_test(void)
{
    char acc[29];
    ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc); /* RFC 6455, 1.3 */
    int ok = strcmp(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0;
    printf("self-test: %s (accept %s)\n", ok ? "ok" : "FAILED", acc);
    return ok ? 0 : 1;
}

static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--binary")) {
            opt.binary = 1;
            continue;
        }
        if (!strcmp(a, "--mark")) {
            opt.mark = 1;
            continue;
        }
        if (!strcmp(a, "--self-test")) exit(self_test());
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "ws_load: %s needs a value\n", a);
            return -1;
        }
        i++;
        errno = 0;
        if (!strcmp(a, "--host")) {
            opt.host = v;
        } else if (!strcmp(a, "--port")) {
            opt.port = v;
        } else if (!strcmp(a, "--path")) {
            opt.path = v;
            if (v[0] != '/' || strpbrk(v, " \r\n")) {
                fprintf(stderr, "ws_load: --path must start with / and hold no space\n");
                return -1;
            }
        } else if (!strcmp(a, "--conns")) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000) goto bad;
            opt.conns = (int)n;
        } else if (!strcmp(a, "--size")) {
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > (1L << 28)) goto bad;
            opt.size = (size_t)n;
        } else if (!strcmp(a, "--duration") || !strcmp(a, "--warmup") || !strcmp(a, "--timeout")) {
            double d = strtod(v, &end);
            if (*end || errno || d < 0 || d > 1e6) goto bad;
            if (!strcmp(a, "--duration")) opt.duration = d;
            if (!strcmp(a, "--warmup")) opt.warmup = d;
            if (!strcmp(a, "--timeout")) opt.timeout = d;
        } else {
            fprintf(stderr, "ws_load: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
        continue;
    bad:
        fprintf(stderr, "ws_load: bad value for %s: %s\n", a, v);
        return -1;
    }
    if (opt.duration <= 0 || opt.timeout <= 0) {
        fprintf(stderr, "ws_load: --duration and --timeout must be positive\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv) < 0) return 2;
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)opt.conns + 16) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int gai = getaddrinfo(opt.host, opt.port, &hints, &ai);
    if (gai) {
        fprintf(stderr, "ws_load: %s:%s: %s\n", opt.host, opt.port, gai_strerror(gai));
        return 2;
    }
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) == (ssize_t)sizeof seed && seed) rng = seed;
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("ws_load: epoll_create1");
        return 2;
    }
    conns = calloc((size_t)opt.conns, sizeof *conns);
    if (!conns) return 2;
    for (int i = 0; i < opt.conns; i++) {
        struct conn *c = &conns[i];
        c->id = i;
        c->in_cap = opt.size + 64 > 4096 ? opt.size + 64 : 4096;
        c->in = xmalloc(c->in_cap);
        c->sent = xmalloc(opt.size);
        for (size_t k = 16; k < opt.size; k++)
            c->sent[k] = (unsigned char)('a' + (k * 7 + (size_t)i) % 26);
        open_conn(c, ai);
    }
    freeaddrinfo(ai);

    struct epoll_event evs[256];
    double t_start = now_s(), t_phase = 0, t_measure = 0, t_end = 0, cpu0 = 0, t_check = t_start;
    double deadline = t_start + opt.timeout;
    for (;;) {
        double t = now_s();
        if (phase == P_HANDSHAKES) {
            int pending = 0;
            for (int i = 0; i < opt.conns; i++)
                if (conns[i].st == S_CONNECTING || conns[i].st == S_HEAD) pending++;
            if (pending && t >= deadline) {
                for (int i = 0; i < opt.conns; i++) {
                    struct conn *c = &conns[i];
                    if (c->st == S_CONNECTING || c->st == S_HEAD) {
                        fail_note(c->st == S_CONNECTING ? E_CONNECT : E_HANDSHAKE, c->id,
                                  "no %s within %g s",
                                  c->st == S_CONNECTING ? "connection" : "response head",
                                  opt.timeout);
                        conn_close(c);
                    }
                }
                pending = 0;
            }
            if (!pending) {
                if (!upgraded) break;
                phase = opt.warmup > 0 ? P_WARMUP : P_MEASURE;
                t_phase = t;
                if (phase == P_MEASURE) {
                    t_measure = t;
                    cpu0 = cpu_s();
                    if (opt.mark) {
                        puts("measure");
                        fflush(stdout);
                    }
                }
                for (int i = 0; i < opt.conns; i++)
                    if (conns[i].st == S_OPEN) send_message(&conns[i]);
            }
        } else if (phase == P_WARMUP && t - t_phase >= opt.warmup) {
            phase = P_MEASURE;
            t_measure = t;
            cpu0 = cpu_s();
            if (opt.mark) {
                puts("measure");
                fflush(stdout);
            }
        } else if (phase == P_MEASURE && t - t_measure >= opt.duration) {
            phase = P_DONE;
            t_end = t;
            break;
        }
        if (phase != P_HANDSHAKES && t - t_check >= 0.1) {
            check_stalls();
            t_check = t;
        }
        if (phase != P_HANDSHAKES && open_conns == 0) {
            t_end = t;
            break;
        }
        int n = epoll_wait(ep, evs, 256, 10);
        if (n < 0 && errno != EINTR) {
            perror("ws_load: epoll_wait");
            return 2;
        }
        for (int i = 0; i < n; i++) on_event(evs[i].data.ptr, evs[i].events);
    }
    double cpu = t_measure ? cpu_s() - cpu0 : 0;
    double secs = t_measure ? t_end - t_measure : 0;
    /* echoes in flight at the end, past the timeout, are errors too */
    check_stalls();
    uint64_t total = 0;
    for (int k = 0; k < E_KINDS; k++) total += errs[k];
    printf("{\"messages\": %llu, \"seconds\": %.3f, \"msgs_per_s\": %.1f, \"p50_us\": %llu, "
           "\"p90_us\": %llu, \"p99_us\": %llu, \"max_us\": %llu, \"errors\": %llu",
           (unsigned long long)measured, secs, secs > 0 ? (double)measured / secs : 0.0,
           (unsigned long long)percentile(0.50), (unsigned long long)percentile(0.90),
           (unsigned long long)percentile(0.99), (unsigned long long)max_us,
           (unsigned long long)total);
    for (int k = 0; k < E_KINDS; k++)
        printf(", \"%s\": %llu", e_names[k], (unsigned long long)errs[k]);
    printf(", \"conns\": %d, \"upgraded\": %d, \"open_at_end\": %d, \"size\": %zu, \"type\": "
           "\"%s\", \"warmup_messages\": %llu, \"client_cpu_s\": %.3f, \"client_cpu_pct\": %.1f, "
           "\"first_error\": ",
           opt.conns, upgraded, open_conns, opt.size, opt.binary ? "binary" : "text",
           (unsigned long long)warm_msgs, cpu, secs > 0 ? 100.0 * cpu / secs : 0.0);
    json_string(first_error);
    printf("}\n");
    fflush(stdout);
    /* a close frame (1000) to each connection still open, then the sockets */
    static const unsigned char bye[2] = {0x03, 0xe8};
    for (int i = 0; i < opt.conns; i++) {
        struct conn *c = &conns[i];
        if (c->st != S_OPEN) continue;
        c->out_off = c->out_len = 0;
        queue_frame(c, 8, bye, 2);
        (void)!send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(c->fd);
    }
    if (!upgraded) {
        fprintf(stderr, "ws_load: no connection upgraded: %s\n",
                first_error[0] ? first_error : "?");
        return 3;
    }
    if (total)
        fprintf(stderr, "ws_load: %llu errors; first: %s\n", (unsigned long long)total,
                first_error);
    return total ? 1 : 0;
}
