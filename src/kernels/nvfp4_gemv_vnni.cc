// NVFP4 decode with AVX-512 VNNI (vpdpbusd on 512-bit vectors): y[M, N] =
// x[M, K] · W[N, K]^T for M = 1 .. kVnniMaxRows, the contract and numerics of
// nvfp4_gemv_int-inl.h (x as 24-bit fixed point per block of 16, W's E2M1
// codes exact as integers), at half the instructions per weight.
//
// The functions below are compiled for AVX-512 F/BW/DQ/VL + VNNI by a target
// pragma (as Highway does), not by -m flags on the file: with those, inline
// functions of the headers (std::, fmt, base/) instantiated here would be
// AVX-512 code that the linker may pick for every caller, on any CPU. They
// are entered only when the CPU has VNNI (cpu_features.h).
//
// Numerics. As in nvfp4_gemv_int-inl.h, u = 2v + 12 in [0, 24] is W's code
// as an unsigned byte. x is rounded per block to x24 = round(x / step) with
// step = max|x| / kXMax, kXMax = 127 * (65536 + 256 + 1) = 8355711 (just
// under 2^23: each element still within 2^-24 * 1.004 of its block's max),
// so that x24 = 65536 * hi + 256 * mid + lo with hi, mid and lo all signed
// bytes (balanced base-256 digits), vpdpbusd's signed operand. A 32-bit lane
// covers 8 elements: |sum u * digit| <= 8 * 24 * 128 = 24576, so
// 65536 * that < 2^31, and sum u * x24 - 12 * sum x24 = sum 2v * x24 with
// |.| <= 8 * 12 * kXMax < 2^30 per lane, 2^31 per block of two lanes: all
// exact in i32. The block's sum is then converted to f32 (rounded to 2^-24)
// and scaled by W's block scale times x's step / 2, as on AVX2.
//
// Layout. A step is 128 elements of K: 64 bytes of W, byte b holding element
// 2b (low nibble) and 2b + 1 (high nibble), so the "even" vector (masked low
// nibbles) has element 2b in byte b and the "odd" one element 2b + 1; lane l
// (bytes 4l .. 4l + 3) of both covers elements 8l .. 8l + 7, block l / 2.
// The prepared x stores its digits in that order. Steps are taken in pairs
// (s, s + 1), s even, the count padded to even with a zero step
// (PaddedSteps): after the lane-pair sums, lane 2j holds block j of step s
// and lane 2j + 1 block j of step s + 1, so one vector of 16 block sums takes
// one conversion, one scale decode (the pair's 16 scale bytes, interleaved)
// and one FMA. The row's last pair (partial steps, or an unpaired whole one)
// is read by masked loads.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/scratch.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialized (Highway silences the same).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tern::kernels::vnni {
namespace {

constexpr size_t kStep = 128;

// W's codes are requested this far ahead of the step being read. The
// hardware prefetchers alone kept one row's stream at 16.5 GB/s per core
// against 23.5 for a plain read (the kernel's compute between loads slows
// their ramp): BM_MatMul<NVFP4>/1, 2 threads, AMD Zen 5, medians of 3 in 2
// interleaved rounds: 2048 x 1024 20-22 -> 27 GB/s, 1024 x 3072 21-22 -> 25,
// 151936 x 1024 31-32 -> 33-36; one thread: 512 B to 2 KiB ahead slower or
// no better, 4 KiB best, 8-16 KiB within noise.
//
// Where the prefetched address enters a new 4 KiB page, one byte of it is
// also loaded: the translation is then in the TLB for the prefetches that
// follow (a software prefetch that misses the TLB may be dropped). qwen3-0.6b
// NVFP4 decode (`tern bench`, 2 threads, Zen 5, seven interleaved pairs, the
// weights mapped from 4 KiB and from 2 MiB pages): 1.06x median (0.82-1.11,
// the 0.82 under another tenant's load); moe-small NVFP4 0.99-1.04x.
constexpr size_t kPrefetchBytes = 4096;
constexpr double kXMax = 8355711.0;  // 127 * 65793: the largest 3-digit balanced base-256 value

// x for one step: the lo, mid and hi digits of x24 of the even elements, then
// of the odd ones; and minus 12 * the sum of x24 over each lane's 8 elements.
// Steps are used in pairs (s, s + 1), s even: the even step's `step` holds
// x's step / 2 of both, block j of step s in lane 2j and of step s + 1 in
// lane 2j + 1 (the order PairDot leaves the pair's 16 block sums in); the odd
// step's is unused.
struct alignas(64) PreparedStep {
  int8_t x[6][64];  // [lo even, mid even, hi even, lo odd, mid odd, hi odd][byte]
  int32_t nc[16];   // [lane]
  float step[16];   // [lane], in the pair's even step
};
static_assert(sizeof(PreparedStep) == 512);

// The steps Prepare writes for K: whole pairs (a zero step pads an odd count).
size_t PaddedSteps(size_t K) { return ((K + 2 * kStep - 1) / (2 * kStep)) * 2; }

// Quantizes x[0, K) (K a multiple of 16) into PaddedSteps(K) steps, the last
// ones zero-padded: one block of 16 per vector. x24 = round-to-nearest-even
// of x * (kXMax / amax) computed in f64, so the rounding is the only error.
void Prepare(const float* x, size_t K, PreparedStep* steps) {
  const size_t num_steps = PaddedSteps(K);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  // Block bytes e0 .. e15 -> the even elements (low 8 bytes), then the odd ones.
  const __m128i deinterleave = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (size_t s = 0; s < num_steps; ++s) {
    PreparedStep& p = steps[s];
    std::memset(&p, 0, sizeof(p));  // an odd step's `step` is unused: the pair's even step is already written
    float* pair_step = steps[s & ~size_t(1)].step + (s & 1);
    for (size_t b = 0; b < 8 && s * kStep + b * 16 < K; ++b) {
      const __m512 v = _mm512_loadu_ps(x + s * kStep + b * 16);
      if (_mm512_fpclass_ps_mask(v, 0x99) != 0) {  // a NaN or an infinity: the block's outputs are NaN
        pair_step[2 * b] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const float amax = _mm512_reduce_max_ps(_mm512_andnot_ps(sign, v));
      if (amax == 0.0f) continue;
      pair_step[2 * b] = float(double(amax) / kXMax * 0.5);
      const __m512d inv = _mm512_set1_pd(kXMax / double(amax));
      const __m256i q_lo = _mm512_cvtpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), inv));
      const __m256i q_hi = _mm512_cvtpd_epi32(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), inv));
      __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q_lo), q_hi, 1);
      p.nc[2 * b] = -12 * _mm512_mask_reduce_add_epi32(0x00ff, q);
      p.nc[2 * b + 1] = -12 * _mm512_mask_reduce_add_epi32(0xff00, q);
      // Balanced digits, low first: digit = the low byte sign-extended, q = (q - digit) / 256 (exact).
      for (int d = 0; d < 3; ++d) {
        const __m512i digit = _mm512_srai_epi32(_mm512_slli_epi32(q, 24), 24);
        const __m128i bytes = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(digit), deinterleave);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(&p.x[d][8 * b]), bytes);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(&p.x[3 + d][8 * b]), _mm_unpackhi_epi64(bytes, bytes));
        q = _mm512_srai_epi32(_mm512_sub_epi32(q, digit), 8);
      }
    }
  }
}

