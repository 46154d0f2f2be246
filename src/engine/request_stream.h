// RequestStream: the channel between one request's HTTP thread and the engine
// thread. The engine appends tokens and the finish; the HTTP side waits for
// them and may abort (client gone, stop string matched).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_error.h"

namespace tern {

struct TokenOutput {
  int32_t id = 0;
  float logprob = 0;                             // log-softmax of the model's logits (when asked)
  std::vector<std::pair<int32_t, float>> top;    // the top_logprobs most likely tokens (when asked)
  std::vector<float> logits;                     // [vocab]: the row it was drawn from, before penalties (when asked)
  int32_t rank = 0;                              // prompt logprobs: 1 + the tokens more likely than `id`; 0: not computed
  std::chrono::steady_clock::time_point time;    // when the engine step that produced it ended
};

enum class FinishReason { kNone, kStop, kLength, kAbort };

// What arrived since the last Next() call.
struct RequestUpdate {
  std::vector<TokenOutput> tokens;
  // Prompt positions scored (EngineRequest::prompt_logprob_start), in order,
  // continuing where the previous update ended; `id` is the prompt token.
  std::vector<TokenOutput> prompt_logprobs;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  int32_t matched_stop_token = -1;  // with kStop from a stop token
  std::string message;              // with kAbort: why
  EngineError error = EngineError::kNone;  // with kAbort: why, as a kind (kNone: the client or caller aborted)
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
};

// Wakes a reader that waits on several streams at once (the choices of one
// n > 1 request): every stream sharing it signals it on news.
class StreamNotifier {
 public:
  uint64_t version() const;
  void Notify();
  // Waits until the version differs from `seen` or `timeout` passes; returns the current version.
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t version_ = 0;
};

class RequestStream {
 public:
  explicit RequestStream(std::string id, std::shared_ptr<StreamNotifier> notifier = nullptr)
      : id_(std::move(id)), notifier_(notifier ? std::move(notifier) : std::make_shared<StreamNotifier>()) {}

  // HTTP side: waits up to `timeout` for news; returns false on timeout with
  // nothing new. After a finished update, the stream stays finished.
  bool Next(RequestUpdate& out, std::chrono::milliseconds timeout);
  // HTTP side: asks the engine to stop this request and free its cache at the next step.
  void Abort() { aborted_.store(true, std::memory_order_relaxed); }
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  const std::string& id() const { return id_; }
  const std::shared_ptr<StreamNotifier>& notifier() const { return notifier_; }

  // Engine side.
  void PushToken(TokenOutput t, int64_t completion_tokens);
  void PushPromptLogprobs(std::vector<TokenOutput> positions);
  void Finish(FinishReason reason, int32_t matched_stop_token, std::string message, EngineError error,
              int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

 private:
  std::string id_;
  std::shared_ptr<StreamNotifier> notifier_;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  RequestUpdate pending_;
  bool has_news_ = false;
  bool finished_ = false;
};

}  // namespace tern
