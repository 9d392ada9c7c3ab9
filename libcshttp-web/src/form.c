/* application/x-www-form-urlencoded (WHATWG URL standard §5.1). */
#include "cshttp/web/form.h"

#include <stdint.h>
#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "cshttp/web/url.h"
#include "cshttp_internal/sized.h"

CSH__SIZED_NO_TAIL_PADDING(cshw_form_limits, max_value_len);

static const cshw_form_limits defaults = {
    .size = sizeof(cshw_form_limits),
    .max_pairs = 1000,
    .max_bytes = 2u << 20,
    .max_name_len = 1024,
    .max_value_len = 1u << 20,
};

void cshw_form_limits_init_sized(cshw_form_limits *limits, size_t size)
{
    csh__sized_init(limits, size, &defaults, sizeof defaults);
}

static int over(size_t n, size_t limit)
{
    return limit != 0 && n > limit;
}

int cshw_form_parse(cshw_arena *a, const char *data, size_t len, const cshw_form_limits *limits,
                    cshw_pairs *out)
{
    out->items = NULL;
    out->count = 0;
    cshw_form_limits copy = defaults; /* the caller's, read by its size */
    if (limits && csh__sized_copy(&copy, sizeof copy, limits, CSHW_FORM_LIMITS_SIZE_0_3) < 0)
        return -EINVAL;
    limits = &copy;
    if (over(len, limits->max_bytes)) return CSHW_E_FORM_TOO_LARGE;

    /* count the pieces first: the limit is checked before anything is
     * allocated, and the pairs fit in one array */
    size_t count = 0;
    for (size_t i = 0; i < len;) {
        const char *amp = memchr(data + i, '&', len - i);
        size_t end = amp ? (size_t)(amp - data) : len;
        if (end > i) count++;
        i = end + 1;
    }
    if (over(count, limits->max_pairs)) return CSHW_E_FORM_TOO_MANY_PAIRS;
    if (count == 0) return 0;

    /* every piece decodes to at most its length minus the '=' it may lack,
     * plus two NULs: len + count + 1 bytes hold all names and values */
    if (count > SIZE_MAX / sizeof(cshw_pair) || len > SIZE_MAX - count - 1) return -ENOMEM;
    cshw_pair *items = cshw_arena_alloc(a, count * sizeof(cshw_pair));
    char *text = cshw_arena_alloc(a, len + count + 1);
    if (!items || !text) return -ENOMEM;

    size_t n = 0, t = 0;
    for (size_t i = 0; i < len;) {
        const char *amp = memchr(data + i, '&', len - i);
        size_t end = amp ? (size_t)(amp - data) : len;
        if (end > i) {
            const char *piece = data + i;
            size_t plen = end - i;
            const char *eq = memchr(piece, '=', plen);
            size_t nlen = eq ? (size_t)(eq - piece) : plen;
            size_t vlen = eq ? plen - nlen - 1 : 0;
            cshw_pair *p = &items[n++];
            p->name = text + t;
            p->name_len = cshw_url_decode_to(text + t, piece, nlen, CSHW_URL_PLUS_SPACE);
            if (over(p->name_len, limits->max_name_len)) return CSHW_E_FORM_NAME_TOO_LONG;
            t += p->name_len;
            text[t++] = '\0';
            p->value = text + t;
            p->value_len =
                cshw_url_decode_to(text + t, eq ? eq + 1 : piece, vlen, CSHW_URL_PLUS_SPACE);
            if (over(p->value_len, limits->max_value_len)) return CSHW_E_FORM_VALUE_TOO_LONG;
            t += p->value_len;
            text[t++] = '\0';
        }
        i = end + 1;
    }
    out->items = items;
    out->count = n;
    return 0;
}
