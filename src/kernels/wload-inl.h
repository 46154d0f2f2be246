// Loading weight rows into f32 vectors, one "step" of S = 2 * Lanes(DF)
// consecutive elements of K at a time, for every WeightFormat (ops.h). Shared
// by the decode kernel (matmul_gemv_hwy.cc, which multiplies the vectors in
// registers) and DequantizeRows (which stores them for the packed GEMM). A
// per-target header: included after foreach_target.h, re-read per target.
//
// A step yields two vectors (lo, hi). For the "interleaved" formats, in which
// one 32-bit lane, one 16-bit lane or one byte holds a pair of consecutive
// elements (BF16, FP8, NVFP4), lo holds the even elements k, k+2, ... and hi
// the odd ones; for the others (F32, F16) lo holds elements [k, k+L) and hi
// [k+L, k+2L). Callers either permute x to match (the GEMV) or re-interleave
// on store (DequantizeRows).
//
// Scales: NVFP4 block scales (E4M3, one per 16 elements) and FP8 128x128
// block scales (f32) are applied here, per step; the per-tensor factor is
// left to the caller, which applies FmtGlobalScale (global_scale, times 2^8
// for per-tensor FP8) once per dot product.

// Per-target include guard (Highway's convention).
#if defined(TERN_KERNELS_WLOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TERN_KERNELS_WLOAD_INL_H_
#undef TERN_KERNELS_WLOAD_INL_H_
#else
#define TERN_KERNELS_WLOAD_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include "base/dtype.h"
#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/reference.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace wload {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;

// The storage formats the kernels are instantiated for.
enum class Fmt { kF32, kBF16, kF16, kNvfp4, kFp8, kFp8Block };

inline Fmt FmtOf(const MatrixView& w) {
  switch (w.format) {
    case WeightFormat::kNvfp4:
      return Fmt::kNvfp4;
    case WeightFormat::kFp8:
      return w.scales != nullptr ? Fmt::kFp8Block : Fmt::kFp8;
    case WeightFormat::kDense:
      break;
  }
  return w.dtype == DType::kBF16 ? Fmt::kBF16 : w.dtype == DType::kF16 ? Fmt::kF16 : Fmt::kF32;
}

// Calls fn(std::integral_constant<Fmt, F>()) for w's format F: the one place
// that turns the run-time format into a template argument.
template <class Fn>
HWY_INLINE void VisitFmt(Fmt f, Fn&& fn) {
  switch (f) {
    case Fmt::kF32: return fn(std::integral_constant<Fmt, Fmt::kF32>());
    case Fmt::kBF16: return fn(std::integral_constant<Fmt, Fmt::kBF16>());
    case Fmt::kF16: return fn(std::integral_constant<Fmt, Fmt::kF16>());
    case Fmt::kNvfp4: return fn(std::integral_constant<Fmt, Fmt::kNvfp4>());
    case Fmt::kFp8: return fn(std::integral_constant<Fmt, Fmt::kFp8>());
    case Fmt::kFp8Block: return fn(std::integral_constant<Fmt, Fmt::kFp8Block>());
  }
}


template <Fmt F>
struct WLoad;

// Shared pieces of a format: bytes of W per element (as a fraction) and of
// the scale row per element.
template <Fmt F>
constexpr size_t RowBytes(size_t elements) {
  if constexpr (F == Fmt::kF32) return elements * 4;
  if constexpr (F == Fmt::kBF16 || F == Fmt::kF16) return elements * 2;
  if constexpr (F == Fmt::kNvfp4) return elements / 2;
  return elements;  // FP8
}
// Byte offset into the scale row of element k's scale.
template <Fmt F>
constexpr size_t ScaleBytes(size_t k) {
  if constexpr (F == Fmt::kNvfp4) return k / size_t(kNvfp4Block);
  if constexpr (F == Fmt::kFp8Block) return k / size_t(kFp8Block) * sizeof(float);
  return 0;
}
template <Fmt F>
constexpr bool kInterleaved = F == Fmt::kBF16 || F == Fmt::kNvfp4 || F == Fmt::kFp8 || F == Fmt::kFp8Block;
// FP8 steps come as the values times kFp8Unit (LoadE4M3Pairs below).
inline constexpr float kFp8Unit = 0x1p-8f;
// The factor a caller multiplies its sums of WLoad<F>::Load's values by: W's
// global scale, times 2^8 for per-tensor FP8 (block FP8 takes it back with
// its block scale).
template <Fmt F>
HWY_INLINE float FmtGlobalScale(const MatrixView& w) {
  return F == Fmt::kFp8 ? w.global_scale * (1.0f / kFp8Unit) : w.global_scale;
}

