// Which reasoning and tool-call parsers a model needs, read off its chat
// template: what the template renders is what the model was trained to emit.
//   <think> in the template            -> reasoning parser "qwen3" (Qwen3, Qwen3-MoE, Qwen3.5, Qwen3-Next)
//   <tool_call> and <function=...>     -> tool-call parser "qwen3_coder" (Qwen3.5 / Qwen3-Next XML calls)
//   <tool_call> alone                  -> "qwen25" (Qwen2.5 / Qwen3 JSON calls)
//   neither                            -> none (the text is returned as it is)
#pragma once

#include <string>
#include <string_view>

namespace tern::api {

struct DetectedParsers {
  std::string reasoning;  // "" (none) or a ReasoningParserFromName name
  std::string tool_call;  // "" (none) or a ToolParserFromName name
  std::string reasoning_why, tool_call_why;  // for the startup line
};

DetectedParsers DetectParsers(std::string_view chat_template);

}  // namespace tern::api
