/* What the static-file handler reads in request headers: HTTP-dates
 * (RFC 9110 §5.6.7), entity-tag lists (§8.8.3, §13.1.1, §13.1.2), Range
 * (§14.1, §14.2) and Accept-Encoding weights (§12.5.3). Pure functions,
 * no allocation: each parses a header value the request already holds,
 * with the one grammar of libcshttp (cshttp/grammar.h). */
#include "cshttp/web/error.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cshttp/grammar.h>

#include "static_priv.h"

/* ---- HTTP-date ---- */

void cshw__date_format(time_t t, char buf[CSHW__DATE_SIZE])
{
    csh_http_date_format((int64_t)t, buf);
}

int cshw__date_parse(const char *s, time_t *t)
{
    int64_t v;
    if (csh_http_date_parse(s, strlen(s), (int64_t)time(NULL), &v) != CSH_OK) return -1;
    if (sizeof(time_t) < 8 && (v > INT32_MAX || v < INT32_MIN)) return -1;
    *t = (time_t)v;
    return 0;
}

/* ---- entity-tags ---- */

static const char *skip_ows(const char *p)
{
    while (csh_is_ows((unsigned char)*p)) p++;
    return p;
}

int cshw__etag_match(const char *list, const char *etag, int weak)
{
    const char *p = skip_ows(list);
    if (*p == '*' && *skip_ows(p + 1) == '\0') return 1; /* any current representation */
    size_t el = etag ? strlen(etag) : 0;
    /* #entity-tag (§13.1.1): entity-tags separated by commas, empty elements
     * skipped (§5.6.1). Not csh_list: an entity-tag is not a quoted-string,
     * a backslash in it escapes nothing. */
    for (;;) {
        while (*p == ',' || csh_is_ows((unsigned char)*p)) p++;
        if (!*p) return 0;
        int is_weak;
        size_t tl = csh_etag_len(p, strlen(p), &is_weak);
        if (tl == 0) return 0; /* malformed: nothing after the fault matches */
        const char *opaque = p + (is_weak ? 2 : 0);
        size_t ol = tl - (is_weak ? 2 : 0);
        /* §8.8.3.2: strong comparison needs both tags strong; ours are */
        if (etag && ol == el && memcmp(opaque, etag, el) == 0 && (weak || !is_weak)) return 1;
        p = skip_ows(p + tl);
        if (*p && *p != ',') return 0;
    }
}

/* ---- Range ---- */

/* 1*DIGIT, saturating at UINT64_MAX (a position past any file is simply
 * unsatisfiable; a suffix longer than any file is the whole file). */
static const char *parse_u64(const char *p, const char *end, uint64_t *v)
{
    if (p == end || *p < '0' || *p > '9') return NULL;
    uint64_t x = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        unsigned dgt = (unsigned)(*p - '0');
        x = x > (UINT64_MAX - dgt) / 10 ? UINT64_MAX : x * 10 + dgt;
    }
    *v = x;
    return p;
}

static int overlaps_or_touches(const cshw__range *a, const cshw__range *b)
{
    return a->first <= b->last + 1 && b->first <= a->last + 1;
}

static size_t coalesce(cshw__range *r, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n && !any; i++)
        for (size_t j = i + 1; j < n && !any; j++) any = overlaps_or_touches(&r[i], &r[j]);
    if (!any) return n; /* keep the order the client asked for (§14.6) */
    for (size_t i = 1; i < n; i++) {
        cshw__range k = r[i];
        size_t j = i;
        for (; j > 0 && r[j - 1].first > k.first; j--) r[j] = r[j - 1];
        r[j] = k;
    }
    size_t out = 0;
    for (size_t i = 1; i < n; i++) {
        if (r[i].first <= r[out].last + 1) {
            if (r[i].last > r[out].last) r[out].last = r[i].last;
        } else {
            r[++out] = r[i];
        }
    }
    return out + 1;
}

