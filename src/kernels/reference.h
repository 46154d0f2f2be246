// Scalar reference implementations of every kernel in ops.h, with the same
// contracts. They favour obviousness over speed (double accumulation where it
// costs nothing in clarity) and are what the optimized kernels are tested
// against.
#pragma once

#include "kernels/ops.h"

namespace tern::kernels::ref {

// Element (n, k) of W as float.
float MatrixAt(const MatrixView& w, int64_t n, int64_t k);

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy);
void QuantizeNvfp4Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float input_scale, float* out,
                              int64_t ldo);
void QuantizeInt8Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float* out, int64_t ldo);
void DequantizeRows(const MatrixView& w, int64_t n0, int64_t rows, int64_t k0, int64_t k1, float* out, int64_t ldo);
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out);
void RopeNeox(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim,
              const float* cos, const float* sin);
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void AddInPlace(float* a, const float* b, int64_t n);
void ConvertToF32(DType dtype, const void* src, int64_t n, float* out);
void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v);
void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale);
void GatedDeltaRuleRecurrent(const DeltaRuleArgs& a);
void GatedDeltaRuleChunked(const DeltaRuleArgs& a, int64_t chunk = 64);
void CausalConvSilu(const CausalConvArgs& a);
void L2NormRows(float* x, int64_t rows, int64_t dim, int64_t stride, float eps, float scale);
void DeltaGates(float* b, float* a, const float* neg_exp_a, const float* dt_bias, int64_t rows, int64_t heads);
void GatedRmsNorm(float* o, const float* z, const float* w, int64_t rows, int64_t dim, float eps);
void SigmoidMul(float* x, const float* gate, int64_t n);
void Axpy(float alpha, const float* x, float* y, int64_t n);

}  // namespace tern::kernels::ref
