// NVFP4 decode with AVX-512 VNNI (vpdpbusd on 512-bit vectors): y[M, N] =
// x[M, K] · W[N, K]^T for M = 1 .. kVnniMaxRows, the contract and numerics of
// nvfp4_gemv_int-inl.h (x as 24-bit fixed point per block of 16, W's E2M1
// codes exact as integers), at half the instructions per weight; or, where
// BF16 activations are in effect (cpu_features.h Nvfp4DecodeX16), x as
// 16-bit fixed point: one digit of three fewer, two of six vpdpbusd a step.
//
// The functions below are compiled for AVX-512 F/BW/DQ/VL + VNNI by a target
// pragma (as Highway does), not by -m flags on the file: with those, inline
// functions of the headers (std::, fmt, base/) instantiated here would be
// AVX-512 code that the linker may pick for every caller, on any CPU. They
// are entered only when the CPU has VNNI (cpu_features.h).
//
// Numerics. As in nvfp4_gemv_int-inl.h, u = 2v + 12 in [0, 24] is W's code
// as an unsigned byte. x is rounded per block to xq = round(x / step) with
// step = max|x| / kXMax, written as D balanced base-256 digits (signed
// bytes, vpdpbusd's signed operand), xq = sum_d 256^d * digit_d:
// - D = 3 (x24): kXMax = 127 * (65536 + 256 + 1) = 8355711, just under 2^23:
//   each element within 2^-24 * 1.004 of its block's max. A 32-bit lane
//   sums a block of 16 elements (nvfp4_vnni_w-inl.h's block-major order).
//   vpdpbusd, the shifts and the adds wrap modulo 2^32, so the lane ends
//   with the true sum modulo 2^32, and that sum, sum u * x24 - 12 * sum x24
//   = sum 2v * x24, is at most 16 * 12 * kXMax < 2^31 in magnitude: exact in
//   i32. The block's sum is then converted to f32 (rounded to 2^-24).
// - D = 2 (x16): kXMax = 127 * 257 = 32639: each element within
//   1 / (2 * 32639) = 2^-15.99 of its block's max (and the step's own
//   rounding to f32, 2^-24 of it, on top). A block's sum is at most
//   16 * 12 * 32639 < 2^23 in magnitude, so also its conversion is exact.
// Each block's sum is scaled by W's block scale times x's step / 2, as on
// AVX2, and accumulated in f32.
//
// Layout: nvfp4_vnni_w-inl.h (W's side and the row loop, shared with the
// W4A4 kernel of nvfp4_w4a4_vnni.cc); the prepared x below stores its digits
// in W's byte order.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu_features.h"
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
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialized (Highway silences the same).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/nvfp4_vnni_w-inl.h"

namespace tern::kernels::vnni {
namespace {

// The largest D-digit balanced base-256 value: 127 * 65793 (D = 3), 127 * 257 (D = 2).
template <int D>
constexpr double kXMax = D == 3 ? 8355711.0 : 32639.0;

// x for a pair of steps (s, s + 1), s even, in W's block-major order
// (nvfp4_vnni_w-inl.h), D digits of xq: in steps[s] the digits (lowest first)
// of the even elements of each block's elements 0 .. 7, then of the odd ones,
// in steps[s + 1] the same of elements 8 .. 15 (lane j: the pair's block j);
// in steps[s] also minus 12 * the sum of xq over each block and x's step / 2
// of each block (steps[s + 1]'s are zero and unused).
template <int D>
struct alignas(64) PreparedStep {
  int8_t x[2 * D][64];  // [digit d of the even elements, then of the odd][byte]
  int32_t nc[16];       // [block of the pair], in the pair's first step
  float step[16];       // [block of the pair], in the pair's first step
};
static_assert(sizeof(PreparedStep<3>) == 512 && sizeof(PreparedStep<2>) == 384);

// Quantizes x[0, K) (K a multiple of 16) into PaddedSteps(K) steps, the last
// ones zero-padded: one block of 16 per vector. xq = round-to-nearest-even
// of x * (kXMax / amax) computed in f64, so the rounding is the only error.
template <int D>
void Prepare(const float* x, size_t K, PreparedStep<D>* steps) {
  const size_t num_steps = PaddedSteps(K);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  // Block bytes e0 .. e15 -> the even elements (low 8 bytes), then the odd ones.
  const __m128i deinterleave = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (size_t s = 0; s < num_steps; ++s) {
    PreparedStep<D>* pair = steps + (s & ~size_t(1));
    if ((s & 1) == 0) std::memset(pair, 0, 2 * sizeof(PreparedStep<D>));  // num_steps is even
    for (size_t b = 0; b < 8 && s * kStep + b * 16 < K; ++b) {
      const size_t j = 8 * (s & 1) + b;  // the block's lane in the pair
      const __m512 v = _mm512_loadu_ps(x + s * kStep + b * 16);
      if (_mm512_fpclass_ps_mask(v, 0x99) != 0) {  // a NaN or an infinity: the block's outputs are NaN
        pair[0].step[j] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const float amax = _mm512_reduce_max_ps(_mm512_andnot_ps(sign, v));
      if (amax == 0.0f) continue;
      pair[0].step[j] = float(double(amax) / kXMax<D> * 0.5);
      const __m512d inv = _mm512_set1_pd(kXMax<D> / double(amax));
      const __m256i q_lo = _mm512_cvtpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), inv));
      const __m256i q_hi = _mm512_cvtpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), inv));
      __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q_lo), q_hi, 1);
      pair[0].nc[j] = -12 * _mm512_reduce_add_epi32(q);  // |.| <= 16 * 12 * kXMax < 2^31
      // Balanced digits, low first: digit = the low byte sign-extended, q = (q - digit) / 256 (exact).
      for (int d = 0; d < D; ++d) {
        const __m512i digit = _mm512_srai_epi32(_mm512_slli_epi32(q, 24), 24);
        StoreBlock(_mm_shuffle_epi8(_mm512_cvtepi32_epi8(digit), deinterleave), &pair[0].x[d][4 * j],
                   &pair[1].x[d][4 * j], &pair[0].x[D + d][4 * j], &pair[1].x[D + d][4 * j]);
        q = _mm512_srai_epi32(_mm512_sub_epi32(q, digit), 8);
      }
    }
  }
}

