#include "cshttp/cshttp.h"

unsigned csh_version(void)
{
    return CSH_VERSION_HEX;
}

const char *csh_version_string(void)
{
    return CSH_VERSION_STRING;
}
