#include "api/parser_detect.h"

namespace tern::api {

DetectedParsers DetectParsers(std::string_view t) {
  DetectedParsers d;
  auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<think>")) {
    d.reasoning = "qwen3";
    d.reasoning_why = "the chat template writes <think>";
  } else {
    d.reasoning_why = "the chat template has no <think>";
  }
  if (has("<tool_call>") && has("<function=")) {
    d.tool_call = "qwen3_coder";
    d.tool_call_why = "the chat template writes <tool_call><function=...> (XML calls)";
  } else if (has("<tool_call>")) {
    d.tool_call = "qwen25";
    d.tool_call_why = "the chat template writes <tool_call> with JSON calls";
  } else {
    d.tool_call_why = "the chat template has no <tool_call>";
  }
  return d;
}

}  // namespace tern::api
