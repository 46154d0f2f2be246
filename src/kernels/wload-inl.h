// Loading weight rows into f32 vectors, one "step" of S = 2 * Lanes(DF)
// consecutive elements of K at a time, for every WeightFormat (ops.h). Shared
// by the decode kernel (matmul_gemv_hwy.cc, which multiplies the vectors in
// registers) and DequantizeRows (which stores them for the packed GEMM). A
// per-target header: included after foreach_target.h, re-read per target.
//
// A step yields two vectors (lo, hi), in an order per format (XOrder): for
// the "pairs" formats, in which one 32-bit lane, one 16-bit lane or one byte
// holds a pair of consecutive elements (BF16, NVFP4, FP8 by way of F16), lo
// holds the even elements k, k+2, ... and hi the odd ones; integer-decoded
// FP8 goes by blocks of two steps (LoadE4M3Quad); for the others (F32, F16)
// lo holds elements [k, k+L) and hi [k+L, k+2L). Callers either permute x to
// match (the GEMV) or re-interleave on store (DequantizeRows).
//
// Scales: NVFP4 block scales (E4M3, one per 16 elements) are applied here,
// per step, and FP8 128x128 block scales (f32) too for DequantRows (the GEMV
// scales block sums instead); the per-tensor factor is left to the caller,
// which applies kSumUnit (a power of two: FP8's decodes come scaled) and
// FmtGlobalScale (global_scale) once per dot product.

// Per-target include guard (Highway's convention).
#if defined(TERN_KERNELS_WLOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TERN_KERNELS_WLOAD_INL_H_
#undef TERN_KERNELS_WLOAD_INL_H_
#else
#define TERN_KERNELS_WLOAD_INL_H_
#endif

#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/dtype.h"
#include "hwy/highway.h"
#include "kernels/cpu_features.h"
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

// The storage formats the kernels are instantiated for. FP8 comes in two
// decodes (LoadE4M3Quad, LoadE4M3Pairs below), picked per CPU
// (UseFp8IntegerDecode, cpu_features.h): kFp8 / kFp8Block integer only,
// kFp8F16 / kFp8BlockF16 by way of F16 and VCVTPH2PS.
enum class Fmt { kF32, kBF16, kF16, kNvfp4, kFp8, kFp8Block, kFp8F16, kFp8BlockF16 };

inline Fmt FmtOf(const MatrixView& w) {
  switch (w.format) {
    case WeightFormat::kNvfp4:
      return Fmt::kNvfp4;
    case WeightFormat::kFp8:
      if (UseFp8IntegerDecode()) return w.scales != nullptr ? Fmt::kFp8Block : Fmt::kFp8;
      return w.scales != nullptr ? Fmt::kFp8BlockF16 : Fmt::kFp8F16;
    case WeightFormat::kDense:
      break;
  }
  return w.dtype == DType::kBF16 ? Fmt::kBF16 : w.dtype == DType::kF16 ? Fmt::kF16 : Fmt::kF32;
}

template <Fmt F>
constexpr bool kIsFp8 = F == Fmt::kFp8 || F == Fmt::kFp8Block || F == Fmt::kFp8F16 || F == Fmt::kFp8BlockF16;
template <Fmt F>
constexpr bool kIsFp8Block = F == Fmt::kFp8Block || F == Fmt::kFp8BlockF16;
template <Fmt F>
constexpr bool kIsQuantized = F == Fmt::kNvfp4 || kIsFp8<F>;
inline bool IsQuantized(Fmt f) { return f != Fmt::kF32 && f != Fmt::kBF16 && f != Fmt::kF16; }

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
    case Fmt::kFp8F16: return fn(std::integral_constant<Fmt, Fmt::kFp8F16>());
    case Fmt::kFp8BlockF16: return fn(std::integral_constant<Fmt, Fmt::kFp8BlockF16>());
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
  if constexpr (kIsFp8Block<F>) return k / size_t(kFp8Block) * sizeof(float);
  return 0;
}
// How a caller orders x to match a step's two W vectors (lo, hi), see the
// top of this file: kNatural (F32, F16: elements [k, k+L), [k+L, k+2L)),
// kPairs (BF16, NVFP4, FP8 by way of F16: even elements, odd elements),
// kQuads (integer-decoded FP8, see LoadE4M3Quad: blocks of 2 steps, 4L
// elements).
enum class XOrder { kNatural, kPairs, kQuads };
template <Fmt F>
constexpr XOrder kXOrder = F == Fmt::kFp8 || F == Fmt::kFp8Block                                     ? XOrder::kQuads
                           : F == Fmt::kBF16 || F == Fmt::kNvfp4 || F == Fmt::kFp8F16 || F == Fmt::kFp8BlockF16 ? XOrder::kPairs
                                                                                                      : XOrder::kNatural;

