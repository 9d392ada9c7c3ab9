/* fuzz_form: application/x-www-form-urlencoded parsing (cshw_form_parse) of
 * libcshttp-web.
 *
 * Input: byte 0 chooses the limits (bit 0: tiny limits instead of the
 * defaults, bits 1-7: their size), the rest is the form. Checks:
 *   - success: the pair count is the number of non-empty '&'-pieces; every
 *     name and value is NUL-terminated, within its limit, and equal to the
 *     piece decoded by a second, independent decoder (first '=' splits, '+'
 *     is a space, %XX a byte, malformed escapes kept);
 *   - failure: exactly the limit that the input passes (checked in the
 *     order form.h applies them), and the pairs left empty;
 *   - the pairs, percent-encoded and joined again with '&' and '=', parse
 *     back to the same pairs (with the default limits, no limit reached).
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/error.h>
#include <cshttp/web/form.h>
#include <cshttp/web/url.h>

#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* The reference decoder (WHATWG URL §5.1 step 3.4: '+' then percent-decode). */
static size_t decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
                   hexval((unsigned char)s[i + 2]) >= 0) {
            c = (unsigned char)(hexval((unsigned char)s[i + 1]) * 16 +
                                hexval((unsigned char)s[i + 2]));
            i += 2;
        }
        out[o++] = (char)c;
    }
    return o;
}

static int over(size_t n, size_t limit)
{
    return limit && n > limit;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned setup = data[0];
    const char *in = NULL;
    size_t len = size - 1;
    char *copy = malloc(len ? len : 1); /* exact size: ASan sees a read past it */
    CHECK(copy != NULL, "out of memory");
    if (len) memcpy(copy, data + 1, len);
    in = copy;

    cshw_form_limits l;
    cshw_form_limits_init(&l);
    if (setup & 1) {
        size_t k = setup >> 1; /* 0..127 */
        l.max_pairs = k % 8;
        l.max_bytes = k * 3;
        l.max_name_len = k % 16;
        l.max_value_len = (k / 4) % 32;
    }
    cshw_arena *a = cshw_arena_new(setup & 2 ? 64 : 0);
    CHECK(a != NULL, "out of memory");

    /* what the result must be, from the reference */
    int want = 0;
    size_t pieces = 0;
    char *buf = malloc(len + 1);
    CHECK(buf != NULL, "out of memory");
    if (over(len, l.max_bytes)) want = CSHW_E_FORM_TOO_LARGE;
    for (size_t i = 0; i <= len && !want; i++)
        if ((i == len || in[i] == '&') && i > 0 && in[i - 1] != '&') pieces++;
    if (!want && over(pieces, l.max_pairs)) want = CSHW_E_FORM_TOO_MANY_PAIRS;

    cshw_pairs p = {(const cshw_pair *)&p, 12345};
    int r = cshw_form_parse(a, in, len, &l, &p);

    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len && !want; i++) {
        if (i < len && in[i] != '&') continue;
        if (i > start) {
            const char *piece = in + start;
            size_t pl = i - start;
            const char *eq = memchr(piece, '=', pl);
            size_t nl = eq ? (size_t)(eq - piece) : pl;
            size_t dn = decode(piece, nl, buf);
            if (over(dn, l.max_name_len)) {
                want = CSHW_E_FORM_NAME_TOO_LONG;
                break;
            }
            if (r == 0) {
                CHECK(k < p.count, "fewer pairs than pieces");
                CHECK(p.items[k].name_len == dn && memcmp(p.items[k].name, buf, dn) == 0,
                      "name %zu differs", k);
                CHECK(p.items[k].name[dn] == '\0', "name %zu not NUL-terminated", k);
            }
            size_t dv = eq ? decode(eq + 1, pl - nl - 1, buf) : 0;
            if (over(dv, l.max_value_len)) {
                want = CSHW_E_FORM_VALUE_TOO_LONG;
                break;
            }
            if (r == 0) {
                CHECK(p.items[k].value_len == dv && memcmp(p.items[k].value, buf, dv) == 0,
                      "value %zu differs", k);
                CHECK(p.items[k].value[dv] == '\0', "value %zu not NUL-terminated", k);
            }
            k++;
        }
        start = i + 1;
    }
    CHECK(r == want, "result %s, expected %s", cshw_error_name(r), cshw_error_name(want));
    if (r != 0) {
        CHECK(p.count == 0 && p.items == NULL, "pairs left on error");
    } else {
        CHECK(p.count == pieces && k == pieces, "%zu pairs for %zu pieces", p.count, pieces);
        /* encode and join again: the same pairs come back */
        size_t cap = 1, n = 0;
        for (size_t i = 0; i < p.count; i++)
            cap += 3 * (p.items[i].name_len + p.items[i].value_len) + 2;
        char *joined = malloc(cap);
        CHECK(joined != NULL, "out of memory");
        for (size_t i = 0; i < p.count; i++) {
            const char *e;
            size_t el;
            if (i) joined[n++] = '&';
            CHECK(cshw_url_encode(a, p.items[i].name, p.items[i].name_len, &e, &el) == 0, "enc");
            memcpy(joined + n, e, el);
            n += el;
            joined[n++] = '=';
            CHECK(cshw_url_encode(a, p.items[i].value, p.items[i].value_len, &e, &el) == 0, "enc");
            memcpy(joined + n, e, el);
            n += el;
        }
        cshw_form_limits none;
        cshw_form_limits_init(&none);
        none.max_pairs = none.max_bytes = none.max_name_len = none.max_value_len = 0;
        cshw_pairs q;
        CHECK(cshw_form_parse(a, joined, n, &none, &q) == 0, "joined form refused");
        CHECK(q.count == p.count, "%zu pairs back for %zu", q.count, p.count);
        for (size_t i = 0; i < q.count; i++) {
            CHECK(q.items[i].name_len == p.items[i].name_len &&
                      memcmp(q.items[i].name, p.items[i].name, q.items[i].name_len) == 0,
                  "name %zu changed", i);
            CHECK(q.items[i].value_len == p.items[i].value_len &&
                      memcmp(q.items[i].value, p.items[i].value, q.items[i].value_len) == 0,
                  "value %zu changed", i);
        }
        free(joined);
    }
    free(buf);
    free(copy);
    cshw_arena_free(a);
    return 0;
}
