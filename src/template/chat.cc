#include "template/chat.h"

#include "template/template_internal.h"

namespace tern::jinja {

namespace {

using Json = nlohmann::ordered_json;

// A content list made only of {"type": "text", "text": ...} parts, joined
// with "\n"; false for any other list.
bool JoinTextParts(const Json& parts, std::string* out) {
  out->clear();
  for (size_t k = 0; k < parts.size(); ++k) {
    const auto& part = parts[k];
    if (!part.is_object()) return false;
    const auto type = part.find("type");
    const auto text = part.find("text");
    if (type == part.end() || *type != "text" || text == part.end() || !text->is_string()) return false;
    if (k) *out += "\n";
    *out += text->get_ref<const std::string&>();
  }
  return true;
}

Status CheckMessages(const Json& messages) {
  if (!messages.is_array()) return Status::Error("messages must be an array");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object()) return Status::Errorf("messages[{}] must be an object", i);
  }
  return Status::Ok();
}

// The normalised message as a template value, built straight from the JSON
// (same rules as NormalizeMessages, without copying the JSON first).
Value MessageToValue(const Json& m, bool keep_null_content) {
  auto d = std::make_shared<DictObj>();
  d->entries.reserve(m.size() + 1);
  bool has_content = false;
  std::string joined;
  for (const auto& [k, v] : m.items()) {
    if (k != "content") {
      d->Add(k, JsonToValue(v));
      continue;
    }
    has_content = true;
    if (v.is_null()) {
      d->Add(k, keep_null_content ? Value::None() : Value::String(""));
    } else if (v.is_array() && JoinTextParts(v, &joined)) {
      d->Add(k, Value::String(joined));
    } else {
      d->Add(k, JsonToValue(v));
    }
  }
  if (!has_content) d->Add("content", keep_null_content ? Value::None() : Value::String(""));
  return Value::Dict(std::move(d));
}

}  // namespace

Result<nlohmann::ordered_json> NormalizeMessages(const nlohmann::ordered_json& messages, bool keep_null_content) {
  TERN_RETURN_IF_ERROR(CheckMessages(messages));
  Json out = Json::array();
  std::string joined;
  for (const auto& m : messages) {
    Json n = m;
    auto it = n.find("content");
    if (it == n.end()) {
      n["content"] = keep_null_content ? Json(nullptr) : Json("");
    } else if (it->is_null()) {
      if (!keep_null_content) *it = "";
    } else if (it->is_array() && JoinTextParts(*it, &joined)) {
      *it = joined;
    }
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::string> RenderChat(const Template& tpl, const ChatRenderInput& input, const RenderOptions& options) {
  TERN_RETURN_IF_ERROR(CheckMessages(input.messages));
  if (!input.tools.is_null() && !input.tools.is_array()) return Status::Error("tools must be an array or null");
  if (!input.extra_kwargs.is_null() && !input.extra_kwargs.is_object()) {
    return Status::Error("chat template kwargs must be an object");
  }
  // The context transformers' apply_chat_template passes: messages, tools,
  // documents, add_generation_prompt, special tokens, then the kwargs.
  return RenderInternal(
      tpl,
      [&](const std::function<void(std::string_view, Value)>& set) {
        std::vector<Value> msgs;
        msgs.reserve(input.messages.size());
        for (const auto& m : input.messages) msgs.push_back(MessageToValue(m, input.keep_null_content));
        set("messages", Value::List(std::move(msgs)));
        set("tools", JsonToValue(input.tools));
        set("documents", Value::None());
        set("add_generation_prompt", Value::Bool(input.add_generation_prompt));
        set("bos_token", Value::String(input.bos_token));
        set("eos_token", Value::String(input.eos_token));
        if (input.extra_kwargs.is_object()) {
          for (const auto& [k, v] : input.extra_kwargs.items()) set(k, JsonToValue(v));
        }
      },
      options);
}

}  // namespace tern::jinja
