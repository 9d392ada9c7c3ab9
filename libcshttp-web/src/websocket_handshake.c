/* The WebSocket opening handshake (RFC 6455 §4.2), the choice of a
 * subprotocol and of permessage-deflate's parameters (RFC 7692 §7.1),
 * and the Origin check against cross-site hijacking (RFC 6455 §10.2). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cshttp/grammar.h>
#include <cshttp/web/error.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>
#include <cshttp/web/websocket.h>

#include "util.h"
#include "websocket_impl.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define MAX_VALUES 16 /* repeated fields looked at (Connection, Upgrade, ...) */

void cshw_ws_options_init(cshw_ws_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->max_message = 1u << 20;
    o->max_fragments = 4096;
    o->deflate = 1;
    o->deflate_window_bits = 15;
    o->deflate_min = 64;
    o->ping_interval_ms = 30000;
    o->pong_timeout_ms = 20000;
    o->close_timeout_ms = 5000;
}

int cshw__ws_options_valid(const cshw_ws_options *o)
{
    return o && o->size == sizeof *o && o->max_message > 0 && o->max_fragments > 0 &&
           o->deflate_window_bits >= 8 && o->deflate_window_bits <= 15;
}

/* SHA-1 (FIPS 180-4), for Sec-WebSocket-Accept only: not a security use. */
typedef struct sha1 {
    uint32_t h[5];
    uint64_t len;
    unsigned char block[64];
    size_t fill;
} sha1;

