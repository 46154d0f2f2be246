// Helpers shared by the handlers: JSON replies, SGLang's error bodies, SSE.
#pragma once

#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/engine_error.h"

namespace tern::server {

// SGLang's flat OpenAI-route error: {"object":"error","message","type","param","code"}.
nlohmann::json FlatError(int status, const std::string& message, const std::string& type = "");
void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body);
void ReplyFlatError(httplib::Response& res, int status, const std::string& message, const std::string& type = "");
// Native-route error: {"error": {"message": ...}}.
void ReplyNativeError(httplib::Response& res, int status, const std::string& message);

// Parses a JSON request body, replying 400 (SGLang's messages) and returning
// false on a wrong content type or malformed JSON.
bool ParseJsonBody(const httplib::Request& req, httplib::Response& res, nlohmann::json& out, bool flat_errors = true);

// The HTTP status for an engine error kind (engine/engine_error.h): bad input
// 400, a full queue or a draining server 503, an engine failure 500.
int HttpStatusFor(EngineError kind);

// One SSE event: "data: <payload>\n\n".
std::string SseEvent(const std::string& payload);
inline const char* kSseDone = "data: [DONE]\n\n";

// Seconds since the epoch.
int64_t UnixNow();

}  // namespace tern::server
