/* cshw_options: every setting of the toolkit, with its default.
 *
 *   cshw_options o;
 *   cshw_options_init(&o);           // the defaults below, and o.size
 *   o.gzip = 0;                      // then change the fields you want
 *   const char *why;
 *   if (cshw_options_check(&o, &why) < 0) die(why);
 *   cshw_context *ctx = cshw_context_new(&o);
 *
 * The toolkit copies the struct; strings must outlive the contexts that use
 * them.
 *
 * The struct can grow without breaking callers: `size` is
 * sizeof(cshw_options) as the caller was compiled, set by cshw_options_init,
 * and the toolkit reads only the fields that fit in it (an option added after
 * the caller was built takes its default). So always fill the struct with
 * cshw_options_init, never with an initializer or memset alone: a size below
 * CSHW_OPTIONS_SIZE_0_2 fails cshw_options_check ("size must be set by
 * cshw_options_init") and every function that takes the options. The rule
 * for adding an option: a new field goes at the end, with its default in
 * cshw_options_init and its check in cshw_options_check; nothing is removed,
 * reordered or retyped (that is a new major version, see README.md). */
#ifndef CSHTTP_WEB_OPTIONS_H
#define CSHTTP_WEB_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_options {
    /* sizeof(cshw_options) as the caller knew it: leave cshw_options_init's. */
    size_t size;
    /* Response output buffered before it is sent: a response that ends
     * within it goes out with Content-Length. Default 16384. */
    size_t response_buffer;
    /* gzip the response when the client accepts it, the content type is
     * compressible and the body is at least gzip_min_bytes. Defaults 1,
     * 1024, level 6. */
    int gzip;
    size_t gzip_min_bytes;
    int gzip_level;
    /* Request bodies: the most a form (urlencoded or multipart) may hold,
     * 413 beyond. Default 16 MiB. */
    uint64_t max_form_bytes;
    /* Uploaded files above this size go to a temporary file in temp_dir
     * (removed when the request ends). Defaults 65536 and "/tmp". */
    size_t upload_memory_threshold;
    const char *temp_dir;
    /* Unread body bytes drained after the handler so that the connection can
     * be kept; beyond this the connection is closed. Default 65536. */
    uint64_t max_drain_bytes;
    /* multipart/form-data: the most parts (fields and files) and the most
     * bytes of one part's header section. Defaults 1000 and 16384 (413
     * beyond). */
    size_t max_form_parts;
    size_t max_part_header;
    /* Request bodies as the exchange reads them before the handler runs
     * (exchange.h): up to body_buffer bytes in memory, the rest in a
     * temporary file in temp_dir; more than max_request_body bytes (0: no
     * limit) is answered 413, a streamed body's too (request.h,
     * cshw_request_read: CSHW_E_BODY_LIMIT at the crossing). Defaults
     * 65536 and 16 MiB. */
    size_t body_buffer;
    uint64_t max_request_body;
    /* The Server field of every response, or NULL for none (the default:
     * naming the software helps nobody but an attacker). */
    const char *server_header;
} cshw_options;

/* The size of cshw_options in libcshttp-web 0.2, the first version with
 * `size`: the smallest size the toolkit accepts. */
#define CSHW_OPTIONS_SIZE_0_2 (offsetof(cshw_options, server_header) + sizeof(const char *))

/* Fills the first `size` bytes of `o` with the defaults (zeros past the
 * fields this library knows) and sets o->size = size. Called through
 * cshw_options_init, which passes the caller's sizeof: a library newer
 * than the caller never writes past the caller's struct. */
CSHW_EXPORT void cshw_options_init_sized(cshw_options *o, size_t size);

/* Fills `o` with the defaults above and sets o->size. */
static inline void cshw_options_init(cshw_options *o)
{
    cshw_options_init_sized(o, sizeof *o);
}

/* 0 when `o` is usable; otherwise CSHW_E_INVALID_OPTION and *why (when not
 * NULL) set to a static message naming the field ("gzip_level must be
 * 1..9"). Reads the fields within o->size, the defaults of the others.
 * Threads: pure, any thread. */
CSHW_EXPORT int cshw_options_check(const cshw_options *o, const char **why);

#ifdef __cplusplus
}
#endif

#endif
