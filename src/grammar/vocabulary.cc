#include "grammar/vocabulary.h"

#include <algorithm>

#include "tokenize/tokenizer.h"
#include "tokenize/tokenizer_data.h"

namespace tern::grammar {

std::shared_ptr<const TokenVocabulary> TokenVocabulary::FromTokenizer(const Tokenizer& tokenizer,
                                                                      int32_t vocab_size) {
  const tok::TokenizerData& d = tokenizer.data();
  const int32_t n = std::max(vocab_size, d.vocab_size());
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> special(static_cast<size_t>(n), false);
  for (int32_t id = 0; id < d.vocab_size(); ++id) {
    if (!d.HasToken(id)) continue;
    special[size_t(id)] = d.IsSpecial(id);
    bytes[size_t(id)] = std::string(d.DecodedBytes(id));
  }
  return FromBytes(std::move(bytes), std::move(special));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::FromBytes(std::vector<std::string> bytes,
                                                                  std::vector<bool> special) {
  auto v = std::shared_ptr<TokenVocabulary>(new TokenVocabulary());
  special.resize(bytes.size(), false);
  v->bytes_ = std::move(bytes);
  v->special_ = std::move(special);
  v->BuildTrie();
  return v;
}

void TokenVocabulary::BuildTrie() {
  for (int32_t id = 0; id < size(); ++id)
    if (!special_[size_t(id)] && !bytes_[size_t(id)].empty()) sorted_.push_back(id);
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [&](int32_t a, int32_t b) { return bytes_[size_t(a)] < bytes_[size_t(b)]; });
  // Inserting sorted strings creates the nodes in preorder.
  trie_.push_back({0, 0, 0, 0, 0});
  std::vector<int32_t> path = {0};  // node at each depth of the previous token
  std::string_view prev;
  for (size_t k = 0; k < sorted_.size(); ++k) {
    const std::string_view b = bytes_[size_t(sorted_[k])];
    max_len_ = std::max(max_len_, b.size());
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < b.size() && prev[lcp] == b[lcp]) ++lcp;
    path.resize(lcp + 1);
    for (size_t d = lcp + 1; d <= b.size(); ++d) {
      trie_.push_back({uint8_t(b[d - 1]), uint16_t(std::min<size_t>(d, 65535)), 0, int32_t(k), int32_t(k)});
      path.push_back(int32_t(trie_.size() - 1));
    }
    TrieNode& end = trie_[size_t(path[b.size()])];
    if (end.token_begin == end.token_end) end.token_begin = int32_t(k);
    end.token_end = int32_t(k + 1);
    prev = b;
  }
  // subtree_end: the next node at the same or a smaller depth.
  std::vector<int32_t> open;
  for (int32_t i = 0; i < int32_t(trie_.size()); ++i) {
    while (!open.empty() && trie_[size_t(open.back())].depth >= trie_[size_t(i)].depth) {
      trie_[size_t(open.back())].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (int32_t i : open) trie_[size_t(i)].subtree_end = int32_t(trie_.size());
}

}  // namespace tern::grammar
