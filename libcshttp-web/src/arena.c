/* The request arena: a chain of blocks, bump allocation, cleanups.
 * `first` is the block kept across resets; every other block is freed. */
#include "cshttp/web/arena.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    struct block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    alignas(max_align_t) unsigned char data[];
} block;

typedef struct cleanup {
    struct cleanup *next;
    void (*fn)(void *);
    void *data;
} cleanup;

struct cshw_arena {
    block *head;  /* the block being filled, then older ones and large ones */
    block *first; /* kept across resets */
    cleanup *cleanups;
    size_t block_size;
    size_t used;
};

#define ALIGN (alignof(max_align_t))

static block *block_new(size_t size)
{
    if (size > SIZE_MAX - sizeof(block)) return NULL;
    block *b = malloc(sizeof(block) + size);
    if (!b) return NULL;
    b->next = NULL;
    b->size = size;
    b->used = 0;
    return b;
}

cshw_arena *cshw_arena_new(size_t block_size)
{
    cshw_arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->block_size = block_size ? block_size : 4096;
    a->first = a->head = block_new(a->block_size);
    if (!a->first) {
        free(a);
        return NULL;
    }
    return a;
}

static void run_cleanups(cshw_arena *a)
{
    while (a->cleanups) {
        cleanup *c = a->cleanups;
        a->cleanups = c->next; /* before fn: a cleanup may not re-enter, but must not loop */
        c->fn(c->data);
    }
}

static void free_blocks_but_first(cshw_arena *a)
{
    block *b = a->head;
    while (b) {
        block *next = b->next;
        if (b != a->first) free(b);
        b = next;
    }
    a->head = a->first;
    a->first->used = 0;
    a->first->next = NULL;
}

void cshw_arena_reset(cshw_arena *a)
{
    run_cleanups(a);
    free_blocks_but_first(a);
    a->used = 0;
}

void cshw_arena_free(cshw_arena *a)
{
    if (!a) return;
    cshw_arena_reset(a);
    free(a->first);
    free(a);
}

void *cshw_arena_alloc(cshw_arena *a, size_t size)
{
    if (size == 0 || size > SIZE_MAX - ALIGN) return NULL;
    size_t need = (size + ALIGN - 1) & ~(ALIGN - 1);
    block *b = a->head;
    if (b->size - b->used < need) {
        if (need > a->block_size / 4) {
            /* a large request gets a block of its own, linked behind the
             * current one so that the current block's free space stays in use */
            block *big = block_new(need);
            if (!big) return NULL;
            big->used = need;
            big->next = b->next;
            b->next = big;
            a->used += need;
            return big->data;
        }
        block *nb = block_new(a->block_size);
        if (!nb) return NULL;
        nb->next = b;
        a->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used += need;
    return p;
}

void *cshw_arena_calloc(cshw_arena *a, size_t size)
{
    void *p = cshw_arena_alloc(a, size);
    if (p) memset(p, 0, size);
    return p;
}

char *cshw_arena_strndup(cshw_arena *a, const char *data, size_t len)
{
    if (len == SIZE_MAX) return NULL;
    char *p = cshw_arena_alloc(a, len + 1);
    if (!p) return NULL;
    if (len) memcpy(p, data, len);
    p[len] = '\0';
    return p;
}

char *cshw_arena_strdup(cshw_arena *a, const char *s)
{
    return cshw_arena_strndup(a, s, strlen(s));
}

char *cshw_arena_vprintf(cshw_arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return NULL;
    char *p = cshw_arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *cshw_arena_printf(cshw_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = cshw_arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

int cshw_arena_on_cleanup(cshw_arena *a, void (*fn)(void *data), void *data)
{
    cleanup *c = cshw_arena_alloc(a, sizeof *c);
    if (!c) {
        fn(data);
        return -ENOMEM;
    }
    c->fn = fn;
    c->data = data;
    c->next = a->cleanups;
    a->cleanups = c;
    return 0;
}

size_t cshw_arena_used(const cshw_arena *a)
{
    return a->used;
}
