// MatMul (ops.h): picks the implementation for the shape.
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"

namespace tern::kernels {

namespace {

enum class Path { kGemv, kSmallBatch, kGemm };

Path PathFor(int64_t M, const MatrixView& w) {
  if (w.format != WeightFormat::kDense) return M >= kGemmMinRowsQuantized ? Path::kGemm : Path::kGemv;
  if (w.dtype == DType::kBF16 || w.dtype == DType::kF32) {
    if (M >= kSmallBatchMaxRows + 1) return Path::kGemm;
    return M >= kSmallBatchMinRows ? Path::kSmallBatch : Path::kGemv;
  }
  return M >= kGemmMinRows ? Path::kGemm : Path::kGemv;  // F16 (a scalar conversion per element in MatMulSmallBatch)
}

}  // namespace

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  switch (PathFor(M, w)) {
    case Path::kGemm:
      return MatMulGemm(x, M, ldx, w, y, ldy, pool);
    case Path::kSmallBatch:
      return MatMulSmallBatch(x, M, ldx, w, y, ldy, pool);
    case Path::kGemv:
      return MatMulGemv(x, M, ldx, w, y, ldy, pool);
  }
}

void MatMulMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  bool gemv = true;
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
