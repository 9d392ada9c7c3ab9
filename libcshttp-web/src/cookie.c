/* The Cookie request header (RFC 6265 §4.2.1, §5.4) and Set-Cookie values
 * (RFC 6265 §4.1, RFC 6265bis for SameSite and the name prefixes). */
#include "cshttp/web/cookie.h"

#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "cshttp_internal/sized.h"
#include "util.h"

CSH__SIZED_NO_TAIL_PADDING(cshw_cookie_limits, max_cookie_bytes);
CSH__SIZED_NO_TAIL_PADDING(cshw_cookie, same_site);

static const cshw_cookie_limits limits_defaults = {
    .size = sizeof(cshw_cookie_limits),
    .max_cookies = 180,
    .max_bytes = 16384,
    .max_cookie_bytes = 4096,
};

void cshw_cookie_limits_init_sized(cshw_cookie_limits *limits, size_t size)
{
    csh__sized_init(limits, size, &limits_defaults, sizeof limits_defaults);
}

static int over(size_t n, size_t limit)
{
    return limit != 0 && n > limit;
}

static int is_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int has_ctl(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (is_ctl((unsigned char)s[i])) return 1;
    return 0;
}

typedef struct piece {
    const char *name, *value;
    size_t name_len, value_len;
} piece;

/* The next cookie kept from data[*pos .. len), advancing *pos past it;
 * 0 when there is none left. */
static int next_cookie(const char *data, size_t len, size_t *pos, piece *c)
{
    while (*pos < len) {
        size_t start = *pos;
        const char *semi = memchr(data + start, ';', len - start);
        size_t end = semi ? (size_t)(semi - data) : len;
        *pos = end + 1;

        const char *eq = memchr(data + start, '=', end - start);
        if (!eq) continue; /* no '=': skipped */
        size_t ns = start, ne = (size_t)(eq - data);
        size_t vs = ne + 1, ve = end;
        while (ns < ne && cshw__is_ws((unsigned char)data[ns])) ns++;
        while (ne > ns && cshw__is_ws((unsigned char)data[ne - 1])) ne--;
        while (vs < ve && cshw__is_ws((unsigned char)data[vs])) vs++;
        while (ve > vs && cshw__is_ws((unsigned char)data[ve - 1])) ve--;
        if (ne == ns) continue; /* empty name */
        if (has_ctl(data + ns, ne - ns) || has_ctl(data + vs, ve - vs)) continue;
        /* cookie-value = *cookie-octet / ( DQUOTE *cookie-octet DQUOTE ) */
        if (ve - vs >= 2 && data[vs] == '"' && data[ve - 1] == '"') {
            vs++;
            ve--;
        }
        c->name = data + ns;
        c->name_len = ne - ns;
        c->value = data + vs;
        c->value_len = ve - vs;
        return 1;
    }
    return 0;
}

int cshw_cookie_parse(cshw_arena *a, const char *data, size_t len, const cshw_cookie_limits *limits,
                      cshw_pairs *out)
{
    out->items = NULL;
    out->count = 0;
    cshw_cookie_limits copy = limits_defaults; /* the caller's, read by its size */
    if (limits && csh__sized_copy(&copy, sizeof copy, limits, CSHW_COOKIE_LIMITS_SIZE_0_3) < 0)
        return -EINVAL;
    limits = &copy;
    if (over(len, limits->max_bytes)) return CSHW_E_COOKIE_TOO_LARGE;

    /* first pass: limits and the count, before allocating */
    size_t count = 0, pos = 0;
    piece c;
    while (next_cookie(data, len, &pos, &c)) {
        if (over(c.name_len + c.value_len, limits->max_cookie_bytes))
            return CSHW_E_COOKIE_TOO_LARGE;
        if (over(++count, limits->max_cookies)) return CSHW_E_COOKIE_TOO_MANY;
    }
    if (count == 0) return 0;

    if (count > SIZE_MAX / sizeof(cshw_pair) || len > SIZE_MAX - 2 * count) return -ENOMEM;
    cshw_pair *items = cshw_arena_alloc(a, count * sizeof(cshw_pair));
    char *text = cshw_arena_alloc(a, len + 2 * count);
    if (!items || !text) return -ENOMEM;
    size_t n = 0, t = 0;
    pos = 0;
    while (n < count && next_cookie(data, len, &pos, &c)) {
        cshw_pair *p = &items[n++];
        p->name = memcpy(text + t, c.name, c.name_len);
        p->name_len = c.name_len;
        t += c.name_len;
        text[t++] = '\0';
        p->value = c.value_len ? memcpy(text + t, c.value, c.value_len) : text + t;
        p->value_len = c.value_len;
        t += c.value_len;
        text[t++] = '\0';
    }
    out->items = items;
    out->count = n;
    return 0;
}

void cshw_cookie_init_sized(cshw_cookie *c, size_t size, const char *name, const char *value)
{
    const cshw_cookie d = {.size = sizeof(cshw_cookie), .name = name, .value = value};
    csh__sized_init(c, size, &d, sizeof d);
}

/* RFC 6265 §4.1.1 cookie-octet */
static int cookie_octet(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) ||
           (c >= 0x3c && c <= 0x5b) || (c >= 0x5d && c <= 0x7e);
}

