#include "chat/chat_prompt.h"

#include <filesystem>

#include "base/json_linear.h"
#include "base/mapped_file.h"
#include "template/chat.h"
#include "tokenize/tokenizer_config.h"

namespace tern {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

Result<ChatPrompt> ChatPrompt::Load(const std::string& model_dir, const ChatPromptOptions& opts) {
  ChatPrompt p;
  TERN_ASSIGN_OR_RETURN(TokenizerConfig cfg, LoadTokenizerConfig(model_dir));
  p.bos_ = cfg.bos_token.value_or("");
  p.eos_ = cfg.eos_token.value_or("");
  if (!opts.template_override.empty()) {
    std::error_code ec;
    const bool is_file = opts.template_override.size() < 4096 && opts.template_override.find('\n') == std::string::npos &&
                         fs::is_regular_file(opts.template_override, ec);
    if (is_file) {
      TERN_ASSIGN_OR_RETURN(p.source_, ReadFileToString(opts.template_override));
    } else {
      p.source_ = opts.template_override;
    }
  } else {
    p.source_ = cfg.chat_template;
  }
  if (p.source_.empty())
    return Status::Errorf("{} has no chat template (tokenizer_config.json \"chat_template\" or chat_template.jinja); "
                          "give one with --chat-template", model_dir);
  auto tpl = jinja::Template::Parse(p.source_);
  if (!tpl.ok()) return tpl.status().WithContext("parsing the chat template");
  p.tpl_.emplace(std::move(*tpl));
  p.default_kwargs_ = opts.default_kwargs.is_object() ? opts.default_kwargs : ordered_json::object();
  return p;
}

Result<std::string> ChatPrompt::Render(const Input& in) const {
  jinja::ChatRenderInput r;
  r.messages = in.messages;
  if (!r.messages.is_array()) return Status::Error("messages must be an array");
  for (auto& m : r.messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (auto& call : m["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      auto& fn = call["function"];
      if (fn.contains("arguments") && fn["arguments"].is_string()) {
        // Linear in the keys (the client's text: nlohmann's parse is quadratic in them).
        ordered_json parsed;
        if (ParseJsonLinear(fn["arguments"].get<std::string>(), &parsed) && parsed.is_object())
          fn["arguments"] = std::move(parsed);
      }
    }
  }
  r.tools = in.tools;
  r.add_generation_prompt = in.add_generation_prompt;
  r.extra_kwargs = default_kwargs_;
  if (in.kwargs.is_object()) MergeObject(r.extra_kwargs, in.kwargs);  // linear in the client's keys
  r.bos_token = bos_;
  r.eos_token = eos_;
  return jinja::RenderChat(*tpl_, r);
}

bool ChatPrompt::OpensThinking(const ordered_json& kwargs) const {
  Input in;
  in.messages = ordered_json::array({{{"role", "user"}, {"content", "x"}}});
  in.kwargs = kwargs;
  auto text = Render(in);
  if (!text.ok()) return false;
  const std::string& s = *text;
  const size_t open = s.rfind("<think>");
  return open != std::string::npos && s.find("</think>", open) == std::string::npos;
}

}  // namespace tern
