// MatMul (ops.h): picks the implementation for the shape.
#include <vector>

#include "kernels/matmul_internal.h"
#include "kernels/ops.h"

namespace tern::kernels {

namespace {
int64_t GemmMinRows(const MatrixView& w) {
  return w.format == WeightFormat::kDense ? kGemmMinRows : kGemmMinRowsQuantized;
}
}  // namespace

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (M >= GemmMinRows(w)) {
    MatMulGemm(x, M, ldx, w, y, ldy, pool);
  } else {
    MatMulGemv(x, M, ldx, w, y, ldy, pool);
  }
}

void MatMulMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  bool gemm = false;
  for (const MatMulTarget& t : targets) gemm = gemm || M >= GemmMinRows(t.w);
  if (gemm) {
    for (const MatMulTarget& t : targets) MatMul(x, M, ldx, t.w, t.y, t.ldy, pool);
    return;
  }
  // Decode sizes: one GEMV region per group of matrices the same tile can
  // run (same format and K), in the order the groups first appear.
  const auto same_kind = [](const MatrixView& a, const MatrixView& b) {
    return a.cols == b.cols && a.format == b.format && a.dtype == b.dtype && (a.scales == nullptr) == (b.scales == nullptr);
  };
  std::vector<bool> done(targets.size(), false);
  std::vector<MatMulTarget> group;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (done[i]) continue;
    group.clear();
    for (size_t j = i; j < targets.size(); ++j)
      if (!done[j] && same_kind(targets[i].w, targets[j].w)) {
        group.push_back(targets[j]);
        done[j] = true;
      }
    MatMulGemvMany(x, M, ldx, group, pool);
  }
}

}  // namespace tern::kernels