template <>
struct WLoad<Fmt::kBF16> {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t*, size_t k, VF& lo, VF& hi) {
    const DF df;
#if HWY_TARGET == HWY_SCALAR  // one lane cannot hold a pair of bf16
    uint16_t pair[2];
    std::memcpy(pair, row + k * 2, 4);
    lo = hn::Set(df, Bf16ToF32(pair[0]));
    hi = hn::Set(df, Bf16ToF32(pair[1]));
#else
    const hn::RebindToUnsigned<DF> du32;
    const hn::Repartition<uint16_t, DF> du16;
    const auto u = hn::BitCast(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(row) + k));
    lo = hn::BitCast(df, hn::ShiftLeft<16>(u));                    // elements 2i
    hi = hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));  // elements 2i + 1
#endif
  }
};

template <>
struct WLoad<Fmt::kF16> {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t*, size_t k, VF& lo, VF& hi) {
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* p = reinterpret_cast<const hwy::float16_t*>(row) + k;
    lo = hn::PromoteTo(df, hn::LoadU(dh, p));
    hi = hn::PromoteTo(df, hn::LoadU(dh, p + hn::Lanes(df)));
  }
};

template <>
struct WLoad<Fmt::kF32> {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t*, size_t k, VF& lo, VF& hi) {
    const DF df;
    const float* p = reinterpret_cast<const float*>(row) + k;
    lo = hn::LoadU(df, p);
    hi = hn::LoadU(df, p + hn::Lanes(df));
  }
};

// NVFP4: a step is S/2 bytes, byte i holding elements k+2i (low nibble) and
// k+2i+1 (high nibble); S is 16 (AVX2: one block scale), 32 (AVX-512: two,
// lanes 0-7 and 8-15) or 2 (SCALAR).
//
// Codes: the E2M1 values of a step, without the block scale. On AVX2, vpermps
// reads only the low 3 bits of each index, so the codes need no masking, and
// the sign comes from one XOR with code << 28 against a table pre-XORed with
// m << 28 (entry m holds bits(value(m)) ^ (m << 28)): for code c = s*8 + m the
// result is bits(value(m)) ^ (s << 31).
alignas(32) inline constexpr uint32_t kE2M1XorTable[8] = {0x00000000u, 0x2F000000u, 0x1F800000u, 0x0FC00000u,
                                                          0x00000000u, 0x10400000u, 0x20800000u, 0x30C00000u};

template <>
struct WLoad<Fmt::kNvfp4> {
  static HWY_INLINE void Codes(const uint8_t* row, size_t k, VF& lo, VF& hi) {
    const DF df;
    const uint8_t* bytes = row + k / 2;
#if HWY_TARGET == HWY_SCALAR
    lo = hn::Set(df, kE2M1Values[bytes[0] & 0xf]);
    hi = hn::Set(df, kE2M1Values[bytes[0] >> 4]);
#else
    const DU du;
    const hn::Rebind<uint8_t, DF> d8;
    const auto b = hn::PromoteTo(du, hn::LoadU(d8, bytes));  // one byte per lane
    const auto h = hn::ShiftRight<4>(b);
#if HWY_TARGET == HWY_AVX2
    const __m256 table = _mm256_load_ps(reinterpret_cast<const float*>(kE2M1XorTable));
    lo = hn::Xor(VF{_mm256_permutevar8x32_ps(table, b.raw)}, hn::BitCast(df, hn::ShiftLeft<28>(b)));
    hi = hn::Xor(VF{_mm256_permutevar8x32_ps(table, h.raw)}, hn::BitCast(df, hn::ShiftLeft<28>(h)));
#else
    const hn::RebindToSigned<DF> di;
    const size_t L = hn::Lanes(df);
    const auto code_lo = hn::And(b, hn::Set(du, 0xfu));
    if (L >= 16) {  // AVX-512: the signed 16-entry table by the 4-bit code
      const VF table = hn::LoadU(df, kE2M1Values);
      lo = hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::BitCast(di, code_lo)));
      hi = hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::BitCast(di, h)));
    } else {
      HWY_ALIGN float m[HWY_MAX_BYTES / sizeof(float)];
      HWY_ALIGN uint32_t cl[HWY_MAX_BYTES / sizeof(float)], ch[HWY_MAX_BYTES / sizeof(float)];
      hn::Store(code_lo, du, cl);
      hn::Store(h, du, ch);
      for (size_t i = 0; i < L; ++i) m[i] = kE2M1Values[cl[i]];
      lo = hn::Load(df, m);
      for (size_t i = 0; i < L; ++i) m[i] = kE2M1Values[ch[i]];
      hi = hn::Load(df, m);
    }
