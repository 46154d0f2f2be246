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

// MatMul uses MatMulGemm from this many rows of x on (BM_Gemv vs BM_Gemm in
// tern_benchmark, AVX2, weights from memory). Dense W: the GEMV converts W in
// registers per row block, which stays cheaper than packing up to ~12 rows
// (8 rows: GEMV 1.08x faster; 16: GEMM 1.07x). Quantized W: the GEMV decodes
// in registers or dequantizes each chunk once (matmul_gemv_hwy.cc), ahead of
// the GEMM's dequantize-then-pack up to ~24 rows (16: GEMV 1.15x; 32: GEMM 1.05x).
inline constexpr int64_t kGemmMinRows = 12;
inline constexpr int64_t kGemmMinRowsQuantized = 24;

}  // namespace tern::kernels
