#include "engine/request_stream.h"

namespace tern {

uint64_t StreamNotifier::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

void StreamNotifier::Notify() {
  {
    std::lock_guard lock(mu_);
    ++version_;
  }
  cv_.notify_all();
}

uint64_t StreamNotifier::WaitChange(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return version_ != seen; });
  return version_;
}

bool RequestStream::Next(RequestUpdate& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return has_news_; })) return false;
  out = std::move(pending_);
  pending_ = RequestUpdate{};
  pending_.prompt_tokens = out.prompt_tokens;
  pending_.completion_tokens = out.completion_tokens;
  pending_.cached_tokens = out.cached_tokens;
  has_news_ = false;
  if (finished_) {  // later calls see the finish again, with no tokens
    pending_.finished = true;
    pending_.reason = out.reason;
    pending_.matched_stop_token = out.matched_stop_token;
    pending_.message = out.message;
    pending_.error = out.error;
    has_news_ = true;
  }
  return true;
}

void RequestStream::PushToken(TokenOutput t, int64_t completion_tokens) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    pending_.tokens.push_back(std::move(t));
    pending_.completion_tokens = completion_tokens;
    has_news_ = true;
  }
  cv_.notify_all();
  notifier_->Notify();
}

void RequestStream::PushPromptLogprobs(std::vector<TokenOutput> positions) {
  if (positions.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    auto& dst = pending_.prompt_logprobs;
    if (dst.empty()) dst = std::move(positions);
    else dst.insert(dst.end(), std::make_move_iterator(positions.begin()), std::make_move_iterator(positions.end()));
    has_news_ = true;
  }
  cv_.notify_all();
  notifier_->Notify();
}

void RequestStream::Finish(FinishReason reason, int32_t matched_stop_token, std::string message, EngineError error,
                           int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    pending_.finished = true;
    pending_.reason = reason;
    pending_.matched_stop_token = matched_stop_token;
    pending_.message = std::move(message);
    pending_.error = error;
    pending_.prompt_tokens = prompt_tokens;
    pending_.completion_tokens = completion_tokens;
    pending_.cached_tokens = cached_tokens;
    has_news_ = true;
  }
  cv_.notify_all();
  notifier_->Notify();
}

}  // namespace tern