#endif
#endif
  }

  // The block scale of each lane of a step starting at k.
  static HWY_INLINE VF Scale(const uint8_t* srow, size_t k) {
    const DF df;
    const float* e4m3 = E4M3Values();
    const uint8_t* scales = srow + k / size_t(kNvfp4Block);
    if (hn::Lanes(df) >= 16) {
      HWY_ALIGN float s[HWY_MAX_BYTES / sizeof(float)];
      for (size_t i = 0; i < hn::Lanes(df); ++i) s[i] = e4m3[scales[i / 8]];
      return hn::Load(df, s);
    }
    return hn::Set(df, e4m3[scales[0]]);
  }

  static HWY_INLINE void Load(const uint8_t* row, const uint8_t* srow, size_t k, VF& lo, VF& hi) {
    Codes(row, k, lo, hi);
    const VF s = Scale(srow, k);
    lo = hn::Mul(lo, s);
    hi = hn::Mul(hi, s);
  }
};

// Lanes(DF) E4M3 bytes at p -> f32, times `scale`. Each byte is sign-extended
// into its lane, so `<< 20` puts the exponent and mantissa bits where an
// f32's low exponent and mantissa bits are, and the sign in bit 31 (with
// copies in bits 27-30, masked off); times 2^(127 - 7) that is the value,
// subnormals included: four instructions per vector.
// (The NaN codes 0x7f/0xff decode as +-480: checkpoints do not hold them.)
inline constexpr float kE4M3Unit = 0x1p120f;  // the `scale` that gives plain E4M3 values
#if HWY_TARGET != HWY_SCALAR
HWY_INLINE VF E4M3Load(const uint8_t* p, VF scale) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const auto b = hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, DF>(), reinterpret_cast<const int8_t*>(p)));
  const auto bits = hn::And(hn::ShiftLeft<20>(b), hn::Set(di, int32_t(0x87F00000u)));
  return hn::Mul(hn::BitCast(df, bits), scale);
}
#endif

// FP8 weights, a step of S = 2 * Lanes(DF) E4M3 bytes, interleaved as BF16
// is: lo holds elements k, k+2, ..., hi k+1, k+3, ..., each times 2^-8
// (kFp8Unit), by way of F16: a 16-bit lane holds elements 2i (low byte) and
// 2i+1 (high byte), and E4M3 bits s.eeee.mmm shifted into F16's s.0eeee.mmm
// (exponent bias 15 against 7, so the value times 2^-8; E4M3's subnormals
// land on F16's, which the hardware converts exactly) are two shifts and an
// AND for the even elements, one shift and an AND for the odd ones, then
// VCVTPH2PS. Against E4M3Load (sign-extension, a shift, an AND and a multiply
// per vector), one-row decode with W in L2 ran 2.3x the weights per cycle
// (AMD Zen 5, AVX-512; E4M3Load's cross-lane sign-extension and multiply
// were its cost). Exact for every finite code; the NaN codes 0x7f/0xff
// (refused at load, model/weight_check.cc) come out as +-480 here and as NaN
// on the SCALAR target.
HWY_INLINE void LoadE4M3Pairs(const uint8_t* p, VF& lo, VF& hi) {
  const DF df;
#if HWY_TARGET == HWY_SCALAR
  const float* e4m3 = E4M3Values();
  lo = hn::Set(df, e4m3[p[0]] * kFp8Unit);
  hi = hn::Set(df, e4m3[p[1]] * kFp8Unit);
#else
  const hn::Rebind<int16_t, DF> d16;  // Lanes(DF) pairs of bytes
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto pairs = hn::LoadU(d16, reinterpret_cast<const int16_t*>(p));
  const auto mask = hn::Set(d16, int16_t(0xBF80));  // F16's sign, exponent and top 3 mantissa bits, but bit 14
  const auto even = hn::And(hn::ShiftRight<1>(hn::ShiftLeft<8>(pairs)), mask);  // arithmetic: sign into bit 14
  const auto odd = hn::And(hn::ShiftRight<1>(pairs), mask);
  lo = hn::PromoteTo(df, hn::BitCast(dh, even));
  hi = hn::PromoteTo(df, hn::BitCast(dh, odd));
#endif
}

