/* libcshttp version: the single place to edit it. The build reads these three
 * lines to set the project version and the shared object's SONAME. */
#ifndef CSHTTP_VERSION_H
#define CSHTTP_VERSION_H

#define CSH_VERSION_MAJOR 0
#define CSH_VERSION_MINOR 3
#define CSH_VERSION_PATCH 0

/* 0xMMmmpp, for compile-time comparisons: #if CSH_VERSION_HEX >= 0x000100 */
#define CSH_VERSION_HEX                                                                            \
    ((CSH_VERSION_MAJOR << 16) | (CSH_VERSION_MINOR << 8) | (CSH_VERSION_PATCH))

#define CSH_STRINGIFY_(x) #x
#define CSH_STRINGIFY(x) CSH_STRINGIFY_(x)
#define CSH_VERSION_STRING                                                                         \
    CSH_STRINGIFY(CSH_VERSION_MAJOR)                                                               \
    "." CSH_STRINGIFY(CSH_VERSION_MINOR) "." CSH_STRINGIFY(CSH_VERSION_PATCH)

#endif
