// Route registration, one function per family of endpoints.
#pragma once

#include <httplib.h>

#include "server/context.h"
#include "server/http_server.h"

namespace tern::server {

void AddInfoRoutes(HttpServer& http, ServerContext& ctx);        // models, model/server info, health, metrics, cache
void AddTokenizeRoutes(HttpServer& http, ServerContext& ctx);    // /v1/tokenize, /v1/detokenize
void AddGenerateRoutes(HttpServer& http, ServerContext& ctx);    // native /generate
void AddOpenAiRoutes(HttpServer& http, ServerContext& ctx);      // /v1/chat/completions, /v1/completions

// /flush_cache: 200 when the prefix cache was emptied, 400 while requests run or wait.
void ReplyFlushCache(ServerContext& ctx, httplib::Response& res);

// Waits for the health probe: true when the engine produced output within the timeout.
bool ProbeEngine(ServerContext& ctx);

}  // namespace tern::server
