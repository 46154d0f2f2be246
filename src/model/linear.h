// Linear layers and norm weights as loaded from a checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "model/safetensors.h"

namespace tern {

// y = x W^T (+ b). W: [out, in] in the checkpoint's dtype (F32, BF16, F16), used in place.
struct Linear {
  kernels::MatrixView w;
  std::vector<float> bias;  // empty when the layer has none

  int64_t in() const { return w.cols; }
  int64_t out() const { return w.rows; }
  int64_t bytes() const { return w.rows * w.row_stride * int64_t(DTypeSize(w.dtype)); }
  // x: [M, in] contiguous; y: [M, out] contiguous.
  void Forward(const float* x, int64_t M, float* y, ThreadPool& pool) const;
};

// Loads `<prefix>.weight` of shape [out, in] (and `<prefix>.bias` [out] when with_bias).
Result<Linear> LoadLinear(const TensorStore& store, const std::string& prefix, int64_t out, int64_t in,
                          bool with_bias = false);
// Loads a 1-D tensor of `dim` elements as f32 (norm weights, biases).
Result<std::vector<float>> LoadVector(const TensorStore& store, const std::string& name, int64_t dim);

}  // namespace tern