// kFp8 steps hold the values times kFp8Unit (the caller folds 2^8 into the
// global scale, FmtGlobalScale); kFp8Block's block scale takes the factor
// back (s * 2^8 times a value * 2^-8 is the product s * value, rounded once,
// exactly as a plain multiply).
template <bool kBlockScale>
HWY_INLINE void LoadFp8(const uint8_t* row, const uint8_t* srow, size_t k, VF& lo, VF& hi) {
  LoadE4M3Pairs(row + k, lo, hi);
  if constexpr (kBlockScale) {
    float s;
    std::memcpy(&s, srow + ScaleBytes<Fmt::kFp8Block>(k), sizeof(float));
    const VF scale = hn::Set(DF(), s * (1.0f / kFp8Unit));
    lo = hn::Mul(lo, scale);
    hi = hn::Mul(hi, scale);
  }
}

template <>
struct WLoad<Fmt::kFp8> {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t* srow, size_t k, VF& lo, VF& hi) {
    LoadFp8<false>(row, srow, k, lo, hi);
  }
};

template <>
struct WLoad<Fmt::kFp8Block> {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t* srow, size_t k, VF& lo, VF& hi) {
    LoadFp8<true>(row, srow, k, lo, hi);
  }
};

// Start of row n's scales (bytes), or null for formats without block scales.
template <Fmt F>
HWY_INLINE const uint8_t* ScaleRow(const MatrixView& w, size_t n) {
  const auto* s = static_cast<const uint8_t*>(w.scales);
  if constexpr (F == Fmt::kNvfp4) return s + n * size_t(w.scale_stride);
  if constexpr (F == Fmt::kFp8Block) return s + n / size_t(kFp8Block) * size_t(w.scale_stride) * sizeof(float);
  return nullptr;
}

// out[r * ldo + k - k0] = W[n0 + r, k] for r < rows, k in [k0, k1), exact
// (ops.h DequantizeRows).
template <Fmt F>
void DequantRows(const MatrixView& w, size_t n0, size_t rows, size_t k0, size_t k1, float* HWY_RESTRICT out,
                 size_t ldo) {
  const DF df;
  const size_t L = hn::Lanes(df), S = 2 * L;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const VF g = hn::Set(df, FmtGlobalScale<F>(w));
  for (size_t r = 0; r < rows; ++r) {
    const size_t n = n0 + r;
    const uint8_t* row = base + RowBytes<F>(n * size_t(w.row_stride));
    const uint8_t* srow = ScaleRow<F>(w, n);
    float* o = out + r * ldo - k0;
    size_t k = k0;
    // Whole steps start at multiples of S, which divides both block sizes.
    for (; k < k1 && k % S != 0; ++k) o[k] = ref::MatrixAt(w, int64_t(n), int64_t(k));
    for (; k + S <= k1; k += S) {
      VF lo, hi;
      WLoad<F>::Load(row, srow, k, lo, hi);
      lo = hn::Mul(lo, g);
      hi = hn::Mul(hi, g);
      if constexpr (kInterleaved<F>) {
#if HWY_TARGET == HWY_SCALAR
        o[k] = hn::GetLane(lo);
        o[k + 1] = hn::GetLane(hi);
#else
        hn::StoreInterleaved2(lo, hi, df, o + k);
#endif
      } else {
        hn::StoreU(lo, df, o + k);
        hn::StoreU(hi, df, o + k + L);
      }
    }
    for (; k < k1; ++k) o[k] = ref::MatrixAt(w, int64_t(n), int64_t(k));
  }
}

}  // namespace wload
}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
