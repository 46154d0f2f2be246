// W4A4 with AVX-512 VNNI: NVFP4 weights times NVFP4 activations, the product
// Blackwell's NVFP4 GEMM computes (ModelOpt checkpoints' input_scale; spec
// §4.5), as integers. Contract: nvfp4_gemv_vnni.h; the quantization of x:
// ops.h QuantizeNvfp4Activations.
//
// Why: the W4A16 kernel (nvfp4_gemv_vnni.cc) carries x as three signed-byte
// digits, 6 vpdpbusd a step and row; an E2M1 activation is one byte (twice its
// value, an integer in [-12, 12]), 2 a step. With W's decoding shared (W side:
// nvfp4_vnni_w-inl.h), a pair of steps (256 weights) costs ~25 vector
// operations for one row instead of ~39, and each further row of x ~10
// instead of ~26; the prepared x is 2 bytes an element instead of 4.
//
// Numerics. u = 2v + 12 in [0, 24] is W's code as an unsigned byte, q2 = 2q
// in [-12, 12] x's as a signed one; sum u * q2 - 12 * sum q2 = sum 2v * 2q,
// with |.| <= 16 * 12 * 12 = 2304 per block: exact in i32 and in f32. W's and
// x's block scales are E4M3 values (4 significant bits each), so their
// product times x's 1/4 is exact in f32, and so is that times the block's sum
// (12 + 8 significant bits): every block's term is exact, and the only
// rounding is f32's in adding the K / 16 terms (16 lanes, then across them)
// and the final products by W's global scale and the input scale.
//
// W4A8 (ops.h QuantizeInt8Activations, MatMulW4A8) is the same kernel with
// another byte: q, x / 2^e rounded, |q| <= 127, so a block's sum u * q - 12 *
// sum q = sum 2v * q is at most 16 * 12 * 127 = 24384 in magnitude, and its
// multiplier W's E4M3 scale times 2^(e - 1) (>= 2^-134, a power of two):
// again every block's term is exact (unless it falls below f32's normals),
// and f32 rounds only in adding them and in the final product by W's global
// scale.
//
// Compiled for AVX-512 VNNI by a target pragma, not -m flags (see
// nvfp4_gemv_vnni.cc).
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu_features.h"
#include "kernels/int8_block-inl.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/scratch.h"

#pragma GCC push_options
#ifndef TERN_VNNI_VPERMB
#define TERN_VNNI_VPERMB 0
#endif
#if TERN_VNNI_VPERMB
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512vbmi")
#else
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/nvfp4_vnni_w-inl.h"

namespace tern::kernels::vnni {
namespace {

// e4m3(f) as f32 for 0 <= f <= 448: base/dtype.h F32ToE4M3 then E4M3ToF32,
// inline (a call and a table per block cost more than the block's other work).
// Normals: the f32 mantissa rounded to 3 bits, ties to even; below 2^-6,
// E4M3's subnormals, multiples of 2^-9.
inline float RoundToE4M3(float f) {
  if (f < 0x1p-6f) {
    const __m128 r = _mm_round_ss(_mm_setzero_ps(), _mm_set_ss(f * 512.0f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm_cvtss_f32(r) * 0x1p-9f;
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7ffffu + ((u >> 20) & 1u)) & 0xfff00000u;
  std::memcpy(&f, &u, 4);
  return f;
}

// One block of 16 elements of x, quantized as ops.h QuantizeNvfp4Activations
// says: q2 = twice each element's E2M1 value (i32 lanes) and the block scale
// s (0 for an all-zero block). Returns false for a block with a NaN or an
// infinity.
inline bool QuantizeBlock(__m512 v, float inv_scale, __m512i& q2, float& s) {
  if (_mm512_fpclass_ps_mask(v, 0x99) != 0) return false;  // QNaN, SNaN, +inf, -inf
  const float amax = _mm512_reduce_max_ps(_mm512_abs_ps(v));
  const float wanted = inv_scale * amax / 6.0f;  // (no std::min: see nvfp4_gemv_vnni.cc on inline functions)
  s = RoundToE4M3(448.0f < wanted ? 448.0f : wanted);
  if (s == 0.0f) {
    q2 = _mm512_setzero_si512();
    return true;
  }
  // t = x / input_scale / s, in the same f32 operations as the scalar definition.
  const __m512 t = _mm512_div_ps(_mm512_mul_ps(v, _mm512_set1_ps(inv_scale)), _mm512_set1_ps(s));
  const __m512 a = _mm512_abs_ps(t);
  // E2M1 magnitude index: the boundaries of ModelOpt's _cast_fp4 (base/dtype.h
  // F32ToE2M1), ties to the even mantissa; 5 or more saturates to 6.
  const __m512i one = _mm512_set1_epi32(1);
  __m512i m = _mm512_setzero_si512();
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.25f), _CMP_GT_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.75f), _CMP_GE_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.25f), _CMP_GT_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.75f), _CMP_GE_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(2.5f), _CMP_GT_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(3.5f), _CMP_GE_OQ), m, one);
  m = _mm512_mask_add_epi32(m, _mm512_cmp_ps_mask(a, _mm512_set1_ps(5.0f), _CMP_GT_OQ), m, one);
  // Twice the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; negative where t < 0 (-0 is +0).
  const __m512i twice = _mm512_setr_epi32(0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0);
  q2 = _mm512_permutexvar_epi32(m, twice);
  const __mmask16 neg = _mm512_cmp_ps_mask(t, _mm512_setzero_ps(), _CMP_LT_OQ);
  q2 = _mm512_mask_sub_epi32(q2, neg, _mm512_setzero_si512(), q2);
  return true;
}

