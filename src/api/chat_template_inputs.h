// What a chat request hands to the chat template, prepared the way SGLang's
// OpenAIServingChat._apply_jinja_template prepares it. The result maps onto
// jinja::ChatRenderInput: {messages, tools, extra_kwargs}.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/requests.h"

namespace tern::api {

// How a template reads message content (SGLang's
// detect_jinja_template_content_format): kOpenAi when the template loops
// over message content parts ("for x in message.content", msg/m variants,
// subscript forms), else kString.
enum class ContentFormat { kString, kOpenAi };
ContentFormat DetectContentFormat(std::string_view chat_template_source);

struct ChatTemplateInputs {
  // Each message with null-valued keys dropped and content null -> "";
  // kString: list content flattened to its text parts joined with " "
  // (other parts dropped); kOpenAi: list content kept. Tool messages whose
  // parts are all text are joined with " " in both formats.
  Json messages = Json::array();
  // The tools (only the named one for a tool_choice naming a function), or
  // null when there are none or tool_choice is "none".
  Json tools = nullptr;
  // {"reasoning_effort": ... if set} updated with chat_template_kwargs.
  Json kwargs = Json::object();
  // continue_final_message with a final assistant message of string content:
  // that message is removed and its text is to be appended to the rendered
  // prompt (SGLang's assistant_prefix).
  std::optional<std::string> assistant_prefix;
};

ChatTemplateInputs PrepareChatTemplateInputs(const ChatRequest& request, ContentFormat format);

// True when the rendered prompt leaves the model inside a reasoning block:
// it ends with "<think>" plus optional whitespace (Qwen3.5,
// Qwen3-Thinking-2507 and DeepSeek-R1 templates open <think> in the
// generation prompt; Qwen3 with enable_thinking=false closes it with
// "</think>\n\n"). See ResolveForceReasoning.
bool PromptOpensReasoning(std::string_view rendered_prompt);

}  // namespace tern::api
