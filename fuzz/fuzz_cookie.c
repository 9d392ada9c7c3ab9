/* fuzz_cookie: the Cookie header parser (cshw_cookie_parse) and Set-Cookie
 * formatting (cshw_cookie_format) of libcshttp-web.
 *
 * Input: byte 0 chooses the limits (bit 0: tiny ones) and the cookie's
 * attributes (bits 1-7); the rest is a Cookie header value, which is also
 * cut at its first four 0xff bytes into name, value, path and domain for
 * cshw_cookie_format. Checks:
 *   - parse: success or one of the limit errors; every cookie has a
 *     non-empty name without '=', ';', controls (but HTAB) or leading and
 *     trailing whitespace, a value without ';' or controls (but HTAB), both
 *     NUL-terminated, found in the input in order; the limits hold; the
 *     count equals an independent count of the pieces that qualify;
 *   - format: on success the field value has no control, no CR or LF, and
 *     its first pair, parsed as a Cookie header, gives back the name and the
 *     unquoted value; on failure the output pointer is untouched.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/cookie.h>
#include <cshttp/web/error.h>

#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static int ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int ws(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* An independent count of the cookies cookie.h says are kept. */
static size_t count_kept(const char *s, size_t len, size_t *longest)
{
    size_t n = 0, start = 0;
    *longest = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ';') continue;
        size_t a = start, b = i;
        start = i + 1;
        const char *eq = memchr(s + a, '=', b - a);
        if (!eq) continue;
        size_t e = (size_t)(eq - s), ns = a, ne = e, vs = e + 1, ve = b;
        while (ns < ne && ws((unsigned char)s[ns])) ns++;
        while (ne > ns && ws((unsigned char)s[ne - 1])) ne--;
        while (vs < ve && ws((unsigned char)s[vs])) vs++;
        while (ve > vs && ws((unsigned char)s[ve - 1])) ve--;
        if (ne == ns) continue;
        int bad = 0;
        for (size_t k = ns; k < ve; k++) bad |= ctl((unsigned char)s[k]);
        if (bad) continue;
        if (ve - vs >= 2 && s[vs] == '"' && s[ve - 1] == '"') vs++, ve--;
        size_t sz = (ne - ns) + (ve - vs);
        if (sz > *longest) *longest = sz;
        n++;
    }
    return n;
}

static void check_parse(cshw_arena *a, const char *in, size_t len, const cshw_cookie_limits *l)
{
    cshw_pairs p = {(const cshw_pair *)&p, 999};
    int r = cshw_cookie_parse(a, in, len, l, &p);
    size_t longest;
    size_t kept = count_kept(in, len, &longest);
    int want = 0;
    if (l->max_bytes && len > l->max_bytes) want = CSHW_E_COOKIE_TOO_LARGE;
    if (r != 0) {
        CHECK(r == CSHW_E_COOKIE_TOO_LARGE || r == CSHW_E_COOKIE_TOO_MANY, "error %d", r);
        CHECK(p.count == 0 && p.items == NULL, "pairs left on error");
        CHECK(want || (l->max_cookies && kept > l->max_cookies) ||
                  (l->max_cookie_bytes && longest > l->max_cookie_bytes),
              "%s without a limit passed", cshw_error_name(r));
        return;
    }
    CHECK(!want, "a header past max_bytes accepted");
    CHECK(p.count == kept, "%zu cookies, reference %zu", p.count, kept);
    CHECK(!l->max_cookies || p.count <= l->max_cookies, "too many cookies");
    const char *pos = in;
    for (size_t i = 0; i < p.count; i++) {
        const cshw_pair *c = &p.items[i];
        CHECK(c->name_len > 0, "empty name");
        CHECK(c->name[c->name_len] == '\0' && c->value[c->value_len] == '\0', "not terminated");
        CHECK(!l->max_cookie_bytes || c->name_len + c->value_len <= l->max_cookie_bytes,
              "cookie past max_cookie_bytes");
        CHECK(!ws((unsigned char)c->name[0]) && !ws((unsigned char)c->name[c->name_len - 1]),
              "name not trimmed");
        for (size_t k = 0; k < c->name_len; k++)
            CHECK(c->name[k] != '=' && c->name[k] != ';' && !ctl((unsigned char)c->name[k]),
                  "name byte 0x%02x", (unsigned char)c->name[k]);
        for (size_t k = 0; k < c->value_len; k++)
            CHECK(c->value[k] != ';' && !ctl((unsigned char)c->value[k]), "value byte 0x%02x",
                  (unsigned char)c->value[k]);
        /* in the input, in order */
        const char *at = NULL;
        for (const char *s = pos; s + c->name_len <= in + len; s++)
            if (memcmp(s, c->name, c->name_len) == 0) {
                at = s;
                break;
            }
        CHECK(at != NULL, "name %zu not found in the input after the previous one", i);
        pos = at + c->name_len;
    }
}

