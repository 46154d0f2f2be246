// BpeModel: the tokenizer.json "model" of type BPE.
//
// A piece is first split into initial symbols (one per character, or per
// byte for byte-level models), then the adjacent pair with the lowest merge
// rank is merged, leftmost first, until no adjacent pair has a merge. This is
// Hugging Face's Word::merge_all; three implementations live here: a fast one
// for short words, a heap-based one for long words, and a naive reference
// used by the tests to check both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tern::tok {

// Pair of symbol ids -> (rank, merged id), an open-addressing hash table.
class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged = -1;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  void Reserve(size_t n);
  // Inserts or overwrites (a later duplicate merge replaces an earlier one,
  // as when Hugging Face collects the merges into a map).
  void Put(int32_t left, int32_t right, uint32_t rank, int32_t merged);
  // Null when (left, right) has no merge.
  const Entry* Find(int32_t left, int32_t right) const {
    const uint64_t key = Key(left, right);
    size_t i = Slot(key);
    while (true) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return size_; }

 private:
  static uint64_t Key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t Slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::vector<Entry> slots_{Entry{}};
  size_t mask_ = 0;
  int shift_ = 63;
  size_t size_ = 0;
};

// Merge procedures over a word's symbol ids (all give the same result).
void MergeWordFast(const MergeTable& merges, std::vector<int32_t>* symbols);
void MergeWordHeap(const MergeTable& merges, std::vector<int32_t>* symbols);
void MergeWordNaive(const MergeTable& merges, std::vector<int32_t>* symbols);

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, TransparentHash, std::equal_to<>>;

class BpeModel {
 public:
  // Parses a "model" object of type BPE. `byte_level`: pieces will be raw
  // bytes shown through the byte-level alphabet (a ByteLevel pre-tokenizer).
  static Result<BpeModel> FromJson(const nlohmann::json& model, bool byte_level);

  // Appends the ids of one pre-tokenized piece (non-empty; raw bytes for
  // byte-level models, else valid UTF-8 in the vocabulary's alphabet).
  // `scratch` is reused between calls.
  void Tokenize(std::string_view piece, std::vector<int32_t>* ids,
                std::vector<int32_t>* scratch) const;
  // The same without the per-thread word cache (for tests).
  void TokenizeUncached(std::string_view piece, std::vector<int32_t>* ids,
                        std::vector<int32_t>* scratch) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  const StringIdMap& vocab() const { return vocab_; }
  const MergeTable& merges() const { return merges_; }

 private:
  void TokenizeGeneric(std::string_view word, std::vector<int32_t>* ids,
                       std::vector<int32_t>* scratch) const;

  StringIdMap vocab_;              // token (model alphabet) -> id
  MergeTable merges_;
  bool byte_level_ = false;
  // Byte-level fast path: the id of each byte's single-character token;
  // usable when all 256 exist and there is no subword prefix or suffix.
  bool fast_bytes_ = false;
  int32_t byte_id_[256] = {};
  StringIdMap raw_vocab_;          // raw bytes -> id, for ignore_merges on the fast path
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  uint32_t cache_owner_ = 0;  // this model's key in BpeCache
};

}  // namespace tern::tok
