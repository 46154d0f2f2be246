// Helpers shared by the handlers: JSON replies, SGLang's error bodies, SSE.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine_error.h"
#include "server/http_types.h"

namespace tern::server {

// The body of an error reply (api::ErrorBody): SGLang's flat OpenAI-route
// fields {"object":"error","message","type","param","code"} and OpenAI's
// "error" object with the same values. `type` defaults by status.
// `extra` adds top-level fields (FastAPI's "detail" of a 404 / 405).
std::string ErrorBodyText(int status, const std::string& message, const std::string& type = "",
                          const nlohmann::json& extra = nlohmann::json::object());
void ReplyJson(HttpResponse& res, int status, const nlohmann::json& body);
void ReplyFlatError(HttpResponse& res, int status, const std::string& message, const std::string& type = "",
                    const nlohmann::json& extra = nlohmann::json::object());
// Native-route error: {"error": {"message", "type", "param", "code"}}.
void ReplyNativeError(HttpResponse& res, int status, const std::string& message);

// Whether a request's body is declared JSON (Content-Type application/json or
// application/...+json, any case, parameters allowed). Routes that act must
// refuse other bodies: a web page may POST text/plain, or a body with no
// Content-Type, to any origin without asking (no CORS preflight), so without
// this check any site a user visits could make a local server abort requests
// or generate. (SGLang's FastAPI also parses a body without a Content-Type;
// tern refuses that one too, for that reason.)
bool IsJsonContentType(const HttpRequest& req);
inline constexpr char kJsonOnly[] = "Unsupported Media Type: Only 'application/json' is allowed";

// The HTTP status for an engine error kind (engine/engine_error.h): bad input
// 400, a full queue or a draining server 503, an engine failure 500.
int HttpStatusFor(EngineError kind);

// One SSE event: "data: <payload>\n\n".
std::string SseEvent(const std::string& payload);
inline const char* kSseDone = "data: [DONE]\n\n";

// Seconds since the epoch.
int64_t UnixNow();

}  // namespace tern::server
