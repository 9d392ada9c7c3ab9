/* Result code names, messages and statuses, from the one table in error.h. */
#include "cshttp/error.h"

#include <stddef.h>

typedef struct error_info {
    int code;
    int status;
    const char *name;
    const char *message;
} error_info;

static const error_info errors[] = {
#define CSH_ERROR_ROW_(name, value, status, message) {value, status, "CSH_E_" #name, message},
    CSH_ERROR_MAP(CSH_ERROR_ROW_)
#undef CSH_ERROR_ROW_
};

static const error_info *find(int code)
{
    /* the table is dense from -1 downwards */
    if (code < 0 && (size_t)-code <= sizeof errors / sizeof errors[0] &&
        errors[-code - 1].code == code)
        return &errors[-code - 1];
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) return &errors[i];
    return NULL;
}

const char *csh_error_name(int code)
{
    switch (code) {
    case CSH_OK: return "CSH_OK";
    case CSH_INCOMPLETE: return "CSH_INCOMPLETE";
    case CSH_DATA: return "CSH_DATA";
    default: break;
    }
    const error_info *e = find(code);
    return e ? e->name : "CSH_E_UNKNOWN";
}

const char *csh_error_message(int code)
{
    switch (code) {
    case CSH_OK: return "done";
    case CSH_INCOMPLETE: return "more bytes are needed";
    case CSH_DATA: return "body data";
    default: break;
    }
    const error_info *e = find(code);
    return e ? e->message : "unknown result code";
}

int csh_error_status(int code)
{
    const error_info *e = code < 0 ? find(code) : NULL;
    return e ? e->status : 0;
}
