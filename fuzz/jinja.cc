// A chat template: lexed and parsed (Template::Parse), then rendered through
// RenderChat with a fixed chat (system, user, assistant with reasoning and a
// tool call, tool result; one tool) under small limits, as the server
// renders a request. A render that Jinja2's sandbox calls unsafe is also
// rendered with allow_mutation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "template/chat.h"
#include "template/template.h"

namespace {

using Json = nlohmann::ordered_json;

const tern::jinja::ChatRenderInput& Input() {
  static const tern::jinja::ChatRenderInput in = [] {
    tern::jinja::ChatRenderInput c;
    c.messages = Json::parse(R"([
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": [{"type": "text", "text": "hi é 你好"}, {"type": "text", "text": "x"}]},
      {"role": "assistant", "content": "<think>\nr\n</think>\n\nok", "reasoning_content": "r",
       "tool_calls": [{"id": "call0", "type": "function",
                       "function": {"name": "get_time", "arguments": {"tz": "UTC", "n": [1, {"b": null}]}}}]},
      {"role": "tool", "tool_call_id": "call0", "content": "12:00"},
      {"role": "user", "content": null}])");
    c.tools = Json::parse(R"([{"type": "function", "function": {"name": "get_time", "description": "Time.",
      "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}])");
    c.extra_kwargs = Json::parse(R"({"enable_thinking": false})");
    c.bos_token = "<s>";
    c.eos_token = "</s>";
    return c;
  }();
  return in;
}

tern::jinja::RenderOptions Limits(bool allow_mutation) {
  tern::jinja::RenderOptions o;
  o.max_output_bytes = 1 << 20;
  o.max_loop_iterations = 100000;
  o.max_recursion_depth = 32;
  o.now = [] { return std::time_t{1741944413}; };
  o.local_time = false;
  o.allow_mutation = allow_mutation;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tpl = tern::jinja::Template::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tpl.ok()) return 0;
  auto r = tern::jinja::RenderChat(*tpl, Input(), Limits(false));
  if (!r.ok() && r.status().message().find("unsafe") != std::string::npos) {
    (void)tern::jinja::RenderChat(*tpl, Input(), Limits(true));
  }
  return 0;
}
