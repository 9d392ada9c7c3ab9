/* The common rules of field values (RFC 9110 §5.6), HTTP dates (§5.6.7),
 * weights (§12.4.2) and entity-tags (§8.8.3). See grammar.h. */
#include "cshttp/grammar.h"

#include <string.h>

size_t csh_token_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && csh_is_tchar((unsigned char)s[i])) i++;
    return i;
}

int csh_is_token(const char *s, size_t n)
{
    return n > 0 && csh_token_len(s, n) == n;
}

static inline int qdtext(unsigned char c)
{
    return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
           (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

static inline int quoted_pair_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

size_t csh_quoted_len(const char *s, size_t n)
{
    if (n < 2 || s[0] != '"') return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') return i + 1;
        if (c == '\\') {
            if (++i == n || !quoted_pair_byte((unsigned char)s[i])) return 0;
        } else if (!qdtext(c)) {
            return 0;
        }
    }
    return 0;
}

size_t csh_quoted_unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    if (n < 2) return 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == '\\' && i + 2 < n) i++;
        out[o++] = s[i];
    }
    return o;
}

void csh_list_init(csh_list *l, const char *s, size_t n)
{
    l->s = s;
    l->n = n;
    l->pos = 0;
}

int csh_list_next(csh_list *l, csh_span *elem)
{
    const char *s = l->s;
    size_t n = l->n, i = l->pos;
    for (;;) {
        while (i < n && (csh_is_ows((unsigned char)s[i]) || s[i] == ',')) i++;
        if (i == n) {
            l->pos = n;
            return 0;
        }
        size_t start = i;
        while (i < n && s[i] != ',') {
            if (s[i] == '"') {
                /* a comma inside a quoted-string does not end the element;
                 * an unterminated one runs to the end of the value */
                for (i++; i < n && s[i] != '"'; i++)
                    if (s[i] == '\\' && i + 1 < n) i++;
                if (i < n) i++;
            } else {
                i++;
            }
        }
        size_t end = i;
        while (end > start && csh_is_ows((unsigned char)s[end - 1])) end--;
        l->pos = i;
        if (end > start) {
            elem->off = start;
            elem->len = end - start;
            return 1;
        }
    }
}

int csh_param_next(const char *s, size_t n, size_t *pos, csh_param *out)
{
    size_t i = *pos;
    for (;;) {
        while (i < n && csh_is_ows((unsigned char)s[i])) i++;
        if (i == n) {
            *pos = n;
            return 0;
        }
        if (s[i] != ';') return CSH_E_INVALID_GRAMMAR;
        i++;
        while (i < n && csh_is_ows((unsigned char)s[i])) i++;
        if (i == n || s[i] == ';') continue; /* "; ;" is an empty parameter */
        size_t name = i, nl = csh_token_len(s + i, n - i);
        if (nl == 0) return CSH_E_INVALID_GRAMMAR;
        i += nl;
        /* RFC 9110 §5.6.6: no whitespace around "=" */
        if (i == n || s[i] != '=') return CSH_E_INVALID_GRAMMAR;
        i++;
        size_t vl;
        int quoted = i < n && s[i] == '"';
        vl = quoted ? csh_quoted_len(s + i, n - i) : csh_token_len(s + i, n - i);
        if (vl == 0) return CSH_E_INVALID_GRAMMAR;
        out->name.off = name;
        out->name.len = nl;
        out->value.off = i;
        out->value.len = vl;
        out->quoted = quoted;
        *pos = i + vl;
        return 1;
    }
}

int csh_qvalue_parse(const char *s, size_t n)
{
    if (n == 0 || n > 5 || (s[0] != '0' && s[0] != '1')) return CSH_E_INVALID_GRAMMAR;
    int q = (s[0] - '0') * 1000, scale = 100;
    if (n == 1) return q;
    if (s[1] != '.') return CSH_E_INVALID_GRAMMAR;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9') return CSH_E_INVALID_GRAMMAR;
        q += (s[i] - '0') * scale;
    }
    return q > 1000 ? CSH_E_INVALID_GRAMMAR : q;
}

int csh_weighted_parse(const char *s, size_t n, csh_span *item)
{
    size_t i = 0;
    while (i < n && (csh_is_tchar((unsigned char)s[i]) || s[i] == '/')) i++;
    if (i == 0) return CSH_E_INVALID_GRAMMAR;
    item->off = 0;
    item->len = i;
    int q = 1000, r;
    csh_param p;
    while ((r = csh_param_next(s, n, &i, &p)) == 1) {
        if (p.name.len == 1 && (s[p.name.off] | 0x20) == 'q') {
            if (p.quoted) return CSH_E_INVALID_GRAMMAR;
            q = csh_qvalue_parse(s + p.value.off, p.value.len);
            if (q < 0) return q;
        }
    }
    return r < 0 ? r : q;
}

