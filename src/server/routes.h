// Route registration, one function per family of endpoints.
#pragma once

#include "server/context.h"
#include "server/http_routes.h"

namespace tern::server {

void AddInfoRoutes(HttpRoutes& routes, ServerContext& ctx);      // models, model/server info, health, metrics, cache
void AddTokenizeRoutes(HttpRoutes& routes, ServerContext& ctx);  // /v1/tokenize, /v1/detokenize
void AddGenerateRoutes(HttpRoutes& routes, ServerContext& ctx);  // native /generate
void AddOpenAiRoutes(HttpRoutes& routes, ServerContext& ctx);    // /v1/chat/completions, /v1/completions
// Every route of tern serve with its middleware (InstallMiddleware): what
// RunServer serves, and what the unit tests call.
HttpRoutes ServerRoutes(ServerContext& ctx);

// /flush_cache: 200 when the prefix cache was emptied, 400 while requests run or wait.
void ReplyFlushCache(ServerContext& ctx, HttpResponse& res);

// Waits for the health probe: true when the engine produced output within the timeout.
bool ProbeEngine(ServerContext& ctx);

}  // namespace tern::server
