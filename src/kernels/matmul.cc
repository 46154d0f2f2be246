// MatMul (ops.h): picks the implementation for the shape.
#include <cstring>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tern::kernels {

namespace {

enum class Path { kGemv, kSmallBatch, kGemm, kAmx, kBf16Dot };

Path PathFor(int64_t M, const MatrixView& w, bool bf16_ok = true) {
  if (bf16_ok) {
    const Bf16Gemm g = MatMulBf16Gemm(M, w);
    if (g == Bf16Gemm::kAmx) return Path::kAmx;
    if (g == Bf16Gemm::kDot) return Path::kBf16Dot;
  }
  if (w.format != WeightFormat::kDense) return M >= kGemmMinRowsQuantized ? Path::kGemm : Path::kGemv;
  if (w.dtype == DType::kBF16 || w.dtype == DType::kF32) {
    if (M >= kSmallBatchMaxRows + 1) return Path::kGemm;
    return M > GemvStreamRows() ? Path::kSmallBatch : Path::kGemv;
  }
  return M >= kGemmMinRows ? Path::kGemm : Path::kGemv;  // F16 (a scalar conversion per element in MatMulSmallBatch)
}

void MatMulOn(Path path, const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
              ThreadPool& pool) {
  switch (path) {
    case Path::kAmx:
      return amx::Gemm(x, M, ldx, w, y, ldy, pool);
    case Path::kBf16Dot:
      return bf16dot::Gemm(x, M, ldx, w, y, ldy, pool);
    case Path::kGemm:
      return MatMulGemm(x, M, ldx, w, y, ldy, pool);
    case Path::kSmallBatch:
      return MatMulSmallBatch(x, M, ldx, w, y, ldy, pool);
    case Path::kGemv:
      return MatMulGemv(x, M, ldx, w, y, ldy, pool);
  }
}

}  // namespace

// (On Highway's AVX3 target only: a test forcing AVX2 must not reach AVX-512 code.)
Bf16Gemm MatMulBf16Gemm(int64_t M, const MatrixView& w) {
  const bool amx = UseAmx(), dot = UseBf16Dot();
  if (!(amx || dot) || M < Bf16MinRowsFor(w) || std::strcmp(SimdTargetName(), "AVX3") != 0) return Bf16Gemm::kNone;
  if (amx) return amx::Supports(w) ? Bf16Gemm::kAmx : Bf16Gemm::kNone;
  return bf16dot::Supports(w) ? Bf16Gemm::kDot : Bf16Gemm::kNone;
}

bool WeightsExactInBf16(const MatrixView& w) {
  switch (w.format) {
    case WeightFormat::kDense:
      return w.dtype == DType::kBF16;
    case WeightFormat::kNvfp4:
      return w.cols % kNvfp4Block == 0 && w.row_stride % 2 == 0;
    case WeightFormat::kFp8:
      return true;
  }
  return false;
}

int64_t Bf16MinRowsFor(const MatrixView& w) {
  if (const int64_t o = Bf16MinRowsOverride(); o > 0) return o;
  const bool dense = w.format == WeightFormat::kDense;
  if (UseBf16Dot()) return dense ? kBf16DotMinRowsDense : kBf16DotMinRowsQuantized;
  return dense ? kAmxMinRowsDense : kAmxMinRowsQuantized;
}

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (const uint64_t seed = StochasticBf16Seed(); seed != 0) {
    // The check's rounded references only (ops.h): a buffer per calling
    // thread (MoE experts run one per worker), grown to the largest x seen.
    thread_local std::vector<float> rounded;
    if (rounded.size() < size_t(M * w.cols)) rounded.resize(size_t(M * w.cols));
    StochasticRoundBf16(x, M, ldx, w.cols, seed, rounded.data());
    F32ActivationsScope f32;  // the f32 kernels on the rounded x (NVFP4 decode: 24-bit)
    return MatMulOn(PathFor(M, w, /*bf16_ok=*/false), rounded.data(), M, w.cols, w, y, ldy, pool);
  }
  MatMulOn(PathFor(M, w), x, M, ldx, w, y, ldy, pool);
}

void MatMulF32Activations(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                          ThreadPool& pool) {
  F32ActivationsScope f32;  // (NVFP4 decode: 24-bit x)
  MatMulOn(PathFor(M, w, /*bf16_ok=*/false), x, M, ldx, w, y, ldy, pool);
}

void MatMulMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  bool gemv = StochasticBf16Seed() == 0;  // (rounded references: one MatMul per target)
  for (const MatMulTarget& t : targets) gemv = gemv && PathFor(M, t.w) == Path::kGemv;
  if (!gemv) {
    for (const MatMulTarget& t : targets) MatMul(x, M, ldx, t.w, t.y, t.ldy, pool);
    return;
  }
  // Decode sizes: one GEMV region per group of matrices the same tile can
  // run (same format and K), in the order the groups first appear. No heap
  // allocation: this runs for every layer of every decode step.
  const auto same_kind = [](const MatrixView& a, const MatrixView& b) {
    return a.cols == b.cols && a.format == b.format && a.dtype == b.dtype && (a.scales == nullptr) == (b.scales == nullptr);
  };
  MatMulTarget group[kMaxGemvTargets];
  for (size_t i = 0; i < targets.size(); ++i) {
    bool seen = false;  // target i's kind already ran with an earlier group
    for (size_t j = 0; j < i && !seen; ++j) seen = same_kind(targets[j].w, targets[i].w);
    if (seen) continue;
    size_t n = 0;
    for (size_t j = i; j < targets.size(); ++j) {
      if (!same_kind(targets[i].w, targets[j].w)) continue;
      group[n++] = targets[j];
      if (n == kMaxGemvTargets) {
        MatMulGemvMany(x, M, ldx, {group, n}, pool);
        n = 0;
      }
    }
    if (n > 0) MatMulGemvMany(x, M, ldx, {group, n}, pool);
  }
}

}  // namespace tern::kernels
