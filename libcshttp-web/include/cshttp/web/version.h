/* libcshttp-web version: the single place to edit it. */
#ifndef CSHTTP_WEB_VERSION_H
#define CSHTTP_WEB_VERSION_H

#define CSHW_VERSION_MAJOR 0
#define CSHW_VERSION_MINOR 4
#define CSHW_VERSION_PATCH 4

#define CSHW_VERSION_HEX                                                                           \
    ((CSHW_VERSION_MAJOR << 16) | (CSHW_VERSION_MINOR << 8) | (CSHW_VERSION_PATCH))

#define CSHW_STRINGIFY_(x) #x
#define CSHW_STRINGIFY(x) CSHW_STRINGIFY_(x)
#define CSHW_VERSION_STRING                                                                        \
    CSHW_STRINGIFY(CSHW_VERSION_MAJOR)                                                             \
    "." CSHW_STRINGIFY(CSHW_VERSION_MINOR) "." CSHW_STRINGIFY(CSHW_VERSION_PATCH)

#endif