// u = 2 * value + 12 of each E2M1 code (sign bit 3): bytes for vpshufb.
constexpr int8_t kU[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

struct Consts {
  __m512i table, mask, e4m3_bits, pair_other;
  __m512 e4m3_unit;
  __m128i scale_order;
  Consts() {
    table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU)));
    mask = _mm512_set1_epi8(0x0f);
    e4m3_bits = _mm512_set1_epi32(int32_t(0x87F00000u));
    e4m3_unit = _mm512_set1_ps(0x1p120f);
    // Lane 2j: lane 2j + 1 of the first operand; lane 2j + 1: lane 2j of the second (vpermt2d indices).
    pair_other = _mm512_setr_epi32(1, 16, 3, 18, 5, 20, 7, 22, 9, 24, 11, 26, 13, 28, 15, 30);
    // The pair's 16 scale bytes (step s's 8, then step s + 1's) interleaved: block j of s, then of s + 1.
    scale_order = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  }
};

// The W side of a pair of steps: codes as u bytes (even and odd elements) of
// each, and the 16 E4M3 block scales as f32 in PreparedStep::step's order.
struct WPair {
  __m512i ue[2], uo[2];
  __m512 scale;
};

inline void DecodeCodes(const Consts& c, __m512i w, __m512i& ue, __m512i& uo) {
  ue = _mm512_shuffle_epi8(c.table, _mm512_and_si512(w, c.mask));
  uo = _mm512_shuffle_epi8(c.table, _mm512_and_si512(_mm512_srli_epi16(w, 4), c.mask));
}