static void check_format(cshw_arena *a, const char *in, size_t len, unsigned setup)
{
    /* name, value, path, domain: the input cut at 0xff bytes */
    char *part[4] = {NULL, NULL, NULL, NULL};
    size_t start = 0;
    for (int k = 0; k < 4 && start <= len; k++) {
        const char *ff = memchr(in + start, 0xff, len - start);
        size_t end = ff ? (size_t)(ff - in) : len;
        part[k] = malloc(end - start + 1);
        CHECK(part[k] != NULL, "out of memory");
        memcpy(part[k], in + start, end - start);
        part[k][end - start] = '\0'; /* a NUL inside cuts the string: fine */
        start = end + 1;
        if (!ff) break;
    }
    cshw_cookie c;
    cshw_cookie_init(&c, part[0] ? part[0] : "", part[1]);
    c.path = (setup & 2) ? part[2] : NULL;
    c.domain = (setup & 4) ? part[3] : NULL;
    c.secure = (setup >> 3) & 1;
    c.http_only = (setup >> 4) & 1;
    c.same_site = (cshw_same_site)((setup >> 5) & 3);
    c.max_age_set = (setup >> 7) & 1;
    c.max_age = (long long)len - 5;
    c.expires = (setup & 0x40) ? (time_t)len * 86400 * 365 - 11644473600LL : 0;
    const char *out = "untouched";
    int r = cshw_cookie_format(a, &c, &out);
    if (r != 0) {
        CHECK(strcmp(out, "untouched") == 0, "output set on error");
        CHECK(cshw_error_status(r) == 500, "status %d", cshw_error_status(r));
    } else {
        size_t n = strlen(out);
        for (size_t k = 0; k < n; k++)
            CHECK(!ctl((unsigned char)out[k]) && out[k] != '\t', "byte 0x%02x in Set-Cookie",
                  (unsigned char)out[k]);
        size_t nl = strlen(c.name);
        CHECK(strncmp(out, c.name, nl) == 0 && out[nl] == '=', "does not start with name=");
        const char *semi = strchr(out, ';');
        size_t first = semi ? (size_t)(semi - out) : n;
        cshw_pairs p;
        CHECK(cshw_cookie_parse(a, out, first, NULL, &p) == 0 && p.count == 1, "no pair back");
        CHECK(strcmp(p.items[0].name, c.name) == 0, "name changed");
        const char *v = c.value ? c.value : "";
        size_t vl = strlen(v);
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') v++, vl -= 2;
        CHECK(p.items[0].value_len == vl && memcmp(p.items[0].value, v, vl) == 0, "value changed");
    }
    for (int k = 0; k < 4; k++) free(part[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned setup = data[0];
    size_t len = size - 1;
    char *in = malloc(len ? len : 1); /* exact size: ASan sees a read past it */
    CHECK(in != NULL, "out of memory");
    if (len) memcpy(in, data + 1, len);
    cshw_arena *a = cshw_arena_new(0);
    CHECK(a != NULL, "out of memory");

    cshw_cookie_limits l;
    cshw_cookie_limits_init(&l);
    if (setup & 1) {
        l.max_cookies = (setup >> 1) % 5;
        l.max_bytes = (setup >> 3) * 4;
        l.max_cookie_bytes = (setup >> 4) % 9;
    }
    check_parse(a, in, len, &l);
    check_format(a, in, len, setup);
    free(in);
    cshw_arena_free(a);
    return 0;
}
