#include "tokenize/bpe_cache.h"

#include <atomic>

namespace tern::tok {

BpeCache& BpeCache::ForThisThread() {
  thread_local BpeCache cache;
  return cache;
}

uint32_t BpeCache::NewOwner() {
  static std::atomic<uint32_t> next{1};
  uint32_t id = next.fetch_add(1);
  if (id == 0) id = next.fetch_add(1);  // after 2^32 loads
  return id;
}

}  // namespace tern::tok
