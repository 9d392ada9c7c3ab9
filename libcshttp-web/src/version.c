#include "cshttp/web/web.h"

unsigned cshw_version(void)
{
    return CSHW_VERSION_HEX;
}

const char *cshw_version_string(void)
{
    return CSHW_VERSION_STRING;
}
