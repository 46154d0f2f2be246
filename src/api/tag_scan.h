// Helpers for streaming parsers that look for fixed tags ("</think>",
// "<tool_call>") in text that arrives in arbitrary pieces.
#pragma once

#include <initializer_list>
#include <string_view>

namespace tern::api {

// Length of the longest suffix of `text` that is a proper, non-empty prefix
// of one of `tags`: the bytes a streaming parser must hold back because the
// next piece may complete a tag ("abc</th" -> 4 for "</think>").
inline size_t PartialTagSuffix(std::string_view text, std::initializer_list<std::string_view> tags) {
  size_t best = 0;
  for (const std::string_view tag : tags) {
    const size_t max_len = std::min(text.size(), tag.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (text.substr(text.size() - len) == tag.substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

// The first occurrence of any of `tags` in `text` at or after `from`:
// returns its position (npos if none) and sets `*which` to its index.
inline size_t FindFirstTag(std::string_view text, size_t from,
                           std::initializer_list<std::string_view> tags, size_t* which) {
  size_t best = std::string_view::npos;
  size_t i = 0;
  for (const std::string_view tag : tags) {
    const size_t pos = text.find(tag, from);
    if (pos < best) {
      best = pos;
      *which = i;
    }
    ++i;
  }
  return best;
}

}  // namespace tern::api
