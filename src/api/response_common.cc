// Shared response pieces: JSON text, finish reasons, usage, logprobs, ids,
// model cards and error bodies.
#include <algorithm>
#include <random>
#include <set>

#include "api/error_json.h"
#include "api/responses.h"

namespace tern::api {

std::string ToJsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string SseEvent(const Json& value) { return "data: " + ToJsonText(value) + "\n\n"; }

FinishReason FinishReason::StopToken(int32_t id) {
  FinishReason f;
  if (id >= 0) f.matched = id;  // (none: a grammar complete before the first token)
  return f;
}

FinishReason FinishReason::StopString(std::string s) {
  FinishReason f;
  f.matched = std::move(s);
  return f;
}

FinishReason FinishReason::Length(int64_t max_new_tokens) {
  FinishReason f;
  f.kind = Kind::kLength;
  f.length = max_new_tokens;
  return f;
}

FinishReason FinishReason::Abort(std::string message, std::optional<int> status_code) {
  FinishReason f;
  f.kind = Kind::kAbort;
  f.message = std::move(message);
  f.status_code = status_code;
  return f;
}

std::string_view FinishReasonType(const FinishReason& f) {
  switch (f.kind) {
    case FinishReason::Kind::kStop: return "stop";
    case FinishReason::Kind::kLength: return "length";
    case FinishReason::Kind::kAbort: return "abort";
  }
  return "stop";
}

Json FinishReasonJson(const FinishReason& f) {
  Json j = Json::object();
  j["type"] = FinishReasonType(f);
  switch (f.kind) {
    case FinishReason::Kind::kStop:
      if (const auto* id = std::get_if<int32_t>(&f.matched)) j["matched"] = *id;
      else if (const auto* s = std::get_if<std::string>(&f.matched)) j["matched"] = *s;
      else j["matched"] = nullptr;
      break;
    case FinishReason::Kind::kLength: j["length"] = f.length; break;
    case FinishReason::Kind::kAbort:
      j["message"] = f.message;
      if (f.status_code) j["status_code"] = *f.status_code;
      break;
  }
  return j;
}

Json UsageJson(const Usage& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["completion_tokens"] = u.completion_tokens;
  if (u.cached_tokens && *u.cached_tokens > 0) j["prompt_tokens_details"] = Json{{"cached_tokens", *u.cached_tokens}};
  else j["prompt_tokens_details"] = nullptr;
  j["reasoning_tokens"] = u.reasoning_tokens;
  j["completion_tokens_details"] = Json{{"reasoning_tokens", u.reasoning_tokens}};
  return j;
}

namespace {

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (const char c : s) b.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return b;
}

}  // namespace

Json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens) {
  Json content = Json::array();
  for (const auto& t : tokens) {
    Json top = Json::array();
    for (const auto& c : t.top)
      top.push_back(Json{{"token", c.token}, {"bytes", Bytes(c.token)}, {"logprob", c.logprob}});
    content.push_back(Json{{"token", t.token},
                           {"bytes", Bytes(t.token)},
                           {"logprob", t.logprob},
                           {"top_logprobs", std::move(top)}});
  }
  return Json{{"content", std::move(content)}};
}

Json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens) {
  Json offsets = Json::array(), values = Json::array(), texts = Json::array(), tops = Json::array();
  const bool any_top = std::any_of(tokens.begin(), tokens.end(), [](const TokenLogprob& t) { return !t.top.empty(); });
  for (const auto& t : tokens) {
    offsets.push_back(-1);
    values.push_back(t.null_logprob ? Json(nullptr) : Json(t.logprob));
    texts.push_back(t.token);
    if (t.null_logprob) {
      if (any_top) tops.push_back(nullptr);
    } else if (!t.top.empty()) {
      Json top = Json::object();
      for (const auto& c : t.top)
        if (!top.contains(c.token)) top[c.token] = c.logprob;  // best-ranked text wins
      tops.push_back(std::move(top));
    }
  }
  return Json{{"text_offset", std::move(offsets)},
              {"token_logprobs", std::move(values)},
              {"tokens", std::move(texts)},
              {"top_logprobs", std::move(tops)}};
}