static uint32_t rol(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(sha1 *s, const unsigned char *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void sha1_add(sha1 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->len += n;
    while (n--) {
        s->block[s->fill++] = *p++;
        if (s->fill == 64) {
            sha1_block(s, s->block);
            s->fill = 0;
        }
    }
}

static void sha1_digest(const void *a, size_t an, const void *b, size_t bn, unsigned char out[20])
{
    sha1 s = {{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0}, 0, {0}, 0};
    sha1_add(&s, a, an);
    sha1_add(&s, b, bn);
    uint64_t bits = s.len * 8;
    unsigned char pad = 0x80;
    sha1_add(&s, &pad, 1);
    pad = 0;
    while (s.fill != 56) sha1_add(&s, &pad, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_add(&s, len, 8);
    for (int i = 0; i < 20; i++) out[i] = (unsigned char)(s.h[i / 4] >> (24 - 8 * (i % 4)));
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void cshw_ws_accept_value(const char *key, size_t key_len, char out[29])
{
    unsigned char d[21];
    sha1_digest(key, key_len, WS_GUID, sizeof WS_GUID - 1, d);
    d[20] = 0;
    size_t o = 0;
    for (size_t i = 0; i < 21; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        out[o++] = B64[v >> 18 & 63];
        out[o++] = B64[v >> 12 & 63];
        out[o++] = B64[v >> 6 & 63];
        out[o++] = B64[v & 63];
    }
    out[27] = '='; /* 20 bytes: the last group has two of its three */
    out[28] = '\0';
}

/* §4.2.1 item 5: base64 of 16 bytes, so 22 characters of the alphabet and
 * "==" (the last one's low four bits zero, as an encoder writes it). */
static int key_valid(const char *k)
{
    if (strlen(k) != 24 || k[22] != '=' || k[23] != '=') return 0;
    for (int i = 0; i < 22; i++) {
        const char *at = memchr(B64, k[i], 64);
        if (!k[i] || !at) return 0;
        if (i == 21 && ((at - B64) & 15)) return 0;
    }
    return 1;
}

/* A token among the comma-separated lists of every `name` field. */
static int field_has(cshw_request *req, const char *name, const char *token)
{
    const char *values[MAX_VALUES];
    size_t n = cshw_request_header_all(req, name, values, MAX_VALUES);
    if (n > MAX_VALUES) n = MAX_VALUES;
    size_t tlen = strlen(token);
    for (size_t i = 0; i < n; i++) {
        csh_list l;
        csh_span e;
        csh_list_init(&l, values[i], strlen(values[i]));
        while (csh_list_next(&l, &e))
            if (e.len == tlen && csh_mem_ieq(values[i] + e.off, token, tlen)) return 1;
    }
    return 0;
}

/* scheme "://" host [":" port] without the port its scheme implies, into
 * host (lower case): 0, or -1 for anything else ("null", a path). */
static int origin_host(const char *origin, char *host, size_t cap)
{
    const char *sep = strstr(origin, "://");
    if (!sep) return -1;
    size_t scheme = (size_t)(sep - origin);
    const char *h = sep + 3;
    size_t n = strlen(h);
    if (n == 0 || n >= cap || strpbrk(h, "/?#@ ")) return -1;
    for (size_t i = 0; i <= n; i++) host[i] = (char)cshw__lower((unsigned char)h[i]);
    const char *implied = cshw__ieq(origin, scheme, "https")  ? ":443"
                          : cshw__ieq(origin, scheme, "http") ? ":80"
                                                              : NULL;
    size_t il = implied ? strlen(implied) : 0;
    if (implied && n > il && !strcmp(host + n - il, implied)) host[n - il] = '\0';
    return 0;
}

static int origin_allowed(cshw_request *req, const cshw_ws_options *o)
{
    const char *origin = cshw_request_header(req, "Origin");
    if (!origin) return 1; /* not a browser: nothing to hijack */
    const char *allowed = o->allowed_origins;
    if (allowed && !strcmp(allowed, "*")) return 1;
    if (allowed) {
        size_t olen = strlen(origin);
        for (const char *p = allowed; *p;) {
            p += strspn(p, " ");
            size_t n = strcspn(p, " ");
            if (n && n == olen && csh_mem_ieq(p, origin, n)) return 1;
            p += n;
        }
        return 0;
    }
    /* the page's own origin: its host[:port] is the request's Host, the
     * port its scheme implies left out of both */
    char want[256], have[256];
    if (origin_host(origin, want, sizeof want) < 0) return 0;
    const char *host = cshw_request_header(req, "Host");
    const char *scheme = cshw_request_scheme(req);
    if (!host || !scheme) return 0;
    char url[300];
    int w = snprintf(url, sizeof url, "%s://%s", scheme, host);
    if (w < 0 || (size_t)w >= sizeof url || origin_host(url, have, sizeof have) < 0) return 0;
    return !strcmp(want, have);
}

/* The first of our protocols (in our order) that the client offered. */
static void choose_protocol(cshw_request *req, const cshw_ws_options *o, cshw_ws_handshake *hs)
{
    if (!o->protocols) return;
    for (const char *p = o->protocols; *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        char name[sizeof hs->protocol];
        if (n && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            if (csh_is_token(name, n) && field_has(req, "Sec-WebSocket-Protocol", name)) {
                memcpy(hs->protocol, name, n + 1);
                return;
            }
        }
        p += n;
    }
}

/* A window-bits value, 8 to 15 (RFC 7692 §7.1.2.1): the number, -1 if
 * invalid. */
static int window_bits(const char *v, size_t n)
{
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
        v++;
        n -= 2;
    }
    if (n == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
    if (n == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + v[1] - '0';
    return -1;
}

/* One offer, "permessage-deflate; param[=value]; ...": 1 and hs filled
 * when we can take it, 0 when it must be declined (an unknown,
 * repeated or invalid parameter, §7.1; a compressor window of 8, which
 * zlib's raw deflate cannot keep to). *server_bits_offered and
 * *client_bits_offered: the offer named that parameter, which the
 * answer then carries (§7.1.2.1, §7.1.2.2). */
static int take_offer(const char *s, size_t n, const cshw_ws_options *o, cshw_ws_handshake *hs,
                      int *server_bits_offered, int *client_bits_offered)
{
    int server_bits = 15, client_bits = 15, seen = 0;
    *server_bits_offered = *client_bits_offered = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && s[end] != ';') end++;
        size_t a = i, b = end;
        while (a < b && cshw__is_ws((unsigned char)s[a])) a++;
        while (b > a && cshw__is_ws((unsigned char)s[b - 1])) b--;
        const char *eq = memchr(s + a, '=', b - a);
        size_t name_end = eq ? (size_t)(eq - s) : b, v = eq ? name_end + 1 : b;
        while (name_end > a && cshw__is_ws((unsigned char)s[name_end - 1])) name_end--;
        while (v < b && cshw__is_ws((unsigned char)s[v])) v++;
        const char *name = s + a;
        size_t nl = name_end - a;
        int bit;
        if (seen == 0) {
            if (!cshw__ieq(name, nl, "permessage-deflate") || eq) return 0;
            bit = 1;
        } else if (cshw__ieq(name, nl, "server_no_context_takeover") && !eq) {
            bit = 2;
        } else if (cshw__ieq(name, nl, "client_no_context_takeover") && !eq) {
            bit = 4;
        } else if (cshw__ieq(name, nl, "server_max_window_bits") && eq) {
            bit = 8;
            *server_bits_offered = 1;
            if ((server_bits = window_bits(s + v, b - v)) < 0) return 0;
        } else if (cshw__ieq(name, nl, "client_max_window_bits")) {
            bit = 16;
            *client_bits_offered = 1;
            if (eq && (client_bits = window_bits(s + v, b - v)) < 0) return 0;
        } else {
            return 0;
        }
        if (seen & bit) return 0;
        seen |= bit;
        i = end + 1;
    }
    if (server_bits == 8) return 0;
    int ours = o->deflate_window_bits < 9 ? 9 : o->deflate_window_bits;
    hs->deflate = 1;
    hs->server_window = server_bits < ours ? server_bits : ours;
    hs->client_window = 15;
    if (*client_bits_offered)
        hs->client_window =
            client_bits < o->deflate_window_bits ? client_bits : o->deflate_window_bits;
    return 1;
}

/* The first permessage-deflate offer we can take, among every
 * Sec-WebSocket-Extensions field; the answer into out. */
static void choose_deflate(cshw_request *req, const cshw_ws_options *o, cshw_ws_handshake *hs,
                           char *out, size_t cap)
{
    const char *values[MAX_VALUES];
    size_t nv = cshw_request_header_all(req, "Sec-WebSocket-Extensions", values, MAX_VALUES);
    if (nv > MAX_VALUES) nv = MAX_VALUES;
    for (size_t i = 0; i < nv; i++) {
        /* offers are comma-separated; parameter values here never hold a
         * comma (window bits are digits) */
        for (const char *p = values[i]; *p;) {
            size_t n = strcspn(p, ",");
            int server_offered, client_offered;
            if (take_offer(p, n, o, hs, &server_offered, &client_offered)) {
                /* no context takeover either way: zlib's state lives only
                 * while a message is (de)compressed (§7.1.1.1, §7.1.1.2) */
                int w = snprintf(out, cap,
                                 "permessage-deflate; server_no_context_takeover; "
                                 "client_no_context_takeover");
                /* §7.1.2.1: an offer's server_max_window_bits is accepted
                 * by answering it (a client fails an answer without it) */
                if ((server_offered || hs->server_window < 15) && w > 0 && (size_t)w < cap)
                    w += snprintf(out + w, cap - (size_t)w, "; server_max_window_bits=%d",
                                  hs->server_window);
                if (client_offered && w > 0 && (size_t)w < cap)
                    snprintf(out + w, cap - (size_t)w, "; client_max_window_bits=%d",
                             hs->client_window);
                return;
            }
            p += n;
            if (*p == ',') p++;
        }
    }
}

int cshw_ws_check(cshw_context *ctx, const cshw_ws_options *o, cshw_ws_handshake *hs)
{
    if (!ctx || !hs) return -EINVAL;
    if (!cshw__ws_options_valid(o)) return CSHW_E_WS_OPTIONS;
    memset(hs, 0, sizeof *hs);
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    if (strcmp(cshw_request_method(req), "GET") != 0) {
        /* RFC 9110 §15.5.6: a 405 names the methods the resource takes
         * (HEAD too gets 405: a handshake is a GET, RFC 6455 §4.1) */
        if (cshw_response_set_header(res, "Allow", "GET") < 0) return -ENOMEM;
        return CSHW_E_WS_METHOD;
    }
    if (cshw_request_version_minor(req) < 1 || !field_has(req, "Upgrade", "websocket") ||
        !field_has(req, "Connection", "upgrade"))
        return CSHW_E_UPGRADE_NOT_ASKED;
    const char *v[2];
    if (cshw_request_header_all(req, "Sec-WebSocket-Version", v, 2) != 1 || strcmp(v[0], "13")) {
        /* §4.4: the versions we speak, for the client to try again */
        if (cshw_response_set_header(res, "Sec-WebSocket-Version", "13") < 0) return -ENOMEM;
        return CSHW_E_WS_VERSION;
    }
    const char *k[2];
    if (cshw_request_header_all(req, "Sec-WebSocket-Key", k, 2) != 1 || !key_valid(k[0]))
        return CSHW_E_WS_KEY;
    if (!origin_allowed(req, o)) return CSHW_E_WS_ORIGIN;
    char accept[29], ext[160] = "";
    cshw_ws_accept_value(k[0], strlen(k[0]), accept);
    choose_protocol(req, o, hs);
    if (o->deflate) choose_deflate(req, o, hs, ext, sizeof ext);
    if (cshw_response_set_header(res, "Sec-WebSocket-Accept", accept) < 0 ||
        (hs->protocol[0] &&
         cshw_response_set_header(res, "Sec-WebSocket-Protocol", hs->protocol) < 0) ||
        (ext[0] && cshw_response_set_header(res, "Sec-WebSocket-Extensions", ext) < 0))
        return -ENOMEM;
    return 0;
}
