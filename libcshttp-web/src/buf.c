/* The growable buffer: doubling growth, in an arena or on the heap. */
#include "cshttp/web/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"

void cshw_buf_init(cshw_buf *b, cshw_arena *arena)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->arena_ = arena;
}

int cshw_buf_reserve(cshw_buf *b, size_t more)
{
    if (more > SIZE_MAX - 1 - b->len) return -ENOMEM;
    size_t need = b->len + more + 1; /* the NUL */
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p;
    if (b->arena_) {
        p = cshw_arena_alloc(b->arena_, cap);
        if (p && b->len) memcpy(p, b->data, b->len);
    } else {
        p = realloc(b->data, cap);
    }
    if (!p) return -ENOMEM;
    b->data = p;
    b->cap = cap;
    b->data[b->len] = '\0';
    return 0;
}

int cshw_buf_append(cshw_buf *b, const void *data, size_t len)
{
    if (len == 0) return 0;
    int r = cshw_buf_reserve(b, len);
    if (r < 0) return r;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int cshw_buf_append_str(cshw_buf *b, const char *s)
{
    return cshw_buf_append(b, s, strlen(s));
}

int cshw_buf_append_byte(cshw_buf *b, char c)
{
    return cshw_buf_append(b, &c, 1);
}

void cshw_buf_clear(cshw_buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void cshw_buf_free(cshw_buf *b)
{
    if (!b->arena_) free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
