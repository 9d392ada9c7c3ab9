/* HTTPS: OpenSSL 3 on the engine's non-blocking sockets. The handshake runs
 * on a worker like a request head: what the socket holds is used, and on
 * WANT_READ the connection goes back to epoll (under the handshake
 * deadline), holding no thread. Reads and writes map OpenSSL's WANT_READ and
 * WANT_WRITE onto the engine's waits; bytes OpenSSL has already read or
 * decrypted (SSL_has_pending) count as buffered, so such a connection is
 * never put to sleep in epoll with a request waiting inside OpenSSL. */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server_impl.h"

/* ALPN (RFC 7301): h2 first when HTTP/2 is on (RFC 9113 §3.2), then
 * http/1.1, whatever order the client lists them in, as nginx chooses. A
 * client that offers only other protocols goes on without ALPN rather
 * than being refused. */
static int offers(const unsigned char *in, unsigned inlen, const char *proto,
                  const unsigned char **out, unsigned char *outlen)
{
    size_t want = strlen(proto);
    for (unsigned i = 0; i < inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen) break;
        if (n == want && memcmp(in + i + 1, proto, n) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return 1;
        }
        i += 1 + n;
    }
    return 0;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg)
{
    (void)ssl;
    const cshs_server *s = arg;
    if (s->o.http2 && offers(in, inlen, "h2", out, outlen)) return SSL_TLSEXT_ERR_OK;
    if (offers(in, inlen, "http/1.1", out, outlen)) return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}

/* RFC 9113 §9.2.2: over TLS 1.2, HTTP/2 needs an ephemeral key exchange
 * and an AEAD cipher; the rest of the block list of its Appendix A is
 * made of suites without one or the other. TLS 1.3 suites all qualify. */
int cshs__tls_h2_adequate(const cshs_conn *c)
{
    if (SSL_version(c->ssl) >= TLS1_3_VERSION) return 1;
    const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
    if (!ci || !SSL_CIPHER_is_aead(ci)) return 0;
    int kx = SSL_CIPHER_get_kx_nid(ci);
    return kx == NID_kx_ecdhe || kx == NID_kx_dhe;
}

/* The protocol ALPN chose: 2 for h2, else 1. */
int cshs__tls_alpn(const cshs_conn *c)
{
    const unsigned char *p = NULL;
    unsigned n = 0;
    SSL_get0_alpn_selected(c->ssl, &p, &n);
    return n == 2 && memcmp(p, "h2", 2) == 0 ? 2 : 1;
}

static SSL_CTX *make_ctx(cshs_server *s)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                 SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* whole socket reads rather than a record header and a body apart */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, s);
    const cshs_options *o = &s->o;
    if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int cshs__tls_init(cshs_server *s)
{
    s->ssl_ctx = make_ctx(s);
    return s->ssl_ctx ? 0 : -EIO;
}

void cshs__tls_free(cshs_server *s)
{
    SSL_CTX_free(s->ssl_ctx);
    s->ssl_ctx = NULL;
}

int cshs_server_reload_tls(cshs_server *s)
{
    if (!s || !s->o.tls_cert || !*s->o.tls_cert) return -EINVAL;
    SSL_CTX *n = make_ctx(s);
    if (!n) return -EIO;
    pthread_mutex_lock(&s->tls_mu);
    SSL_CTX *old = s->ssl_ctx;
    s->ssl_ctx = n;
    pthread_mutex_unlock(&s->tls_mu);
    SSL_CTX_free(old); /* connections made with it hold references */
    return 0;
}

/* After each read OpenSSL makes of the socket: whether it got less than it
 * asked for (with read-ahead it asks for the room of its buffer), that is,
 * the socket held no more at that moment. tls_read stops there. */
static long note_socket_read(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
                             int ret, size_t *processed)
{
    (void)argp;
    (void)argi;
    (void)argl;
    if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
        cshs_conn *c = (cshs_conn *)BIO_get_callback_arg(b);
        c->tls_drained = (char)(ret > 0 && processed && *processed < len);
    }
    return ret;
}