// The fixed-point x side for RowGroup (nvfp4_vnni_w-inl.h), D digits.
template <int D>
struct XFixed {
  using Step = PreparedStep<D>;

  // Lane j: sum over the pair's block j of 2v * xq (exact: vpdpbusd wraps,
  // and the result is within i32, so the order of the terms does not
  // matter), the digits' sums from the highest, times 256 before each next
  // one: (hi * 256 + mid) * 256 + lo for D = 3.
  static __m512i PairSum(const __m512i (&ue)[2], const __m512i (&uo)[2], const Step* p) {
    const __m512i* a = reinterpret_cast<const __m512i*>(p[0].x);  // elements 0 .. 7 of each block
    const __m512i* b = reinterpret_cast<const __m512i*>(p[1].x);  // elements 8 .. 15
    auto digit = [&](__m512i acc, int d) {
      acc = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, ue[0], a[d]), uo[0], a[D + d]);
      return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, ue[1], b[d]), uo[1], b[D + d]);
    };
    __m512i high = digit(_mm512_setzero_si512(), D - 1);
    if constexpr (D == 3) high = digit(_mm512_slli_epi32(high, 8), 1);
    const __m512i lo = digit(_mm512_load_si512(p[0].nc), 0);
    return _mm512_add_epi32(_mm512_slli_epi32(high, 8), lo);
  }
};

template <int D>
void MatMulFixed(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  const size_t K = size_t(targets[0].w.cols);
  const size_t num_steps = PaddedSteps(K);
  // ThreadScratch is 64-byte aligned (scratch.h).
  auto* steps = reinterpret_cast<PreparedStep<D>*>(
      ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(PreparedStep<D>) / sizeof(float)));
  for (size_t m = 0; m < M; ++m) Prepare<D>(x + m * ldx, K, steps + m * num_steps);
  const Nvfp4Chunks chunks = PlanNvfp4Chunks(targets, pool.size());
  static const Consts consts;
  pool.Run(chunks.first[targets.size()], [&](size_t chunk, size_t) {
    size_t n0, n1;
    const MatMulTarget& t = chunks.Locate(targets, chunk, n0, n1);
    RowsOfM<XFixed<D>>(M, consts, steps, num_steps, t.w, n0, n1, t.y, size_t(t.ldy), 1.0f);
  });
}

void MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  if (Nvfp4DecodeX16()) return MatMulFixed<2>(x, M, ldx, targets, pool);
  MatMulFixed<3>(x, M, ldx, targets, pool);
}

}  // namespace

#if TERN_VNNI_VPERMB
void vpermb::Nvfp4MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets,
                         ThreadPool& pool) {
  MatMul(x, M, ldx, targets, pool);
}
#else
void Nvfp4MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  if (UseNvfp4Vpermb()) return vpermb::Nvfp4MatMul(x, M, ldx, targets, pool);
  MatMul(x, M, ldx, targets, pool);
}
#endif

}  // namespace tern::kernels::vnni

#pragma GCC diagnostic pop
#pragma GCC pop_options
