/* The plan of a run: the target's address, the request bytes, TLS. */
#include "load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cshttp/version.h>

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#include <stdarg.h>
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

static int build_request(load_plan *p, const load_options *o, char *err, size_t errlen)
{
    size_t cap = strlen(o->method) + strlen(o->path) + strlen(o->authority) +
                 (o->headers ? strlen(o->headers) : 0) + o->body_len + 256;
    char *r = malloc(cap);
    if (!r) return fail(err, errlen, 2, "out of memory");
    int n = snprintf(r, cap, "%s %s HTTP/1.1\r\n", o->method, o->path);
    if (!o->has_host) n += snprintf(r + n, cap - (size_t)n, "Host: %s\r\n", o->authority);
    if (!o->has_agent)
        n += snprintf(r + n, cap - (size_t)n, "User-Agent: cshttp-load/%s\r\n", CSH_VERSION_STRING);
    if (o->headers) n += snprintf(r + n, cap - (size_t)n, "%s", o->headers);
    /* RFC 9110 §8.6: a body is announced by its length; a POST without one
     * still says Content-Length: 0 so no server waits for a body */
    if (o->has_body || !strcmp(o->method, "POST") || !strcmp(o->method, "PUT"))
        n += snprintf(r + n, cap - (size_t)n, "Content-Length: %zu\r\n", o->body_len);
    if (!o->keepalive) n += snprintf(r + n, cap - (size_t)n, "Connection: close\r\n");
    n += snprintf(r + n, cap - (size_t)n, "\r\n");
    memcpy(r + n, o->body ? o->body : "", o->body_len);
    p->request = r;
    p->request_len = (size_t)n + o->body_len;

    size_t copies = (size_t)o->pipeline + 1;
    p->batch_len = p->request_len * copies;
    p->batch = malloc(p->batch_len);
    if (!p->batch) return fail(err, errlen, 2, "out of memory");
    for (size_t i = 0; i < copies; i++) memcpy(p->batch + i * p->request_len, r, p->request_len);
    if (!strcmp(o->method, "HEAD"))
        p->method = CSH_METHOD_HEAD;
    else if (!strcmp(o->method, "CONNECT"))
        p->method = CSH_METHOD_CONNECT;
    else
        p->method = CSH_METHOD_GET;
    return 0;
}

