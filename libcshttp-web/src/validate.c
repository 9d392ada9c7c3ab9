/* The request checks of RFC 9110 and RFC 9112 that the wire parser leaves
 * to the toolkit: the grammar of Host and of the target's authority
 * (RFC 3986 §3.2.2-3.2.3), the schemes an origin server serves, userinfo,
 * fragments and percent-encoding. Run once per request before the handler,
 * so the common case is a few table lookups and three memchr calls. */
#include "validate.h"

#include <stddef.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "util.h"

/* RFC 3986 §2.2-2.3: C_REG for unreserved and sub-delims (the bytes of a
 * reg-name besides pct-encoded), C_HEX for HEXDIG, C_DIGIT for DIGIT. */
enum { C_REG = 1, C_HEX = 2, C_DIGIT = 4 };
#define R_ C_REG
#define RH_ (C_REG | C_HEX)
#define RD_ (C_REG | C_HEX | C_DIGIT)
static const unsigned char cls[256] = {
    ['-'] = R_,  ['.'] = R_,  ['_'] = R_,  ['~'] = R_,  ['!'] = R_,  ['$'] = R_,  ['&'] = R_,
    ['\''] = R_, ['('] = R_,  [')'] = R_,  ['*'] = R_,  ['+'] = R_,  [','] = R_,  [';'] = R_,
    ['='] = R_,  ['0'] = RD_, ['1'] = RD_, ['2'] = RD_, ['3'] = RD_, ['4'] = RD_, ['5'] = RD_,
    ['6'] = RD_, ['7'] = RD_, ['8'] = RD_, ['9'] = RD_, ['A'] = RH_, ['B'] = RH_, ['C'] = RH_,
    ['D'] = RH_, ['E'] = RH_, ['F'] = RH_, ['G'] = R_,  ['H'] = R_,  ['I'] = R_,  ['J'] = R_,
    ['K'] = R_,  ['L'] = R_,  ['M'] = R_,  ['N'] = R_,  ['O'] = R_,  ['P'] = R_,  ['Q'] = R_,
    ['R'] = R_,  ['S'] = R_,  ['T'] = R_,  ['U'] = R_,  ['V'] = R_,  ['W'] = R_,  ['X'] = R_,
    ['Y'] = R_,  ['Z'] = R_,  ['a'] = RH_, ['b'] = RH_, ['c'] = RH_, ['d'] = RH_, ['e'] = RH_,
    ['f'] = RH_, ['g'] = R_,  ['h'] = R_,  ['i'] = R_,  ['j'] = R_,  ['k'] = R_,  ['l'] = R_,
    ['m'] = R_,  ['n'] = R_,  ['o'] = R_,  ['p'] = R_,  ['q'] = R_,  ['r'] = R_,  ['s'] = R_,
    ['t'] = R_,  ['u'] = R_,  ['v'] = R_,  ['w'] = R_,  ['x'] = R_,  ['y'] = R_,  ['z'] = R_,
};
#undef R_
#undef RH_
#undef RD_

static inline int is(char c, int what)
{
    return (cls[(unsigned char)c] & what) != 0;
}

/* RFC 3986 §3.2.2 dec-octet "." dec-octet "." dec-octet "." dec-octet:
 * 0 to 255 without leading zeros. */
static int ipv4_ok(const char *s, size_t n)
{
    size_t i = 0;
    for (int octet = 0; octet < 4; octet++) {
        if (octet) {
            if (i == n || s[i] != '.') return 0;
            i++;
        }
        size_t start = i;
        unsigned v = 0;
        while (i < n && i - start < 3 && is(s[i], C_DIGIT)) v = v * 10 + (unsigned)(s[i++] - '0');
        size_t len = i - start;
        if (len == 0 || v > 255 || (len > 1 && s[start] == '0')) return 0;
    }
    return i == n;
}

/* RFC 3986 §3.2.2 IPv6address: eight h16 (1 to 4 hex digits) separated by
 * ':', the last two of which may be an IPv4address, or fewer with one "::"
 * standing for at least one group. */
static int ipv6_ok(const char *s, size_t n)
{
    size_t i = 0;
    int groups = 0, gap = 0;
    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        gap = 1;
        i = 2;
    }
    while (i < n) {
        size_t start = i;
        while (i < n && i - start < 5 && is(s[i], C_HEX)) i++;
        if (i < n && s[i] == '.') { /* ls32 as an IPv4address: the last 32 bits */
            if (!ipv4_ok(s + start, n - start)) return 0;
            groups += 2;
            break;
        }
        if (i == start || i - start > 4) return 0;
        groups++;
        if (i == n) break;
        if (s[i] != ':' || ++i == n) return 0; /* a lone ':' at the end */
        if (s[i] == ':') {
            if (gap) return 0;
            gap = 1;
            i++;
        }
    }
    return gap ? groups <= 7 : groups == 8;
}

/* RFC 3986 §3.2.2: IP-literal = "[" ( IPv6address / IPvFuture ) "]", given
 * without its brackets; IPvFuture = "v" 1*HEXDIG "." 1*( unreserved /
 * sub-delims / ":" ). A zone identifier (RFC 6874) is not part of the
 * grammar RFC 9110 refers to, and is refused. */
