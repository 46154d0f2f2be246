// NVFP4 decode with AVX-512 VNNI (nvfp4_gemv_vnni.cc): the integer dot
// products of nvfp4_gemv_int-inl.h on 512-bit vpdpbusd; and the W4A4
// product (NVFP4 activations) and W4A8 (8-bit ones) the same way
// (nvfp4_w4a4_vnni.cc). Called only when
// UseAvx512Vnni() (cpu_features.h) says the CPU has it and it is allowed.
#pragma once

#include <cstddef>
#include <span>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels::vnni {

// Rows of x per call (each W step is decoded once for all of them): up to 8
// (small decode batches, experts routed a few tokens, speculative verifies).
inline constexpr size_t kMaxRows = 8;

// y_i[m][0, N_i) = x[m] · W_i^T for the 1 to kMaxRows rows of x [M, ldx] and
// every target (1 to kMaxGemvTargets, all NVFP4 with the same K, whole scale
// blocks and rows starting on a byte: nvfp4_int::Supports, whose MatMul is the
// only caller): x is rounded per block of 16 to 24-bit fixed point (within
// 2^-24 * 1.004 of the block's largest magnitude), or to 16-bit where
// Nvfp4DecodeX16() (cpu_features.h; within (1 + 2^-8) / 65278), W exact, block
// sums in i32, f32 across blocks. A non-finite x makes its row's outputs NaN.
void Nvfp4MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// W4A4 (nvfp4_w4a4_vnni.cc): ops.h MatMulW4A4 for any M >= 1 (kMaxRows rows
// of x at a time: each task reads its W rows once per group, from L2 where
// they fit; past kMaxRows the rows of x are prepared in parallel) and
// the targets nvfp4_int::Supports takes: every block's term exact (integer
// sums, scale products exact in f32), f32 across blocks.
void Nvfp4W4A4MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
                     ThreadPool& pool);

// W4A8 (the same file): ops.h MatMulW4A8 for any M >= 1, the same way, and the
// targets nvfp4_int::Supports takes: every block's term exact, f32 across
// blocks.
void Nvfp4W4A8MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// out[m, k] = x[m, k] as ops.h QuantizeInt8Activations quantizes it. K % 16 == 0.
void QuantizeInt8ActivationValues(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo);

// out[m, k] = the NVFP4 value of x[m, k] as ops.h QuantizeNvfp4Activations
// quantizes it (E2M1 value times its block's scale, exact in f32 and in
// BF16), NaN for every element of a block with a NaN or an infinity. K % 16 == 0.
void QuantizeNvfp4ActivationValues(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out,
                                   size_t ldo);

// The three kernels above as compiled with AVX512-VBMI (nvfp4_*_vnni_vpermb.cc:
// W's codes decoded by vpermb, the same results bit for bit). The functions
// above call these where UseNvfp4Vpermb() (cpu_features.h); nothing else does.
namespace vpermb {
void Nvfp4MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);
void Nvfp4W4A4MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
                     ThreadPool& pool);
void Nvfp4W4A8MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);
}  // namespace vpermb

}  // namespace tern::kernels::vnni
