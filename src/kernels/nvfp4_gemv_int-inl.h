// NVFP4 decode, y[M, N] = x[M, K] · W[N, K]^T for M = 1 .. kMaxRows (decode
// batches, experts routed a few rows), with integer dot products: W's E2M1
// codes exact as integers, each row of x as 24-bit fixed point per block of 16.
// A per-target header (x86 AVX2 and AVX-512 targets; others keep the f32
// tile of matmul_gemv_hwy.cc), included by matmul_gemv_hwy.cc.
//
// Why: decoding NVFP4 to f32 costs ~15 vector instructions per 16 weights
// and row (nibble extract, table permute, sign, scale, two FMAs), which on
// AVX2 caps one core at ~6 G weights/s: BM_MatMul<NVFP4,L2> (W in L2) runs
// exactly as fast as from memory, well under what memory delivers. Here 64
// weights cost ~30 instructions.
//
// Numerics. Twice an E2M1 value is an integer in [-12, 12]; stored as
// u = 2v + 12 in [0, 24] it is an unsigned byte for vpmaddubsw. x is
// rounded per block of 16 (aligned with W's scale blocks) to
// x24 = round(x / step), step = max|x| / (2^23 - 1): each element is off by
// at most 2^-23 of its block's largest magnitude (f32 arithmetic rounds to
// 2^-24 of each product and partial sum anyway; 16 bits were tried and
// measurably moved Qwen3.5's recurrent state over 32 decode steps, so the
// 16 bits of the VNNI kernel are kept to where BF16 activations, which move
// it far more, are in effect: cpu_features.h Nvfp4DecodeX16).
// x24 = 65536 * hi + 256 * mid + lo with hi a signed byte, mid and lo
// unsigned ones, so
//   sum u * x24 = 256 * (256 * maddubs(u, hi) + maddubs(mid, u)) + maddubs(lo, u)
// with no i16 overflow (|pair| <= 2 * 24 * 255, even+odd <= 24480) nor i32
// (8 * 24 * 2^23 < 2^31), and sum 2v * x24 = sum u * x24 - 12 * sum x24, the
// second term precomputed per x. The two lanes of a block are added in i32
// (|sum 2v * x24| <= 16 * 12 * 2^23 < 2^31), the block's sum converted to f32
// (rounding it to 2^-24), scaled by its W block scale times its x step, and
// accumulated in f32. NaN or infinite x in a block makes the block's step
// NaN, so the outputs are NaN, as the f32 kernels give.
//
// Layout. A step is 128 elements of K (two groups of 64, 8 scale blocks).
// In a group, the 32 bytes of W hold element 2b in byte b's low nibble (the
// "even" vector after masking) and 2b + 1 in its high nibble (the "odd" one);
// 32-bit lane l of the integer sums then covers elements 8l .. 8l + 7, block
// l / 2. The prepared x (PreparedStep) stores its bytes in exactly that
// order, so no shuffle of W is needed. vphaddd of the two groups' lanes
// gives the 8 block sums in the order kBlockOrder (its in-lane pairing);
// the x steps are stored, and W's scale bytes shuffled, in that order.

// Per-target include guard (Highway's convention).
#if defined(TERN_KERNELS_NVFP4_GEMV_INT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TERN_KERNELS_NVFP4_GEMV_INT_INL_H_
#undef TERN_KERNELS_NVFP4_GEMV_INT_INL_H_
#else
#define TERN_KERNELS_NVFP4_GEMV_INT_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "base/thread_pool.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace nvfp4_int {

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// (AVX-512 targets run the same 256-bit code, unless the CPU has AVX-512 VNNI:
// then MatMul hands over to nvfp4_gemv_vnni.cc.)
inline constexpr bool kAvailable = true;

inline constexpr size_t kStep = 128;  // elements of K per step
inline constexpr float kXMax = 8388607.0f;  // 2^23 - 1
// Block sums as _mm256_hadd_epi32(group 0 lanes, group 1 lanes) yields them:
// position i holds block kBlockOrder[i].
inline constexpr uint8_t kBlockOrder[8] = {0, 1, 4, 5, 2, 3, 6, 7};

// x for one step: for each group of 64 elements, the low, middle and high
// bytes of x24 of the even elements, then of the odd ones (byte b holding
// element 2b or 2b + 1 of the group); 12 * the sum of x24 over each lane's 8
// elements; and each of the 8 blocks' step / 2 (the 1/2 undoes the doubled
// E2M1 values), in kBlockOrder.
struct alignas(32) PreparedStep {
  uint8_t x[2][6][32];  // [group][lo even, mid even, hi even, lo odd, mid odd, hi odd][byte]
  int32_t c[2][8];      // [group][lane]
  float step[8];        // [position of the block in kBlockOrder]
};
static_assert(sizeof(PreparedStep) == 480);

