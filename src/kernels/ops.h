// CPU kernels used by the model layer. Every function here has a scalar
// reference in reference.h with the same contract; the optimized versions are
// written once with Highway and dispatched at run time to the best target the
// CPU supports (see simd_target.h).
//
// Conventions: activations are float32 row-major; weights keep the dtype and
// layout of the checkpoint (a Linear's weight is [N, K] = [out, in], row-major)
// unless a kernel says otherwise. Shapes are written as [rows, cols].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace tern::kernels {

// How the elements of a MatrixView are stored.
//   kDense: `dtype` F32, BF16 or F16; element (n, k) at data[n * row_stride + k].
//   kNvfp4: NVIDIA ModelOpt NVFP4. data: U8 [N, row_stride / 2], two E2M1 codes
//           per byte along K, the low nibble first (element 2j in the low
//           nibble of byte j). scales: F8_E4M3 [N, K / 16] with row stride
//           scale_stride, one per 16 consecutive elements of a row. K % 16 == 0.
//           W[n, k] = e2m1(code) * e4m3(scales[n, k / 16]) * global_scale.
//   kFp8:   data: F8_E4M3 [N, row_stride]. Without `scales`, one per-tensor
//           scale: W = e4m3 * global_scale (ModelOpt FP8). With `scales`, 128x128
//           blocks (Qwen/DeepSeek FP8 `weight_scale_inv`): f32
//           [ceil(N / 128), ceil(K / 128)] with row stride scale_stride,
//           W[n, k] = e4m3 * scales[n / 128, k / 128] * global_scale.
enum class WeightFormat : uint8_t { kDense, kNvfp4, kFp8 };

inline constexpr int64_t kNvfp4Block = 16;  // elements per NVFP4 block scale
inline constexpr int64_t kFp8Block = 128;   // rows and columns per FP8 block scale

// A read-only matrix W[N, K] (see WeightFormat). Row n starts at element
// n * row_stride (row_stride >= K).
struct MatrixView {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;        // N
  int64_t cols = 0;        // K
  int64_t row_stride = 0;  // in elements
  WeightFormat format = WeightFormat::kDense;
  const void* scales = nullptr;
  int64_t scale_stride = 0;  // in scale elements
  float global_scale = 1.0f;
};

// y[M, N] = x[M, K] · W[N, K]^T.
// x: rows of K floats, row m at x + m * ldx; y: row m at y + m * ldy (ldy >= N).
// y must not alias x. Uses every thread of `pool`.
// Numerics: W exactly as stored, f32 products and sums, except that with
// NVFP4 W and M <= 3 (decode; 8 with AVX-512 VNNI) x may be rounded per block of 16 elements
// (k = 16j .. 16j + 15) to 24-bit fixed point: each element off by at most
// 2^-23 of its block's largest magnitude (nvfp4_gemv_int-inl.h); to 16-bit
// where BF16 activations are in effect (cpu_features.h Nvfp4DecodeX16: at
// most (1 + 2^-8) / 65278 of it; never in MatMulF32Activations).
// On the "amx" CPU path (cpu_features.h), M >= 5 rows with BF16 W, or 8 with
// NVFP4 or FP8 W, and on "avx512-bf16" M >= 7 with BF16 W, or 9 with NVFP4 or FP8 W,
// round x to BF16 instead (matmul_amx.h's bound). FP8 W with M <= 8 on the
// integer decode (cpu_features.h UseFp8IntegerDecode) forms its products
// times 2^-56: |x| below 2^64, and products below 2^-70 in magnitude
// rounded as subnormals (absolute error at most 2^-93 each).
void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
            ThreadPool& pool);
// MatMul that never rounds x to BF16 (any path): for the few layers whose
// outputs feed a discontinuous decision (MoE routers, gates).
void MatMulF32Activations(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                          ThreadPool& pool);

