/* libcshttp-web: the content toolkit. The umbrella header. */
#ifndef CSHTTP_WEB_WEB_H
#define CSHTTP_WEB_WEB_H

#include "arena.h"
#include "buf.h"
#include "context.h"
#include "cookie.h"
#include "error.h"
#include "exchange.h"
#include "export.h"
#include "form.h"
#include "html.h"
#include "json.h"
#include "memory.h"
#include "mime.h"
#include "multipart.h"
#include "options.h"
#include "pairs.h"
#include "request.h"
#include "response.h"
#include "router.h"
#include "static.h"
#include "transport.h"
#include "url.h"
#include "version.h"
#include "websocket.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime library version as CSHW_VERSION_HEX (0xMMmmpp). */
CSHW_EXPORT unsigned cshw_version(void);

/* The runtime library version as "MAJOR.MINOR.PATCH". Static. */
CSHW_EXPORT const char *cshw_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
