// BpeCache: a per-thread, direct-mapped cache of short pieces -> ids, so the
// BPE merges of frequent words are computed once per thread and model
// (Hugging Face keeps a similar word cache). A pure memo: results never
// depend on it (tokenizer_test checks encoding with and without it).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tern::tok {

class BpeCache {
 public:
  static constexpr size_t kMaxPiece = 22;  // bytes
  static constexpr size_t kMaxIds = 7;

  // The calling thread's cache.
  static BpeCache& ForThisThread();

  // Appends the cached ids of (owner, piece) to *ids and returns true, or
  // returns false on a miss.
  bool Lookup(uint32_t owner, std::string_view piece, std::vector<int32_t>* ids) const {
    if (piece.size() > kMaxPiece) return false;
    const Slot& s = slots_[Hash(owner, piece) & (kSlots - 1)];
    if (s.owner != owner || s.piece_len != piece.size() ||
        std::memcmp(s.piece, piece.data(), piece.size()) != 0) {
      return false;
    }
    ids->insert(ids->end(), s.ids, s.ids + s.num_ids);
    return true;
  }

  void Store(uint32_t owner, std::string_view piece, const int32_t* ids, size_t n) {
    if (piece.size() > kMaxPiece || n > kMaxIds) return;
    Slot& s = slots_[Hash(owner, piece) & (kSlots - 1)];
    s.owner = owner;
    s.piece_len = uint8_t(piece.size());
    std::memcpy(s.piece, piece.data(), piece.size());
    s.num_ids = uint8_t(n);
    std::memcpy(s.ids, ids, n * sizeof(int32_t));
  }

  // A fresh owner id for each loaded model (0 is never used, so empty slots
  // never match).
  static uint32_t NewOwner();

 private:
  static constexpr size_t kSlots = 8192;
  struct Slot {
    uint32_t owner = 0;
    uint8_t piece_len = 0;
    uint8_t num_ids = 0;
    char piece[kMaxPiece];
    int32_t ids[kMaxIds];
  };
  static_assert(sizeof(Slot) == 56);

  static uint64_t Hash(uint32_t owner, std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ owner;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
    return h ^ (h >> 29);
  }

  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

}  // namespace tern::tok
