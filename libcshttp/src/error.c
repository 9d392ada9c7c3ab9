/* Result code names, messages and statuses, from the one table in error.h. */
#include "cshttp/error.h"

#include <stddef.h>

#include "cshttp_internal/error_table.h"

static const csh__error_row errors[] = {
#define CSH_ERROR_ROW_(name, value, status, message) {value, status, "CSH_E_" #name, message},
    CSH_ERROR_MAP(CSH_ERROR_ROW_)
#undef CSH_ERROR_ROW_
};

/* The table is dense from CSH_E_FIRST downwards, so a code's row is its
 * distance from the first: checked here for every row. */
enum {
#define CSH_ERROR_INDEX_(name, value, status, message) INDEX_##name,
    CSH_ERROR_MAP(CSH_ERROR_INDEX_)
#undef CSH_ERROR_INDEX_
};
#define CSH_ERROR_DENSE_(name, value, status, message)                                             \
    _Static_assert((value) == CSH_E_FIRST - INDEX_##name && (value) >= CSH_E_LAST_OF_RANGE,        \
                   "CSH_E_" #name " must follow the error above it in error.h");
CSH_ERROR_MAP(CSH_ERROR_DENSE_)
#undef CSH_ERROR_DENSE_

static const csh__error_row *find(int code)
{
    return csh__error_find(errors, sizeof errors / sizeof errors[0], code);
}

const char *csh_error_name(int code)
{
    switch (code) {
    case CSH_OK: return "CSH_OK";
    case CSH_INCOMPLETE: return "CSH_INCOMPLETE";
    case CSH_DATA: return "CSH_DATA";
    default: break;
    }
    const csh__error_row *e = find(code);
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
    const csh__error_row *e = find(code);
    return e ? e->message : "unknown result code";
}

int csh_error_status(int code)
{
    const csh__error_row *e = find(code);
    return e ? e->status : 0;
}
