#include "template/chat.h"

namespace tern::jinja {

Result<nlohmann::ordered_json> NormalizeMessages(const nlohmann::ordered_json& messages, bool keep_null_content) {
  if (!messages.is_array()) return Status::Error("messages must be an array");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object()) return Status::Errorf("messages[{}] must be an object", i);
    nlohmann::ordered_json n = m;
    auto it = n.find("content");
    if (it == n.end()) {
      n["content"] = keep_null_content ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json("");
    } else if (it->is_null()) {
      if (!keep_null_content) *it = "";
    } else if (it->is_array()) {
      bool all_text = true;
      std::string joined;
      for (size_t k = 0; k < it->size(); ++k) {
        const auto& part = (*it)[k];
        const auto type = part.is_object() ? part.find("type") : part.end();
        const auto text = part.is_object() ? part.find("text") : part.end();
        if (!part.is_object() || type == part.end() || *type != "text" || text == part.end() || !text->is_string()) {
          all_text = false;
          break;
        }
        if (k) joined += "\n";
        joined += text->get_ref<const std::string&>();
      }
      if (all_text) *it = joined;
    }
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::string> RenderChat(const Template& tpl, const ChatRenderInput& input, const RenderOptions& options) {
  TERN_ASSIGN_OR_RETURN(nlohmann::ordered_json messages, NormalizeMessages(input.messages, input.keep_null_content));
  if (!input.tools.is_null() && !input.tools.is_array()) return Status::Error("tools must be an array or null");
  if (!input.extra_kwargs.is_null() && !input.extra_kwargs.is_object()) {
    return Status::Error("chat template kwargs must be an object");
  }
  // The context transformers' apply_chat_template passes.
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = std::move(messages);
  ctx["tools"] = input.tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = input.add_generation_prompt;
  ctx["bos_token"] = input.bos_token;
  ctx["eos_token"] = input.eos_token;
  if (input.extra_kwargs.is_object()) {
    for (const auto& [k, v] : input.extra_kwargs.items()) ctx[k] = v;
  }
  return tpl.Render(ctx, options);
}

}  // namespace tern::jinja
