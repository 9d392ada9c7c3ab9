/* Symbol visibility for libcshttp-server: built with -fvisibility=hidden,
 * only CSHS_EXPORT symbols are visible. */
#ifndef CSHTTP_SERVER_EXPORT_H
#define CSHTTP_SERVER_EXPORT_H

#if defined(CSHS_STATIC)
#define CSHS_EXPORT
#elif defined(__GNUC__)
#define CSHS_EXPORT __attribute__((visibility("default")))
#else
#define CSHS_EXPORT
#endif

#endif
