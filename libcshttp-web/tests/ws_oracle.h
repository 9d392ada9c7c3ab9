/* What a WebSocket test checks the toolkit's output against, written
 * apart from the toolkit (the unit tests and fuzz/fuzz_ws.c): a check that
 * shares the code under test passes its bugs. */
#ifndef CSHW_TESTS_WS_ORACLE_H
#define CSHW_TESTS_WS_ORACLE_H

#include <stddef.h>
#include <stdint.h>

/* An independent UTF-8 check (RFC 3629 §3, §4): each sequence decoded,
 * no overlong form, no surrogate, nothing past U+10FFFF. */
static inline int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i <= k) return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += k + 1;
    }
    return 1;
}

/* RFC 6455 §7.4.1 and IANA's registry: the codes a close frame may carry. */
static inline int close_code_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

#endif
