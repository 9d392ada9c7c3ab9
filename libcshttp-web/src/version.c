#include "cshttp/web/web.h"

#include <cshttp/version.h>

/* The headers of libcshttp this build sees are at least the version the
 * build asks of find_package and pkg-config (CMakeLists.txt). */
#if CSH_VERSION_HEX < CSHW_CSHTTP_MIN_HEX
#error "libcshttp is older than CSHW_CSHTTP_MIN in libcshttp-web/CMakeLists.txt"
#endif

unsigned cshw_version(void)
{
    return CSHW_VERSION_HEX;
}

const char *cshw_version_string(void)
{
    return CSHW_VERSION_STRING;
}
