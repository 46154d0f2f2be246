// TokenVocabulary: what each token id adds to the output, as bytes (byte-level
// BPE tokens decoded through the GPT-2 alphabet; added tokens as their text),
// and a byte trie over the tokens a grammar may choose, for mask
// computation. Special tokens (end of turn, end of text, ...) are not in the
// trie: a grammar never produces them; the matcher allows the stop tokens
// alone, once the grammar can end. Shared (read-only) by every grammar
// compiled for one tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tern {
class Tokenizer;
}

namespace tern::grammar {

class TokenVocabulary {
 public:
  // vocab_size: the model's (it may exceed the tokenizer's; ids without a token are never allowed).
  static std::shared_ptr<const TokenVocabulary> FromTokenizer(const Tokenizer& tokenizer, int32_t vocab_size);
  // bytes[id]; special[id] marks control tokens (never matched by a grammar).
  static std::shared_ptr<const TokenVocabulary> FromBytes(std::vector<std::string> bytes, std::vector<bool> special);

  int32_t size() const { return int32_t(bytes_.size()); }
  std::string_view bytes(int32_t id) const { return bytes_[size_t(id)]; }
  bool special(int32_t id) const { return special_[size_t(id)]; }
  size_t mask_words() const { return (bytes_.size() + 63) / 64; }

  // The trie in preorder: node 0 is the root (depth 0); a node's subtree is
  // [id, subtree_end). Tokens whose bytes end at a node are
  // sorted_ids[token_begin, token_end).
  struct TrieNode {
    uint8_t byte;
    uint16_t depth;
    int32_t subtree_end;
    int32_t token_begin, token_end;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  // Non-special, non-empty token ids sorted by their bytes.
  const std::vector<int32_t>& sorted_ids() const { return sorted_; }
  size_t max_token_bytes() const { return max_len_; }

 private:
  void BuildTrie();
  std::vector<std::string> bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> sorted_;
  std::vector<TrieNode> trie_;
  size_t max_len_ = 0;
};

}  // namespace tern::grammar
