/* Symbol visibility for libcshttp-web: built with -fvisibility=hidden, only
 * CSHW_EXPORT symbols are visible. */
#ifndef CSHTTP_WEB_EXPORT_H
#define CSHTTP_WEB_EXPORT_H

#if defined(CSHW_STATIC)
#define CSHW_EXPORT
#elif defined(__GNUC__)
#define CSHW_EXPORT __attribute__((visibility("default")))
#else
#define CSHW_EXPORT
#endif

#endif
