// Checks for what the client libraries people use (the OpenAI SDKs, the
// Vercel AI SDK, LangChain) exposed on tern (issue 24), and would expose on
// any deployment:
//   special_tokens     special-token text (<|im_end|>, <|endoftext|>, ...) in
//                      content or reasoning, with and without tools, streamed
//                      or not; think / tool-call tags left behind by a parser
//   openai_error_body  an error body without OpenAI's error.message, which the
//                      OpenAI SDKs report as "400 status code (no body)"
//   stop_trimmed       finish_reason "stop" on a stop string that is still in
//                      the text (or text that is not the greedy prefix before it)
// All three are structural: a random-weight model passes them.
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/json_linear.h"
#include "check/checks_common.h"
#include "check/json_text.h"

namespace tern::check {
namespace {

using nlohmann::json;

json WeatherTool() {
  return json::array({{{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "Get the current weather in a city."},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"location", {{"type", "string"}}}}},
                           {"required", {"location"}}}}}}}});
}

}  // namespace

std::string SpecialTokenFinding(const ChatResult& r) {
  // Special tokens of the common chat formats: <|...|> (Qwen, GPT, Llama 3,
  // Phi), and Llama 2 / Mistral's </s>.
  // A scan, not std::regex: libstdc++'s regex recurses once per repeated
  // character, and a reply of "<|" and a million letters overflowed the stack.
  auto first_special = [](const std::string& text) -> std::string {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if (text.compare(i, 4, "</s>") == 0) return "</s>";
      if (text[i] != '<' || text[i + 1] != '|') continue;
      size_t j = i + 2;
      while (j < text.size() && word(text[j])) ++j;
      if (j > i + 2 && text.compare(j, 2, "|>") == 0) return text.substr(i, j + 2 - i);
      i = j > i + 2 ? j - 1 : i;  // (a run of letters not closed by "|>" holds no token start)
    }
    return "";
  };
  auto find = [&](const std::string& text, const char* field) -> std::string {
    const std::string m = first_special(text);
    return m.empty() ? "" : fmt::format("{} holds '{}'", field, m);
  };
  const std::string content = r.ContentOr(), reasoning = r.reasoning.value_or("");
  if (auto f = find(content, "content"); !f.empty()) return f;
  if (auto f = find(reasoning, "reasoning"); !f.empty()) return f;
  // Tags a parser consumed must not survive it: the reasoning parser took the
  // reasoning out (so </think> was seen), the tool parser took calls out.
  if (!reasoning.empty()) {
    for (const char* tag : {"<think>", "</think>"})
      if (content.find(tag) != std::string::npos || reasoning.find(tag) != std::string::npos)
        return fmt::format("'{}' left in the text after reasoning was separated", tag);
  }
  if (!r.tool_calls.empty()) {
    for (const char* tag : {"<tool_call>", "</tool_call>"})
      if (content.find(tag) != std::string::npos)
        return fmt::format("'{}' left in content after the tool calls were parsed", tag);
  }
  return "";
}

CheckResult RunSpecialTokens(CheckContext& ctx) {
  struct Case {
    const char* what;
    const char* prompt;
    bool tools;
    bool stream;
    int max_tokens;
  };
  const Case cases[] = {
      {"plain", prompts::kOk, false, false, 16},
      {"plain, streamed", prompts::kOk, false, true, 16},
      {"with tools", prompts::kArithmetic, true, false, 64},
      {"with tools, streamed", prompts::kArithmetic, true, true, 64},
      {"tool call", prompts::kWeather, true, false, 128},
      {"tool call, streamed", prompts::kWeather, true, true, 128},
  };
  int replies = 0;
  const ChatResult* last = nullptr;
  std::vector<ChatResult> results;
  results.reserve(std::size(cases));
  for (const Case& c : cases) {
    ChatRequest req{.messages = UserMessage(c.prompt), .max_tokens = c.max_tokens, .thinking = Thinking::kOff,
                    .logprobs = false, .tools = c.tools ? WeatherTool() : json(nullptr)};
    results.push_back(c.stream ? ctx.ChatStream(req) : ctx.Chat(req));
    const ChatResult& r = results.back();
    last = &r;
    if (!r.ok()) return MakeResult(Verdict::Fail(fmt::format("{}: {}", c.what, r.failure)), &r);
    if (auto f = SpecialTokenFinding(r); !f.empty())
      return MakeResult(
          Verdict::Fail(fmt::format("{} (finish_reason {}): {}: '{}'", c.what, r.finish_reason, f,
                                    Excerpt(r.ContentOr() + r.reasoning.value_or(""), 60))),
          &r);
    ++replies;
  }
  return MakeResult(Verdict::Pass(fmt::format("{} replies (with and without tools, streamed and not) clean", replies)),
                    last);
}