// Quantizes x[0, K) into steps (the last one zero-padded).
inline void Prepare(const float* x, size_t K, PreparedStep* steps) {
  const size_t num_steps = (K + kStep - 1) / kStep;
  for (size_t s = 0; s < num_steps; ++s) {
    PreparedStep& p = steps[s];
    for (size_t b = 0; b < 8; ++b) {
      const size_t k0 = s * kStep + b * 16;
      int32_t q[16] = {};
      float amax = 0.0f;
      bool finite = true;
      for (size_t i = 0; i < 16 && k0 + i < K; ++i) {
        const float a = std::fabs(x[k0 + i]);
        finite = finite && a <= std::numeric_limits<float>::max();
        amax = std::max(amax, a);
      }
      float& step = p.step[std::find(kBlockOrder, kBlockOrder + 8, b) - kBlockOrder];
      if (!finite) {
        step = std::numeric_limits<float>::quiet_NaN();
      } else if (amax == 0.0f) {
        step = 0.0f;
      } else {
        const double inv = double(kXMax) / double(amax);
        for (size_t i = 0; i < 16 && k0 + i < K; ++i) q[i] = int32_t(std::nearbyint(double(x[k0 + i]) * inv));
        step = float(double(amax) / double(kXMax) * 0.5);
      }
      // Block b: group b / 4, elements 16 * (b % 4) .. + 15 of the group,
      // bytes 8 * (b % 4) .. + 7 of its even and odd vectors, lanes 2 * (b % 4)
      // and 2 * (b % 4) + 1.
      const size_t g = b / 4, byte0 = 8 * (b % 4), lane0 = 2 * (b % 4);
      for (size_t i = 0; i < 16; ++i) {
        const size_t half = i % 2, byte = byte0 + i / 2;
        const uint32_t u = uint32_t(q[i]);
        p.x[g][3 * half][byte] = uint8_t(u & 0xff);
        p.x[g][3 * half + 1][byte] = uint8_t((u >> 8) & 0xff);
        p.x[g][3 * half + 2][byte] = uint8_t((u >> 16) & 0xff);
      }
      for (size_t l = 0; l < 2; ++l) {
        int32_t sum = 0;
        for (size_t i = 0; i < 8; ++i) sum += q[8 * l + i];
        p.c[g][lane0 + l] = 12 * sum;
      }
    }
  }
}

// u = 2 * value + 12 of each E2M1 code (sign bit 3): bytes for vpshufb.
inline constexpr int8_t kU[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

struct Consts {
  __m256i table, mask, ones, k256, e4m3_bits;
  __m128i block_order;
  __m256 e4m3_unit;
  Consts() {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kU));
    table = _mm256_broadcastsi128_si256(t);
    mask = _mm256_set1_epi8(0x0f);
    ones = _mm256_set1_epi16(1);
    k256 = _mm256_set1_epi16(256);
    block_order = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kBlockOrder));
    e4m3_bits = _mm256_set1_epi32(int32_t(0x87F00000u));
    e4m3_unit = _mm256_set1_ps(0x1p120f);
  }
};

// The W side of one step, shared by every row of x: the E2M1 codes as
// u = 2v + 12 bytes, even and odd elements of each group, and the 8 block
// scales as f32 in kBlockOrder.
struct WStep {
  __m256i ue[2], uo[2];
  __m256 scale;
};

HWY_INLINE WStep DecodeStep(const Consts& c, const __m256i (&wv)[2], __m128i scale_bytes) {
  WStep s;
  for (int g = 0; g < 2; ++g) {
    const __m256i w = wv[g];
    s.ue[g] = _mm256_shuffle_epi8(c.table, _mm256_and_si256(w, c.mask));
    s.uo[g] = _mm256_shuffle_epi8(c.table, _mm256_and_si256(_mm256_srli_epi16(w, 4), c.mask));
  }
  // (In kBlockOrder; E4M3 decoding as wload::E4M3Load: sign-extend, << 20,
  // mask, * 2^120.)
  const __m128i bytes = _mm_shuffle_epi8(scale_bytes, c.block_order);
  const __m256i v = _mm256_cvtepi8_epi32(bytes);
  s.scale = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(v, 20), c.e4m3_bits)), c.e4m3_unit);
  return s;
}

HWY_INLINE WStep LoadStep(const Consts& c, const uint8_t* row, const uint8_t* scales) {
  const __m256i wv[2] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)),
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32))};
  return DecodeStep(c, wv, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)));
}

