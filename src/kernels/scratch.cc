#include "kernels/scratch.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace tern::kernels {
namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

struct Buffer {
  std::unique_ptr<float, FreeDeleter> data;
  size_t capacity = 0;  // in floats
};

}  // namespace

float* ThreadScratch(ScratchSlot slot, size_t floats) {
  thread_local Buffer buffers[size_t(ScratchSlot::kCount)];
  Buffer& b = buffers[size_t(slot)];
  if (floats > b.capacity) {
    // Grow geometrically so a sequence of slightly larger requests stays cheap.
    size_t cap = b.capacity * 2 > floats ? b.capacity * 2 : floats;
    cap = (cap + 15) / 16 * 16;  // whole 64-byte lines, as aligned_alloc requires
    b.data.reset(static_cast<float*>(std::aligned_alloc(64, cap * sizeof(float))));
    if (!b.data) {
      std::fprintf(stderr, "tern kernels: out of memory allocating %zu bytes of scratch\n", cap * sizeof(float));
      std::abort();
    }
    b.capacity = cap;
  }
  return b.data.get();
}

}  // namespace tern::kernels
