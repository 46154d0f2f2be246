// The two MatMul implementations behind ops.h's MatMul, exposed for tests and
// benchmarks. Both have MatMul's contract for every M; matmul.cc picks one.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels {

// Dot products along K over the unpacked weights, several rows of W per x
// load and several rows of x per W load (matmul_gemv_hwy.cc). Bandwidth-bound
// decode and small batches.
void MatMulGemv(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);
// MatMulGemv for several matrices sharing x (same format and K): one
// parallel region per kMaxGemvTargets of them.
inline constexpr size_t kMaxGemvTargets = 8;
void MatMulGemvMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// Packed, register-blocked GEMM (matmul_gemm_hwy.cc). Compute-bound prefill.
void MatMulGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// MatMul uses MatMulGemm from this many rows of x on. Below it, x fits one
// register-blocked row block of MatMulGemv (at most 5 rows on AVX2, 6 on
// AVX-512), which streams W once with prefetch and is bandwidth-bound; from
// about 6 rows on, packing W pays for itself (BM_Gemv vs BM_Gemm in
// tern_benchmark, AVX2).
inline constexpr int64_t kGemmMinRows = 6;

}  // namespace tern::kernels
