#include "server/http_util.h"

#include <cctype>
#include <chrono>

#include "api/error_json.h"

namespace tern::server {
using nlohmann::json;

namespace {
std::string DefaultType(int status) {
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "Unauthorized";
    case 404: return "NotFoundError";
    case 413: return "RequestEntityTooLarge";
    case 503: return "ServiceUnavailable";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}
}  // namespace

namespace {
api::ApiError MakeError(int status, const std::string& message, const std::string& type) {
  api::ApiError e = api::ApiError::Http(status, message);
  e.type = type.empty() ? DefaultType(status) : type;
  return e;
}
}  // namespace

std::string ErrorBodyText(int status, const std::string& message, const std::string& type, const json& extra) {
  api::Json body = api::ErrorJson(MakeError(status, message, type));
  for (const auto& [k, v] : extra.items()) body[k] = api::Json::parse(v.dump());
  return api::ToJsonText(body);
}

void ReplyJson(HttpResponse& res, int status, const json& body) {
  res.SetBody(status, body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void ReplyFlatError(HttpResponse& res, int status, const std::string& message, const std::string& type,
                    const json& extra) {
  res.SetBody(status, ErrorBodyText(status, message, type, extra), "application/json");
}

void ReplyNativeError(HttpResponse& res, int status, const std::string& message) {
  res.SetBody(status, api::NestedErrorBody(MakeError(status, message, "")), "application/json");
}

bool IsJsonContentType(const HttpRequest& req) {
  std::string ct = req.Header("Content-Type");
  for (char& c : ct) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string type = ct.substr(0, ct.find_first_of("; "));
  // application/json, or a +json subtype (application/vnd.x+json), as
  // FastAPI takes them; neither is a type a page may send without asking.
  if (type == "application/json") return true;
  constexpr std::string_view kSuffix = "+json";
  return type.rfind("application/", 0) == 0 && type.size() > kSuffix.size() &&
         type.compare(type.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

int HttpStatusFor(EngineError kind) {
  switch (kind) {
    case EngineError::kNone: return 200;
    case EngineError::kInvalidInput:
    case EngineError::kTooLong: return 400;
    case EngineError::kQueueFull:
    case EngineError::kDraining: return 503;
    case EngineError::kInternal: return 500;
  }
  return 500;
}

std::string SseEvent(const std::string& payload) { return "data: " + payload + "\n\n"; }

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tern::server