// The numerics check's BF16-rounded references (app/numerics_reference.cc):
// while a seed is set (non-zero), MatMul and MatMulMany first round every
// element of x to one of its two BF16 neighbours, the upper (in magnitude)
// with probability equal to its distance from the lower over the gap
// (stochastic rounding: unbiased), then run the f32 kernels on any CPU path.
// The draw is a hash of (seed, column, the element's bits), so a row gives
// the same result in any batch, chunk or thread count. Each seed stands in
// for a deployment that rounds activations to BF16 (only GEMM inputs: not
// routers, attention or the KV cache); several show how far such rounding
// moves a model. Process-wide, like SetActivations (cpu_features.h):
// set it only while no other work runs kernels. MatMulF32Activations is
// never rounded (as on the BF16 paths). 0: off (the default).
void SetStochasticBf16Seed(uint64_t seed);
uint64_t StochasticBf16Seed();
// x [M, K] (row stride ldx) -> out [M, K] (stride K), rounded as above;
// NaN and infinities pass unchanged, a value past BF16's largest finite may
// round to infinity (as BF16 rounding does). seed != 0.
void StochasticRoundBf16(const float* x, int64_t M, int64_t ldx, int64_t K, uint64_t seed, float* out);

// One product of MatMulMany: y[M, w.rows] (row m at y + m * ldy) = x · W^T.
struct MatMulTarget {
  MatrixView w;
  float* y = nullptr;
  int64_t ldy = 0;
};

// MatMul of one x by several matrices with the same K (q/k/v, gate/up), with
// the same results as one MatMul per target. At decode sizes, the matrices of
// each format run as one parallel region (one barrier, one tail, balanced
// across the matrices); larger M is one MatMul per target. No y may alias x
// or another y.
void MatMulMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// --- W4A4: NVFP4 activations ------------------------------------------------
// What Blackwell's NVFP4 GEMM computes for a ModelOpt NVFP4 layer (spec §4.5),
// the product SGLang serves such checkpoints with there: x quantized to NVFP4
// under the layer's static input_scale, times W's NVFP4 values.

// out[m, k] = x[m, k] quantized as an NVFP4 activation, without input_scale:
// per block of 16 elements along K (K % 16 == 0), in these f32 operations
// with g = 1 / input_scale,
//   s   = e4m3(min(g * amax / 6, 448))   (F32ToE4M3: nearest, ties to even)
//   out = e2m1(x * g / s) * s            (F32ToE2M1: ModelOpt's boundaries;
//                                         0 where s == 0)
// so that x ~ out * input_scale. Each out is exact in f32 and in BF16 (an
// E2M1 value has 2 significant bits, an E4M3 one 4). A block with a NaN or
// an infinity is NaN throughout. input_scale: positive with a finite
// reciprocal (the loader refuses others). The SIMD versions write a negative
// element that rounds to zero as +0 (the definition's -0: equal in value).
// out: row stride ldo (may equal x when ldo == ldx).
void QuantizeNvfp4Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float input_scale, float* out,
                              int64_t ldo);

// The W4A4 product for each target (NVFP4 W, one K): y[M, N] =
// (Q(x) · W^T) * input_scale, Q = QuantizeNvfp4Activations. Numerics: on
// x86 with AVX-512 VNNI (nvfp4_w4a4_vnni.cc; M <= 8, or any M from K =
// 1024) or AVX2 for M <= 8 (decode; nvfp4_w4a4_hwy.cc), every block's term Q(x)-block · W-block is exact and
// f32 adds the K / 16 of them; otherwise MatMulMany of Q(x) with input_scale
// folded into W's global scale (MatMul's numerics; BF16 rounding leaves Q(x)
// unchanged). No y may alias x or another y.
void MatMulW4A4(const float* x, int64_t M, int64_t ldx, float input_scale, std::span<const MatMulTarget> targets,
                ThreadPool& pool);

