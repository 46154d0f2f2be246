// W4A4 and W4A8 on AVX2 integers (nvfp4_w4a4_hwy.cc): ops.h MatMulW4A4,
// QuantizeNvfp4Activations, MatMulW4A8 and QuantizeInt8Activations where the AVX-512 VNNI kernels
// (nvfp4_w4a4_vnni.cc) do not run — AVX2 CPUs, AVX-512 ones without VNNI, a
// forced lower path. Both answer false where the dispatched SIMD target has
// no such code (not x86, or below AVX2); the caller then takes the portable
// route.
#pragma once

#include <cstddef>
#include <span>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels::w4a4_int {

// Rows of x per call (each W step is decoded once for all of them).
inline constexpr size_t kMaxRows = 8;

// y_i[m][0, N_i) = (Q(x[m]) · W_i^T) * input_scale for 1 to kMaxRows rows of
// x [M, ldx] and 1 to kMaxGemvTargets targets that nvfp4_int::Supports takes
// (NVFP4, one K with whole scale blocks, rows starting on a byte): x
// quantized as QuantizeNvfp4Activations, every block's term exact (integer
// sums by vpmaddubsw, scale products exact in f32), f32 across blocks.
// Returns false, having done nothing, where the target lacks the kernel.
bool MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
            ThreadPool& pool);

// ops.h QuantizeNvfp4Activations on 256-bit vectors, equal to the reference
// (a negative element that rounds to zero is +0 here, -0 there) for K % 16
// == 0 and an input_scale the loader accepts (positive, finite reciprocal).
// Returns false, having done nothing, where the target lacks it.
bool Quantize(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out, size_t ldo);

// W4A8, the same way: y_i[m][0, N_i) = Q8(x[m]) · W_i^T for the same rows of x
// and targets, Q8 = ops.h QuantizeInt8Activations, every block's term exact
// (f32 subnormals aside), f32 across blocks. False where the target lacks it.
bool MatMulW4A8(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// ops.h QuantizeInt8Activations on 256-bit vectors (equal to the definition,
// -0 aside). False where the target lacks it.
bool QuantizeInt8(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo);

}  // namespace tern::kernels::w4a4_int
