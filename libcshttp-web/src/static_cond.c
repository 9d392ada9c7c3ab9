/* What the static-file handler reads in request headers: HTTP-dates
 * (RFC 9110 §5.6.7), entity-tag lists (§8.8.3, §13.1.1, §13.1.2), Range
 * (§14.1, §14.2) and Accept-Encoding weights (§12.5.3). Pure functions,
 * no allocation: each parses a header value the request already holds. */
#include "cshttp/web/error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "static_priv.h"

/* ---- HTTP-date ---- */

static const char day_names[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const day_names_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                              "Thursday", "Friday", "Saturday"};
static const char month_names[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so that no time zone or locale is involved. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* 0000-01-01 .. 9999-12-31T23:59:59: the years a 4DIGIT year can hold. */
#define DATE_MIN (-62167219200LL)
#define DATE_MAX 253402300799LL

void cshw__date_format(time_t t, char buf[CSHW__DATE_SIZE])
{
    int64_t s = (int64_t)t;
    if (s < DATE_MIN) s = DATE_MIN;
    if (s > DATE_MAX) s = DATE_MAX;
    int64_t days = s / 86400, rem = s % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int wday = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    /* the moduli change nothing (the values are in range) but let the
     * compiler see that the text fits */
    snprintf(buf, CSHW__DATE_SIZE, "%s, %02u %s %04u %02u:%02u:%02u GMT", day_names[wday],
             (unsigned)d % 100u, month_names[m - 1], (unsigned)(y % 10000),
             (unsigned)(rem / 3600) % 100u, (unsigned)(rem / 60 % 60), (unsigned)(rem % 60));
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int month_of(const char *s)
{
    for (int i = 0; i < 12; i++)
        if (memcmp(s, month_names[i], 3) == 0) return i + 1;
    return 0;
}

static int day_name_short(const char *s)
{
    for (int i = 0; i < 7; i++)
        if (memcmp(s, day_names[i], 3) == 0) return 1;
    return 0;
}

/* "HH:MM:SS" */
static int time_of_day(const char *s, int *secs)
{
    int h, mi, se;
    if (digits(s, 2, &h) || s[2] != ':' || digits(s + 3, 2, &mi) || s[5] != ':' ||
        digits(s + 6, 2, &se))
        return -1;
    if (h > 23 || mi > 59 || se > 60) return -1; /* 60: a leap second (RFC 5322 §3.3) */
    *secs = h * 3600 + mi * 60 + (se == 60 ? 59 : se);
    return 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

static int make_time(int64_t y, int m, int d, int secs, time_t *t)
{
    if (m < 1 || d < 1 || d > days_in_month(y, m)) return -1;
    int64_t v = days_from_civil(y, m, d) * 86400 + secs;
    if (sizeof(time_t) < 8 && (v > INT32_MAX || v < INT32_MIN)) return -1;
    *t = (time_t)v;
    return 0;
}

int cshw__date_parse(const char *s, time_t *t)
{
    size_t len = strlen(s);
    int d, y, secs;
    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    if (len == 29 && day_name_short(s) && s[3] == ',' && s[4] == ' ' && s[7] == ' ' &&
        s[11] == ' ' && s[16] == ' ' && memcmp(s + 25, " GMT", 4) == 0) {
        int m = month_of(s + 8);
        if (!m || digits(s + 5, 2, &d) || digits(s + 12, 4, &y) || time_of_day(s + 17, &secs))
            return -1;
        return make_time(y, m, d, secs, t);
    }
    /* asctime-date: "Sun Nov  6 08:49:37 1994" */
    if (len == 24 && day_name_short(s) && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' &&
        s[19] == ' ') {
        int m = month_of(s + 4);
        char dd[2] = {s[8] == ' ' ? '0' : s[8], s[9]};
        if (!m || digits(dd, 2, &d) || time_of_day(s + 11, &secs) || digits(s + 20, 4, &y))
            return -1;
        return make_time(y, m, d, secs, t);
    }
    /* rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT" */
    const char *comma = strchr(s, ',');
    if (!comma) return -1;
    size_t dl = (size_t)(comma - s);
    int named = 0;
    for (int i = 0; i < 7; i++)
        if (strlen(day_names_long[i]) == dl && memcmp(s, day_names_long[i], dl) == 0) named = 1;
    const char *p = comma + 1;
    if (!named || strlen(p) != 23 || p[0] != ' ' || p[3] != '-' || p[7] != '-' || p[10] != ' ' ||
        memcmp(p + 19, " GMT", 4) != 0)
        return -1;
    int m = month_of(p + 4), yy;
    if (!m || digits(p + 1, 2, &d) || digits(p + 8, 2, &yy) || time_of_day(p + 11, &secs))
        return -1;
    /* RFC 9110 §5.6.7: a two-digit year more than 50 years in the future
     * is the most recent past year with those digits. */
    int64_t cyear;
    int cm, cd;
    civil_from_days((int64_t)time(NULL) / 86400, &cyear, &cm, &cd);
    int64_t full = cyear - cyear % 100 + yy;
    if (full > cyear + 50)
        full -= 100;
    else if (full + 100 <= cyear + 50)
        full += 100;
    return make_time(full, m, d, secs, t);
}

/* ---- entity-tags ---- */

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

int cshw__etag_match(const char *list, const char *etag, int weak)
{
    const char *p = skip_ows(list);
    if (*p == '*' && *skip_ows(p + 1) == '\0') return 1; /* any current representation */
    size_t el = etag ? strlen(etag) : 0;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t') p++;
        if (!*p) return 0;
        int is_weak = 0;
        if (p[0] == 'W' && p[1] == '/') {
            is_weak = 1;
            p += 2;
        }
        if (*p != '"') return 0;
        const char *start = p++;
        /* etagc = %x21 / %x23-7E / obs-text */
        while (*p && *p != '"') {
            unsigned char c = (unsigned char)*p;
            if (c < 0x21 || c == 0x7f) return 0;
            p++;
        }
        if (*p != '"') return 0;
        p++;
        size_t tl = (size_t)(p - start);
        /* §8.8.3.2: strong comparison needs both tags strong; ours are */
        if (etag && tl == el && memcmp(start, etag, el) == 0 && (weak || !is_weak)) return 1;
        p = skip_ows(p);
        if (*p && *p != ',') return 0;
    }
}

/* ---- Range ---- */

/* 1*DIGIT, saturating at UINT64_MAX (a position past any file is simply
 * unsatisfiable; a suffix longer than any file is the whole file). */
static const char *parse_u64(const char *p, uint64_t *v)
{
    if (*p < '0' || *p > '9') return NULL;
    uint64_t x = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
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
    const char *p = value + sizeof unit - 1;
    size_t specs = 0, n = 0;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t') p++; /* #rule: empty elements */
        if (!*p) break;
        if (++specs > max) return -1;
        cshw__range r;
        int ok = 0;
        if (*p == '-') { /* suffix-range */
            uint64_t len;
            p = parse_u64(p + 1, &len);
            if (!p) return -1;
            if (len > 0) { /* §14.1.1: satisfiable when suffix-length > 0 */
                r.first = len >= size ? 0 : size - len;
                r.last = size - 1;
                ok = 1;
            }
        } else { /* int-range = first-pos "-" [ last-pos ] */
            uint64_t first, last = UINT64_MAX;
            p = parse_u64(p, &first);
            if (!p || *p != '-') return -1;
            p++;
            if (*p >= '0' && *p <= '9') {
                p = parse_u64(p, &last);
                if (last < first) return -1; /* §14.1.1: invalid */
            }
            if (first < size) { /* §14.1.1: satisfiable when first-pos < length */
                r.first = first;
                r.last = last < size ? last : size - 1;
                ok = 1;
            }
        }
        p = skip_ows(p);
        if (*p && *p != ',') return -1;
        if (ok) out[n++] = r;
    }
    if (specs == 0) return -1;
    return (int)coalesce(out, n);
}

/* ---- Accept-Encoding ---- */

static int ieq_n(const char *a, size_t n, const char *b)
{
    if (strlen(b) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
        if (x != y) return 0;
    }
    return 1;
}

static int tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), §12.4.2;
 * -1 when malformed. */
