// W4A4 with AVX2 integers: NVFP4 weights times NVFP4 activations
// (nvfp4_w4a4_int.h), for CPUs without AVX-512 VNNI (AMD Zen 3, Intel before
// Ice Lake) and forced lower paths. Compiled per Highway target; the x86
// AVX2 and AVX3 targets run the 256-bit code below, the others answer false.
//
// Why: without VNNI the W4A16 kernel (nvfp4_gemv_int-inl.h) multiplies W's
// codes by three bytes of x's 24-bit digits, 6 vpmaddubsw and ~16 integer
// operations per 64 weights and row; an E2M1 activation is one signed byte
// (twice its value, an integer in [-12, 12]): 2 vpmaddubsw and 5 operations.
// W's decoding (codes as u = 2v + 12 bytes, block scales in kBlockOrder) is
// nvfp4_gemv_int-inl.h's, shared.
//
// Numerics, as nvfp4_w4a4_vnni.cc: per 32-bit lane (8 elements) vpmaddubsw
// gives i16 pairs u * q2 (|.| <= 2 * 24 * 12 = 576, two vectors added <=
// 1152, no saturation), vpmaddwd adds them into i32, minus 12 * the lane's
// sum of q2 = sum 2v * 2q; two lanes make a block, |.| <= 2304. W's and x's
// E4M3 block scales times 1/4 multiply exactly in f32, and so does that by
// the block's sum: every block's term is exact; f32 adds the K / 16 terms (8
// lanes, then across them) and multiplies by W's global scale and the input
// scale.
//
// W4A8 (ops.h QuantizeInt8Activations, MatMulW4A8) runs the same loop with
// x's bytes q = x / 2^e rounded (|q| <= 127): i16 pairs at most 2 * 24 * 127
// = 6096, two vectors 12192, no saturation; a block's sum at most 24384; its
// multiplier W's E4M3 scale times 2^(e - 1): every block's term exact again
// (f32 subnormals aside).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/nvfp4_w4a4_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "hwy/highway.h"
#include "kernels/int8_block-inl.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_int-inl.h"
#include "kernels/nvfp4_w4a4_int.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace w4a4 {

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
using nvfp4_int::Consts;
using nvfp4_int::kBlockOrder;
using nvfp4_int::kStep;
using nvfp4_int::WStep;

// e4m3(f) as f32 for 0 <= f <= 448 in every lane (base/dtype.h F32ToE4M3,
// then E4M3ToF32): normals have the f32 mantissa rounded to 3 bits, ties to
// even; below 2^-6, E4M3's subnormals, multiples of 2^-9.
HWY_INLINE __m256 RoundToE4M3(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 20), _mm256_set1_epi32(1));
  const __m256i normal = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7ffff)), odd),
                                          _mm256_set1_epi32(int32_t(0xfff00000u)));
  const __m256 subnormal = _mm256_mul_ps(
      _mm256_round_ps(_mm256_mul_ps(f, _mm256_set1_ps(512.0f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
      _mm256_set1_ps(0x1p-9f));
  return _mm256_blendv_ps(_mm256_castsi256_ps(normal), subnormal,
                          _mm256_cmp_ps(f, _mm256_set1_ps(0x1p-6f), _CMP_LT_OQ));
}

// Twice the E2M1 value of each t (i32 lanes): the magnitude index counts
// ModelOpt's boundaries passed (base/dtype.h F32ToE2M1: ties to the even
// mantissa, 5 or more saturates to 6), negative where t < 0 (-0 is +0).
HWY_INLINE __m256i TwiceE2M1(__m256 t) {
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), t);
  const auto past = [&](float bound, int cmp) {
    return _mm256_castps_si256(cmp == _CMP_GT_OQ ? _mm256_cmp_ps(a, _mm256_set1_ps(bound), _CMP_GT_OQ)
                                                 : _mm256_cmp_ps(a, _mm256_set1_ps(bound), _CMP_GE_OQ));
  };
  // Each comparison is -1 where passed: the index is minus their sum.
  __m256i m = _mm256_add_epi32(past(0.25f, _CMP_GT_OQ), past(0.75f, _CMP_GE_OQ));
  m = _mm256_add_epi32(m, _mm256_add_epi32(past(1.25f, _CMP_GT_OQ), past(1.75f, _CMP_GE_OQ)));
  m = _mm256_add_epi32(m, _mm256_add_epi32(past(2.5f, _CMP_GT_OQ), past(3.5f, _CMP_GE_OQ)));
  m = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(m, past(5.0f, _CMP_GT_OQ)));
  const __m256i q = _mm256_permutevar8x32_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 6, 8, 12), m);
  const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(t, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_sub_epi32(_mm256_xor_si256(q, neg), neg);
}

