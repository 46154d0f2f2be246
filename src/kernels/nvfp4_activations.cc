// W4A4: NVFP4 activations (ops.h QuantizeNvfp4Activations, MatMulW4A4); W4A8:
// 8-bit ones (QuantizeInt8Activations, MatMulW4A8).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/dtype.h"
#include "kernels/cpu_features.h"
#include "kernels/int8_block-inl.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/nvfp4_w4a4_int.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"
#include "kernels/simd_target.h"

namespace tern::kernels {
namespace {

// The AVX-512 VNNI kernels (nvfp4_w4a4_vnni.cc) may run: Highway's AVX3 target
// (a test forcing AVX2 must not reach AVX-512 code) and the VNNI path allowed.
bool VnniAllowed() { return std::strcmp(SimdTargetName(), "AVX3") == 0 && UseAvx512Vnni(); }

// One block of 16 elements (the portable version of nvfp4_w4a4_vnni.cc's
// QuantizeBlock): the E2M1 magnitude index as the count of ModelOpt's
// boundaries passed, no branches per element.
void QuantizeBlock(const float* x, float inv_scale, float* out) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < 16; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::fabs(x[i]) > amax ? std::fabs(x[i]) : amax;
  }
  if (!finite) {
    for (int i = 0; i < 16; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float wanted = inv_scale * amax / 6.0f;
  const float s = E4M3Values()[F32ToE4M3(std::min(wanted, 448.0f))];
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int i = 0; i < 16; ++i) {
    if (s == 0.0f) {
      out[i] = 0.0f;
      continue;
    }
    const float t = x[i] * inv_scale / s, a = std::fabs(t);
    const int m = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
    out[i] = (t < 0.0f ? -kMagnitude[m] : kMagnitude[m]) * s;
  }
}

// One block of 16 elements as an 8-bit activation (the portable version of
// nvfp4_w4a4_vnni.cc's QuantizeBlock8): x / 2^e in double, exact.
void QuantizeBlock8(const float* x, float* out) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < 16; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::fabs(x[i]) > amax ? std::fabs(x[i]) : amax;
  }
  const int e = finite ? Int8BlockExponent(amax) : 0;
  const double inv = Pow2(-e);
  const float scale = float(Pow2(e));
  for (int i = 0; i < 16; ++i)
    out[i] = finite ? float(std::nearbyint(double(x[i]) * inv)) * scale : std::numeric_limits<float>::quiet_NaN();
}

// Past vnni::kMaxRows rows of x, the VNNI kernels run 8 rows at a time and
// win from this K on: tern bench prefill of 512 tokens, w4a8 against w4a16
// (whose GEMM the quantized values took before), Intel Emerald Rapids VM, 2
// threads, two rounds: qwen3-0.6b NVFP4 (K 1024-3072) 293 / 212 and 231 / 201
// tokens/s; models/demo (K 192) 19.6k / 27.4k and 19.1k / 30.2k, where
// each group's eight final lane sums per W row outweigh its one pair of
// steps: below this K such batches keep the quantized values and the GEMM.
constexpr int64_t kVnniManyRowsMinK = 1024;

// The integer kernels take NVFP4 targets of one K, whole scale blocks, rows
// starting on a byte, at most kMaxGemvTargets of them.
bool IntegerTargets(std::span<const MatMulTarget> targets) {
  if (targets.size() > kMaxGemvTargets) return false;
  const int64_t K = targets[0].w.cols;
  for (const MatMulTarget& t : targets)
    if (t.w.format != WeightFormat::kNvfp4 || t.w.cols != K || t.w.cols % kNvfp4Block != 0 || t.w.row_stride % 2 != 0)
      return false;
  return true;
}

}  // namespace

void QuantizeNvfp4Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float input_scale, float* out,
                              int64_t ldo) {
  if (VnniAllowed())
    return vnni::QuantizeNvfp4ActivationValues(x, size_t(M), size_t(ldx), size_t(K), input_scale, out, size_t(ldo));
  if (w4a4_int::Quantize(x, size_t(M), size_t(ldx), size_t(K), input_scale, out, size_t(ldo))) return;
  const float inv_scale = 1.0f / input_scale;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; k += kNvfp4Block) QuantizeBlock(x + m * ldx + k, inv_scale, out + m * ldo + k);
}

