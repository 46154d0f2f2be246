// The load-time half of the NaN guard: every floating-point tensor of a
// checkpoint scanned for NaN and Inf before it is served.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "model/safetensors.h"

namespace tern {

struct NonFiniteTensor {
  std::string name;
  int64_t count = 0;  // non-finite elements
  int64_t first = 0;  // flat index of the first one
};

// Tensors holding NaN or Inf, in name order. Checks F32, F16, BF16 and F8_E4M3
// tensors by their bit patterns (an all-ones exponent; E4M3 has only NaN,
// S.1111.111), which covers NVFP4's E4M3 block scales and F32 global scales;
// packed FP4 and integer tensors cannot hold either. Reads every byte once,
// spread over `pool`.
// With parts > 1 only every parts-th tensor from `part` on (in name order):
// the ranks of a tensor-parallel job check a share each.
// `progress`, when set, is called on this thread after each ~1 GiB scanned
// with (bytes scanned, bytes to scan).
std::vector<NonFiniteTensor> FindNonFiniteWeights(const TensorStore& store, ThreadPool& pool, int part = 0,
                                                  int parts = 1,
                                                  const std::function<void(int64_t, int64_t)>& progress = nullptr);

// One line per tensor for a warning or an error: "'name': 3 non-finite values (first at element 17)".
std::string DescribeNonFinite(const std::vector<NonFiniteTensor>& found, size_t max_lines = 8);

}  // namespace tern