Json PromptLogprobsJson(const std::vector<TokenLogprob>& tokens) {
  Json out = Json::array();
  for (const auto& t : tokens) {
    if (t.null_logprob) {
      out.push_back(nullptr);
      continue;
    }
    Json pos = Json::object();
    pos[std::to_string(t.id)] = Json{{"logprob", t.logprob}, {"rank", t.rank}, {"decoded_token", t.token}};
    for (size_t i = 0; i < t.top.size(); ++i) {
      const std::string key = std::to_string(t.top[i].id);
      if (pos.contains(key)) continue;
      pos[key] = Json{{"logprob", t.top[i].logprob}, {"rank", int(i) + 1}, {"decoded_token", t.top[i].token}};
    }
    out.push_back(std::move(pos));
  }
  return out;
}

std::string NewRequestId(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int half = 0; half < 2; ++half) {
    uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id.push_back(kHex[bits & 15]);
  }
  return id;
}

Json ModelCardJson(std::string_view name, int64_t created, int64_t max_model_len) {
  return Json{{"id", name},       {"object", "model"}, {"created", created}, {"owned_by", "sglang"},
              {"root", name},     {"parent", nullptr}, {"max_model_len", max_model_len}};
}

Json ModelListJson(std::string_view name, int64_t created, int64_t max_model_len) {
  return Json{{"object", "list"}, {"data", Json::array({ModelCardJson(name, created, max_model_len)})}};
}

// ---- errors ----

namespace {

Json FlatError(const ApiError& e) {
  return Json{{"object", "error"},
              {"message", e.message},
              {"type", e.type},
              {"param", e.param ? Json(*e.param) : Json(nullptr)},
              {"code", e.status}};
}

}  // namespace

Json OpenAiErrorObject(const ApiError& e) {
  return Json{{"message", e.message},
              {"type", e.type},
              {"param", e.param ? Json(*e.param) : Json(nullptr)},
              {"code", e.status}};
}

Json ErrorJson(const ApiError& e) {
  Json j = FlatError(e);
  j["error"] = OpenAiErrorObject(e);
  return j;
}

std::string ErrorBody(const ApiError& e) { return ToJsonText(ErrorJson(e)); }

std::string NestedErrorBody(const ApiError& e) { return ToJsonText(Json{{"error", OpenAiErrorObject(e)}}); }

std::string GenerateErrorBody(const ApiError& e) {
  if (e.type == "Bad Request") return ErrorBody(e);
  return NestedErrorBody(e);
}

std::string StreamErrorEvent(const ApiError& e) { return SseEvent(Json{{"error", FlatError(e)}}); }

std::string GenerateStreamErrorEvent(std::string_view message) {
  return SseEvent(Json{{"error", Json{{"message", message}}}});
}

std::string StreamAbortEvent(int status, std::string_view message) {
  ApiError e;
  e.status = status;
  e.type = HttpStatusName(status);
  e.message = std::string(message);
  return StreamErrorEvent(e);
}

std::string UnauthorizedBody() {
  ApiError e = ApiError::Http(401, "Unauthorized");
  e.type = "Unauthorized";
  return ErrorBody(e);
}

std::string ModelNotFoundBody(std::string_view model) {
  ApiError e = ApiError::Http(404, "The model '" + std::string(model) + "' does not exist");
  e.type = "invalid_request_error";
  e.param = "model";
  Json j = ErrorJson(e);
  j["error"]["code"] = "model_not_found";  // OpenAI's and SGLang's code for it
  return ToJsonText(j);
}

std::string HttpStatusName(int status) {
  switch (status) {
    case 400: return "BAD_REQUEST";
    case 401: return "UNAUTHORIZED";
    case 403: return "FORBIDDEN";
    case 404: return "NOT_FOUND";
    case 408: return "REQUEST_TIMEOUT";
    case 413: return "REQUEST_ENTITY_TOO_LARGE";
    case 422: return "UNPROCESSABLE_ENTITY";
    case 429: return "TOO_MANY_REQUESTS";
    case 500: return "INTERNAL_SERVER_ERROR";
    case 501: return "NOT_IMPLEMENTED";
    case 502: return "BAD_GATEWAY";
    case 503: return "SERVICE_UNAVAILABLE";
    case 504: return "GATEWAY_TIMEOUT";
    case 507: return "INSUFFICIENT_STORAGE";
    default: return std::to_string(status);
  }
}

}  // namespace tern::api
