// Tool calling: a weather tool is called with valid arguments, then its result
// is used in the final answer.
#include <fmt/format.h>

#include "check/checks_common.h"
#include "check/json_text.h"

namespace tern::check {
namespace {

using nlohmann::json;

json WeatherSchema() {
  return {{"type", "object"},
          {"properties",
           {{"location", {{"type", "string"}, {"description", "City name, e.g. Paris"}}},
            {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}}}},
          {"required", {"location"}},
          {"additionalProperties", false}};
}

json WeatherTools() {
  return json::array({{{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "Get the current weather in a city."},
                         {"parameters", WeatherSchema()}}}}});
}

constexpr const char* kToolResult =
    R"({"location": "Paris", "temperature": 18, "unit": "celsius", "condition": "sunny"})";

}  // namespace

CheckResult RunToolCalling(CheckContext& ctx) {
  json messages = UserMessage(prompts::kWeather);
  ChatResult call = ctx.Chat({.messages = messages,
                              .max_tokens = 256,
                              .thinking = Thinking::kOff,
                              .logprobs = false,
                              .tools = WeatherTools()});
  Verdict v = JudgeToolCall(call, "get_weather", WeatherSchema());
  if (!v.pass) return MakeResult(Verdict::Fail("call: " + v.detail), &call);
  const ToolCall& t = call.tool_calls[0];
  messages.push_back({{"role", "assistant"},
                      {"content", call.ContentOr()},
                      {"tool_calls", json::array({{{"id", t.id},
                                                   {"type", "function"},
                                                   {"function", {{"name", t.name}, {"arguments", t.arguments}}}}})}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", t.id}, {"content", kToolResult}});
  ChatResult answer = ctx.Chat({.messages = messages,
                                .max_tokens = 128,
                                .thinking = Thinking::kOff,
                                .logprobs = false,
                                .tools = WeatherTools()});
  if (answer.ok() && !answer.tool_calls.empty() && answer.ContentOr().empty())
    return MakeResult(Verdict::Fail("called the tool again instead of answering with its result"), &answer);
  Verdict a = JudgeContains(answer, "18", "temperature from the tool result");
  CheckResult c = MakeResult(
      a.pass ? Verdict::Pass(fmt::format("{}; answer uses the result: '{}'", v.detail, Excerpt(answer.ContentOr(), 40)))
             : Verdict::Fail("answer: " + a.detail),
      &answer);
  c.latency_s = call.latency_s + answer.latency_s;
  return c;
}

}  // namespace tern::check
