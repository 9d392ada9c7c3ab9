/* libcshttp: the HTTP/1.1 wire parser. The umbrella header. */
#ifndef CSHTTP_CSHTTP_H
#define CSHTTP_CSHTTP_H

#include "body.h"
#include "chunked.h"
#include "error.h"
#include "export.h"
#include "grammar.h"
#include "parser.h"
#include "span.h"
#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime library version as CSH_VERSION_HEX (0xMMmmpp). */
CSH_EXPORT unsigned csh_version(void);

/* The runtime library version as "MAJOR.MINOR.PATCH". Static. */
CSH_EXPORT const char *csh_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
