/* The streaming JSON writer (RFC 8259). */
#include "cshttp/web/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cshttp/web/error.h"

static void init(cshw_json *j)
{
    memset(j, 0, sizeof *j);
}

void cshw_json_init_buf(cshw_json *j, cshw_buf *out)
{
    init(j);
    j->buf_ = out;
}

void cshw_json_init_fn(cshw_json *j, cshw_json_write_fn fn, void *user)
{
    init(j);
    j->fn_ = fn;
    j->user_ = user;
}

static int emit(cshw_json *j, const char *data, size_t len)
{
    if (j->error_) return j->error_;
    if (len == 0) return 0;
    int r = j->buf_ ? cshw_buf_append(j->buf_, data, len) : j->fn_(j->user_, data, len);
    if (r < 0)
        j->error_ = r;
    else
        r = 0;
    return r;
}

static int fail(cshw_json *j, int code)
{
    if (!j->error_) j->error_ = code;
    return j->error_;
}

/* Checks that a value may come now and writes the ',' before it. */
static int before_value(cshw_json *j)
{
    if (j->error_) return j->error_;
    if (j->depth_ == 0) return j->done_ ? fail(j, CSHW_E_JSON_COMPLETE) : 0;
    int top = j->depth_ - 1;
    if (j->object_[top]) {
        if (!j->after_key_) return fail(j, CSHW_E_JSON_KEY_EXPECTED);
        j->after_key_ = 0; /* the key wrote the ',' and the ':' */
        return 0;
    }
    if (j->nonempty_[top]) return emit(j, ",", 1);
    j->nonempty_[top] = 1;
    return 0;
}

static int after_scalar(cshw_json *j)
{
    if (j->depth_ == 0) j->done_ = 1;
    return j->error_;
}

static int begin(cshw_json *j, int object)
{
    int r = before_value(j);
    if (r) return r;
    if (j->depth_ == CSHW_JSON_MAX_DEPTH) return fail(j, CSHW_E_JSON_TOO_DEEP);
    j->object_[j->depth_] = (unsigned char)object;
    j->nonempty_[j->depth_] = 0;
    j->depth_++;
    return emit(j, object ? "{" : "[", 1);
}

static int end(cshw_json *j, int object)
{
    if (j->error_) return j->error_;
    if (j->depth_ == 0 || j->object_[j->depth_ - 1] != object)
        return fail(j, CSHW_E_JSON_MISMATCHED_END);
    if (j->after_key_) return fail(j, CSHW_E_JSON_VALUE_EXPECTED);
    j->depth_--;
    if (j->depth_ == 0) j->done_ = 1;
    return emit(j, object ? "}" : "]", 1);
}

int cshw_json_object_begin(cshw_json *j)
{
    return begin(j, 1);
}

int cshw_json_object_end(cshw_json *j)
{
    return end(j, 1);
}

int cshw_json_array_begin(cshw_json *j)
{
    return begin(j, 0);
}

int cshw_json_array_end(cshw_json *j)
{
    return end(j, 0);
}

/* The length of the well-formed UTF-8 sequence at s (Unicode Table 3-7), or
 * 0 with *bad set to the length of its maximal invalid subpart (>= 1). */
static size_t utf8_sequence(const unsigned char *s, size_t len, size_t *bad)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t need;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        if (c == 0xe0) lo = 0xa0; /* overlong */
        if (c == 0xed) hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        if (c == 0xf0) lo = 0x90; /* overlong */
        if (c == 0xf4) hi = 0x8f; /* past U+10FFFF */
    } else {
        *bad = 1; /* 80..C1, F5..FF: never a lead byte */
        return 0;
    }
    size_t i = 1;
    if (i >= len || s[i] < lo || s[i] > hi) {
        *bad = i;
        return 0;
    }
    for (i = 2; i <= need; i++) {
        if (i >= len || s[i] < 0x80 || s[i] > 0xbf) {
            *bad = i;
            return 0;
        }
    }
    return need + 1;
}

