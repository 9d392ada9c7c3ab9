/* Result code names, messages and statuses: the toolkit's own from the one
 * table in error.h, libcshttp's from libcshttp, -errno from the C library. */
#define _GNU_SOURCE /* strerrorname_np, strerrordesc_np */
#include "cshttp/web/error.h"

#include <stddef.h>

#include "cshttp/error.h"
#include "cshttp_internal/error_table.h"

static const csh__error_row errors[] = {
#define CSHW_ERROR_ROW_(name, value, status, message) {value, status, "CSHW_E_" #name, message},
    CSHW_ERROR_MAP(CSHW_ERROR_ROW_)
#undef CSHW_ERROR_ROW_
};

static const csh__error_row *find(int code)
{
    return csh__error_find(errors, sizeof errors / sizeof errors[0], code);
}

/* One of libcshttp's errors (each has a status; an unused value of its
 * range has none). */
static int is_parser_error(int code)
{
    return code <= CSH_E_FIRST && code >= CSH_E_LAST_OF_RANGE && csh_error_status(code) != 0;
}

const char *cshw_error_name(int code)
{
    if (code == 0) return "CSHW_OK";
    const csh__error_row *e = find(code);
    if (e) return e->name;
    if (is_parser_error(code)) return csh_error_name(code);
    if (csh__is_errno(code)) {
        const char *n = csh__errno_name(code);
        return n ? n : "CSHW_E_SYSTEM";
    }
    return "CSHW_E_UNKNOWN";
}

const char *cshw_error_message(int code)
{
    if (code == 0) return "success";
    const csh__error_row *e = find(code);
    if (e) return e->message;
    if (is_parser_error(code)) return csh_error_message(code);
    if (csh__is_errno(code)) {
        const char *m = csh__errno_message(code);
        return m ? m : "system error";
    }
    return "unknown result code";
}

int cshw_error_status(int code)
{
    if (code >= 0) return 0;
    const csh__error_row *e = find(code);
    if (e) return e->status;
    return is_parser_error(code) ? csh_error_status(code) : 500;
}