// One block of 16 elements of x (ops.h QuantizeNvfp4Activations): q2 =
// twice each element's E2M1 value, elements 0-7 and 8-15, and the block
// scale s (0 for an all-zero block, q2 then 0). Returns false for a block
// with a NaN or an infinity.
HWY_INLINE bool QuantizeBlock(const float* x, float inv_scale, __m256i& q0, __m256i& q1, float& s) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
  const __m256 a = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
  // Not finite: |x| > FLT_MAX or unordered (NaN).
  const __m256 big = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256 bad = _mm256_or_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, v0), big, _CMP_NLE_UQ),
                                  _mm256_cmp_ps(_mm256_andnot_ps(sign, v1), big, _CMP_NLE_UQ));
  if (_mm256_movemask_ps(bad) != 0) return false;
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  // std::min(g * amax / 6, 448) in the reference's f32 operations
  // (_mm_min_ss(a, b) is `a < b ? a : b`, std::min(b, a) exactly).
  const __m128 wanted = _mm_div_ss(_mm_mul_ss(_mm_set_ss(inv_scale), m), _mm_set_ss(6.0f));
  s = _mm256_cvtss_f32(RoundToE4M3(_mm256_castps128_ps256(_mm_min_ss(_mm_set_ss(448.0f), wanted))));
  if (s == 0.0f) {
    q0 = q1 = _mm256_setzero_si256();
    return true;
  }
  // t = x * g / s, as the reference computes it.
  const __m256 g = _mm256_set1_ps(inv_scale), sv = _mm256_set1_ps(s);
  q0 = TwiceE2M1(_mm256_div_ps(_mm256_mul_ps(v0, g), sv));
  q1 = TwiceE2M1(_mm256_div_ps(_mm256_mul_ps(v1, g), sv));
  return true;
}

// x for one step of 128 elements: for each group of 64, one signed byte an
// element (W4A4: q2, twice the E2M1 value; W4A8: q), of the even elements,
// then of the odd ones (byte b: element 2b or 2b + 1 of the group, W's
// order: nvfp4_gemv_int-inl.h); 12 * the sum of the bytes over each lane's 8
// elements; each block's multiplier (W4A4: its scale / 4, the 1/4 undoing
// the doubled E2M1 values of both sides; W4A8: 2^(e - 1)), in kBlockOrder.
struct alignas(32) Step4 {
  int8_t x[2][2][32];  // [group][even, odd][byte]
  int32_t c[2][8];     // [group][lane]
  float step[8];       // [position of the block in kBlockOrder]
};
static_assert(sizeof(Step4) == 224);

// Quantizes x[0, K) (K a multiple of 16) into steps, the last one
// zero-padded, a block at a time by quantize(x, q0, q1, step): the bytes of
// elements 0-7 and 8-15 as i32 lanes and the block's multiplier, false for
// a block with a NaN or an infinity (its multiplier is then NaN, its bytes
// zero: the row's outputs are NaN).
template <class Quantize>
inline void PrepareBytes(const float* x, size_t K, Step4* steps, const Quantize& quantize) {
  const size_t num_steps = (K + kStep - 1) / kStep;
  const __m128i deinterleave = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (size_t st = 0; st < num_steps; ++st) {
    Step4& p = steps[st];
    std::memset(&p, 0, sizeof(p));
    for (size_t b = 0; b < 8 && st * kStep + b * 16 < K; ++b) {
      float& step = p.step[std::find(kBlockOrder, kBlockOrder + 8, b) - kBlockOrder];
      __m256i q0, q1;
      if (!quantize(x + st * kStep + b * 16, q0, q1, step)) {
        step = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      // Elements 0-15 as bytes in order (packs interleave 128-bit halves:
      // the permute puts q0's 8 before q1's), then even ones, odd ones.
      const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
      const __m128i bytes = _mm_shuffle_epi8(
          _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1)), deinterleave);
      // Block b: group b / 4, bytes 8 * (b % 4) .. + 7 of its even and odd vectors.
      const size_t g = b / 4, byte0 = 8 * (b % 4);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(&p.x[g][0][byte0]), bytes);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(&p.x[g][1][byte0]), _mm_unpackhi_epi64(bytes, bytes));
    }
    // c = 12 * each lane's sum of its bytes: its 4 even and 4 odd ones (|pair| <= 2 * 127, no saturation).
    for (size_t g = 0; g < 2; ++g) {
      const __m256i ones8 = _mm256_set1_epi8(1);
      const __m256i pairs =
          _mm256_add_epi16(_mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.x[g][0]))),
                           _mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.x[g][1]))));
      const __m256i sum = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.c[g]), _mm256_mullo_epi32(sum, _mm256_set1_epi32(12)));
    }
  }
}