int cshw__range_parse(const char *value, uint64_t size, cshw__range *out, size_t max)
{
    if (size == 0) return -1;
    /* ranges-specifier = range-unit "=" range-set; units are
     * case-insensitive (§14.1); an unknown unit is ignored (§14.2). */
    static const char unit[] = "bytes=";
    for (size_t i = 0; i < sizeof unit - 1; i++) {
        char c = value[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != unit[i]) return -1;
    }
    const char *set = value + sizeof unit - 1;
    size_t specs = 0, n = 0;
    csh_list l;
    csh_span e;
    csh_list_init(&l, set, strlen(set));
    while (csh_list_next(&l, &e)) { /* #range-spec: empty elements skipped */
        const char *p = set + e.off, *end = p + e.len;
        if (++specs > max) return -1;
        cshw__range r;
        int ok = 0;
        if (*p == '-') { /* suffix-range */
            uint64_t len;
            p = parse_u64(p + 1, end, &len);
            if (!p) return -1;
            if (len > 0) { /* §14.1.1: satisfiable when suffix-length > 0 */
                r.first = len >= size ? 0 : size - len;
                r.last = size - 1;
                ok = 1;
            }
        } else { /* int-range = first-pos "-" [ last-pos ] */
            uint64_t first, last = UINT64_MAX;
            p = parse_u64(p, end, &first);
            if (!p || p == end || *p != '-') return -1;
            p++;
            if (p < end) {
                p = parse_u64(p, end, &last);
                if (!p) return -1;
                if (last < first) return -1; /* §14.1.1: invalid */
            }
            if (first < size) { /* §14.1.1: satisfiable when first-pos < length */
                r.first = first;
                r.last = last < size ? last : size - 1;
                ok = 1;
            }
        }
        if (p != end) return -1; /* "0-1 x", "0-1;a" */
        if (ok) out[n++] = r;
    }
    if (specs == 0) return -1;
    return (int)coalesce(out, n);
}

/* ---- Accept-Encoding ---- */

/* The weight of `coding` in the values: the highest of its own entries
 * ("x-gzip" counts as "gzip", §8.4.1.3), -1 when it has none; *star gets
 * the highest weight of "*" entries, or -1. Malformed elements are ignored. */
static int weight_of(const char *const *values, size_t n, const char *coding, int *star)
{
    size_t cl = strlen(coding);
    int is_gzip = cl == 4 && csh_mem_ieq(coding, "gzip", 4);
    int best = -1;
    *star = -1;
    for (size_t v = 0; v < n; v++) {
        if (values[v] == NULL) continue;
        csh_list l;
        csh_span e;
        csh_list_init(&l, values[v], strlen(values[v]));
        while (csh_list_next(&l, &e)) {
            const char *el = values[v] + e.off;
            csh_span item;
            int q = csh_weighted_parse(el, e.len, &item);
            if (q < 0) continue;
            const char *it = el + item.off;
            if ((item.len == cl && csh_mem_ieq(it, coding, cl)) ||
                (is_gzip && item.len == 6 && csh_mem_ieq(it, "x-gzip", 6))) {
                if (q > best) best = q;
            } else if (item.len == 1 && it[0] == '*') {
                if (q > *star) *star = q;
            }
        }
    }
    return best;
}

int cshw__accept_q(const char *const *values, size_t n, const char *coding)
{
    int star, q = weight_of(values, n, coding, &star);
    if (q >= 0) return q;
    return star >= 0 ? star : 0;
}

int cshw__accept_prefers(const char *const *values, size_t n, const char *coding)
{
    if (n == 0) return 0; /* no field: any coding is acceptable, none preferred */
    int star, q = weight_of(values, n, coding, &star);
    if (q < 0) q = star;
    if (q <= 0) return 0; /* not listed, or q=0: not acceptable (§12.5.3) */
    /* identity is acceptable unless refused; a weight given to it, or to
     * "*" standing for it, competes with the coding's */
    int istar, identity = weight_of(values, n, "identity", &istar);
    if (identity < 0) identity = istar;
    return identity < 0 || q >= identity;
}