// FP8's units. LoadE4M3Quad: a decoded per-tensor FP8 element is the E4M3
// value times kFp8WUnit, and x is prepared times kFp8XUnit, so a sum of
// their products is the plain sum times 2^-56; the caller multiplies it by
// kSumUnit (exactly: a power of two) before the global scale. Block FP8
// sums each 128-column block that way, multiplies the sum by kSumUnit, then
// by its block scale (the GEMV's Tile), so its sums are plain. (x times
// 2^64 overflows only past |x| = 2^64; products underflow to subnormals
// only below 2^-70 in plain units.) LoadE4M3Pairs: the value times
// kFp8F16Unit, x plain, sums times 2^8.
inline constexpr float kFp8WUnit = 0x1p-120f;
inline constexpr float kFp8XUnit = 0x1p64f;
inline constexpr float kFp8F16Unit = 0x1p-8f;
template <Fmt F>
constexpr float kXUnit = kXOrder<F> == XOrder::kQuads ? kFp8XUnit : 1.0f;
template <Fmt F>
constexpr float kSumUnit = F == Fmt::kFp8 ? 0x1p56f : F == Fmt::kFp8F16 ? 0x1p8f : 1.0f;
// The factor a caller multiplies its sums of WLoad<F>::Load's values by,
// after kSumUnit: W's global scale.
template <Fmt F>
HWY_INLINE float FmtGlobalScale(const MatrixView& w) {
  return w.global_scale;  // (the same for every format now that kSumUnit carries FP8's units)
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
// The bits alone, as f32: the values times 2^-120 (decode attention takes
// them so, with q and p scaled instead; attention_decode_hwy.cc).
HWY_INLINE VF E4M3Bits(const uint8_t* p) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const auto b = hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, DF>(), reinterpret_cast<const int8_t*>(p)));
  return hn::BitCast(df, hn::And(hn::ShiftLeft<20>(b), hn::Set(di, int32_t(0x87F00000u))));
}
HWY_INLINE VF E4M3Load(const uint8_t* p, VF scale) { return hn::Mul(E4M3Bits(p), scale); }
#endif

// FP8 weights: E4M3 bytes in blocks of Q = 4 * Lanes(DF), two steps each.
// Lane i of a block's 32-bit lanes holds elements 4i .. 4i+3 (bytes 0-3);
// step A (k a multiple of Q) yields lo = elements 4i, hi = 4i+2, step B
// (k + S) lo = 4i+1, hi = 4i+3, each times kFp8WUnit, and x is prepared in
// that order (XOrder::kQuads). E4M3 bits s.eeee.mmm become F32's
// s.0000eeee.mmm0... (exponent bias 127 against 7: the value times 2^-120;
// E4M3's subnormals land on F32's, exactly) with 16-bit shifts: an
// arithmetic >> 4 of a 16-bit lane puts its high byte's bits where F32
// wants them, sign copies above, and the low byte's high nibble below, both
// cleared by one AND with 0x87F00000; the high 16-bit lane is then a whole
// F32 and the low one is, after a 32-bit << 16. Step A first moves the low
// bytes up (16-bit << 8): 3 shifts and 2 ANDs, step B 2 shifts and 2 ANDs,
// for 2 vectors (integer ops only). Against the F16 route (LoadE4M3Pairs:
// 16-bit shifts into F16's bits, then VCVTPH2PS, 5 integer ops and 2
// conversions for 2 vectors), see the kernels README. Needs MXCSR.DAZ off
// (UseFp8IntegerDecode checks it): with it on, the subnormal codes read 0.
// Exact for every finite code; the NaN codes 0x7f/0xff (refused at load,
// model/weight_check.cc) come out finite here and as NaN on the SCALAR
// target.
#if HWY_TARGET != HWY_SCALAR
// Bytes kStep and kStep + 2 of each 32-bit lane of `units` (E4M3 codes) as
// f32 bits, the values times kFp8WUnit: lo from byte kStep, hi from kStep + 2.
// Shared with the panel packer of the GEMM and prefill attention
// (gemm_tile-inl.h StoreUnits).
template <int kStep>
HWY_INLINE void E4M3UnitBytes(hn::Vec<DU> units, VF& lo, VF& hi) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Repartition<int16_t, DF> d16;
  const auto u = hn::BitCast(d16, units);
  const auto t = hn::BitCast(di, kStep == 0 ? hn::ShiftRight<4>(hn::ShiftLeft<8>(u)) : hn::ShiftRight<4>(u));
  const auto mask = hn::Set(di, int32_t(0x87F00000u));
  lo = hn::BitCast(df, hn::And(hn::ShiftLeft<16>(t), mask));
  hi = hn::BitCast(df, hn::And(t, mask));
}
#endif

template <int kStep>  // 0: step A, 1: step B; `block` points at the block
HWY_INLINE void LoadE4M3Quad(const uint8_t* block, VF& lo, VF& hi) {
#if HWY_TARGET == HWY_SCALAR  // L = 1: a block is 4 elements
  const DF df;
  const float* e4m3 = E4M3Values();
  lo = hn::Set(df, e4m3[block[kStep]] * kFp8WUnit);
  hi = hn::Set(df, e4m3[block[kStep + 2]] * kFp8WUnit);
#else
  E4M3UnitBytes<kStep>(hn::BitCast(DU(), hn::LoadU(hn::Repartition<uint8_t, DF>(), block)), lo, hi);
#endif
}