// --- W4A8: 8-bit activations --------------------------------------------------
// A CPU speed mode for NVFP4 layers (--quant-numerics w4a8), llama.cpp's
// trade (its 4-bit types multiply 8-bit activations): x's 16-element blocks
// as 8-bit integers under a power-of-two scale (OCP MXINT8's form, in NVFP4's
// blocks). The integer decode kernels then take one byte an element instead
// of W4A16's three digits: a third of the vpdpbusd.

// out[m, k] = x[m, k] as an 8-bit activation: per block of 16 elements along
// K (K % 16 == 0) with amax its largest |x|,
//   e   = max(-133, the least integer with amax <= 127 * 2^e)
//   out = q * 2^e,  q = x / 2^e rounded to the nearest integer, ties to even
// so |q| <= 127 and |out - x| <= 2^(e-1), under amax / 127 (2^-134 where
// the floor binds: blocks below 127 * 2^-134). Each out is exact in f32 and
// in BF16 (7 significant bits, no finer than BF16's least subnormal 2^-133).
// An all-zero block is zero; a block with a NaN or an infinity is NaN
// throughout; a block whose largest magnitude is past 1.984375 * 2^127
// (within 1.6% of FLT_MAX) may round it to 2^128, an infinity. out: row stride ldo (may equal x when ldo == ldx). A negative
// element that rounds to zero may be -0 or +0.
void QuantizeInt8Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float* out, int64_t ldo);

// The W4A8 product for each target (NVFP4 W, one K): y[M, N] = Q8(x) · W^T,
// Q8 = QuantizeInt8Activations. Numerics: on x86 with AVX-512 VNNI
// (nvfp4_w4a4_vnni.cc; M <= 8, or any M from K = 1024: prefill on vpdpbusd
// too) or AVX2 for M <= 8 (decode; nvfp4_w4a4_hwy.cc), every block's term Q8(x)-block · W-block is exact (an integer sum times a power
// of two times W's E4M3 block scale; f32 subnormals aside) and f32 adds the
// K / 16 of them; otherwise MatMulMany of Q8(x) (MatMul's numerics; BF16
// rounding leaves Q8(x) unchanged). No y may alias x or another y.
void MatMulW4A8(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight   for r in [0, rows).
// x and out: [rows, dim] contiguous (out may equal x); weight: [dim] f32.
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out);

// Rotary embedding, NeoX (rotate_half) style, in place on the first rotary_dim
// entries of every head: for i < rotary_dim/2, with c = cos[t, i], s = sin[t, i],
//   (x[i], x[i + rotary_dim/2]) <- (x[i] c - x[i + h] s, x[i + h] c + x[i] s).
// x: [tokens, heads, head_dim]; cos, sin: [tokens, rotary_dim / 2].
void RopeNeox(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim,
              const float* cos, const float* sin);

// out[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i], n elements.
void SiluMul(const float* gate, const float* up, int64_t n, float* out);

// a[i] += b[i], n elements.
void AddInPlace(float* a, const float* b, int64_t n);

// The first index of the largest value of v[0, n), NaNs never chosen (as
// `for i: if (v[i] > v[best]) best = i` from best = 0, which also returns 0
// when v[0] is NaN); 0 for n <= 1.
int64_t ArgMax(const float* v, int64_t n);

// out[i] = float(src[i]) for n elements of dtype F32, BF16, F16 or F8_E4M3.
void ConvertToF32(DType dtype, const void* src, int64_t n, float* out);

// out[r, k - k0] = W[n0 + r, k] for r < rows, k in [k0, k1), any WeightFormat
// (exact dequantization in f32). out: row stride ldo. For kNvfp4, k0 and k1
// are multiples of 16 (or k1 == K).
void DequantizeRows(const MatrixView& w, int64_t n0, int64_t rows, int64_t k0, int64_t k1, float* out, int64_t ldo);

// --- Paged attention -------------------------------------------------------

