// MatMul (ops.h): picks the implementation for the shape.
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"

namespace tern::kernels {

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (M >= kGemmMinRows) {
    MatMulGemm(x, M, ldx, w, y, ldy, pool);
  } else {
    MatMulGemv(x, M, ldx, w, y, ldy, pool);
  }
}

}  // namespace tern::kernels