// FP8's loader takes the step as a template argument, and k as the block's
// start (the GEMV's tile calls both steps of a block in turn). Per-tensor
// only: block FP8 sums each 128-column block with it and scales the sum
// (matmul_gemv_hwy.cc Tile).
template <>
struct WLoad<Fmt::kFp8> {
  template <int kStep>
  static HWY_INLINE void LoadStep(const uint8_t* row, const uint8_t*, size_t kb, VF& lo, VF& hi) {
    LoadE4M3Quad<kStep>(row + kb, lo, hi);
  }
};

// FP8 by way of F16, for CPUs that take a subnormal FMA operand as a
// microcode assist (Intel documents it; LoadE4M3Quad's subnormal codes are
// such operands): a step of S = 2 * Lanes(DF) E4M3 bytes, interleaved as
// BF16 is (lo: elements k, k+2, ..., hi: k+1, k+3, ...), each times
// kFp8F16Unit. A 16-bit lane holds elements 2i (low byte) and 2i+1 (high
// byte), and E4M3 bits s.eeee.mmm shifted into F16's s.0eeee.mmm (exponent
// bias 15 against 7, so the value times 2^-8; E4M3's subnormals land on
// F16's, which VCVTPH2PS converts exactly) are two shifts and an AND for the
// even elements, one shift and an AND for the odd ones, then VCVTPH2PS.
// Exact for every finite code; the NaN codes come out as +-480 here and as
// NaN on the SCALAR target.
HWY_INLINE void LoadE4M3Pairs(const uint8_t* p, VF& lo, VF& hi) {
  const DF df;
#if HWY_TARGET == HWY_SCALAR
  const float* e4m3 = E4M3Values();
  lo = hn::Set(df, e4m3[p[0]] * kFp8F16Unit);
  hi = hn::Set(df, e4m3[p[1]] * kFp8F16Unit);
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

// Block FP8 (DequantRows; the GEMV scales block sums instead): s * 2^8
// times a value * 2^-8 is the product s * value, rounded once as a plain
// multiply.
template <bool kBlockScale>
struct WLoadFp8F16 {
  static HWY_INLINE void Load(const uint8_t* row, const uint8_t* srow, size_t k, VF& lo, VF& hi) {
    LoadE4M3Pairs(row + k, lo, hi);
    if constexpr (kBlockScale) {
      float s;
      std::memcpy(&s, srow + ScaleBytes<Fmt::kFp8Block>(k), sizeof(float));
      const VF scale = hn::Set(DF(), s * (1.0f / kFp8F16Unit));
      lo = hn::Mul(lo, scale);
      hi = hn::Mul(hi, scale);
    }
  }
};
template <>
struct WLoad<Fmt::kFp8F16> : WLoadFp8F16<false> {};
template <>
struct WLoad<Fmt::kFp8BlockF16> : WLoadFp8F16<true> {};

// Start of row n's scales (bytes), or null for formats without block scales.
template <Fmt F>
HWY_INLINE const uint8_t* ScaleRow(const MatrixView& w, size_t n) {
  const auto* s = static_cast<const uint8_t*>(w.scales);
  if constexpr (F == Fmt::kNvfp4) return s + n * size_t(w.scale_stride);
  if constexpr (kIsFp8Block<F>) return s + n / size_t(kFp8Block) * size_t(w.scale_stride) * sizeof(float);
  return nullptr;
}

// out[r * ldo + k - k0] = W[n0 + r, k] for r < rows, k in [k0, k1), exact
// (ops.h DequantizeRows).
template <Fmt F>
void DequantRows(const MatrixView& w, size_t n0, size_t rows, size_t k0, size_t k1, float* HWY_RESTRICT out,
                 size_t ldo) {
  // FP8: the same values by way of F16 pairs, whatever the GEMV's decode
  // (16 rows of BM_Gemv<FP8> on AVX2, through this dequantized chunk: the
  // quads' 4-way interleaving store made it 1.12-1.2x slower).
  if constexpr (F == Fmt::kFp8) {
    return DequantRows<Fmt::kFp8F16>(w, n0, rows, k0, k1, out, ldo);
  } else if constexpr (F == Fmt::kFp8Block) {
    return DequantRows<Fmt::kFp8BlockF16>(w, n0, rows, k0, k1, out, ldo);
  } else {
    const DF df;
    const size_t L = hn::Lanes(df), S = 2 * L;
    const auto* base = static_cast<const uint8_t*>(w.data);
    // kSumUnit is a power of two: exact, and so is its product with g
    // unless it overflows (then two multiplies).
    const float unit_g = kSumUnit<F> * FmtGlobalScale<F>(w);
    const bool one_mul = std::isfinite(unit_g);
    const VF unit = hn::Set(df, kSumUnit<F>), ug = hn::Set(df, unit_g), g = hn::Set(df, FmtGlobalScale<F>(w));
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
        lo = one_mul ? hn::Mul(lo, ug) : hn::Mul(hn::Mul(lo, unit), g);
        hi = one_mul ? hn::Mul(hi, ug) : hn::Mul(hn::Mul(hi, unit), g);
        if constexpr (kXOrder<F> == XOrder::kPairs) {
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
}

}  // namespace wload
}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
