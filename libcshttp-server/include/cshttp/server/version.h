/* libcshttp-server version: the single place to edit it. */
#ifndef CSHTTP_SERVER_VERSION_H
#define CSHTTP_SERVER_VERSION_H

#define CSHS_VERSION_MAJOR 0
#define CSHS_VERSION_MINOR 4
#define CSHS_VERSION_PATCH 8

#define CSHS_VERSION_HEX                                                                           \
    ((CSHS_VERSION_MAJOR << 16) | (CSHS_VERSION_MINOR << 8) | (CSHS_VERSION_PATCH))

#define CSHS_STRINGIFY_(x) #x
#define CSHS_STRINGIFY(x) CSHS_STRINGIFY_(x)
#define CSHS_VERSION_STRING                                                                        \
    CSHS_STRINGIFY(CSHS_VERSION_MAJOR)                                                             \
    "." CSHS_STRINGIFY(CSHS_VERSION_MINOR) "." CSHS_STRINGIFY(CSHS_VERSION_PATCH)

#endif
