// StopStringMatcher: finds stop strings in streamed text and says how much of
// the text is safe to emit, holding back any tail that could still grow into a
// stop string (so a client never sees half of one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends text. Returns true once a stop string has appeared; the text is
  // then cut just before it (OpenAI semantics: the stop string is not returned).
  bool Append(std::string_view piece);
  // Text that is final and may be emitted now, from the last call's position.
  std::string TakeReady();
  // Everything not yet taken (call at the end of the stream).
  std::string TakeRest();

  bool stopped() const { return stopped_; }
  const std::string& text() const { return text_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string text_;
  size_t taken_ = 0;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tern
