#include "engine/stop_strings.h"

#include <algorithm>

namespace tern {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (auto& text : stops) {
    if (text.empty()) continue;
    Stop s{.text = std::move(text)};
    s.border.assign(s.text.size(), 0);
    for (size_t i = 1, k = 0; i < s.text.size(); ++i) {
      while (k > 0 && s.text[i] != s.text[k]) k = s.border[k - 1];
      if (s.text[i] == s.text[k]) ++k;
      s.border[i] = uint32_t(k);
    }
    stops_.push_back(std::move(s));
  }
}

bool StopStringMatcher::Append(std::string_view piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_.append(piece);
  // A new match ends inside the new piece. Of those, the earliest start wins,
  // and of equal starts the first stop string listed.
  size_t best = std::string::npos, best_stop = 0;
  for (size_t i = before; i < text_.size(); ++i) {
    const char c = text_[i];
    for (size_t k = 0; k < stops_.size(); ++k) {
      Stop& s = stops_[k];
      if (s.state == s.text.size()) continue;  // matched earlier in this piece
      while (s.state > 0 && s.text[s.state] != c) s.state = s.border[s.state - 1];
      if (s.text[s.state] == c) ++s.state;
      if (s.state == s.text.size()) {
        const size_t start = i + 1 - s.text.size();
        if (start < best || (start == best && k < best_stop)) best = start, best_stop = k;
      }
    }
  }
  if (best != std::string::npos) {
    matched_ = stops_[best_stop].text;
    text_.resize(best);
    stopped_ = true;
  }
  return stopped_;
}

std::string StopStringMatcher::TakeReady() {
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  if (!stopped_)
    for (const Stop& s : stops_) keep = std::max(keep, s.state);
  size_t ready = text_.size() - keep;
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