// The last, partial step of a row: `elems` (a multiple of 16, < kStep) codes
// and their elems / 16 scales, the rest zero (x is zero there too, and a zero
// scale byte is 0). Codes by masked 32-bit loads (elems / 2 bytes is a
// multiple of 8), nothing read past the row; cheaper than a copy into a
// zeroed buffer on small matrices (K = 192: the demo models).
HWY_INLINE WStep LoadTail(const Consts& c, const uint8_t* row, const uint8_t* scales, size_t elems) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int words = int(elems / 8);  // 32-bit words of codes
  __m256i wv[2];
  for (int g = 0; g < 2; ++g) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(words - 8 * g), lane);
    wv[g] = _mm256_maskload_epi32(reinterpret_cast<const int*>(row + 32 * g), mask);
  }
  uint64_t sb = 0;
  for (size_t b = 0; b < elems / 16; ++b) sb |= uint64_t(scales[b]) << (8 * b);
  return DecodeStep(c, wv, _mm_cvtsi64_si128(int64_t(sb)));
}

// The 24-bit x side for Rows. GroupSums: the integer sums of group g of a
// step, lane l = sum over elements 8l .. 8l + 7 of 2 * value * x24.
struct X24 {
  using Step = PreparedStep;
  static HWY_INLINE __m256i GroupSums(const Consts& c, __m256i ue, __m256i uo, const PreparedStep& p, size_t g) {
    const auto ld = [&](int i) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p.x[g][i])); };
    const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(ld(0), ue), _mm256_maddubs_epi16(ld(3), uo));
    const __m256i mid = _mm256_add_epi16(_mm256_maddubs_epi16(ld(1), ue), _mm256_maddubs_epi16(ld(4), uo));
    const __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(ue, ld(2)), _mm256_maddubs_epi16(uo, ld(5)));
    const __m256i top = _mm256_add_epi32(_mm256_madd_epi16(hi, c.k256), _mm256_madd_epi16(mid, c.ones));
    const __m256i d = _mm256_add_epi32(_mm256_slli_epi32(top, 8), _mm256_madd_epi16(lo, c.ones));
    return _mm256_sub_epi32(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.c[g])));
  }
};

// acc + one step of one row of x against W, for an x side X whose Step holds
// the x block multipliers in `step` (kBlockOrder) and whose GroupSums gives
// each lane's exact integer sum over its 8 elements: two groups' lanes added
// in pairs (vphaddd) are the 8 block sums, in kBlockOrder.
template <class X>
HWY_INLINE __m256 StepDot(const Consts& c, const WStep& w, const typename X::Step& p, __m256 acc) {
  const __m256 s = _mm256_mul_ps(w.scale, _mm256_load_ps(p.step));
  const __m256i d0 = X::GroupSums(c, w.ue[0], w.uo[0], p, 0);
  const __m256i d1 = X::GroupSums(c, w.ue[1], w.uo[1], p, 1);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(d0, d1)), s, acc);
}

inline float HorizontalSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// Rows of x per call: each W step is decoded once for all of them. Up to 8
// (the VNNI kernel's count): against what MatMul otherwise runs for 4 to 8
// rows (the f32 tile decoding W in registers), BM_Gemv<NVFP4> on the avx2
// path (AMD Zen 5, 2 threads, min of 3, two rounds) 3072 x 1024: 4 rows
// 282-297 us against 535-574, 6 rows 409-501 / 1114-1153, 8 rows 471-550 /
// 1157-1185; 2048 x 2048, 8 rows 817-954 / 1506-1625 (and the chunk-
// dequantizing f32 tile MatMul takes from 9 rows: 12 rows 1000-1131). (An
// older one-thread measurement, 2048 x 2048: 1.24x at 2 rows, 1.17x at 3.)
inline constexpr size_t kMaxRows = 8;

