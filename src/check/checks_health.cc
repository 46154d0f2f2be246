// Checks of the server's behaviour under stress and of its output as a whole:
// error handling, the latency summary, the degenerate-output summary.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/checks_common.h"
#include "check/degenerate.h"
#include "check/json_text.h"

namespace tern::check {

CheckResult RunErrorHandling(CheckContext& ctx) {
  struct Bad {
    const char* what;
    std::string body;
  };
  const Bad bad[] = {
      {"malformed JSON", R"({"model": "x", "messages": [{"role": "user", "content": "hi"})"},
      {"messages not a list", nlohmann::json{{"model", ctx.server().model}, {"messages", "hello"}}.dump()},
  };
  std::vector<std::string> seen;
  CheckResult c;
  for (const Bad& b : bad) {
    auto reply = ctx.http().PostJson("/v1/chat/completions", b.body);
    if (!reply.ok()) {
      c.outcome = Outcome::kFail;
      c.detail = fmt::format("{}: {}", b.what, reply.status().message());
      return c;
    }
    Verdict v = JudgeErrorReply(reply->status, reply->body);
    if (!v.pass) {
      c.outcome = Outcome::kFail;
      c.detail = fmt::format("{}: {}", b.what, v.detail);
      return c;
    }
    seen.push_back(fmt::format("{}: {}", b.what, v.detail));
  }
  // The server must still be healthy and still answer.
  auto ready = ProbeReady(ctx.http());
  if (!ready.ok()) {
    c.outcome = Outcome::kFail;
    c.detail = "server unhealthy after malformed requests: " + ready.status().message();
    return c;
  }
  ChatResult r = ctx.Chat({.messages = UserMessage(prompts::kOk), .max_tokens = 8, .thinking = Thinking::kOff});
  if (!r.ok()) {
    c.outcome = Outcome::kFail;
    c.detail = "no longer answers after malformed requests: " + r.failure;
    return c;
  }
  c.outcome = Outcome::kPass;
  c.detail = fmt::format("{}; still healthy", fmt::join(seen, "; "));
  return c;
}

CheckResult RunLatency(CheckContext& ctx) {
  ChatRequest req{
      .messages = UserMessage(prompts::kCount), .max_tokens = 64, .thinking = Thinking::kOff, .ignore_eos = true};
  ChatResult r = ctx.ChatStream(req);
  if (!r.ok()) return MakeResult(Verdict::Fail(r.failure), &r);
  if (!r.stream_error.empty()) return MakeResult(Verdict::Fail(r.stream_error), &r);
  if (!r.ttft_s) return MakeResult(Verdict::Fail("the stream carried no tokens"), &r);
  const int64_t tokens = r.completion_tokens.value_or(r.content_chunks);
  const double decode_s = r.latency_s - *r.ttft_s;
  CheckResult c = MakeResult(Verdict::Pass(""), &r);
  c.tokens = tokens;
  c.metrics = {{"ttft_ms", *r.ttft_s * 1e3},
               {"total_s", r.latency_s},
               {"tokens", tokens},
               {"tokens_counted_by", r.completion_tokens ? "usage" : "chunks"}};
  std::string rate = "decode rate n/a";
  if (tokens > 1 && decode_s > 0) {
    double tps = (tokens - 1) / decode_s;
    c.metrics["decode_tokens_per_s"] = tps;
    rate = fmt::format("decode {:.1f} tok/s", tps);
  }
  c.detail = fmt::format("TTFT {:.0f} ms, {} over {} tokens{}", *r.ttft_s * 1e3, rate, tokens,
                         r.completion_tokens ? "" : " (counted by chunks: no usage)");
  return c;
}

CheckResult RunDegenerateOutput(CheckContext& ctx) {
  ChatRequest req{
      .messages = UserMessage(prompts::kOcean), .max_tokens = 96, .thinking = Thinking::kOff, .logprobs = true};
  ChatResult r = ctx.Chat(req);
  if (!r.ok()) return MakeResult(Verdict::Fail(r.failure), &r);
  auto scans = ctx.Scans();
  int bad = 0;
  std::string first_bad;
  for (const auto& s : scans) {
    if (s.findings.empty()) continue;
    if (bad++ == 0) first_bad = fmt::format("{}: {} ('{}')", s.check, JoinFindings(s.findings), s.excerpt);
  }
  CheckResult c = MakeResult(Verdict::Pass(""), &r);
  c.metrics = {{"replies_scanned", scans.size()}, {"degenerate_replies", bad}, {"logprobs_returned", r.has_logprobs}};
  if (bad) {
    c.outcome = Outcome::kFail;
    c.detail = fmt::format("{} of {} replies degenerate; first: {}", bad, scans.size(), first_bad);
  } else {
    c.detail = fmt::format(
        "{} replies clean{}", scans.size(),
        r.has_logprobs ? fmt::format(", {} logprobs finite", r.logprobs.size()) : " (the server returned no logprobs)");
  }
  if (!r.notes.empty()) c.detail += " [" + r.notes + "]";
  return c;
}

}  // namespace tern::check
