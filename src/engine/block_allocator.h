// BlockAllocator: hands out KV-cache blocks from a fixed pool.
//
// Blocks are reference counted so that the prefix cache (engine/prefix_cache.h)
// can share a block between sequences and keep it after they finish: Allocate
// gives blocks with count 1, Retain adds an owner, Release drops one and
// returns the block to the free list at zero.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace tern {

class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t num_blocks);

  // Appends n fresh blocks to `out`, or fails (taking nothing) when fewer are free.
  bool Allocate(int64_t n, std::vector<int32_t>& out);
  void Retain(int32_t block);
  void Release(int32_t block);
  void ReleaseAll(std::vector<int32_t>& blocks);

  // Owners of `block` (0 when free).
  int32_t ref_count(int32_t block) const { return refs_[size_t(block)]; }
  int64_t num_free() const { return int64_t(free_.size()); }
  int64_t num_blocks() const { return int64_t(refs_.size()); }

 private:
  std::vector<int32_t> free_;  // LIFO: recently freed blocks are warm in cache
  std::vector<int32_t> refs_;
};

// Blocks needed to hold `tokens` positions.
inline int64_t BlocksFor(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

}  // namespace tern
