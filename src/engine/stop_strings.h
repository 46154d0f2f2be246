// StopStringMatcher: finds stop strings in streamed text and says how much of
// the text is safe to emit, holding back any tail that could still grow into a
// stop string (so a client never sees half of one).
//
// Each stop string keeps a Knuth-Morris-Pratt state: the length of its longest
// prefix that ends the text so far. Appending costs O(stop strings) per byte
// (amortized) and what is held back is the largest state, whatever the
// strings' lengths; the API bounds their number and bytes (api/sampling.h).
#pragma once

#include <cstdint>
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
  struct Stop {
    std::string text;                  // not empty
    std::vector<uint32_t> border;      // border[i]: longest proper prefix of text[0..i] that is also its suffix
    size_t state = 0;                  // longest prefix of `text` ending the text so far (< text.size())
  };
  std::vector<Stop> stops_;
  std::string text_;
  size_t taken_ = 0;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tern
