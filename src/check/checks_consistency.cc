// Structural checks of generation: greedy determinism, stream == non-stream,
// and identical parallel requests. They judge the server, not the weights: a
// random-weight model passes them as long as the server behaves.
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <thread>

#include "check/checks_common.h"
#include "check/degenerate.h"
#include "check/json_text.h"

namespace tern::check {
namespace {

// Structural checks pass on degenerate text, but say so.
void NoteDegenerate(const ChatResult& r, CheckResult* c) {
  auto f = FindDegenerate(r);
  if (!f.empty() && c->outcome == Outcome::kPass) c->detail += " (output itself degenerate: " + JoinFindings(f) + ")";
}

}  // namespace

CheckResult RunDeterminism(CheckContext& ctx) {
  ChatRequest req{.messages = UserMessage(prompts::kSentence), .max_tokens = 48, .thinking = Thinking::kOff};
  ChatResult a = ctx.Chat(req);
  if (!a.ok()) return MakeResult(Verdict::Fail("first request: " + a.failure), &a);
  ChatResult b = ctx.Chat(req);
  CheckResult c = MakeResult(JudgeSameText(a, b), &b);
  NoteDegenerate(a, &c);
  return c;
}

CheckResult RunStreamConsistency(CheckContext& ctx) {
  ChatRequest req{.messages = UserMessage(prompts::kSentence), .max_tokens = 48, .thinking = Thinking::kOff};
  ChatResult plain = ctx.Chat(req);
  if (!plain.ok()) return MakeResult(Verdict::Fail("non-streamed request: " + plain.failure), &plain);
  ChatResult s = ctx.ChatStream(req);
  CheckResult c = MakeResult(JudgeStreamMatches(plain, s), &s);
  if (!c.tokens) c.tokens = plain.completion_tokens;
  c.metrics = {{"events", s.events}, {"done", s.done_seen}, {"usage_chunk", s.usage_seen}};
  if (s.ttft_s) c.metrics["ttft_ms"] = *s.ttft_s * 1e3;
  NoteDegenerate(plain, &c);
  return c;
}

CheckResult RunConcurrency(CheckContext& ctx) {
  const int n = std::max(1, std::min(ctx.options().concurrency, 256));
  ChatRequest req{.messages = UserMessage(prompts::kColors), .max_tokens = 32, .thinking = Thinking::kOff};
  std::vector<ChatResult> results(n);
  auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { results[i] = ctx.Chat(req); });
    for (auto& t : threads) t.join();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int failed = 0;
  std::string first_failure;
  std::map<std::string, int> distinct;  // text -> count
  int64_t tokens = 0;
  double slowest = 0;
  for (const auto& r : results) {
    slowest = std::max(slowest, r.latency_s);
    if (!r.ok()) {
      if (failed++ == 0) first_failure = r.failure;
      continue;
    }
    tokens += r.completion_tokens.value_or(0);
    ++distinct[r.reasoning.value_or("") + "\x1f" + r.ContentOr()];
  }
  CheckResult c;
  c.latency_s = slowest;
  c.tokens = tokens;
  c.metrics = {{"requests", n}, {"failed", failed}, {"distinct_replies", distinct.size()}, {"wall_s", wall}};
  if (wall > 0) c.metrics["tokens_per_s"] = tokens / wall;
  if (failed) {
    c.outcome = Outcome::kFail;
    c.detail = fmt::format("{} of {} parallel requests failed; first: {}", failed, n, first_failure);
  } else if (distinct.size() > 1) {
    c.outcome = Outcome::kFail;
    auto it = distinct.begin();
    auto first = it->first;
    auto second = (++it)->first;
    c.detail = fmt::format("{} different replies among {} identical greedy requests (batch-variant numerics?): {}",
                           distinct.size(), n, DescribeDifference(first, second));
  } else {
    c.outcome = Outcome::kPass;
    c.detail = fmt::format("{} parallel requests agree; {:.2f} s wall, {:.1f} tok/s together", n, wall,
                           wall > 0 ? tokens / wall : 0.0);
    NoteDegenerate(results[0], &c);
  }
  return c;
}

}  // namespace tern::check
