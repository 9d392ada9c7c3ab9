/* The toolkit's options: defaults and validation. */
#include "cshttp/web/options.h"

#include <stddef.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "options_impl.h"
#include "cshttp_internal/sized.h"

CSH__SIZED_NO_TAIL_PADDING(cshw_options, server_header);

void cshw_options_init_sized(cshw_options *options, size_t size)
{
    cshw_options d, *o = &d;
    memset(o, 0, sizeof *o);
    o->size = size;
    o->response_buffer = 16384;
    o->gzip = 1;
    o->gzip_min_bytes = 1024;
    o->gzip_level = 6;
    o->max_form_bytes = 16u << 20;
    o->upload_memory_threshold = 65536;
    o->temp_dir = "/tmp";
    o->max_drain_bytes = 65536;
    o->max_form_parts = 1000;
    o->max_part_header = 16384;
    o->server_header = NULL;
    o->body_buffer = 65536;
    o->max_request_body = 16u << 20;
    /* the caller's struct is `size` bytes: older (smaller) or newer */
    memcpy(options, o, size < sizeof *o ? size : sizeof *o);
    if (size > sizeof *o) memset((char *)options + sizeof *o, 0, size - sizeof *o);
}

/* A field value (RFC 9110 §5.5): visible characters, obs-text, and spaces
 * or tabs between them; nothing that could end the line. */
static int valid_value(const char *s)
{
    if (*s == '\0' || *s == ' ' || *s == '\t') return 0;
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) return 0;
    return p[-1] != ' ' && p[-1] != '\t';
}

static int fail(const char **why, const char *message)
{
    if (why) *why = message;
    return CSHW_E_INVALID_OPTION;
}

int cshw__options_copy(cshw_options *dst, const cshw_options *src)
{
    cshw_options_init(dst);
    if (!src) return 0;
    if (src->size < CSHW_OPTIONS_SIZE_0_2) return CSHW_E_INVALID_OPTION;
    /* the fields the caller knew; later ones keep their defaults */
    memcpy(dst, src, src->size < sizeof *dst ? src->size : sizeof *dst);
    dst->size = sizeof *dst;
    return 0;
}

int cshw_options_check(const cshw_options *options, const char **why)
{
    if (why) *why = NULL;
    cshw_options copy;
    if (!options || cshw__options_copy(&copy, options) < 0)
        return fail(why, "size must be set by cshw_options_init");
    const cshw_options *o = &copy;
    if (o->response_buffer < 256 || o->response_buffer > (64u << 20))
        return fail(why, "response_buffer must be from 256 to 67108864 bytes");
    if (o->gzip != 0 && o->gzip != 1) return fail(why, "gzip must be 0 or 1");
    if (o->gzip_level < 1 || o->gzip_level > 9) return fail(why, "gzip_level must be 1..9");
    if (o->max_form_bytes == 0) return fail(why, "max_form_bytes must be at least 1");
    if (!o->temp_dir || o->temp_dir[0] != '/')
        return fail(why, "temp_dir must be an absolute path");
    if (o->max_form_parts == 0) return fail(why, "max_form_parts must be at least 1");
    if (o->max_part_header < 64) return fail(why, "max_part_header must be at least 64 bytes");
    if (o->body_buffer < 1024 || o->body_buffer > (64u << 20))
        return fail(why, "body_buffer must be from 1024 to 67108864 bytes");
    if (o->server_header && !valid_value(o->server_header))
        return fail(why, "server_header must be NULL or a field value without control "
                         "characters or surrounding spaces");
    return 0;
}