inline void Prepare(const float* x, size_t K, float inv_scale, Step4* steps) {
  PrepareBytes(x, K, steps, [inv_scale](const float* xb, __m256i& q0, __m256i& q1, float& step) {
    float s;
    if (!QuantizeBlock(xb, inv_scale, q0, q1, s)) return false;
    step = s * 0.25f;  // (2v)(2q) / 4 = vq
    return true;
  });
}

// One block of 16 elements of x as ops.h QuantizeInt8Activations: q of
// elements 0-7 and 8-15 (|q| <= 127) and the exponent e. False for a block
// with a NaN or an infinity.
HWY_INLINE bool QuantizeBlock8(const float* x, __m256i& q0, __m256i& q1, int& e) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
  const __m256 a0 = _mm256_andnot_ps(sign, v0), a1 = _mm256_andnot_ps(sign, v1);
  const __m256 big = _mm256_set1_ps(std::numeric_limits<float>::max());  // not finite: > FLT_MAX or NaN
  if (_mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a0, big, _CMP_NLE_UQ), _mm256_cmp_ps(a1, big, _CMP_NLE_UQ))) != 0)
    return false;
  const __m256 a = _mm256_max_ps(a0, a1);
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  e = Int8BlockExponent(_mm_cvtss_f32(m));
  // x / 2^e exactly, to the nearest integer, ties to even: in f32 where 2^-e is one, else in double.
  if (const float invf = Int8InverseUnit(e); invf != 0.0f) {
    const __m256 s = _mm256_set1_ps(invf);
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    q0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, s), kNearest));
    q1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, s), kNearest));
    return true;
  }
  const __m256d inv = _mm256_set1_pd(Pow2(-e));
  const auto quarter = [&](__m128 v) {
    return _mm256_cvtpd_epi32(
        _mm256_round_pd(_mm256_mul_pd(_mm256_cvtps_pd(v), inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  };
  q0 = _mm256_set_m128i(quarter(_mm256_extractf128_ps(v0, 1)), quarter(_mm256_castps256_ps128(v0)));
  q1 = _mm256_set_m128i(quarter(_mm256_extractf128_ps(v1, 1)), quarter(_mm256_castps256_ps128(v1)));
  return true;
}

inline void Prepare8(const float* x, size_t K, Step4* steps) {
  PrepareBytes(x, K, steps, [](const float* xb, __m256i& q0, __m256i& q1, float& step) {
    int e;
    if (!QuantizeBlock8(xb, q0, q1, e)) return false;
    step = float(Pow2(e - 1));  // (2v) q / 2 * 2^e = vq 2^e; >= 2^-134, exact in f32
    return true;
  });
}

// The byte x side for nvfp4_int::Rows. GroupSums: the integer sums of group
// g of a step, lane l = sum over its 8 elements of 2v * the byte (i16 pairs
// at most 2 * 24 * 127 = 6096, two vectors added 12192: no saturation).
struct X4 {
  using Step = Step4;
  static HWY_INLINE __m256i GroupSums(const Consts& c, __m256i ue, __m256i uo, const Step4& p, size_t g) {
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(ue, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.x[g][0]))),
                         _mm256_maddubs_epi16(uo, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.x[g][1]))));
    return _mm256_sub_epi32(_mm256_madd_epi16(pairs, c.ones), _mm256_load_si256(reinterpret_cast<const __m256i*>(p.c[g])));
  }
};

bool MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
            ThreadPool& pool) {
  static_assert(w4a4_int::kMaxRows == nvfp4_int::kMaxRows);
  HWY_DASSERT(M >= 1 && M <= w4a4_int::kMaxRows && !targets.empty() && targets.size() <= kMaxGemvTargets);
  const size_t K = size_t(targets[0].w.cols);
  for (const MatMulTarget& t : targets) HWY_DASSERT(nvfp4_int::Supports(t.w) && size_t(t.w.cols) == K);
  const size_t num_steps = (K + kStep - 1) / kStep;
  const float inv_scale = 1.0f / input_scale;
  auto* steps =
      reinterpret_cast<Step4*>(ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(Step4) / sizeof(float)));
  for (size_t m = 0; m < M; ++m) Prepare(x + m * ldx, K, inv_scale, steps + m * num_steps);
  nvfp4_int::RowsOfTargets<X4>(M, steps, num_steps, targets, pool, input_scale);
  return true;
}