Verdict JudgeOpenAiErrorBody(int status, const std::string& body) {
  if (status < 400) return Verdict::Fail(fmt::format("HTTP {} for a malformed request", status));
  // Strict JSON (the SDKs parse it so), after the nesting check that keeps the walk below shallow.
  const json j = JsonNestingDepth(body) > kMaxReplyNesting ? json(json::value_t::discarded)
                                                           : json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Verdict::Fail(fmt::format("HTTP {}: the body is not a JSON object: '{}'", status, Excerpt(body, 60)));
  const auto e = j.find("error");
  if (e == j.end() || !e->is_object() || !e->contains("message") || !(*e)["message"].is_string() ||
      (*e)["message"].get<std::string>().empty())
    return Verdict::Fail(fmt::format(
        "HTTP {}: no error.message (OpenAI clients show '{} status code (no body)'): '{}'", status, status,
        Excerpt(body, 80)));
  return Verdict::Pass(fmt::format("HTTP {}, error.message '{}'", status, Excerpt((*e)["message"].get<std::string>(), 40)));
}

CheckResult RunOpenAiErrorBody(CheckContext& ctx) {
  const std::pair<const char*, std::string> bad[] = {
      {"malformed JSON", R"({"model": "x", "messages": [{"role": "user", "content": "hi"})"},
      {"empty messages", json{{"model", ctx.server().model}, {"messages", json::array()}}.dump()},
  };
  std::vector<std::string> seen;
  CheckResult c;
  for (const auto& [what, body] : bad) {
    auto reply = ctx.http().PostJson("/v1/chat/completions", body);
    if (!reply.ok()) {
      c.outcome = Outcome::kFail;
      c.detail = fmt::format("{}: {}", what, reply.status().message());
      return c;
    }
    const Verdict v = JudgeOpenAiErrorBody(reply->status, reply->body);
    if (!v.pass) return MakeResult(Verdict::Fail(fmt::format("{}: {}", what, v.detail)));
    seen.push_back(fmt::format("{}: {}", what, v.detail));
  }
  return MakeResult(Verdict::Pass(fmt::format("{}", fmt::join(seen, "; "))));
}

// A stop string from the middle of `text`: 4 characters starting at a word
// after its first third ("" when the text is too short).
std::string StopStringFrom(const std::string& text) {
  for (size_t i = text.size() / 3; i + 4 <= text.size(); ++i) {
    if (i == 0 || text[i - 1] != ' ' || text[i] == ' ') continue;
    const std::string s = text.substr(i, 4);
    bool ascii = true;
    for (unsigned char ch : s) ascii = ascii && ch >= 0x20 && ch < 0x7f;
    if (ascii) return s;
  }
  return "";
}

CheckResult RunStopTrimmed(CheckContext& ctx) {
  ChatRequest req{.messages = UserMessage(prompts::kCount), .max_tokens = 48, .thinking = Thinking::kOff,
                  .logprobs = false};
  ChatResult full = ctx.Chat(req);
  if (!full.ok()) return MakeResult(Verdict::Fail(full.failure), &full);
  const std::string text = full.ContentOr();
  const std::string stop = StopStringFrom(text);
  if (stop.empty()) {
    CheckResult c = MakeResult(Verdict::Pass(""), &full);
    c.outcome = Outcome::kSkip;
    c.detail = fmt::format("the greedy reply '{}' has no word to stop at", Excerpt(text, 40));
    return c;
  }
  const std::string want = text.substr(0, text.find(stop));
  req.stop = {stop};
  const ChatResult* last = nullptr;
  ChatResult replies[2];
  for (int i = 0; i < 2; ++i) {
    req.stream = i == 1;
    replies[i] = req.stream ? ctx.ChatStream(req) : ctx.Chat(req);
    const ChatResult& r = replies[i];
    last = &r;
    const char* how = req.stream ? "streamed" : "non-stream";
    if (!r.ok()) return MakeResult(Verdict::Fail(fmt::format("{}: {}", how, r.failure)), &r);
    const std::string got = r.ContentOr();
    if (got.find(stop) != std::string::npos)
      return MakeResult(Verdict::Fail(fmt::format("{}: finish_reason '{}' but the stop string '{}' is still in the "
                                                  "text: '{}'",
                                                  how, r.finish_reason, stop, Excerpt(got, 60))),
                        &r);
    if (r.finish_reason != "stop")
      return MakeResult(Verdict::Fail(fmt::format("{}: stop '{}' (in the greedy reply) gave finish_reason '{}'", how,
                                                  stop, r.finish_reason)),
                        &r);
    if (got != want)
      return MakeResult(Verdict::Fail(fmt::format("{}: '{}' is not the greedy text before the stop string '{}' ('{}')",
                                                  how, Excerpt(got, 40), stop, Excerpt(want, 40))),
                        &r);
  }
  return MakeResult(Verdict::Pass(fmt::format("stop '{}': text cut before it, stream and non-stream", stop)), last);
}

}  // namespace tern::check
