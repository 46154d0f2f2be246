// ChatPrompt: a model's chat template, ready to render OpenAI-style messages
// into the prompt text, as a server does it (transformers' apply_chat_template
// context, messages normalised first). Shared by `tern serve`, `tern generate
// --chat` and `tern template`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "template/template.h"

namespace tern {

struct ChatPromptOptions {
  std::string template_override;  // a file path or the template text itself (--chat-template); empty: the model's
  nlohmann::ordered_json default_kwargs = nlohmann::ordered_json::object();  // --default-chat-template-kwargs
};

class ChatPrompt {
 public:
  // Reads the template from tokenizer_config.json / chat_template.jinja in model_dir
  // (or the override), and bos/eos token strings. Fails when there is no template.
  static Result<ChatPrompt> Load(const std::string& model_dir, const ChatPromptOptions& opts = {});

  struct Input {
    nlohmann::ordered_json messages;          // array of message objects
    nlohmann::ordered_json tools = nullptr;   // array of tool definitions or null
    bool add_generation_prompt = true;
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs (over the defaults)
  };
  // Renders; tool-call arguments given as JSON strings are parsed into objects
  // first (as vLLM does), since templates such as Qwen3.5's iterate over them.
  Result<std::string> Render(const Input& in) const;

  const std::string& source() const { return source_; }
  // Whether the rendered generation prompt of a default request ends inside an
  // opened <think> block (Qwen3.5-style templates): the output starts in reasoning.
  bool OpensThinking(const nlohmann::ordered_json& kwargs) const;

 private:
  std::string source_;
  std::optional<jinja::Template> tpl_;
  std::string bos_, eos_;
  nlohmann::ordered_json default_kwargs_;
};

}  // namespace tern