static int write_string(cshw_json *j, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    int r = emit(j, "\"", 1);
    size_t run = 0; /* s[run .. i) is waiting to be written as it is */
    size_t i = 0;
    while (r == 0 && i < len) {
        unsigned char c = s[i];
        char esc[8];
        size_t elen = 0, skip = 1, bad = 0;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            elen = 2;
        } else if (c < 0x20) {
            esc[0] = '\\';
            elen = 2;
            switch (c) {
            case '\b':
                esc[1] = 'b';
                break;
            case '\f':
                esc[1] = 'f';
                break;
            case '\n':
                esc[1] = 'n';
                break;
            case '\r':
                esc[1] = 'r';
                break;
            case '\t':
                esc[1] = 't';
                break;
            default:
                memcpy(esc + 1, "u00", 3);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                elen = 6;
            }
        } else {
            size_t n = utf8_sequence(s + i, len - i, &bad);
            if (n == 3 && c == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
                memcpy(esc, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
                elen = 6;
                skip = 3;
            } else if (n) {
                i += n;
                continue;
            } else {
                memcpy(esc, "\xef\xbf\xbd", 3); /* U+FFFD */
                elen = 3;
                skip = bad;
            }
        }
        r = emit(j, str + run, i - run);
        if (r == 0) r = emit(j, esc, elen);
        i += skip;
        run = i;
    }
    if (r == 0) r = emit(j, str + run, i - run);
    if (r == 0) r = emit(j, "\"", 1);
    return r;
}

int cshw_json_key_n(cshw_json *j, const char *key, size_t len)
{
    if (j->error_) return j->error_;
    if (j->depth_ == 0)
        return fail(j, j->done_ ? CSHW_E_JSON_COMPLETE : CSHW_E_JSON_VALUE_EXPECTED);
    int top = j->depth_ - 1;
    if (!j->object_[top] || j->after_key_) return fail(j, CSHW_E_JSON_VALUE_EXPECTED);
    int r = 0;
    if (j->nonempty_[top]) r = emit(j, ",", 1);
    j->nonempty_[top] = 1;
    j->after_key_ = 1;
    if (r == 0) r = write_string(j, key ? key : "", key ? len : 0);
    if (r == 0) r = emit(j, ":", 1);
    return r;
}

int cshw_json_key(cshw_json *j, const char *key)
{
    return cshw_json_key_n(j, key, key ? strlen(key) : 0);
}

int cshw_json_string_n(cshw_json *j, const char *s, size_t len)
{
    if (!s) return cshw_json_null(j);
    int r = before_value(j);
    if (r == 0) r = write_string(j, s, len);
    return r ? r : after_scalar(j);
}

int cshw_json_string(cshw_json *j, const char *s)
{
    return cshw_json_string_n(j, s, s ? strlen(s) : 0);
}

static int scalar(cshw_json *j, const char *text, size_t len)
{
    int r = before_value(j);
    if (r == 0) r = emit(j, text, len);
    return r ? r : after_scalar(j);
}

int cshw_json_uint(cshw_json *j, uint64_t v)
{
    char num[24];
    size_t n = sizeof num;
    do {
        num[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return scalar(j, num + n, sizeof num - n);
}

int cshw_json_int(cshw_json *j, int64_t v)
{
    char num[24];
    size_t n = sizeof num;
    /* the magnitude as unsigned, so that INT64_MIN has one too */
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        num[--n] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0) num[--n] = '-';
    return scalar(j, num + n, sizeof num - n);
}

/* The shortest %.Ng (N = 15, 16 or 17) that reads back as v, with whatever
 * the locale writes for the decimal point replaced by '.'. */
static size_t format_double(double v, char *out, size_t cap)
{
    char tmp[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (prec == 17 || strtod(tmp, NULL) == v) break;
    }
    size_t o = 0;
    for (int i = 0; i < n && o + 1 < cap;) {
        char c = tmp[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e') {
            out[o++] = c;
            i++;
            continue;
        }
        out[o++] = '.';
        while (i < n && !((tmp[i] >= '0' && tmp[i] <= '9') || tmp[i] == 'e')) i++;
    }
    return o;
}

int cshw_json_double(cshw_json *j, double v)
{
    if (!isfinite(v)) return cshw_json_null(j);
    char num[40];
    size_t n = format_double(v, num, sizeof num);
    return scalar(j, num, n);
}

int cshw_json_bool(cshw_json *j, int v)
{
    return v ? scalar(j, "true", 4) : scalar(j, "false", 5);
}

int cshw_json_null(cshw_json *j)
{
    return scalar(j, "null", 4);
}

int cshw_json_finish(const cshw_json *j)
{
    if (j->error_) return j->error_;
    return j->done_ && j->depth_ == 0 ? 0 : CSHW_E_JSON_INCOMPLETE;
}

int cshw_json_error(const cshw_json *j)
{
    return j->error_;
}