// y[r][n] = (x[r] · W[n]) * global_scale * out_scale for rows [n0, n1) of w
// and the R rows of x (an x side X, see StepDot; its prepared steps at
// steps[r * stride + s]), one W row at a time so that the chunk is read as one
// sequential stream (rows are contiguous). One row of x takes two
// accumulators on alternate steps (two independent FMA chains); more rows
// are independent chains already.
template <class X, size_t R>
inline void Rows(const Consts& c, const typename X::Step* steps, size_t stride, const MatrixView& w, size_t n0,
                 size_t n1, float* y, size_t ldy, float out_scale) {
  const size_t K = size_t(w.cols);
  const size_t full = K / kStep, tail = K - full * kStep;  // tail: a multiple of 16
  const auto* base = static_cast<const uint8_t*>(w.data);
  const auto* sbase = static_cast<const uint8_t*>(w.scales);
  const size_t row_bytes = size_t(w.row_stride) / 2, srow_bytes = size_t(w.scale_stride);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t* r = base + n * row_bytes;
    const uint8_t* sr = sbase + n * srow_bytes;
    const auto step_at = [&](size_t s) { return LoadStep(c, r + s * (kStep / 2), sr + s * 8); };
    __m256 acc[R], acc1 = _mm256_setzero_ps();
    for (size_t i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
    size_t s = 0;
    if constexpr (R == 1) {
      for (; s + 2 <= full; s += 2) {
        acc[0] = StepDot<X>(c, step_at(s), steps[s], acc[0]);
        acc1 = StepDot<X>(c, step_at(s + 1), steps[s + 1], acc1);
      }
    }
    for (; s < full; ++s) {
      const WStep ws = step_at(s);
      for (size_t i = 0; i < R; ++i) acc[i] = StepDot<X>(c, ws, steps[i * stride + s], acc[i]);
    }
    if (tail != 0) {
      const WStep ws = LoadTail(c, r + full * (kStep / 2), sr + full * 8, tail);
      for (size_t i = 0; i < R; ++i) acc[i] = StepDot<X>(c, ws, steps[i * stride + full], acc[i]);
    }
    acc[0] = _mm256_add_ps(acc[0], acc1);
    for (size_t i = 0; i < R; ++i) y[i * ldy + n] = HorizontalSum(acc[i]) * w.global_scale * out_scale;
  }
}

// Rows<X, M> over every target's rows, threads claiming chunks across all
// targets, for the M (1 to kMaxRows) rows of x X has prepared (steps[r *
// stride + s]).
template <class X>
inline void RowsOfTargets(size_t M, const typename X::Step* steps, size_t stride,
                          std::span<const MatMulTarget> targets, ThreadPool& pool, float out_scale) {
  static_assert(kMaxRows == 8);  // the switch below
  const Nvfp4Chunks chunks = PlanNvfp4Chunks(targets, pool.size());
  static const Consts consts;
  pool.Run(chunks.first[targets.size()], [&](size_t chunk, size_t) {
    size_t n0, n1;
    const MatMulTarget& t = chunks.Locate(targets, chunk, n0, n1);
    const size_t ldy = size_t(t.ldy);
    switch (M) {
      case 1: return Rows<X, 1>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 2: return Rows<X, 2>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 3: return Rows<X, 3>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 4: return Rows<X, 4>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 5: return Rows<X, 5>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 6: return Rows<X, 6>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      case 7: return Rows<X, 7>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
      default: return Rows<X, 8>(consts, steps, stride, t.w, n0, n1, t.y, ldy, out_scale);
    }
  });
}

// Whether MatMulNvfp4 takes these: NVFP4 with whole scale blocks and rows
// that start on a byte.
inline bool Supports(const MatrixView& w) {
  return w.format == WeightFormat::kNvfp4 && w.cols % kNvfp4Block == 0 && w.row_stride % 2 == 0;
}

// y_i[m][0, N_i) = x[m] · W_i^T for every target and the M (1 to kMaxRows)
// rows of x [M, ldx]: x prepared once, threads claim chunks of W rows across
// all targets.
inline void MatMul(const float* x, size_t M, size_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  HWY_DASSERT(M >= 1 && M <= kMaxRows);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // AVX-512 VNNI: the same contract (Supports() included) on 512-bit vpdpbusd
  // (nvfp4_gemv_vnni.cc), for as many rows.
  static_assert(vnni::kMaxRows == kMaxRows);
  if (UseAvx512Vnni()) return vnni::Nvfp4MatMul(x, M, ldx, targets, pool);
#endif
  const size_t K = size_t(targets[0].w.cols);
  const size_t num_steps = (K + kStep - 1) / kStep;
  auto* steps = reinterpret_cast<PreparedStep*>(
      ThreadScratch(ScratchSlot::kMatMulX, M * num_steps * sizeof(PreparedStep) / sizeof(float)));
  for (size_t m = 0; m < M; ++m) Prepare(x + m * ldx, K, steps + m * num_steps);
  RowsOfTargets<X24>(M, steps, num_steps, targets, pool, 1.0f);
}

#else
inline constexpr bool kAvailable = false;
inline constexpr size_t kMaxRows = 0;
inline bool Supports(const MatrixView&) { return false; }
inline void MatMul(const float*, size_t, size_t, std::span<const MatMulTarget>, ThreadPool&) {
  HWY_ABORT("nvfp4_int::MatMul called on a target without it (check kAvailable)");
}
#endif

}  // namespace nvfp4_int
}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