static int build_tls(load_plan *p, const load_options *o, char *err, size_t errlen)
{
    p->tls = SSL_CTX_new(TLS_client_method());
    if (!p->tls) return fail(err, errlen, 2, "TLS: cannot create a context");
    SSL_CTX_set_min_proto_version(p->tls, TLS1_2_VERSION);
    SSL_CTX_set_mode(p->tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(p->tls, alpn, sizeof alpn - 1);
    if (o->cacert) {
        if (SSL_CTX_load_verify_locations(p->tls, o->cacert, NULL) != 1) {
            char text[120];
            ERR_error_string_n(ERR_get_error(), text, sizeof text);
            return fail(err, errlen, 2, "--cacert '%s': no usable certificate (%s)", o->cacert,
                        text);
        }
        SSL_CTX_set_verify(p->tls, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_CTX_set_verify(p->tls, SSL_VERIFY_NONE, NULL);
    }
    return 0;
}

int load_plan_init(load_plan *p, const load_options *o, unsigned max_connections, char *err,
                   size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->opt = o;
    p->timeout_ns = (uint64_t)(o->timeout_s * 1e9);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int r = getaddrinfo(o->host, o->port, &hints, &res);
    if (r || !res)
        return fail(err, errlen, 3, "cannot resolve host '%s': %s", o->host,
                    r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
    memcpy(&p->addr, res->ai_addr, res->ai_addrlen);
    p->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    char ip[INET6_ADDRSTRLEN] = "?";
    bool loopback4 = false;
    if (p->addr.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&p->addr;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        loopback4 = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
        snprintf(p->addr_text, sizeof p->addr_text, "%s:%s", ip, o->port);
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&p->addr;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(p->addr_text, sizeof p->addr_text, "[%s]:%s", ip, o->port);
    }

    /* One source address gives about 28,000 ephemeral ports toward one
     * server port (net.ipv4.ip_local_port_range), fewer with TIME_WAIT. */
    uint64_t total = (uint64_t)max_connections + o->idle;
    if (o->source_addrs > 1) {
        if (!loopback4)
            return fail(err, errlen, 2,
                        "--source-addrs: the target %s is not on 127.0.0.0/8, so 127.0.0.x "
                        "cannot reach it",
                        p->addr_text);
        p->source_addrs = o->source_addrs;
    } else if (o->source_addrs == 0 && loopback4 && total > 20000) {
        p->source_addrs = (unsigned)(total / 20000 + 1);
        if (p->source_addrs > 254) p->source_addrs = 254;
    }

    r = build_request(p, o, err, errlen);
    if (r) return r;
    if (o->https) return build_tls(p, o, err, errlen);
    return 0;
}

void load_plan_free(load_plan *p)
{
    free(p->request);
    free(p->batch);
    if (p->tls) SSL_CTX_free(p->tls);
    memset(p, 0, sizeof *p);
}

/* Waits for `events` on fd until the deadline; 0, or -1 after it. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = load_now_ns();
        if (now >= deadline) return -1;
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

int load_plan_probe(const load_plan *p, char *err, size_t errlen)
{
    const load_options *o = p->opt;
    uint64_t deadline = load_now_ns() + p->timeout_ns;
    int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(err, errlen, 3, "cannot create a socket: %s", strerror(errno));
    int rc = 0;
    if (connect(fd, (const struct sockaddr *)&p->addr, p->addrlen) && errno != EINPROGRESS) {
        rc = fail(err, errlen, 3, "cannot connect to %s:%s (%s): %s", o->host, o->port,
                  p->addr_text, strerror(errno));
    } else if (wait_fd(fd, POLLOUT, deadline)) {
        rc = fail(err, errlen, 3, "cannot connect to %s:%s (%s): no answer within %.3g s", o->host,
                  o->port, p->addr_text, o->timeout_s);
    } else {
        int e = 0;
        socklen_t len = sizeof e;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
        if (e)
            rc = fail(err, errlen, 3, "cannot connect to %s:%s (%s): %s", o->host, o->port,
                      p->addr_text, strerror(e));
    }
    if (rc == 0 && p->tls) {
        SSL *ssl = SSL_new(p->tls);
        SSL_set_fd(ssl, fd);
        struct in6_addr a6;
        struct in_addr a4;
        if (inet_pton(AF_INET, o->host, &a4) != 1 && inet_pton(AF_INET6, o->host, &a6) != 1)
            SSL_set_tlsext_host_name(ssl, o->host);
        if (o->cacert) SSL_set1_host(ssl, o->host);
        for (;;) {
            ERR_clear_error();
            int r = SSL_connect(ssl);
            if (r == 1) break;
            int e = SSL_get_error(ssl, r);
            short want = e == SSL_ERROR_WANT_READ    ? POLLIN
                         : e == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                     : 0;
            if (want && wait_fd(fd, want, deadline) == 0) continue;
            const char *why = "the server closed the connection";
            char text[160];
            long vr = SSL_get_verify_result(ssl);
            if (vr != X509_V_OK) {
                why = X509_verify_cert_error_string(vr);
            } else if (ERR_peek_error()) {
                ERR_error_string_n(ERR_get_error(), text, sizeof text);
                why = text;
            } else if (want) {
                why = "no answer within the timeout";
            }
            rc = fail(err, errlen, 3, "TLS handshake with %s:%s (%s) failed: %s", o->host, o->port,
                      p->addr_text, why);
            break;
        }
        SSL_free(ssl);
    }
    close(fd);
    return rc;
}