size_t csh_etag_len(const char *s, size_t n, int *weak)
{
    size_t i = 0;
    *weak = 0;
    if (n >= 2 && s[0] == 'W' && s[1] == '/') { /* "W/" is case-sensitive */
        *weak = 1;
        i = 2;
    }
    if (i == n || s[i] != '"') return 0;
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') return i + 1;
        if (c < 0x21 || c == 0x7f) return 0; /* etagc = %x21 / %x23-7E / obs-text */
    }
    return 0;
}

/* ---- HTTP-date ---- */

static const char day_names[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const day_names_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                              "Thursday", "Friday", "Saturday"};
static const char month_names[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil): no time zone, no locale. */
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

static void put2(char *o, unsigned v)
{
    o[0] = (char)('0' + v / 10 % 10);
    o[1] = (char)('0' + v % 10);
}

void csh_http_date_format(int64_t t, char out[CSH_HTTP_DATE_SIZE])
{
    if (t < DATE_MIN) t = DATE_MIN;
    if (t > DATE_MAX) t = DATE_MAX;
    int64_t days = t / 86400, rem = t % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int wday = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    memcpy(out, "Sun, 06 Nov 1994 08:49:37 GMT", CSH_HTTP_DATE_SIZE);
    memcpy(out, day_names[wday], 3);
    put2(out + 5, (unsigned)d);
    memcpy(out + 8, month_names[m - 1], 3);
    put2(out + 12, (unsigned)(y / 100));
    put2(out + 14, (unsigned)(y % 100));
    put2(out + 17, (unsigned)(rem / 3600));
    put2(out + 20, (unsigned)(rem / 60 % 60));
    put2(out + 23, (unsigned)(rem % 60));
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

static int make_time(int64_t y, int m, int d, int secs, int64_t *t)
{
    if (m < 1 || d < 1 || d > days_in_month(y, m)) return CSH_E_INVALID_GRAMMAR;
    *t = days_from_civil(y, m, d) * 86400 + secs;
    return CSH_OK;
}

int csh_http_date_parse(const char *s, size_t n, int64_t now, int64_t *t)
{
    int d, y, secs;
    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    if (n == 29 && day_name_short(s) && s[3] == ',' && s[4] == ' ' && s[7] == ' ' &&
        s[11] == ' ' && s[16] == ' ' && memcmp(s + 25, " GMT", 4) == 0) {
        int m = month_of(s + 8);
        if (!m || digits(s + 5, 2, &d) || digits(s + 12, 4, &y) || time_of_day(s + 17, &secs))
            return CSH_E_INVALID_GRAMMAR;
        return make_time(y, m, d, secs, t);
    }
    /* asctime-date: "Sun Nov  6 08:49:37 1994" */
    if (n == 24 && day_name_short(s) && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' &&
        s[19] == ' ') {
        int m = month_of(s + 4);
        char dd[2] = {s[8] == ' ' ? '0' : s[8], s[9]};
        if (!m || digits(dd, 2, &d) || time_of_day(s + 11, &secs) || digits(s + 20, 4, &y))
            return CSH_E_INVALID_GRAMMAR;
        return make_time(y, m, d, secs, t);
    }
    /* rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT" */
    const char *comma = memchr(s, ',', n);
    if (!comma) return CSH_E_INVALID_GRAMMAR;
    size_t dl = (size_t)(comma - s);
    int named = 0;
    for (int i = 0; i < 7; i++)
        if (strlen(day_names_long[i]) == dl && memcmp(s, day_names_long[i], dl) == 0) named = 1;
    const char *p = comma + 1;
    if (!named || n - dl - 1 != 23 || p[0] != ' ' || p[3] != '-' || p[7] != '-' || p[10] != ' ' ||
        memcmp(p + 19, " GMT", 4) != 0)
        return CSH_E_INVALID_GRAMMAR;
    int m = month_of(p + 4), yy;
    if (!m || digits(p + 1, 2, &d) || digits(p + 8, 2, &yy) || time_of_day(p + 11, &secs))
        return CSH_E_INVALID_GRAMMAR;
    /* RFC 9110 §5.6.7: a two-digit year more than 50 years in the future
     * is the most recent past year with those digits. */
    int64_t cyear;
    int cm, cd;
    int64_t nd = now / 86400 - (now % 86400 < 0);
    civil_from_days(nd, &cyear, &cm, &cd);
    int64_t full = cyear - cyear % 100 + yy;
    if (full > cyear + 50)
        full -= 100;
    else if (full + 100 <= cyear + 50)
        full += 100;
    return make_time(full, m, d, secs, t);
}
