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

// Parses a JSON request body, replying 400 (SGLang's messages) and returning
// false on a wrong content type or malformed JSON.
bool ParseJsonBody(const HttpRequest& req, HttpResponse& res, nlohmann::json& out, bool flat_errors = true);

// The HTTP status for an engine error kind (engine/engine_error.h): bad input
// 400, a full queue or a draining server 503, an engine failure 500.
int HttpStatusFor(EngineError kind);

// One SSE event: "data: <payload>\n\n".
std::string SseEvent(const std::string& payload);
inline const char* kSseDone = "data: [DONE]\n\n";

// Seconds since the epoch.
int64_t UnixNow();

}  // namespace tern::server
