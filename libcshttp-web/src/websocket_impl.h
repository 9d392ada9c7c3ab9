/* Private to the WebSocket files of libcshttp-web (websocket.h). */
#ifndef CSHTTP_WEB_WEBSOCKET_IMPL_H
#define CSHTTP_WEB_WEBSOCKET_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/web/websocket.h>

/* o filled by cshw_ws_options_init, its values in range. */
int cshw__ws_options_valid(const cshw_ws_options *o);

/* UTF-8 checked as it comes, a message in pieces (RFC 3629 §4: no
 * overlong forms, surrogates or code points past U+10FFFF). need: the
 * continuation bytes still owed; lo..hi: the range of the next one. */
typedef struct cshw__utf8 {
    unsigned char need, lo, hi;
} cshw__utf8;

/* 0 while valid so far, -1 at the first invalid byte. */
int cshw__utf8_feed(cshw__utf8 *u, const unsigned char *p, size_t n);

/* permessage-deflate (RFC 7692 §7.2), one message at a time, with no
 * context kept between messages: zlib's state exists only inside a
 * message. An inflater for a message that arrives in pieces: */
typedef struct cshw__inflater cshw__inflater;

/* window: the peer's window bits. NULL when out of memory. */
cshw__inflater *cshw__inflater_new(int window);
void cshw__inflater_free(cshw__inflater *z);

/* Inflates in[0 .. n) (last: the message's end, the 00 00 ff ff tail is
 * added) onto *out, grown with realloc up to cap bytes in all: 0, 1 when
 * the message would pass cap (a deflate bomb), -1 for data that is not
 * deflate, -ENOMEM. */
int cshw__inflate(cshw__inflater *z, const unsigned char *in, size_t n, int last, char **out,
                  size_t *len, size_t *size, uint64_t cap);

/* A whole message deflated with a window of `window` bits into a new
 * buffer (*out, malloc'd), without the 00 00 ff ff tail (§7.2.1). 0, or
 * -ENOMEM. */
int cshw__deflate(const void *in, size_t n, int window, unsigned char **out, size_t *out_len);

#endif