// E4M3 as wload::E4M3Load decodes it: sign-extend, << 20, mask, * 2^120.
inline __m512 DecodeScales(const Consts& c, __m128i b) {
  const __m512i v = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(b, c.scale_order));
  return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(v, 20), c.e4m3_bits)), c.e4m3_unit);
}

// Two whole steps of a row from step s: 128 bytes of codes, 16 scale bytes.
inline WPair LoadPair(const Consts& c, const uint8_t* row, const uint8_t* scales) {
  WPair p;
  DecodeCodes(c, _mm512_loadu_si512(row), p.ue[0], p.uo[0]);
  DecodeCodes(c, _mm512_loadu_si512(row + 64), p.ue[1], p.uo[1]);
  p.scale = DecodeScales(c, _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  return p;
}

inline __mmask64 FirstBytes(size_t n) { return n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1; }

// The row's last pair: e0 and e1 elements (multiples of 16; e1 > 0 only when
// e0 = kStep) of the two steps and their (e0 + e1) / 16 scales, the rest
// zero (x is zero there too, and a zero scale byte is 0). Masked loads: no
// byte past the row is touched (a copy to a zeroed buffer instead cost 1.7x
// on 192 x 192, the demo models' shape).
inline WPair LoadLastPair(const Consts& c, const uint8_t* row, const uint8_t* scales, size_t e0, size_t e1) {
  WPair p;
  DecodeCodes(c, _mm512_maskz_loadu_epi8(FirstBytes(e0 / 2), row), p.ue[0], p.uo[0]);
  DecodeCodes(c, _mm512_maskz_loadu_epi8(FirstBytes(e1 / 2), row + 64), p.ue[1], p.uo[1]);
  const __mmask16 sm = __mmask16((1u << ((e0 + e1) / 16)) - 1);
  p.scale = DecodeScales(c, _mm_maskz_loadu_epi8(sm, scales));
  return p;
}

// Lane l: sum over the lane's 8 elements of 2v * x24 for one step (exact:
// vpdpbusd wraps, and the result is within i32, so the order of the terms
// does not matter): 65536 * hi + 256 * mid + lo as (hi * 256 + mid) * 256 + lo.
inline __m512i StepSum(__m512i ue, __m512i uo, const PreparedStep& p) {
  const __m512i* x = reinterpret_cast<const __m512i*>(p.x);
  __m512i hm = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ue, x[2]), uo, x[5]);
  hm = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(hm, 8), ue, x[1]), uo, x[4]);
  const __m512i lo = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_load_si512(p.nc), ue, x[0]), uo, x[3]);
  return _mm512_add_epi32(_mm512_slli_epi32(hm, 8), lo);
}

// acc[j] + one pair of steps (p[0], p[1]) of one row of x against NW rows of
// W. The two lanes of each block are added across the pair, so that the 16
// block sums fill one vector (lane 2j: block j of the first step, 2j + 1: of
// the second) and take one conversion, scale and FMA.
template <size_t NW>
inline void PairDot(const Consts& c, const WPair (&w)[NW], const PreparedStep* p, __m512 (&acc)[NW]) {
  const __m512 xs = _mm512_load_ps(p[0].step);
  for (size_t j = 0; j < NW; ++j) {
    const __m512i d0 = StepSum(w[j].ue[0], w[j].uo[0], p[0]);
    const __m512i d1 = StepSum(w[j].ue[1], w[j].uo[1], p[1]);
    const __m512i blocks =
        _mm512_add_epi32(_mm512_mask_blend_epi32(0xAAAA, d0, d1), _mm512_permutex2var_epi32(d0, c.pair_other, d1));
    acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(blocks), _mm512_mul_ps(w[j].scale, xs), acc[j]);
  }
}