// x for a pair of steps (s, s + 1), s even, in W's block-major order
// (nvfp4_vnni_w-inl.h), one signed byte an element (W4A4: q2, twice the E2M1
// value; W4A8: q): in steps[s] the bytes of the even elements of each
// block's elements 0 .. 7, then of the odd ones, in steps[s + 1] the same of
// elements 8 .. 15 (lane j: the pair's block j); in steps[s] also minus 12 *
// the sum of the bytes over each block and the block multipliers (steps[s +
// 1]'s are zero and unused).
struct alignas(64) ByteStep {
  int8_t x[2][64];  // [even, odd][byte]
  int32_t nc[16];   // [block of the pair], in the pair's first step
  float step[16];   // [block of the pair], in the pair's first step: W4A4 the block scale / 4, W4A8 2^(e - 1)
};
static_assert(sizeof(ByteStep) == 256);

// Quantizes x[0, K) (K a multiple of 16) into PaddedSteps(K) steps, the last
// ones zero-padded, a block at a time by quantize(v, q, step): the bytes as
// i32 lanes and the block's multiplier, false for a block with a NaN or an
// infinity (its multiplier is then NaN: the row's outputs are NaN).
template <class Quantize>
void PrepareBytes(const float* x, size_t K, ByteStep* steps, const Quantize& quantize) {
  const size_t num_steps = PaddedSteps(K);
  const __m128i deinterleave = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (size_t s = 0; s < num_steps; ++s) {
    ByteStep* pair = steps + (s & ~size_t(1));
    if ((s & 1) == 0) std::memset(pair, 0, 2 * sizeof(ByteStep));  // num_steps is even
    for (size_t b = 0; b < 8 && s * kStep + b * 16 < K; ++b) {
      const size_t j = 8 * (s & 1) + b;  // the block's lane in the pair
      __m512i q;
      float step;
      if (!quantize(_mm512_loadu_ps(x + s * kStep + b * 16), q, step)) {
        pair[0].step[j] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      pair[0].step[j] = step;
      StoreBlock(_mm_shuffle_epi8(_mm512_cvtepi32_epi8(q), deinterleave), &pair[0].x[0][4 * j], &pair[1].x[0][4 * j],
                 &pair[0].x[1][4 * j], &pair[1].x[1][4 * j]);
    }
    if ((s & 1) == 0) continue;
    // nc = -12 * each block's sum of its bytes: its lane's bytes in both steps, even and odd.
    __m512i sum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e) sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), _mm512_load_si512(pair[h].x[e]));
    _mm512_store_si512(pair[0].nc, _mm512_mullo_epi32(sum, _mm512_set1_epi32(-12)));
  }
}

// W4A4's block: q2 and the block scale / 4 ((2v)(2q) / 4 = vq).
void Prepare4(const float* x, size_t K, float inv_scale, ByteStep* steps) {
  PrepareBytes(x, K, steps, [inv_scale](__m512 v, __m512i& q2, float& step) {
    float bs;
    if (!QuantizeBlock(v, inv_scale, q2, bs)) return false;
    step = bs * 0.25f;
    return true;
  });
}

// One block of 16 elements of x as ops.h QuantizeInt8Activations: q (i32
// lanes, |q| <= 127) and the exponent e. False for a block with a NaN or an
// infinity.
inline bool QuantizeBlock8(__m512 v, __m512i& q, int& e) {
  if (_mm512_fpclass_ps_mask(v, 0x99) != 0) return false;  // QNaN, SNaN, +inf, -inf
  e = Int8BlockExponent(_mm512_reduce_max_ps(_mm512_abs_ps(v)));
  // x / 2^e exactly, to the nearest integer, ties to even: in f32 where 2^-e is one, else in double.
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  if (const float inv = Int8InverseUnit(e); inv != 0.0f) {
    q = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inv)), kNearest);
    return true;
  }
  const __m512d inv = _mm512_set1_pd(Pow2(-e));
  const __m256i lo = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), inv), kNearest);
  const __m256i hi = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), inv), kNearest);
  q = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return true;
}

// W4A8's block: q and 2^(e - 1) ((2v) q / 2 * 2^e = vq 2^e; 2^(e - 1) >= 2^-134 is exact in f32).
void Prepare8(const float* x, size_t K, ByteStep* steps) {
  PrepareBytes(x, K, steps, [](__m512 v, __m512i& q, float& step) {
    int e;
    if (!QuantizeBlock8(v, q, e)) return false;
    step = float(Pow2(e - 1));
    return true;
  });
}

