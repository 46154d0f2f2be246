// AMX BF16 GEMM (matmul_amx.cc): y[M, N] = bf16(x)[M, K] · W[N, K]^T on the
// tile unit (TDPBF16PS), for prefill and batched decode. Called only on the
// "amx" path (cpu_features.h: UseAmx()), which is where the process holds the
// kernel's grant of the tile state.
//
// Numerics ("BF16 activations", the numerics of GPU deployments' BF16 and
// FP4 GEMMs): x is rounded to BF16 (round to nearest even; magnitudes below
// 2^-126 flushed to zero); W is exact (BF16 as stored; NVFP4's
// e2m1 * e4m3 block scale and FP8's e4m3 are exact in BF16; the per-tensor
// global scale multiplies the f32 result); products are exact and summed in
// f32. Per output, with s = sum_k |x_k * w_k|:
//   |y - exact| <= 2^-8 * s + (K + 2 + K / 64) * 2^-24 * s * (1 + 2^-8) + K * 2^-126
// (2^-8: BF16's unit roundoff, one rounding of each x_k; the f32 sum of K
// exact products in any order plus the global scale, and for block-scaled
// FP8 one product and one sum per 128-block; flushed denormal sums).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels::amx {

// Whether Gemm takes w: dense BF16, NVFP4, or FP8 (per-tensor or 128x128
// block scales: each 128-column block is summed on the tiles and scaled in
// f32). F32 and F16 are not exact in BF16 and stay on the f32 GEMM.
bool Supports(const MatrixView& w);

// MatMul's contract (ops.h) with the numerics above, for any M >= 1 (rows
// are padded to 16 in the tiles); w must be Supports().
void Gemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// Runs a 16x16x32 tile product on the calling thread and checks its result:
// the startup probe behind the "amx" path (a kernel or hypervisor that grants
// the state but faults or miscomputes is refused, not trusted). Requires the
// grant; returns false on a wrong result.
bool SelfTest();

// The tile unit's ceiling for tern_benchmark's BM_AmxPeak: `iters` rounds of
// four independent TDPBF16PS on resident tiles on the calling thread (no
// loads; tile instructions are not optimized away). Returns the
// floating-point operations done (2 per multiply-add).
double PeakLoopForBenchmark(int64_t iters);

}  // namespace tern::kernels::amx
