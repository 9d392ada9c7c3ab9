/* Symbol visibility for libcshttp: the library is built with
 * -fvisibility=hidden and only CSH_EXPORT symbols are visible. */
#ifndef CSHTTP_EXPORT_H
#define CSHTTP_EXPORT_H

#if defined(CSH_STATIC)
#define CSH_EXPORT
#elif defined(__GNUC__)
#define CSH_EXPORT __attribute__((visibility("default")))
#else
#define CSH_EXPORT
#endif

#endif