static int qvalue(const char *p, size_t n)
{
    if (n == 0 || (p[0] != '0' && p[0] != '1')) return -1;
    int q = (p[0] - '0') * 1000;
    if (n == 1) return q;
    if (p[1] != '.' || n > 5) return -1;
    int scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9') return -1;
        q += (p[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

int cshw__accept_q(const char *const *values, size_t n, const char *coding)
{
    int explicit_q = -1, star_q = -1;
    int is_gzip = ieq_n(coding, strlen(coding), "gzip");
    for (size_t v = 0; v < n; v++) {
        const char *p = values[v];
        for (;;) {
            while (*p == ',' || *p == ' ' || *p == '\t') p++;
            if (!*p) break;
            const char *tok = p;
            while (tchar(*p)) p++;
            size_t tl = (size_t)(p - tok);
            int q = tl ? 1000 : -1;
            p = skip_ows(p);
            while (*p == ';') { /* weight, or another parameter */
                p = skip_ows(p + 1);
                const char *name = p;
                while (tchar(*p)) p++;
                size_t nl = (size_t)(p - name);
                if (*p != '=') {
                    q = -1;
                    break;
                }
                const char *val = ++p;
                if (*p == '"') {
                    for (p++; *p && *p != '"'; p++)
                        if (*p == '\\' && p[1]) p++;
                    if (*p == '"') p++;
                } else {
                    while (tchar(*p)) p++;
                }
                if (nl == 1 && (name[0] == 'q' || name[0] == 'Q'))
                    q = qvalue(val, (size_t)(p - val));
                p = skip_ows(p);
            }
            /* skip what is left of a malformed element */
            while (*p && *p != ',') {
                q = -1;
                p++;
            }
            if (q < 0) continue;
            if (ieq_n(tok, tl, coding) || (is_gzip && ieq_n(tok, tl, "x-gzip"))) {
                if (q > explicit_q) explicit_q = q;
            } else if (tl == 1 && tok[0] == '*') {
                if (q > star_q) star_q = q;
            }
        }
    }
    if (explicit_q >= 0) return explicit_q;
    return star_q >= 0 ? star_q : 0;
}
