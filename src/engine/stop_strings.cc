#include "engine/stop_strings.h"

#include <algorithm>

namespace tern {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  for (const auto& s : stops_) max_len_ = std::max(max_len_, s.size());
}

bool StopStringMatcher::Append(std::string_view piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_.append(piece);
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    // A new match must end inside the new piece.
    const size_t from = before >= s.size() - 1 ? before - (s.size() - 1) : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos && at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    text_.resize(best);
    stopped_ = true;
  }
  return stopped_;
}

std::string StopStringMatcher::TakeReady() {
  size_t ready = text_.size();
  if (!stopped_ && max_len_ > 0) {
    // Hold back the longest tail that is a proper prefix of some stop string.
    for (size_t keep = std::min(max_len_ - 1, text_.size()); keep > 0; --keep) {
      const std::string_view tail(text_.data() + text_.size() - keep, keep);
      bool prefix = false;
      for (const auto& s : stops_) prefix |= s.size() > keep && std::string_view(s).substr(0, keep) == tail;
      if (prefix) {
        ready = text_.size() - keep;
        break;
      }
    }
  }
  if (ready < taken_) ready = taken_;
  std::string out = text_.substr(taken_, ready - taken_);
  taken_ = ready;
  return out;
}

std::string StopStringMatcher::TakeRest() {
  std::string out = text_.substr(taken_);
  taken_ = text_.size();
  return out;
}

}  // namespace tern
