/* Result code names, messages and statuses, from the one table in error.h. */
#define _GNU_SOURCE /* strerrordesc_np */
#include "cshttp/web/error.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

typedef struct error_info {
    int code;
    int status;
    const char *name;
    const char *message;
} error_info;

static const error_info errors[] = {
#define CSHW_ERROR_ROW_(name, value, status, message) {value, status, "CSHW_E_" #name, message},
    CSHW_ERROR_MAP(CSHW_ERROR_ROW_)
#undef CSHW_ERROR_ROW_
};

static const error_info *find(int code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) return &errors[i];
    return NULL;
}

static int is_errno(int code)
{
    return code < 0 && code > -4096;
}

const char *cshw_error_name(int code)
{
    if (code == 0) return "CSHW_OK";
    const error_info *e = find(code);
    if (e) return e->name;
    if (is_errno(code)) {
        switch (-code) {
        case ENOMEM:
            return "ENOMEM";
        case ENOENT:
            return "ENOENT";
        case EACCES:
            return "EACCES";
        case EPIPE:
            return "EPIPE";
        case ECONNRESET:
            return "ECONNRESET";
        case ETIMEDOUT:
            return "ETIMEDOUT";
        case EINVAL:
            return "EINVAL";
        case EIO:
            return "EIO";
        case ENOSPC:
            return "ENOSPC";
        default:
            return "CSHW_E_SYSTEM";
        }
    }
    return "CSHW_E_UNKNOWN";
}

const char *cshw_error_message(int code)
{
    if (code == 0) return "success";
    const error_info *e = find(code);
    if (e) return e->message;
    if (is_errno(code)) {
        /* strerror may write a shared buffer; this returns the C
         * library's constant text, as error.h promises (thread-safe) */
        const char *m = strerrordesc_np(-code);
        return m ? m : "system error";
    }
    return "unknown result code";
}

int cshw_error_status(int code)
{
    if (code >= 0) return 0;
    const error_info *e = find(code);
    return e ? e->status : 500;
}
