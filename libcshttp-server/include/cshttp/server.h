/* libcshttp-server, the engine: everything in one include. */
#ifndef CSHTTP_SERVER_H
#define CSHTTP_SERVER_H

#include "server/client.h"
#include "server/export.h"
#include "server/options.h"
#include "server/server.h"
#include "server/tunnel.h"
#include "server/version.h"
#include "server/websocket.h"

#endif
