// Rendering an OpenAI-style chat request through a model's chat template,
// the way Hugging Face transformers' apply_chat_template builds the context
// and the way servers (vLLM, SGLang) normalise messages first.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "template/template.h"

namespace tern::jinja {

struct ChatRenderInput {
  // Array of message objects ({"role", "content", "tool_calls", ...}); key
  // order is kept (tojson of tool-call arguments prints in this order).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // Array of tool definitions, or null when the request has none.
  nlohmann::ordered_json tools = nullptr;
  bool add_generation_prompt = true;
  // Object of extra template variables (chat_template_kwargs): enable_thinking,
  // date_string, ... They override the variables above of the same name.
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();
  std::string bos_token;
  std::string eos_token;
  // Keep `content: null` as none instead of "" (a template such as
  // DeepSeek-V3's tells tool-call turns apart by `content is none`).
  bool keep_null_content = false;
};

// Normalises the messages (see NormalizeMessages), builds the context
// {messages, tools, documents: none, add_generation_prompt, bos_token,
// eos_token, **extra_kwargs} and renders.
Result<std::string> RenderChat(const Template& tpl, const ChatRenderInput& input,
                               const RenderOptions& options = {});

// What servers do to messages before rendering:
//   - content null (or absent on an assistant message with tool_calls) -> ""
//     unless keep_null_content;
//   - content given as a list of parts that are all {"type": "text", "text": ...}
//     -> the texts joined with "\n" (vLLM's string content format); lists with
//     other parts (images) are kept for templates that handle them;
//   - tool_calls[i].function.arguments given as a JSON string stays a string
//     (templates differ in what they expect; they see what the client sent);
//   - every other field is kept, in order.
// Returns an error when messages is not an array of objects.
Result<nlohmann::ordered_json> NormalizeMessages(const nlohmann::ordered_json& messages, bool keep_null_content);

}  // namespace tern::jinja
