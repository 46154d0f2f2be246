// AVX512-BF16 GEMM (matmul_bf16dot.cc): y[M, N] = bf16(x)[M, K] · W[N, K]^T
// on VDPBF16PS, for prefill and batched decode on CPUs with AVX512-BF16 and
// no AMX tiles (AMD Zen 4 and Zen 5, where one VDPBF16PS retires at the rate
// of an f32 FMA and does two multiply-adds per lane: twice the f32 GEMM's
// ceiling). Called only on the "avx512-bf16" path (cpu_features.h:
// UseBf16Dot()).
//
// Numerics: exactly the BF16-activation mode of matmul_amx.h, with its bound
// (x rounded to BF16 by RNE, W exact in BF16 without its global scale,
// products exact, summed in f32 in some order, inputs and sums below 2^-126
// flushed; the global scale multiplies the f32 sum once; FP8 128x128 block
// scales multiply each 128-column block's f32 sum, added in f32).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels::bf16dot {

// Whether Gemm takes w: the formats exact in BF16 (dense BF16, NVFP4, FP8).
bool Supports(const MatrixView& w);

// MatMul's contract (ops.h) with the numerics above, for any M >= 0; w must
// be Supports(). Needs AVX512-BF16 (the caller's path check).
void Gemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// VDPBF16PS's ceiling for tern_benchmark's BM_Bf16DotPeak and tern bench:
// `iters` rounds of 12 independent VDPBF16PS on registers on the calling
// thread. Returns the floating-point operations done (2 per multiply-add).
double PeakLoopForBenchmark(int64_t iters);

}  // namespace tern::kernels::bf16dot
