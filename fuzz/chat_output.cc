// A model's reply as the chat endpoint parses it: reasoning (Qwen3's
// <think> blocks) and tool calls (Qwen2.5/Hermes JSON, Qwen3-Coder XML).
// A client steers what a model writes (prompts, logit_bias, a small or
// fine-tuned model), so this text is hostile input too.
//
// Input: byte 0 picks the configuration (bits 0-1: the tool parser, or none;
// bit 2: the prompt left the model inside reasoning; bit 3: no reasoning
// parser; bit 4: reasoning held back until it ends; bits 5-7 seed the
// split), the rest is the reply.
//
// Oracle besides the sanitizers: streaming is split-invariant. The reply
// pushed whole and pushed in pieces of 1-7 bytes give the same reasoning,
// content and tool calls (ids, names, arguments).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_output.h"
#include "api/chat_output_testing.h"

namespace {

using namespace tern::api;

ChatParseConfig Config(uint8_t mode) {
  ChatParseConfig c;
  if (!(mode & 8)) {
    ReasoningConfig r;
    r.kind = ReasoningParserKind::kQwen3;
    r.force_reasoning = (mode & 4) != 0;
    r.stream_reasoning = (mode & 16) == 0;
    c.reasoning = r;
  }
  switch (mode & 3) {
    case 0: c.tool_parser = ToolParserKind::kQwen25; break;
    case 1: c.tool_parser = ToolParserKind::kHermes; break;
    case 2: c.tool_parser = ToolParserKind::kQwen3Coder; break;
    default: break;
  }
  if (c.tool_parser) {
    ToolSpec t;
    t.name = "get_time";
    t.parameters = Json::parse(
        R"({"properties": {"timezone": {"type": "string"}, "days": {"type": "integer"},
            "opts": {"type": "object"}, "tags": {"type": "array"}, "ok": {"type": "boolean"}}})");
    ToolSpec u;
    u.name = "noop";
    c.tools = {t, u};
  }
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const ChatParseConfig config = Config(mode);
  const std::string whole = SummarizeChatOutput(config, std::vector<std::string_view>{text});
  std::vector<std::string_view> pieces;
  uint32_t r = 0x9E3779B9u * (uint32_t(mode >> 5) + 1);
  for (size_t i = 0; i < text.size();) {
    r = r * 1664525u + 1013904223u;
    const size_t len = 1 + (r >> 24) % 7;
    pieces.push_back(text.substr(i, len));
    i += len;
  }
  if (SummarizeChatOutput(config, pieces) != whole) std::abort();
  return 0;
}