// One layer's keys and values of one sequence, stored in fixed-size blocks of a
// pool: block b holds positions [b*block_size, (b+1)*block_size) of the
// sequence at pool block block_table[b]. Pool layout for K and V alike:
// [num_pool_blocks, block_size, kv_heads, head_dim] in `dtype` (F32, F16, BF16
// or F8_E4M3). An F8_E4M3 cache stores e4m3(k / k_scale) and e4m3(v / v_scale)
// (ModelOpt's per-layer KV scales); other dtypes ignore the scales.
struct KvPages {
  void* k = nullptr;
  void* v = nullptr;
  DType dtype = DType::kF32;
  float k_scale = 1.0f, v_scale = 1.0f;
  const int32_t* block_table = nullptr;
  int32_t block_size = 16;
  int32_t kv_heads = 0;
  int32_t head_dim = 0;
};

// Writes k, v: [tokens, kv_heads, head_dim] f32 at positions [start, start + tokens).
// The block table must already cover those positions.
void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v);

// Causal attention for the last `num_queries` positions of a sequence whose
// context (including those positions) has length ctx_len: query t sits at
// position ctx_len - num_queries + t and attends to positions 0..that one.
// q, out: [num_queries, q_heads, head_dim] f32. q_heads is a multiple of
// kv_heads (grouped-query attention: q head h reads kv head h / (q_heads/kv_heads)).
struct AttentionJob {
  const float* q = nullptr;
  float* out = nullptr;
  int64_t num_queries = 0;
  int64_t ctx_len = 0;
  KvPages kv;
};
// Runs every job (typically one per sequence of a batch) across the pool.
// softmax(q·k * scale) · v, accumulated in f32. In the BF16-activation mode
// (the avx512-bf16 path, activations "bf16") and with bf16_ok, a job of at least
// AttentionBf16MinQueries() queries (the dense GEMM's 5, or
// TERN_BF16_MIN_ROWS) on an F32, BF16 or F16 cache takes its two products on
// BF16 inputs:
//   s = f32sum(bf16(q * scale) · bf16(k)),  p = bf16(exp(s - m)) (m: the
//   running max of the row's scores over the key blocks seen so far; a
//   rescale by exp(m_old - m_new) in f32 follows a new max),
//   out = f32sum(p · bf16(v)) / f32sum(p),
// bf16() being RNE with magnitudes below 2^-126 flushed. Bound (beside the
// f32 path's): |q_i k_i| relative 2^-8 (two roundings) per product, so
// |Δs| <= 2^-8 · scale · sum_i |q_i k_i|; each p relative 2^-9, and out a
// convex combination of rows of bf16(v) (relative 2^-9 each) with weights
// within 2^-8 relative of the f32 ones.
// bf16_ok: the model runs in that mode at all (WeightsExactInBf16 of its
// projections); false keeps f32. (The threshold is its own, 5 queries
// (kBf16DotMinAttentionQueries), below the GEMMs' 7 / 9 rows: a chunk of 5-8
// queries may have f32 projections and BF16 attention, each within its own bound.)
// The amx path keeps attention in f32: its VDPBF16PS retires at a quarter
// of the AMD rate (cpu_features.h), and tiles for attention are not built.
// Decode over an FP8 cache forms its products times 2^-56 (the E4M3 bits as
// f32, q and p times 2^64; attention_decode_hwy.cc): products below 2^-70
// in magnitude are rounded as subnormals (absolute error at most 2^-93 each).
// The cache's subnormal E4M3 codes are subnormal f32 operands there and in
// the prefill packer (times 2^120): exact as tern runs (it never sets
// MXCSR.DAZ, which would read them as 0; the FP8 GEMV checks for it,
// cpu_features.h UseFp8IntegerDecode), and on Intel CPUs possibly slow
// (microcode assists; measured on AMD only).
int64_t AttentionBf16MinQueries();
void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool,
                    bool bf16_ok);

// Whether w is exact in BF16 (dense BF16, NVFP4 in whole 16-blocks, FP8):
// the matrices the BF16-activation mode takes. F32 and F16 checkpoints keep
// f32 activations throughout.
bool WeightsExactInBf16(const MatrixView& w);

