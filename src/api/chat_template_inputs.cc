#include "api/chat_template_inputs.h"

#include "api/json_parse.h"

#include <cctype>
#include <cstdlib>
#include <regex>

namespace tern::api {
namespace {

std::string JoinTextParts(const Json& parts) {
  std::string out;
  bool first = true;
  for (const auto& p : parts) {
    const Json* text = nullptr;
    if (p.is_object() && p.value("type", "") == "text" && p.contains("text") && p["text"].is_string())
      text = &p["text"];
    if (!text) continue;
    if (!first) out += " ";
    first = false;
    out += text->get<std::string>();
  }
  return out;
}

bool AllTextParts(const Json& parts) {
  for (const auto& p : parts)
    if (!p.is_object() || p.value("type", "") != "text") return false;
  return true;
}

}  // namespace

ContentFormat DetectContentFormat(std::string_view source) {
  static const std::regex kLoop(
      R"(for\s+\w+\s+in\s+(message|msg|m)\s*(\.\s*content|\[\s*['"]content['"]\s*\]))");
  const std::string s(source);
  return std::regex_search(s, kLoop) ? ContentFormat::kOpenAi : ContentFormat::kString;
}

ChatTemplateInputs PrepareChatTemplateInputs(const ChatRequest& req, ContentFormat format) {
  ChatTemplateInputs out;
  for (const auto& msg : req.messages) {
    Json m = Json::object();
    for (const auto& [k, v] : msg.items()) {  // keys unique: appended (linear in the message's size)
      if (k == "content" && v.is_null()) AppendNewKey(m, k, "");  // SGLang: None -> "" in place
      else if (!v.is_null()) AppendNewKey(m, k, v);
    }
    Json& content = m["content"];  // absent -> ""
    if (content.is_null()) content = "";
    if (content.is_array()) {
      const bool tool_text = m["role"] == "tool" && AllTextParts(content);
      if (format == ContentFormat::kString || tool_text) content = JoinTextParts(content);
    }
    out.messages.push_back(std::move(m));
  }
  if (req.continue_final_message && !out.messages.empty()) {
    const Json& last = out.messages.back();
    if (last["role"] == "assistant" && req.messages.back().contains("content") &&
        req.messages.back()["content"].is_string()) {
      out.assistant_prefix = last["content"].get<std::string>();
      out.messages.erase(out.messages.end() - 1);
    }
  }
  if (!req.tools.empty() && req.tool_choice.mode != ToolChoiceMode::kNone) {
    out.tools = Json::array();
    for (const auto& t : req.tools)
      if (req.tool_choice.mode != ToolChoiceMode::kFunction || t.name == req.tool_choice.function_name)
        out.tools.push_back(t.template_json);
  }
  if (req.reasoning_effort) {  // a tier string, or the float it was sent as
    const std::string& e = *req.reasoning_effort;
    char* end = nullptr;
    const double f = std::strtod(e.c_str(), &end);
    out.kwargs["reasoning_effort"] = (!e.empty() && end == e.c_str() + e.size()) ? Json(f) : Json(e);
  }
  MergeObject(out.kwargs, req.chat_template_kwargs);
  return out;
}

bool PromptOpensReasoning(std::string_view prompt) {
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back())))
    prompt.remove_suffix(1);
  constexpr std::string_view kOpen = "<think>";
  return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

}  // namespace tern::api
