// Rendering cost of a chat request: a 50-message conversation with tools,
// tool calls and tool results through real templates (the server renders
// every request). Run: build-*/src/template/template_bench
#include <benchmark/benchmark.h>

#include "base/mapped_file.h"
#include "template/chat.h"
#include "template/template.h"

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string Load(const std::string& file) {
  const char* src = std::getenv("TERN_SOURCE_DIR");
  auto text = ReadFileToString(std::string(src ? src : ".") + "/tests/golden/template/templates/" + file);
  if (!text.ok()) std::abort();
  return *text;
}

ChatRenderInput Conversation() {
  ChatRenderInput in;
  in.tools = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}},
     "required": ["query"]}}}])");
  Json msgs = Json::array();
  msgs.push_back({{"role", "system"}, {"content", "You are a helpful assistant that uses tools when needed."}});
  int i = 0;
  while (msgs.size() < 50) {
    msgs.push_back({{"role", "user"}, {"content", "Question number " + std::to_string(i) + ": what is the weather like in Paris today, and should I take an umbrella?"}});
    if (i % 3 == 1 && msgs.size() + 3 <= 50) {
      Json call = {{"id", "call" + std::to_string(10000 + i)}, {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"unit", "celsius"}}}}}};
      msgs.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}});
      msgs.push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "{\"temperature\": 18, \"rain\": 0.7}"}});
    }
    msgs.push_back({{"role", "assistant"}, {"content", "It is 18 degrees with a 70% chance of rain, so yes, take an umbrella. Anything else?"},
                    {"reasoning_content", "The tool says 18 C and rain probability 0.7."}});
    ++i;
  }
  msgs.erase(msgs.begin() + 50, msgs.end());
  if (msgs.back()["role"] != "user") msgs.back() = {{"role", "user"}, {"content", "Thanks, and tomorrow?"}};
  in.messages = msgs;
  return in;
}

void BM_RenderChat(benchmark::State& state, const char* file) {
  auto tpl = Template::Parse(Load(file));
  if (!tpl.ok()) {
    state.SkipWithError(tpl.status().message().c_str());
    return;
  }
  const ChatRenderInput in = Conversation();
  size_t bytes = 0;
  for (auto _ : state) {
    auto r = RenderChat(*tpl, in);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    bytes = r->size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["messages"] = static_cast<double>(in.messages.size());
  state.counters["prompt_bytes"] = static_cast<double>(bytes);
}
BENCHMARK_CAPTURE(BM_RenderChat, qwen3, "qwen3.jinja")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RenderChat, qwen3_5, "qwen3_5.jinja")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RenderChat, llama3_1, "llama3_1.jinja")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RenderChat, mistral_nemo, "mistral_nemo.jinja")->Unit(benchmark::kMicrosecond);

void BM_Parse(benchmark::State& state) {
  const std::string src = Load("qwen3_5.jinja");
  for (auto _ : state) benchmark::DoNotOptimize(Template::Parse(src));
}
BENCHMARK(BM_Parse)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tern::jinja

BENCHMARK_MAIN();