// Gated delta rule (Gated DeltaNet linear attention) for one value head over
// n tokens, in place on its state S: [dk, dv] f32. For each t:
//   S = exp(g_t) S;  u = S^T k_t;  S += k_t (x) (beta_t (v_t - u));  o_t = S^T q_t.
// q, k: row t at q + t * qk_stride (dk floats); v, o: row t at v + t * v_stride
// and o + t * o_stride (dv floats); g (log-decay), beta: element t at
// g[t * gb_stride] / beta[t * gb_stride]. Scratch: per-thread, grown once.
struct DeltaRuleArgs {
  float* S;
  int64_t dk, dv, n;
  const float* q;
  const float* k;
  int64_t qk_stride;
  const float* v;
  int64_t v_stride;
  const float* g;
  const float* beta;
  int64_t gb_stride;
  float* o;
  int64_t o_stride;
};
// The token-by-token form (decode steps, short chunks).
void GatedDeltaRuleRecurrent(const DeltaRuleArgs& a);
// The same n steps in the chunked (WY / UT-transform) form transformers uses
// for prompts (torch_chunk_gated_delta_rule, chunks of `chunk` tokens): within
// a chunk the corrections are solved as one unit lower-triangular system and
// applied as matrix products; between chunks the state is carried exactly.
// Mathematically equal to the recurrent form.
void GatedDeltaRuleChunked(const DeltaRuleArgs& a, int64_t chunk = 64);

// The small steps around the delta rule (Gated DeltaNet, spec §2.3) and the
// gates of gated attention and the shared expert. Each has a scalar
// reference in reference.h; exp / log1p / sqrt round differently there.

// Causal depthwise convolution over time, then SiLU, per channel, in place:
// with in = [state rows (K-1) | x rows (n)] ([K-1+n, C]),
//   x[t, c] <- silu(sum_j w[j, c] * in[t + j, c])   for t in [0, n),
// then state <- the last K-1 rows of in. x: row t at x + t * x_stride (C
// floats); w: [K, C] (time-major: the checkpoint's [C, 1, K] transposed);
// state: [K-1, C], oldest first. 2 <= K <= kMaxConvKernel. w and state rows may be longer than
// C (w_stride, state_stride): a caller can run channel ranges in parallel.
inline constexpr int64_t kMaxConvKernel = 64;  // (the config check's bound too)
struct CausalConvArgs {
  float* x;
  int64_t x_stride, channels, n;
  float* state;
  int64_t state_stride;
  const float* w;
  int64_t w_stride, kernel;
};
void CausalConvSilu(const CausalConvArgs& a);

// x[r, :] <- x[r, :] * scale / sqrt(sum(x[r, :]^2) + eps), rows of `dim` at
// x + r * stride (the q / k normalisation of Gated DeltaNet, with scale
// dk^-1/2 for q).
void L2NormRows(float* x, int64_t rows, int64_t dim, int64_t stride, float eps, float scale);

// The decay and write gates, per head, in place: b <- sigmoid(b);
// a <- neg_exp_a[h] * softplus(a + dt_bias[h]) (the log-decay g).
// b, a: [rows, heads] contiguous.
void DeltaGates(float* b, float* a, const float* neg_exp_a, const float* dt_bias, int64_t rows, int64_t heads);

// Gated RMSNorm: o[r, :] <- w * (o[r, :] / sqrt(mean(o[r, :]^2) + eps)) * silu(z[r, :]),
// for `rows` rows of `dim` (o, z contiguous [rows, dim]; w: [dim]).
void GatedRmsNorm(float* o, const float* z, const float* w, int64_t rows, int64_t dim, float eps);

// x[i] <- x[i] * sigmoid(gate[i]) (gated attention's output gate).
void SigmoidMul(float* x, const float* gate, int64_t n);

// y[i] <- y[i] + alpha * x[i].
void Axpy(float alpha, const float* x, float* y, int64_t n);

}  // namespace tern::kernels