// y[r][n .. n + NW) for NW consecutive rows of w from n and the R rows of x
// (steps[r * stride + s]). Each W row is read as one sequential stream,
// prefetched kPrefetchBytes ahead while that stays inside the task's rows
// (before row n1: past it, another task's or no matrix's bytes).
template <size_t R, size_t NW>
void RowGroup(const Consts& c, const PreparedStep* steps, size_t stride, const MatrixView& w, size_t n, size_t n1,
              float* y, size_t ldy) {
  const size_t K = size_t(w.cols);
  const size_t full = K / kStep;  // whole steps; K - full * kStep (a multiple of 16) is left
  const size_t row_bytes = size_t(w.row_stride) / 2, srow_bytes = size_t(w.scale_stride);
  const uint8_t* r[NW];
  const uint8_t* sr[NW];
  for (size_t j = 0; j < NW; ++j) {
    r[j] = static_cast<const uint8_t*>(w.data) + (n + j) * row_bytes;
    sr[j] = static_cast<const uint8_t*>(w.scales) + (n + j) * srow_bytes;
  }
  __m512 acc[R][NW];
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) acc[i][j] = _mm512_setzero_ps();
  WPair wp[NW];
  const bool ahead = (n1 - n - NW) * row_bytes >= kPrefetchBytes;  // the rows after these hold the prefetched bytes
  size_t s = 0;
  for (; s + 2 <= full; s += 2) {
    for (size_t j = 0; j < NW; ++j) {
      if (ahead) {
        const char* at = reinterpret_cast<const char*>(r[j] + s * (kStep / 2) + kPrefetchBytes);
        _mm_prefetch(at, _MM_HINT_T0);
        _mm_prefetch(at + 64, _MM_HINT_T0);
        if ((reinterpret_cast<uintptr_t>(at) & 4095) < 128) {  // a new page (two lines a pair)
          const char v = *reinterpret_cast<const volatile char*>(at);  // inside rows [n, n1): `ahead`
          asm volatile("" ::"r"(v));
        }
      }
      wp[j] = LoadPair(c, r[j] + s * (kStep / 2), sr[j] + s * 8);
    }
    for (size_t i = 0; i < R; ++i) PairDot(c, wp, steps + i * stride + s, acc[i]);
  }
  if (s * kStep < K) {  // one or two partial steps are left
    const size_t e0 = std::min(K - s * kStep, kStep), e1 = K - s * kStep - e0;
    for (size_t j = 0; j < NW; ++j) wp[j] = LoadLastPair(c, r[j] + s * (kStep / 2), sr[j] + s * 8, e0, e1);
    for (size_t i = 0; i < R; ++i) PairDot(c, wp, steps + i * stride + s, acc[i]);
  }
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) y[i * ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]) * w.global_scale;
}

// W rows per group. One: then W is read as one sequential stream (rows are
// contiguous), prefetched kPrefetchBytes ahead. Four rows side by side share
// the loads of x and are 1.15x faster with W in L2, but 1.1-1.2x slower from
// memory (BM_MatMul<NVFP4> 151936 x 1024 and 2048 x 1024, AMD Zen 4, 2
// threads, before the prefetch); two rows with the prefetch, Zen 5: 1.05x in
// L2, 0.85-0.97x from memory. Decode reads W from memory.
template <size_t R>
constexpr size_t kGroup = 1;

// y[r][n] for rows [n0, n1) of w and the R rows of x.
template <size_t R>
void Rows(const Consts& c, const PreparedStep* steps, size_t stride, const MatrixView& w, size_t n0, size_t n1,
          float* y, size_t ldy) {
  size_t n = n0;
  for (; n + kGroup<R> <= n1; n += kGroup<R>) RowGroup<R, kGroup<R>>(c, steps, stride, w, n, n1, y, ldy);
  for (; n < n1; ++n) RowGroup<R, 1>(c, steps, stride, w, n, n1, y, ldy);
}

}  // namespace

void Nvfp4MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  const size_t K = size_t(targets[0].w.cols);
  const size_t num_steps = PaddedSteps(K);
  // ThreadScratch is 64-byte aligned (scratch.h).
  auto* steps = reinterpret_cast<PreparedStep*>(
      ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(PreparedStep) / sizeof(float)));
  for (size_t m = 0; m < M; ++m) Prepare(x + m * ldx, K, steps + m * num_steps);
  const Nvfp4Chunks chunks = PlanNvfp4Chunks(targets, pool.size());
  static const Consts consts;
  pool.Run(chunks.first[targets.size()], [&](size_t chunk, size_t) {
    size_t n0, n1;
    const MatMulTarget& t = chunks.Locate(targets, chunk, n0, n1);
    const size_t ldy = size_t(t.ldy);
    switch (M) {
      case 1: return Rows<1>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 2: return Rows<2>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 3: return Rows<3>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 4: return Rows<4>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 5: return Rows<5>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 6: return Rows<6>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      case 7: return Rows<7>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
      default: return Rows<8>(consts, steps, num_steps, t.w, n0, n1, t.y, ldy);
    }
  });
}

}  // namespace tern::kernels::vnni

#pragma GCC diagnostic pop
#pragma GCC pop_options
