// Linear layers and norm weights as loaded from a checkpoint, in any of the
// weight formats tern computes with: F32/BF16/F16, NVFP4 (ModelOpt) and FP8
// (per-tensor or 128x128 blocks). shared/specs/qwen-models-and-nvfp4.md §4.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "model/quant_config.h"
#include "model/safetensors.h"

namespace tern {

// How quantized Linear layers treat their input activations.
enum class ActivationNumerics {
  // Weights dequantized exactly, activations kept in f32 (Hopper-class GPUs
  // with Marlin W4A16 kernels; tern's default).
  kFull,
  // NVFP4 layers quantize each 16-element block of their input to E2M1 with a
  // dynamic E4M3 scale under the static input_scale, as Blackwell's W4A4 GEMM
  // does (spec §4.5); FP8 layers with an input_scale quantize it to E4M3
  // (W8A8). For telling kernel bugs from quantization error against a GPU.
  kGpuQuantized,
  // W4A8, a CPU speed mode: NVFP4 layers quantize each 16-element block of
  // their input to 8-bit integers under a power-of-two scale
  // (kernels::QuantizeInt8Activations, within 1/127 of the block's largest
  // magnitude), as llama.cpp's 4-bit types take 8-bit activations; the
  // integer decode kernels then do a third of W4A16's multiply-adds. FP8
  // layers, and layers that keep f32 activations (routers, gates), are as in
  // kFull.
  kInt8,
};

// The --quant-numerics name of a mode: "w4a16", "w4a4", "w4a8".
const char* ActivationNumericsName(ActivationNumerics n);

// Records max |x| over a Linear's inputs (calibration for `tern quantize`).
struct ActivationObserver {
  float amax = 0.0f;
};

// y = x W^T (+ b). W: [out, in], viewed in place in the mapped checkpoint.
struct Linear {
  std::string name;  // module name in the checkpoint ("model.layers.0.self_attn.q_proj")
  kernels::MatrixView w;
  std::vector<float> bias;  // empty when the layer has none
  QuantFormat format = QuantFormat::kNone;
  float input_scale = 0.0f;       // static activation scale of a quantized layer (0: none in the file)
  // ActivationNumerics::kGpuQuantized applies to this layer: NVFP4 through
  // kernels::MatMulW4A4, FP8 by quantizing x to E4M3 first.
  bool quantize_input = false;
  // ActivationNumerics::kInt8 applies to this layer (NVFP4): kernels::MatMulW4A8,
  // unless f32_activations.
  bool int8_input = false;
  // Never BF16-rounded input (kernels::MatMulF32Activations): routers and
  // gates, whose outputs feed a discontinuous choice (top-k experts).
  bool f32_activations = false;
  ActivationObserver* observer = nullptr;  // when set, Forward records its input's amax
  // Memory `w` points into when it is not the mapped checkpoint (a rank's
  // slice of a tensor-parallel layer, model/linear_slice.h).
  std::shared_ptr<const void> owned;

  int64_t in() const { return w.cols; }
  int64_t out() const { return w.rows; }
  // Bytes of weights (and block scales) read by one pass over the layer.
  int64_t bytes() const;
  // x: [M, in] contiguous; y: [M, out] contiguous.
  void Forward(const float* x, int64_t M, float* y, ThreadPool& pool) const;
};

// y_i = Linear_i(x) for layers that share their input (q/k/v, gate/up):
// exactly what each Forward computes, with plain layers (no bias, observer
// or input quantization) run together by kernels::MatMulMany, NVFP4 layers
// that quantize their input under one input_scale (W4A4) together by
// kernels::MatMulW4A4, and those that take it as 8-bit integers (W4A8)
// together by kernels::MatMulW4A8. x: [M, in];
// ys[i]: [M, layers[i]->out()] contiguous.
void ForwardLinears(std::span<const Linear* const> layers, const float* x, int64_t M, std::span<float* const> ys,
                    ThreadPool& pool);

// How a checkpoint stores its RMSNorm weights.
enum class NormStyle {
  kPlain,        // y = x / rms(x) * w
  kZeroCentred,  // y = x / rms(x) * (1 + w): Qwen3.5 / Qwen3-Next (Qwen3NextRMSNorm)
};

// Reads Linear layers and vectors from a checkpoint, checking each Linear's
// stored format against the checkpoint's declared quantization.
class WeightLoader {
 public:
  WeightLoader(const TensorStore& store, const QuantConfig& quant, ActivationNumerics numerics)
      : store_(store), quant_(quant), numerics_(numerics) {}

  // `<prefix>.weight` [out, in] and its scales (`weight_scale`,
  // `weight_scale_2`, `input_scale` for NVFP4; `weight_scale` or
  // `weight_scale_inv`, optional `input_scale` for FP8), plus `<prefix>.bias`
  // [out] when with_bias.
  Result<Linear> Load(const std::string& prefix, int64_t out, int64_t in, bool with_bias = false) const;
  // A 1-D tensor of `dim` elements as f32 (norm weights, biases).
  Result<std::vector<float>> Vector(const std::string& name, int64_t dim) const;
  // An RMSNorm weight [dim] as the kernels apply it: as stored, or 1 + stored
  // for zero-centred norms (Qwen3.5 / Qwen3-Next keep w - 1) -- the one place
  // that rule lives.
  Result<std::vector<float>> Norm(const std::string& name, int64_t dim, NormStyle style) const;
  // A scalar F32 tensor (shape [] or [1]), or nullopt when absent. Marks it used.
  Result<std::optional<float>> Scalar(const std::string& name) const;

  const TensorStore& store() const { return store_; }
  const QuantConfig& quant() const { return quant_; }
  ActivationNumerics numerics() const { return numerics_; }

 private:
  Result<Linear> LoadNvfp4(const std::string& prefix, const TensorView& w, int64_t out, int64_t in) const;
  Result<Linear> LoadFp8(const std::string& prefix, const TensorView& w, int64_t out, int64_t in) const;

  const TensorStore& store_;
  const QuantConfig& quant_;
  ActivationNumerics numerics_;
};

// FP8 W8A8 with a static scale: x = e4m3(x / input_scale) * input_scale, in place.
void FakeQuantizeFp8Activations(float* x, int64_t n, float input_scale);

}  // namespace tern