bool Quantize(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out, size_t ldo) {
  const float inv_scale = 1.0f / input_scale;
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; k += 16) {
      float* o = out + m * ldo + k;
      __m256i q0, q1;
      float s;
      if (!QuantizeBlock(x + m * ldx + k, inv_scale, q0, q1, s)) {
        std::fill(o, o + 16, std::numeric_limits<float>::quiet_NaN());
        continue;
      }
      const __m256 half_s = _mm256_set1_ps(s * 0.5f);  // exact: q2 / 2 * s
      _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(q0), half_s));
      _mm256_storeu_ps(o + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(q1), half_s));
    }
  return true;
}

bool MatMul8(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  HWY_DASSERT(M >= 1 && M <= w4a4_int::kMaxRows && !targets.empty() && targets.size() <= kMaxGemvTargets);
  const size_t K = size_t(targets[0].w.cols);
  for (const MatMulTarget& t : targets) HWY_DASSERT(nvfp4_int::Supports(t.w) && size_t(t.w.cols) == K);
  const size_t num_steps = (K + kStep - 1) / kStep;
  auto* steps =
      reinterpret_cast<Step4*>(ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(Step4) / sizeof(float)));
  for (size_t m = 0; m < M; ++m) Prepare8(x + m * ldx, K, steps + m * num_steps);
  nvfp4_int::RowsOfTargets<X4>(M, steps, num_steps, targets, pool, 1.0f);
  return true;
}

bool Quantize8(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo) {
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; k += 16) {
      float* o = out + m * ldo + k;
      __m256i q0, q1;
      int e;
      if (!QuantizeBlock8(x + m * ldx + k, q0, q1, e)) {
        std::fill(o, o + 16, std::numeric_limits<float>::quiet_NaN());
        continue;
      }
      const __m256 scale = _mm256_set1_ps(float(Pow2(e)));  // exact: q * 2^e
      _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(q0), scale));
      _mm256_storeu_ps(o + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(q1), scale));
    }
  return true;
}
#else
bool MatMul(const float*, size_t, size_t, float, std::span<const MatMulTarget>, ThreadPool&) { return false; }
bool Quantize(const float*, size_t, size_t, size_t, float, float*, size_t) { return false; }
bool MatMul8(const float*, size_t, size_t, std::span<const MatMulTarget>, ThreadPool&) { return false; }
bool Quantize8(const float*, size_t, size_t, size_t, float*, size_t) { return false; }
#endif

}  // namespace w4a4

// Exported per target (HWY_EXPORT needs plain functions of HWY_NAMESPACE).
bool W4A4MatMulImpl(const float* x, size_t M, size_t ldx, float input_scale, const MatMulTarget* targets,
                    size_t count, ThreadPool* pool) {
  return w4a4::MatMul(x, M, ldx, input_scale, {targets, count}, *pool);
}
bool W4A4QuantizeImpl(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out, size_t ldo) {
  return w4a4::Quantize(x, M, ldx, K, input_scale, out, ldo);
}
bool W4A8MatMulImpl(const float* x, size_t M, size_t ldx, const MatMulTarget* targets, size_t count, ThreadPool* pool) {
  return w4a4::MatMul8(x, M, ldx, {targets, count}, *pool);
}
bool W4A8QuantizeImpl(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo) {
  return w4a4::Quantize8(x, M, ldx, K, out, ldo);
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels::w4a4_int {

HWY_EXPORT(W4A4MatMulImpl);
HWY_EXPORT(W4A4QuantizeImpl);
HWY_EXPORT(W4A8MatMulImpl);
HWY_EXPORT(W4A8QuantizeImpl);

bool MatMul(const float* x, size_t M, size_t ldx, float input_scale, std::span<const MatMulTarget> targets,
            ThreadPool& pool) {
  return HWY_DYNAMIC_DISPATCH(W4A4MatMulImpl)(x, M, ldx, input_scale, targets.data(), targets.size(), &pool);
}

bool Quantize(const float* x, size_t M, size_t ldx, size_t K, float input_scale, float* out, size_t ldo) {
  return HWY_DYNAMIC_DISPATCH(W4A4QuantizeImpl)(x, M, ldx, K, input_scale, out, ldo);
}
bool MatMulW4A8(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  return HWY_DYNAMIC_DISPATCH(W4A8MatMulImpl)(x, M, ldx, targets.data(), targets.size(), &pool);
}
bool QuantizeInt8(const float* x, size_t M, size_t ldx, size_t K, float* out, size_t ldo) {
  return HWY_DYNAMIC_DISPATCH(W4A8QuantizeImpl)(x, M, ldx, K, out, ldo);
}

}  // namespace tern::kernels::w4a4_int
#endif  // HWY_ONCE