static int valid_value(const char *v, size_t len)
{
    if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
        v++;
        len -= 2;
    }
    for (size_t i = 0; i < len; i++)
        if (!cookie_octet((unsigned char)v[i])) return 0;
    return 1;
}

/* av-octet = %x20-3A / %x3C-7E (any CHAR except CTLs or ";") */
static int valid_path(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c > 0x7e || c == ';') return 0;
    }
    return 1;
}

static int valid_domain(const char *d, size_t len)
{
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)d[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static int has_prefix_icase(const char *s, const char *lower_prefix)
{
    for (; *lower_prefix; s++, lower_prefix++)
        if (*s == '\0' || cshw__lower((unsigned char)*s) != (unsigned char)*lower_prefix) return 0;
    return 1;
}

/* IMF-fixdate (RFC 9110 §5.6.7), "Sun, 06 Nov 1994 08:49:37 GMT", written
 * without the locale. Returns its length (29) or 0 when t has no such date. */
static size_t imf_fixdate(time_t t, char out[32])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    if (!gmtime_r(&t, &tm)) return 0;
    long year = (long)tm.tm_year + 1900;
    if (year < 1601 || year > 9999) return 0; /* RFC 6265 §5.1.1 years; 4 digits */
    int n = snprintf(out, 32, "%s, %02d %s %04ld %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
                     months[tm.tm_mon], year, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return n == 29 ? 29 : 0;
}

static char *put(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

int cshw_cookie_format(cshw_arena *a, const cshw_cookie *cookie, const char **out)
{
    if (!cookie) return CSHW_E_COOKIE_INVALID_NAME;
    cshw_cookie copy = {.size = sizeof copy}, *c = &copy; /* the caller's, read by its size */
    if (csh__sized_copy(c, sizeof *c, cookie, CSHW_COOKIE_SIZE_0_3) < 0) return -EINVAL;
    if (!c->name) return CSHW_E_COOKIE_INVALID_NAME;
    const char *value = c->value ? c->value : "";
    size_t nlen = strlen(c->name), vlen = strlen(value);
    size_t plen = c->path ? strlen(c->path) : 0, dlen = c->domain ? strlen(c->domain) : 0;

    if (nlen == 0) return CSHW_E_COOKIE_INVALID_NAME;
    for (size_t i = 0; i < nlen; i++)
        if (!cshw__tchar((unsigned char)c->name[i])) return CSHW_E_COOKIE_INVALID_NAME;
    if (!valid_value(value, vlen)) return CSHW_E_COOKIE_INVALID_VALUE;
    if (nlen + vlen > 4096 || plen > 1024 || dlen > 1024) return CSHW_E_COOKIE_TOO_LONG;
    if (c->path && !valid_path(c->path, plen)) return CSHW_E_COOKIE_INVALID_PATH;
    if (c->domain && !valid_domain(c->domain, dlen)) return CSHW_E_COOKIE_INVALID_DOMAIN;
    char date[32];
    if (c->expires != 0 && imf_fixdate(c->expires, date) == 0) return CSHW_E_COOKIE_INVALID_EXPIRES;
    if ((unsigned)c->same_site > (unsigned)CSHW_SAME_SITE_STRICT)
        return CSHW_E_COOKIE_INVALID_SAME_SITE;
    if (c->same_site == CSHW_SAME_SITE_NONE && !c->secure)
        return CSHW_E_COOKIE_SAMESITE_NONE_INSECURE;
    if (has_prefix_icase(c->name, "__secure-") && !c->secure) return CSHW_E_COOKIE_PREFIX;
    if (has_prefix_icase(c->name, "__host-") &&
        (!c->secure || c->domain || !c->path || strcmp(c->path, "/") != 0))
        return CSHW_E_COOKIE_PREFIX;

    /* name, value, the two strings and every fixed part fit in this */
    size_t cap = nlen + vlen + plen + dlen + 200;
    char *buf = cshw_arena_alloc(a, cap);
    if (!buf) return -ENOMEM;
    char *p = buf;
    p = put(p, c->name, nlen);
    *p++ = '=';
    p = put(p, value, vlen);
    if (c->path) {
        p = PUT_LIT(p, "; Path=");
        p = put(p, c->path, plen);
    }
    if (c->domain) {
        p = PUT_LIT(p, "; Domain=");
        p = put(p, c->domain, dlen);
    }
    if (c->expires != 0) {
        p = PUT_LIT(p, "; Expires=");
        p = put(p, date, 29);
    }
    if (c->max_age_set) {
        char num[32];
        int n = snprintf(num, sizeof num, "; Max-Age=%lld", c->max_age > 0 ? c->max_age : 0LL);
        p = put(p, num, (size_t)n);
    }
    if (c->secure) p = PUT_LIT(p, "; Secure");
    if (c->http_only) p = PUT_LIT(p, "; HttpOnly");
    switch (c->same_site) {
    case CSHW_SAME_SITE_NONE:
        p = PUT_LIT(p, "; SameSite=None");
        break;
    case CSHW_SAME_SITE_LAX:
        p = PUT_LIT(p, "; SameSite=Lax");
        break;
    case CSHW_SAME_SITE_STRICT:
        p = PUT_LIT(p, "; SameSite=Strict");
        break;
    case CSHW_SAME_SITE_UNSET:
        break;
    }
    *p = '\0';
    *out = buf;
    return 0;
}
