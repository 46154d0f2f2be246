// Helpers shared by the kernel tests: random data, weights in each dtype, and
// running a test body once per SIMD target this CPU supports.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tern::kernels::testing {

// Runs body() once per SIMD target, with the target's name in failure traces.
template <class F>
void ForEachSimdTarget(F&& body) {
  for (int64_t target : SimdTargetsForTest()) {
    SetSimdTargetForTest(target);
    SCOPED_TRACE(std::string("SIMD target ") + SimdTargetNameOf(target));
    EXPECT_STREQ(SimdTargetName(), SimdTargetNameOf(target));
    body();
  }
  SetSimdTargetForTest(0);
}

inline std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A matrix [rows, cols] stored in `dtype` with row_stride >= cols elements,
// starting `byte_offset` bytes into its buffer (to test misaligned data).
struct TestMatrix {
  std::vector<uint8_t> storage;
  MatrixView view;

  TestMatrix(std::mt19937& rng, DType dtype, int64_t rows, int64_t cols, int64_t row_stride, size_t byte_offset = 0) {
    const size_t esize = DTypeSize(dtype);
    // 0xFF bytes are NaN in every float format: reading padding poisons results.
    storage.assign(byte_offset + size_t(rows * row_stride) * esize + 64, 0xFF);
    uint8_t* base = storage.data() + byte_offset;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float f = dist(rng);
        uint8_t* p = base + size_t(r * row_stride + c) * esize;
        if (dtype == DType::kF32) {
          std::memcpy(p, &f, 4);
        } else if (dtype == DType::kBF16) {
          const uint16_t b = F32ToBf16(f);
          std::memcpy(p, &b, 2);
        } else if (dtype == DType::kF16) {
          const uint16_t h = F32ToF16(f);
          std::memcpy(p, &h, 2);
        } else {
          const uint8_t e = F32ToE4M3(f);
          std::memcpy(p, &e, 1);
        }
      }
    view = MatrixView{.dtype = dtype, .data = base, .rows = rows, .cols = cols, .row_stride = row_stride};
  }
};

}  // namespace tern::kernels::testing