void MatMulW4A4(const float* x, int64_t M, int64_t ldx, float input_scale, std::span<const MatMulTarget> targets,
                ThreadPool& pool) {
  if (M <= 0 || targets.empty()) return;
  const int64_t K = targets[0].w.cols;
  // The integer kernels: AVX-512 VNNI up to vnni::kMaxRows rows, or any M
  // from kVnniManyRowsMinK, else AVX2 (where the target has it) up to
  // w4a4_int::kMaxRows.
  const bool integer = IntegerTargets(targets);
  if (integer && VnniAllowed()) {
    if (size_t(M) <= vnni::kMaxRows || K >= kVnniManyRowsMinK)
      return vnni::Nvfp4W4A4MatMul(x, size_t(M), size_t(ldx), input_scale, targets, pool);
  } else if (integer && size_t(M) <= w4a4_int::kMaxRows) {
    if (w4a4_int::MatMul(x, size_t(M), size_t(ldx), input_scale, targets, pool)) return;
  }
  // Otherwise the quantized values (exact in BF16, so the BF16 GEMMs take
  // them without rounding; rows quantized in parallel) through MatMulMany,
  // with input_scale folded into each W's global scale.
  float* q = ThreadScratch(ScratchSlot::kW4A4X, size_t(M * K));
  constexpr int64_t kRowsPerTask = 4;
  pool.Run(size_t((M + kRowsPerTask - 1) / kRowsPerTask), [&](size_t task, size_t) {
    const int64_t m0 = int64_t(task) * kRowsPerTask, rows = std::min(kRowsPerTask, M - m0);
    QuantizeNvfp4Activations(x + m0 * ldx, rows, ldx, K, input_scale, q + m0 * K, K);
  });
  MatMulTarget scaled[kMaxGemvTargets];
  for (size_t i = 0; i < targets.size(); i += kMaxGemvTargets) {
    const size_t n = std::min(kMaxGemvTargets, targets.size() - i);
    for (size_t j = 0; j < n; ++j) {
      scaled[j] = targets[i + j];
      scaled[j].w.global_scale *= input_scale;
    }
    MatMulMany(q, M, K, {scaled, n}, pool);
  }
}


void QuantizeInt8Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float* out, int64_t ldo) {
  if (VnniAllowed()) return vnni::QuantizeInt8ActivationValues(x, size_t(M), size_t(ldx), size_t(K), out, size_t(ldo));
  if (w4a4_int::QuantizeInt8(x, size_t(M), size_t(ldx), size_t(K), out, size_t(ldo))) return;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; k += kNvfp4Block) QuantizeBlock8(x + m * ldx + k, out + m * ldo + k);
}

void MatMulW4A8(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  if (M <= 0 || targets.empty()) return;
  const int64_t K = targets[0].w.cols;
  const bool integer = IntegerTargets(targets);
  if (integer && VnniAllowed()) {
    if (size_t(M) <= vnni::kMaxRows || K >= kVnniManyRowsMinK)
      return vnni::Nvfp4W4A8MatMul(x, size_t(M), size_t(ldx), targets, pool);
  } else if (integer && size_t(M) <= w4a4_int::kMaxRows) {
    if (w4a4_int::MatMulW4A8(x, size_t(M), size_t(ldx), targets, pool)) return;
  }
  // Otherwise the quantized values (exact in BF16: the BF16 GEMMs take them
  // as they are) through MatMulMany, rows quantized in parallel.
  float* q = ThreadScratch(ScratchSlot::kW4A4X, size_t(M * K));
  constexpr int64_t kRowsPerTask = 4;
  pool.Run(size_t((M + kRowsPerTask - 1) / kRowsPerTask), [&](size_t task, size_t) {
    const int64_t m0 = int64_t(task) * kRowsPerTask, rows = std::min(kRowsPerTask, M - m0);
    QuantizeInt8Activations(x + m0 * ldx, rows, ldx, K, q + m0 * K, K);
  });
  MatMulMany(q, M, K, targets, pool);
}

}  // namespace tern::kernels