int cshs__tls_attach(cshs_conn *c)
{
    cshs_server *s = c->srv;
    pthread_mutex_lock(&s->tls_mu);
    SSL *ssl = s->ssl_ctx ? SSL_new(s->ssl_ctx) : NULL;
    pthread_mutex_unlock(&s->tls_mu);
    if (!ssl) return -ENOMEM;
    if (!SSL_set_fd(ssl, c->fd)) {
        SSL_free(ssl);
        return -ENOMEM;
    }
    BIO *sock = SSL_get_rbio(ssl);
    BIO_set_callback_ex(sock, note_socket_read);
    BIO_set_callback_arg(sock, (char *)c);
    c->tls_drained = 0;
    SSL_set_accept_state(ssl);
    c->ssl = ssl;
    c->tls_state = TLS_HANDSHAKE;
    c->io = &cshs__tls_stream;
    return 0;
}

/* Maps an OpenSSL result: -EAGAIN (wants to read), -EINPROGRESS (wants to
 * write), 0 (the peer closed the TLS session), -EIO. */
static int map_error(cshs_conn *c, int r)
{
    int e = SSL_get_error(c->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        return -EINPROGRESS;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        return errno ? -errno : 0; /* 0: end of input without close_notify */
    default:
        ERR_clear_error();
        return -EIO;
    }
}

int cshs__tls_handshake(cshs_conn *c)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->tls_state = TLS_OPEN;
        atomic_fetch_add(&c->srv->c_tls_handshakes, 1);
        return 1;
    }
    r = map_error(c, r);
    return r == 0 ? -EIO : r;
}

/* ---- the TLS stream (server_impl.h, cshs_stream_ops) ---- */

/* -EAGAIN from OpenSSL may mean "wait to read" or "wait to write"
 * (io_wait says which; a wait to write registers the socket for it,
 * connection.c), and the edge of either brings the next try. Records are
 * read until the buffer is full, OpenSSL wants the socket, or OpenSSL holds
 * nothing more and its last read of the socket was short (tls_drained):
 * one SSL_read returns at most one record, and the socket may hold more.
 * A short return thus means the socket held no more, as a short read of a
 * plain socket does (connection.c trusts it until the next event: each
 * arrival makes one on an edge-triggered registration). Stopping there
 * saves the read that would only say EAGAIN: one of three system calls
 * per keep-alive request over HTTPS. */
static ssize_t tls_read(cshs_conn *c, void *buf, size_t len)
{
    size_t got = 0;
    c->io_wait = POLLIN;
    while (got < len) {
        ERR_clear_error();
        errno = 0; /* SSL_ERROR_SYSCALL reads it: no stale value may pass for EAGAIN */
        size_t n = 0;
        int r = SSL_read_ex(c->ssl, (char *)buf + got, len - got, &n);
        if (r == 1) {
            got += n;
            if (c->tls_drained && !SSL_has_pending(c->ssl)) break;
            continue;
        }
        r = map_error(c, r);
        if (r == -EINPROGRESS) {
            c->io_wait = POLLOUT;
            r = -EAGAIN;
        }
        /* bytes read come first; the end or the error is met again */
        if (got) return (ssize_t)got;
        return r;
    }
    return (ssize_t)got;
}

static ssize_t tls_write(cshs_conn *c, const void *buf, size_t len)
{
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    int r = SSL_write_ex(c->ssl, buf, len, &n);
    if (r == 1) return (ssize_t)n; /* io_wait stays the last read's (connection.c) */
    c->io_wait = POLLOUT;
    r = map_error(c, r);
    if (r == -EAGAIN) c->io_wait = POLLIN; /* OpenSSL wants to read first */
    if (r == -EINPROGRESS) return -EAGAIN;
    return r == 0 ? -EPIPE : r;
}

static int tls_pending(const cshs_conn *c)
{
    return SSL_has_pending(c->ssl);
}

/* One try at a close_notify, if the socket takes it; the session is
 * freed, and the connection's bytes are plain from here on (what a
 * lingering close reads is discarded). */
static void tls_close(cshs_conn *c)
{
    if (c->tls_state == TLS_OPEN) {
        ERR_clear_error();
        SSL_shutdown(c->ssl);
        ERR_clear_error();
    }
    cshs__tls_drop(c);
}

void cshs__tls_drop(cshs_conn *c)
{
    SSL_free(c->ssl);
    c->ssl = NULL;
    c->tls_state = TLS_NONE;
    c->io = &cshs__plain_stream;
}

/* No sendfile: the file's bytes are read and encrypted (connection.c). */
const cshs_stream_ops cshs__tls_stream = {tls_read, tls_write, NULL, tls_pending, tls_close};