static int ip_literal_ok(const char *s, size_t n)
{
    if (n == 0) return 0;
    if ((s[0] | 0x20) != 'v') return ipv6_ok(s, n);
    size_t i = 1;
    while (i < n && is(s[i], C_HEX)) i++;
    if (i == 1 || i == n || s[i] != '.' || ++i == n) return 0;
    for (; i < n; i++)
        if (!is(s[i], C_REG) && s[i] != ':') return 0;
    return 1;
}

/* host [ ":" port ] in s[0 .. n) (RFC 3986 §3.2.2-3.2.3). The host may not
 * be empty: RFC 9110 §4.2.1 has a recipient reject an http URI with an
 * empty host. The port may be empty (RFC 3986 §3.2.3), and is at most
 * 65535: a port is 16 bits (RFC 6335 §6), and the WHATWG URL parser fails
 * on a larger one. 1 when valid. */
static int host_port_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return 0;
        i = (size_t)(close - s);
        if (!ip_literal_ok(s + 1, i - 1)) return 0;
        i++;
    } else {
        /* reg-name = *( unreserved / pct-encoded / sub-delims ); an
         * IPv4address is a reg-name too, so it needs no check of its own */
        while (i < n) {
            if (is(s[i], C_REG))
                i++;
            else if (s[i] == '%' && n - i > 2 && is(s[i + 1], C_HEX) && is(s[i + 2], C_HEX))
                i += 3;
            else
                break; /* ':' or a byte that is refused below */
        }
        if (i == 0) return 0;
    }
    if (i == n) return 1;
    if (s[i] != ':') return 0;
    unsigned long port = 0;
    for (i++; i < n; i++) {
        if (!is(s[i], C_DIGIT)) return 0;
        port = port * 10 + (unsigned long)(s[i] - '0');
        if (port > 65535) return 0;
    }
    return 1;
}

/* RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG, for every '%' in
 * p[0 .. end). 1 when valid. */
static int percent_ok(const char *p, const char *end)
{
    while ((p = memchr(p, '%', (size_t)(end - p))) != NULL) {
        if (end - p < 3 || !is(p[1], C_HEX) || !is(p[2], C_HEX)) return 0;
        p += 3;
    }
    return 1;
}

/* The path part runs to the '?' or the end. */
static int path_ok(const char *p, const char *end)
{
    const char *q = memchr(p, '?', (size_t)(end - p));
    return percent_ok(p, q ? q : end);
}

/* RFC 9112 §3.2.2: absolute-form = absolute-URI; an origin server serves
 * the http and https schemes (RFC 9110 §4.2.1-4.2.2: "://" authority with
 * a non-empty host, no userinfo: §4.2.4). The parser has checked that the
 * scheme is followed by "://". */
static int absolute_ok(const char *t, size_t n)
{
    const char *end = t + n;
    const char *colon = memchr(t, ':', n);
    if (!colon || end - colon < 3 || colon[1] != '/' || colon[2] != '/')
        return CSHW_E_TARGET_AUTHORITY;
    size_t scheme = (size_t)(colon - t);
    if (!cshw__ieq(t, scheme, "http") && !cshw__ieq(t, scheme, "https"))
        return CSHW_E_TARGET_AUTHORITY;
    const char *auth = colon + 3, *a = auth;
    int userinfo = 0;
    for (; a < end && *a != '/' && *a != '?'; a++) userinfo |= *a == '@';
    if (userinfo) return CSHW_E_TARGET_USERINFO;
    if (!host_port_ok(auth, (size_t)(a - auth))) return CSHW_E_TARGET_AUTHORITY;
    return path_ok(a, end) ? 0 : CSHW_E_TARGET_SYNTAX;
}

int cshw__request_validate(const char *head, const csh_message *msg)
{
    const char *t = head + msg->target.off;
    size_t n = msg->target.len;
    /* RFC 9112 §3.2: the target has no fragment (RFC 9110 §7.1: a client
     * strips it before sending) */
    if (memchr(t, '#', n)) return CSHW_E_TARGET_SYNTAX;
    switch (msg->target_form) {
    case CSH_TARGET_ORIGIN:
        if (!path_ok(t, t + n)) return CSHW_E_TARGET_SYNTAX;
        break;
    case CSH_TARGET_ABSOLUTE: {
        int rc = absolute_ok(t, n);
        if (rc) return rc;
        break;
    }
    case CSH_TARGET_AUTHORITY:
        /* RFC 9112 §3.2.3: uri-host ":" port; the parser has checked the
         * port's digits and the absence of '/', '?', '#' and '@' */
        if (!host_port_ok(t, n)) return CSHW_E_TARGET_AUTHORITY;
        break;
    case CSH_TARGET_ASTERISK:
        break; /* "*" alone: the parser checked it */
    }
    /* RFC 9112 §3.2: 400 for a Host with an invalid value; an empty one
     * is allowed (a target without an authority) */
    if ((msg->flags & CSH_MSG_HAS_HOST) && msg->host.len &&
        !host_port_ok(head + msg->host.off, msg->host.len))
        return CSHW_E_HOST_INVALID;
    return 0;
}
