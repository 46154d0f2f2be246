#include "tokenize/added_vocabulary.h"

#include <algorithm>

#include <utf8proc.h>

#include "tokenize/utf8.h"

namespace tern::tok {
namespace {

// Rust regex's \s: Unicode White_Space.
bool IsWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Rust regex's \w: Alphabetic, marks, decimal digits, connector punctuation,
// join controls (Alphabetic approximated by letters and letter numbers).
bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  if (c == 0x200C || c == 0x200D) return true;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// The code point that ends s (valid, non-empty UTF-8).
char32_t LastCodePoint(std::string_view s) {
  size_t i = s.size() - 1;
  while (i > 0 && (uint8_t(s[i]) & 0xC0) == 0x80) --i;
  return NextCodePoint(s, &i);
}

bool EndsWithWord(std::string_view s) { return !s.empty() && IsWordChar(LastCodePoint(s)); }

bool StartsWithWord(std::string_view s) {
  size_t pos = 0;
  return !s.empty() && IsWordChar(NextCodePoint(s, &pos));
}

// Start of the run of whitespace that ends s.
size_t TrailingSpaceStart(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t i = end - 1;
    while (i > 0 && (uint8_t(s[i]) & 0xC0) == 0x80) --i;
    size_t p = i;
    if (!IsWhiteSpace(NextCodePoint(s, &p))) break;
    end = i;
  }
  return end;
}

// Length of the run of whitespace that starts s.
size_t LeadingSpaceLength(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsWhiteSpace(NextCodePoint(s, &next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

LiteralSetMatcher::LiteralSetMatcher(const std::vector<std::string>& patterns) {
  for (size_t p = 0; p < patterns.size(); ++p) {
    const std::string& s = patterns[p];
    if (s.empty()) continue;
    first_byte_[uint8_t(s[0])] = true;
    uint32_t node = 0;
    for (unsigned char b : s) {
      uint32_t child = Child(node, b);
      if (child == 0) {
        child = uint32_t(nodes_.size());
        nodes_[node].next.emplace_back(b, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    // The first of identical patterns wins, as in aho-corasick.
    if (nodes_[node].pattern < 0) nodes_[node].pattern = int32_t(p);
  }
}

uint32_t LiteralSetMatcher::Child(uint32_t node, uint8_t b) const {
  for (const auto& [byte, child] : nodes_[node].next) {
    if (byte == b) return child;
  }
  return 0;
}

bool LiteralSetMatcher::FindNext(std::string_view text, size_t from, size_t* begin, size_t* end,
                                 int32_t* pattern) const {
  if (empty()) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t start = from; start < text.size(); ++start) {
    if (!first_byte_[p[start]]) continue;
    uint32_t node = 0;
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t i = start; i < text.size(); ++i) {
      node = Child(node, p[i]);
      if (node == 0) break;
      if (nodes_[node].pattern >= 0) {
        best = nodes_[node].pattern;
        best_end = i + 1;
      }
    }
    if (best >= 0) {
      *begin = start;
      *end = best_end;
      *pattern = best;
      return true;
    }
  }
  return false;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens,
                                 const std::vector<std::string>& normalized_contents)
    : tokens_(std::move(tokens)) {
  std::vector<std::string> raw_patterns, normalized_patterns;
  // Special tokens come first in Hugging Face's matcher, then the others.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const AddedToken& t = tokens_[i];
      if (t.content.empty() || t.special != (pass == 0)) continue;
      if (t.normalized) {
        normalized_patterns.push_back(normalized_contents[i]);
        normalized_token_.push_back(int32_t(i));
      } else {
        raw_patterns.push_back(t.content);
        raw_token_.push_back(int32_t(i));
      }
    }
  }
  raw_ = LiteralSetMatcher(raw_patterns);
  normalized_ = LiteralSetMatcher(normalized_patterns);
}

void AddedVocabulary::Split(std::string_view text, bool normalized_set,
                            std::vector<Segment>* out) const {
  const LiteralSetMatcher& matcher = normalized_set ? normalized_ : raw_;
  const std::vector<int32_t>& token_of = normalized_set ? normalized_token_ : raw_token_;
  const uint32_t n = uint32_t(text.size());
  if (n == 0) {
    out->push_back({0, 0, -1});
    return;
  }
  size_t start_offset = 0;
  size_t search_from = 0;
  size_t mb, me;
  int32_t pat;
  while (matcher.FindNext(text, search_from, &mb, &me, &pat)) {
    search_from = me;  // matches never overlap, whatever happens to this one
    const AddedToken& t = tokens_[size_t(token_of[size_t(pat)])];
    size_t start = mb, stop = me;
    if (t.single_word) {
      bool start_space = start == 0 || !EndsWithWord(text.substr(0, start));
      bool stop_space = stop == n || !StartsWithWord(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
    if (t.rstrip) stop += LeadingSpaceLength(text.substr(stop));
    if (start_offset < start) out->push_back({uint32_t(start_offset), uint32_t(start), -1});
    out->push_back({uint32_t(start), uint32_t(stop), t.id});
    start_offset = stop;
  }
  if (start_offset != n) out->push_back({uint32_t(start_offset), n, -1});
}

}  // namespace tern::tok
