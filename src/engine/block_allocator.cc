#include "engine/block_allocator.h"

#include <cassert>

namespace tern {

BlockAllocator::BlockAllocator(int64_t num_blocks) : refs_(size_t(num_blocks), 0) {
  free_.reserve(size_t(num_blocks));
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(int32_t(b));
}

bool BlockAllocator::Allocate(int64_t n, std::vector<int32_t>& out) {
  if (n > int64_t(free_.size())) return false;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = free_.back();
    free_.pop_back();
    refs_[size_t(b)] = 1;
    out.push_back(b);
  }
  return true;
}

void BlockAllocator::Retain(int32_t block) {
  assert(refs_[size_t(block)] > 0);
  refs_[size_t(block)]++;
}

void BlockAllocator::Release(int32_t block) {
  assert(refs_[size_t(block)] > 0);
  if (--refs_[size_t(block)] == 0) free_.push_back(block);
}

void BlockAllocator::ReleaseAll(std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) Release(b);
  blocks.clear();
}

}  // namespace tern
