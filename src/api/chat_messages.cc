// Validation of chat `messages` (SGLang's ChatCompletionMessageParam union
// plus serving_chat's normalize_assistant_tool_call_arguments).
#include <cctype>

#include <fmt/format.h>

#include "api/chat_fields.h"
#include "api/json_parse.h"
#include "api/py_text.h"

namespace tern::api::internal {
namespace {

bool IsRole(const std::string& role) {
  for (const char* r : {"system", "user", "assistant", "tool", "function", "developer", "latest_reminder"})
    if (role == r) return true;
  return false;
}

bool IsMediaPart(const std::string& type) {
  for (const char* t : {"image_url", "image", "input_image", "video_url", "video", "audio_url",
                        "audio", "input_audio", "file"})
    if (type == t) return true;
  return false;
}

std::string MediaKind(const std::string& type) {
  if (type.find("image") != std::string::npos) return "Image";
  if (type.find("video") != std::string::npos) return "Video";
  if (type.find("audio") != std::string::npos) return "Audio";
  return "File";
}

// Validates a list of content parts. Returns an unsupported-media error.
std::optional<ApiError> ReadParts(FieldReader& r, const Json& parts, const Loc& loc,
                                  const std::string& role, size_t msg_index, Json* out) {
  std::optional<ApiError> unsupported;
  for (size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const Loc ploc = loc.Index(j);
    if (part.is_string()) {  // bare strings: accepted as text parts
      out->push_back(Json{{"type", "text"}, {"text", part}});
      continue;
    }
    if (!part.is_object()) {
      r.ErrorAt(ploc, "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from");
      continue;
    }
    const auto type_it = part.find("type");
    if (type_it == part.end() || !type_it->is_string()) {
      r.ErrorAt(ploc.Key("type"), "missing", "Field required");
      continue;
    }
    const std::string type = type_it->get<std::string>();
    FieldReader pr(part, ploc, r.errors());
    if (type == "text") {
      if (!pr.Has("text")) pr.Error("text", "missing", "Field required");
      else pr.String("text");
    } else if (type == "thinking" || type == "reasoning") {
      if (role != "assistant") {
        r.ErrorAt(loc, "value_error",
                  "Value error, thinking content parts are only valid in assistant messages");
      } else if (pr.Has("thinking") == pr.Has("text")) {
        r.ErrorAt(ploc, "value_error",
                  "Value error, thinking parts require exactly one of 'thinking' or 'text'");
      }
    } else if (IsMediaPart(type)) {
      if (!unsupported)
        unsupported = ApiError::BadRequest(fmt::format(
            "{} inputs are not supported by this server yet: messages[{}].content[{}] has type "
            "'{}'. Send text content only.",
            MediaKind(type), msg_index, j, type));
    } else if (type == "tool_reference") {
      if (!pr.Has("name")) pr.Error("name", "missing", "Field required");
    } else {
      r.ErrorAt(ploc.Key("type"), "literal_error",
                "Input should be 'text', 'thinking', 'reasoning', 'image_url', 'video_url', "
                "'audio_url' or 'tool_reference'");
    }
    out->push_back(part);
  }
  return unsupported;
}

// Assistant tool_calls: arguments given as a JSON string are parsed into an
// object (SGLang's normalize_assistant_tool_call_arguments).
std::optional<ApiError> ReadToolCalls(FieldReader& r, const Json& calls, const Loc& loc, Json* out) {
  for (size_t j = 0; j < calls.size(); ++j) {
    Json call = calls[j];
    const Loc cloc = loc.Index(j);
    if (!call.is_object()) {
      r.ErrorAt(cloc, "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from");
      continue;
    }
    auto fn = call.find("function");
    if (fn == call.end() || fn->is_null()) {
      r.ErrorAt(cloc.Key("function"), "missing", "Field required");
      continue;
    }
    if (!fn->is_object()) {
      r.ErrorAt(cloc.Key("function"), "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from");
      continue;
    }
    FieldReader fr(*fn, cloc.Key("function"), r.errors());
    fr.String("name");
    auto args = fn->find("arguments");
    if (args != fn->end() && args->is_string()) {
      const std::string& text = args->get_ref<const std::string&>();
      Json parsed;  // linear in the keys (nlohmann's parse is quadratic in an ordered object's)
      if (JsonNestingDepth(text) > 1000 || !ParseJsonLinear(text, &parsed))
        return ApiError::BadRequest("Assistant tool call function.arguments must be valid JSON.");
      if (!parsed.is_object())
        return ApiError::BadRequest("Assistant tool call function.arguments must be a JSON object.");
      *args = std::move(parsed);
    } else if (args != fn->end() && !args->is_null() && !args->is_object()) {
      fr.Error("arguments", "string_type", "Input should be a valid string");
    }
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadMessages(FieldReader& r, Json* out, bool* message_level_tools) {
  *out = Json::array();
  *message_level_tools = false;
  if (!r.Has("messages")) {
    r.Error("messages", "missing", "Field required");
    return std::nullopt;
  }
  const Json* list = r.List("messages");
  if (!list) return std::nullopt;
  std::optional<ApiError> unsupported;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& msg = (*list)[i];
    const Loc loc = r.At("messages").Index(i);
    if (!msg.is_object()) {
      r.ErrorAt(loc, "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from");
      continue;
    }
    Json norm = msg;
    const auto role_it = msg.find("role");
    if (role_it == msg.end() || role_it->is_null()) {
      r.ErrorAt(loc.Key("role"), "missing", "Field required");
      continue;
    }
    if (!role_it->is_string()) {
      r.ErrorAt(loc.Key("role"), "value_error", "Value error, 'role' must be a string");
      continue;
    }
    std::string role = role_it->get<std::string>();
    for (char& c : role) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!IsRole(role)) {
      r.ErrorAt(loc.Key("role"), "value_error",
                "Value error, 'role' must be one of 'system', 'assistant', 'tool', 'function', "
                "'developer', 'latest_reminder' (case-insensitive).");
      continue;
    }
    norm["role"] = role;
    FieldReader mr(msg, loc, r.errors());

    const auto content = msg.find("content");
    if (content != msg.end() && !content->is_null() && !content->is_string()) {
      if (content->is_array()) {
        Json parts = Json::array();
        auto err = ReadParts(r, *content, loc.Key("content"), role, i, &parts);
        if (err && !unsupported) unsupported = std::move(err);
        norm["content"] = std::move(parts);
      } else {
        r.ErrorAt(loc.Key("content"), "string_type", "Input should be a valid string");
      }
    }
    mr.String("name");
    mr.String("tool_call_id");
    mr.String("reasoning_content");
    // vLLM's newer name for the same field.
    if (msg.contains("reasoning") && msg["reasoning"].is_string() &&
        (!msg.contains("reasoning_content") || msg["reasoning_content"].is_null())) {
      norm["reasoning_content"] = msg["reasoning"];
    }
    if (const Json* calls = mr.List("tool_calls")) {
      Json norm_calls = Json::array();
      auto err = ReadToolCalls(r, *calls, loc.Key("tool_calls"), &norm_calls);
      if (err && !unsupported) unsupported = std::move(err);
      if (role == "assistant") norm["tool_calls"] = std::move(norm_calls);
    }
    if ((role == "system" || role == "developer") && msg.contains("tools") &&
        msg["tools"].is_array() && !msg["tools"].empty())
      *message_level_tools = true;
    out->push_back(std::move(norm));
  }
  return unsupported;
}

}  // namespace tern::api::internal