// The byte x side for RowGroup (nvfp4_vnni_w-inl.h).
struct XBytes {
  using Step = ByteStep;

  // Lane j: sum over the pair's block j of 2v * the byte (W4A4: 2v * 2q,
  // |.| <= 16 * 12 * 12; W4A8: 2v * q, |.| <= 16 * 12 * 127 < 2^15).
  static __m512i PairSum(const __m512i (&ue)[2], const __m512i (&uo)[2], const ByteStep* p) {
    const __m512i* a = reinterpret_cast<const __m512i*>(p[0].x);  // elements 0 .. 7 of each block
    const __m512i* b = reinterpret_cast<const __m512i*>(p[1].x);  // elements 8 .. 15
    const __m512i sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_load_si512(p[0].nc), ue[0], a[0]), uo[0], a[1]);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum, ue[1], b[0]), uo[1], b[1]);
  }
};

// y = x · W^T * out_scale for the targets, each row of x prepared by prepare(row, K, steps).
template <class PrepareRow>
void BytesMatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool,
                 float out_scale, const PrepareRow& prepare) {
  const size_t K = size_t(targets[0].w.cols);
  const size_t num_steps = PaddedSteps(K);
  auto* steps = reinterpret_cast<ByteStep*>(
      ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(ByteStep) / sizeof(float)));
  if (M <= kMaxRows) {
    for (size_t m = 0; m < M; ++m) prepare(x + m * ldx, K, steps + m * num_steps);
  } else {
    pool.Run((M + kMaxRows - 1) / kMaxRows, [&](size_t g, size_t) {
      const size_t end = (g + 1) * kMaxRows < M ? (g + 1) * kMaxRows : M;  // (no std::min: see the top)
      for (size_t m = g * kMaxRows; m < end; ++m)
        prepare(x + m * ldx, K, steps + m * num_steps);
    });
  }
  const Nvfp4Chunks chunks = PlanNvfp4Chunks(targets, pool.size(), (M + kMaxRows - 1) / kMaxRows);
  static const Consts consts;
  pool.Run(chunks.first[targets.size()], [&](size_t chunk, size_t) {
    size_t n0, n1;
    const MatMulTarget& t = chunks.Locate(targets, chunk, n0, n1);
    for (size_t m0 = 0; m0 < M; m0 += kMaxRows)
      RowsOfM<XBytes>(M - m0 < kMaxRows ? M - m0 : kMaxRows, consts, steps + m0 * num_steps, num_steps, t.w, n0, n1,
                      t.y + m0 * size_t(t.ldy), size_t(t.ldy), out_scale);
  });
}

void W4A4(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
          ThreadPool& pool) {
  const float inv_scale = 1.0f / input_scale;
  BytesMatMul(x, M, ldx, targets, pool, input_scale,
              [inv_scale](const float* row, size_t K, ByteStep* steps) { Prepare4(row, K, inv_scale, steps); });
}

void W4A8(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  BytesMatMul(x, M, ldx, targets, pool, 1.0f, Prepare8);
}

}  // namespace

#if TERN_VNNI_VPERMB
void vpermb::Nvfp4W4A4MatMul(const float* x, size_t M, size_t ldx, float input_scale,
                             std::span<const MatMulTarget> targets, ThreadPool& pool) {
  W4A4(x, M, ldx, input_scale, targets, pool);
}
void vpermb::Nvfp4W4A8MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets,
                             ThreadPool& pool) {
  W4A8(x, M, ldx, targets, pool);
}
#else
void Nvfp4W4A4MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
                     ThreadPool& pool) {
  if (UseNvfp4Vpermb()) return vpermb::Nvfp4W4A4MatMul(x, M, ldx, input_scale, targets, pool);
  W4A4(x, M, ldx, input_scale, targets, pool);
}

void Nvfp4W4A8MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  if (UseNvfp4Vpermb()) return vpermb::Nvfp4W4A8MatMul(x, M, ldx, targets, pool);
  W4A8(x, M, ldx, targets, pool);
}

void QuantizeInt8ActivationValues(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo) {
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; k += 16) {
      __m512i q;
      int e;
      __m512 v = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
      if (QuantizeBlock8(_mm512_loadu_ps(x + m * ldx + k), q, e))
        v = _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(float(Pow2(e))));  // exact: q * 2^e
      _mm512_storeu_ps(out + m * ldo + k, v);
    }
}

void QuantizeNvfp4ActivationValues(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out,
                                   size_t ldo) {
  const float inv_scale = 1.0f / input_scale;
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; k += 16) {
      __m512i q2;
      float s;
      __m512 v;
      if (QuantizeBlock(_mm512_loadu_ps(x + m * ldx + k), inv_scale, q2, s)) {
        v = _mm512_mul_ps(_mm512_cvtepi32_ps(q2), _mm512_set1_ps(s * 0.5f));  // exact: q * s
      } else {
        v = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
      }
      _mm512_storeu_ps(out + m * ldo + k, v);
    }
}
#endif  // TERN_VNNI_VPERMB

}  // namespace tern::kernels::vnni

#pragma GCC diagnostic pop
#pragma GCC pop_options
