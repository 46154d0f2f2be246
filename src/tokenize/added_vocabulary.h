// AddedVocabulary: tokenizer.json "added_tokens", found whole in the input
// before normalization and pre-tokenization and never merged with neighbours.
//
// As in Hugging Face: tokens with normalized=false are searched in the raw
// text first, tokens with normalized=true in the normalized text between
// those; among overlapping candidates the leftmost, then longest wins
// (aho-corasick LeftmostLongest); single_word, lstrip and rstrip apply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// A segment of the input: bytes [begin, end), an added token when id >= 0.
struct Segment {
  uint32_t begin = 0;
  uint32_t end = 0;
  int32_t id = -1;
};

// Leftmost-longest matcher for a fixed set of strings (a byte trie).
class LiteralSetMatcher {
 public:
  // `patterns` non-empty strings; their index is the value reported.
  explicit LiteralSetMatcher(const std::vector<std::string>& patterns);
  LiteralSetMatcher() = default;

  bool empty() const { return nodes_.size() <= 1; }
  // Finds the leftmost-longest match starting at or after `from`. Returns
  // false when there is none.
  bool FindNext(std::string_view text, size_t from, size_t* begin, size_t* end,
                int32_t* pattern) const;

 private:
  struct Node {
    int32_t pattern = -1;  // pattern ending here
    std::vector<std::pair<uint8_t, uint32_t>> next;
  };
  uint32_t Child(uint32_t node, uint8_t b) const;
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `tokens` in file order with ids assigned; `normalized_contents[i]` is the
  // content of tokens[i] passed through the normalizer.
  AddedVocabulary(std::vector<AddedToken> tokens,
                  const std::vector<std::string>& normalized_contents);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool has_normalized() const { return !normalized_.empty(); }

  // Splits `text` into segments covering it, added tokens found with the
  // raw (normalized=false) or the normalized set. Segments may be empty only
  // when `text` is.
  void Split(std::string_view text, bool normalized_set, std::vector<Segment>* out) const;

 private:
  std::vector<AddedToken> tokens_;
  LiteralSetMatcher raw_, normalized_;
  std::vector<int32_t> raw_token_, normalized_token_;  // pattern -> index in tokens_
};

}  // namespace tern::tok
