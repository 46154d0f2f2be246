// Stochastic BF16 rounding for the numerics check's rounded references (ops.h).
#include <atomic>
#include <cstring>

#include "kernels/ops.h"

namespace tern::kernels {
namespace {

std::atomic<uint64_t> g_seed{0};

// splitmix64's finaliser: every input bit moves every output bit.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void SetStochasticBf16Seed(uint64_t seed) { g_seed.store(seed, std::memory_order_relaxed); }
uint64_t StochasticBf16Seed() { return g_seed.load(std::memory_order_relaxed); }

void StochasticRoundBf16(const float* x, int64_t M, int64_t ldx, int64_t K, uint64_t seed, float* out) {
  const uint64_t s = Mix(seed * 0x9E3779B97F4A7C15ull);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < K; ++c) {
      uint32_t b;
      std::memcpy(&b, &x[r * ldx + c], 4);
      // BF16 keeps the top 16 bits; `low` is how far past the lower neighbour
      // (in magnitude) the value lies, in 1/65536 of the gap. Adding 0x10000
      // to the bits steps to the upper neighbour, through to the next
      // exponent and, past the largest finite, to infinity.
      const uint32_t low = b & 0xFFFFu;
      uint32_t r16 = b & 0xFFFF0000u;
      if (low != 0 && (b & 0x7F800000u) != 0x7F800000u) {
        const uint32_t draw = uint32_t(Mix(s ^ (uint64_t(c) << 32 | b)) >> 48);  // uniform in [0, 65536)
        if (draw < low) r16 += 0x10000u;
      } else {
        r16 = b;  // exact in BF16, or NaN / infinity: unchanged
      }
      std::memcpy(&out[r * K + c], &r16, 4);
    }
}

}  // namespace tern::kernels
