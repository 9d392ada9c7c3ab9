/* Shared by the libcshttp-web fuzz targets (fuzz_path, fuzz_form,
 * fuzz_cookie, fuzz_multipart), which link the toolkit alone: an abort with
 * a message on a broken invariant (not assert, which the fuzz build compiles
 * out), and a hex digit's value for the targets' own reference decoders. */
#ifndef CSH_FUZZ_WEB_CHECK_H
#define CSH_FUZZ_WEB_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* 0..15 for a hex digit, -1 otherwise */
static inline int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

#endif
