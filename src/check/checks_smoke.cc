// The smoke suite: model info, "reply OK", 17 x 19 without and with thinking.
#include <fmt/format.h>

#include "check/checks_common.h"

namespace tern::check {

CheckResult MakeResult(const Verdict& v, const ChatResult* main) {
  CheckResult c;
  c.outcome = v.pass ? Outcome::kPass : Outcome::kFail;
  c.detail = v.detail;
  if (main) {
    c.latency_s = main->latency_s;
    c.tokens = main->completion_tokens;
    if (!main->notes.empty()) c.detail = c.detail.empty() ? main->notes : c.detail + " [" + main->notes + "]";
  }
  return c;
}

CheckResult RunModelInfo(CheckContext& ctx) {
  const ServerInfo& s = ctx.server();
  CheckResult c;
  c.metrics = {{"dialect", s.dialect},       {"owned_by", s.owned_by},           {"model", s.model},
               {"model_path", s.model_path}, {"info_endpoint", s.info_endpoint}, {"ready_endpoint", s.ready_endpoint}};
  if (s.context_length) c.metrics["context_length"] = *s.context_length;
  if (s.info_endpoint.empty()) {
    c.outcome = Outcome::kFail;
    c.detail = "no model info: " + s.info_problem;
    return c;
  }
  c.outcome = Outcome::kPass;
  std::string name = s.model_path.empty() || s.model_path == s.model ? s.model : s.model_path + " as " + s.model;
  c.detail =
      fmt::format("{} via {}: {}, {}", s.dialect, s.info_endpoint, name,
                  s.context_length ? fmt::format("context {}", *s.context_length) : "context length not reported");
  for (const auto& n : s.notes) c.detail += " [" + n + "]";
  return c;
}

CheckResult RunSimpleCompletion(CheckContext& ctx) {
  ChatRequest req{
      .messages = UserMessage(prompts::kOk), .max_tokens = 16, .thinking = Thinking::kOff, .logprobs = true};
  ChatResult r = ctx.Chat(req);
  return MakeResult(JudgeExactOk(r), &r);
}

CheckResult RunArithmeticNoThinking(CheckContext& ctx) {
  ChatRequest req{.messages = UserMessage(prompts::kArithmetic), .max_tokens = 32, .thinking = Thinking::kOff};
  ChatResult r = ctx.Chat(req);
  return MakeResult(JudgeArithmeticNoThinking(r, prompts::kArithmeticAnswer), &r);
}

CheckResult RunArithmeticThinking(CheckContext& ctx) {
  ChatRequest req{.messages = UserMessage(prompts::kArithmeticThinking),
                  .max_tokens = ctx.options().max_thinking_tokens,
                  .thinking = Thinking::kOn};
  ChatResult r = ctx.Chat(req);
  CheckResult c = MakeResult(JudgeArithmeticThinking(r, prompts::kArithmeticAnswer), &r);
  c.metrics["reasoning_field"] = r.reasoning_field;
  c.metrics["reasoning_chars"] = r.reasoning ? r.reasoning->size() : 0;
  c.metrics["content_null"] = !r.content.has_value();
  return c;
}

}  // namespace tern::check
