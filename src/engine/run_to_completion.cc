#include "engine/run_to_completion.h"

#include <algorithm>

#include <fmt/format.h>

namespace tern {

std::vector<int32_t> CompletedRequest::ids() const {
  std::vector<int32_t> out;
  out.reserve(tokens.size());
  for (const TokenOutput& t : tokens) out.push_back(t.id);
  return out;
}

double CompletedRequest::prefill_seconds() const {
  if (tokens.empty()) return 0;
  return std::chrono::duration<double>(tokens.front().time - submitted).count();
}

double CompletedRequest::decode_seconds() const {
  if (tokens.size() < 2) return 0;
  return std::chrono::duration<double>(tokens.back().time - tokens.front().time).count();
}

Result<std::vector<CompletedRequest>> RunToCompletion(Engine& engine, std::vector<EngineRequest> requests,
                                                      const TokenObserver& on_token) {
  const size_t n = requests.size();
  std::vector<CompletedRequest> done(n);
  if (n == 0) return done;
  const auto submitted = std::chrono::steady_clock::now();
  for (CompletedRequest& c : done) c.submitted = submitted;
  // All at once: the engine admits them together, whatever the threads' timing.
  SubmitGroupResult sub = engine.SubmitBatch(std::move(requests));
  if (sub.streams.empty()) return Status::Errorf("{}", sub.error);
  std::vector<std::shared_ptr<RequestStream>>& streams = sub.streams;
  size_t left = n;
  std::vector<bool> finished(n, false);
  // One request: block on its stream. Several: poll each briefly (timings come
  // from the engine's step times, so the polling adds nothing to them).
  const auto wait = std::chrono::milliseconds(n == 1 ? 1000 : 2);
  while (left > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (finished[i]) continue;
      RequestUpdate u;
      if (!streams[i]->Next(u, wait)) continue;
      CompletedRequest& c = done[i];
      for (TokenOutput& t : u.prompt_logprobs) c.prompt_logprobs.push_back(std::move(t));
      for (TokenOutput& t : u.tokens) {
        if (c.stopped_by_caller) break;  // tokens the engine made before it saw the abort
        if (on_token && !on_token(i, t)) {
          c.stopped_by_caller = true;
          streams[i]->Abort();
        }
        c.tokens.push_back(std::move(t));
      }
      if (!u.finished) continue;
      finished[i] = true;
      --left;
      c.reason = u.reason;
      c.matched_stop_token = u.matched_stop_token;
      c.message = u.message;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (done[i].reason == FinishReason::kAbort && !done[i].stopped_by_caller)
      return Status::Errorf("request {}: {}", i, done[i].message.empty() ? "aborted" : done[i].message);
  return done;
}

EngineOptions OfflineEngineOptions(const Model& model, const std::vector<EngineRequest>& requests, EngineOptions o) {
  int64_t longest = 1;
  for (const EngineRequest& r : requests)
    longest = std::max(longest, int64_t(r.prompt.size()) + std::max<int64_t>(r.max_tokens, 0) + 1);
  if (o.context_length <= 0) o.context_length = model.config().max_position_embeddings;
  if (o.context_length <= 0) o.context_length = longest;
  if (o.kv.block_size <= 0) o.kv.block_size = 16;
  if (o.kv.num_blocks <= 0) {
    // Whole blocks per request, plus one spare each for the engine's admission reserve.
    int64_t blocks = 0;
    for (const EngineRequest& r : requests)
      blocks += BlocksFor(std::min(int64_t(r.prompt.size()) + std::max<int64_t>(r.max_tokens, 0) + 1, o.context_length),
                          o.kv.block_size) + 1;
    o.kv.num_blocks = std::max<int64_t>(blocks, 1);
  }
  return o;
}

}  // namespace tern
