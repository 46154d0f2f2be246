// The register-blocked GEMM tile shared by MatMul (matmul_gemm_hwy.cc) and
// prefill attention (attention_prefill_hwy.cc): W panel packing, x packing and the
// micro-kernel. A per-target header: included after foreach_target.h and
// re-read once per target.
//
// Layouts
//   panel: NW = kNV vectors of columns, k-major: panel[k * stride + j], f32.
//   xs:    a row tile of kMR rows, k-major: xs[k * kMR + i], f32.
// Register budget of the micro-kernel: MR*kNV accumulators + kNV panel
// vectors + 1 broadcast (AVX2: 6*2 + 2 + 1 = 15 of 16; AVX-512: 8*3 + 3 + 1
// = 28 of 32).

// Per-target include guard (Highway's convention).
#if defined(TERN_KERNELS_GEMM_TILE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TERN_KERNELS_GEMM_TILE_INL_H_
#undef TERN_KERNELS_GEMM_TILE_INL_H_
#else
#define TERN_KERNELS_GEMM_TILE_INL_H_
#endif

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/wload-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace gemm {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kMR = 8, kNV = 3;
#elif HWY_TARGET == HWY_SCALAR
constexpr int kMR = 4, kNV = 4;
#else
constexpr int kMR = 6, kNV = 2;
#endif

inline size_t PanelWidth() { return kNV * hn::Lanes(DF()); }

#if HWY_TARGET != HWY_SCALAR  // (SCALAR packs with the scalar loop only)
// Loads 16 bytes from each of `blocks` (one pointer per 128-bit block of a
// vector) into one vector of u32: block b of the result comes from blocks[b].
HWY_INLINE hn::Vec<DU> LoadBlocks(const uint8_t* const* blocks) {
  const DU du;
  const hn::Full128<uint32_t> d128;
  const auto load = [&](int b) { return hn::LoadU(d128, reinterpret_cast<const uint32_t*>(blocks[b])); };
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::Full256<uint32_t> d256;
  return hn::Combine(du, hn::Combine(d256, load(3), load(2)), hn::Combine(d256, load(1), load(0)));
#elif HWY_TARGET == HWY_AVX2
  return hn::Combine(du, load(1), load(0));
#else
  static_assert(HWY_MAX_BYTES == 16, "one block per vector");
  return load(0);
#endif
}
#endif  // HWY_TARGET != HWY_SCALAR

// Stores the f32 values of a vector of 32-bit units (a pair of 16-bit values,
// one f32, or four E4M3 bytes) as panel rows: a unit's first element goes to
// out, its second (third, fourth) to out + NW (+ 2 NW, + 3 NW).
template <DType kDT>
HWY_INLINE void StoreUnits(hn::Vec<DU> units, float* HWY_RESTRICT out, size_t NW) {
  const DF df;
  const DU du;
  const DI di;
  if constexpr (kDT == DType::kF32) {
    hn::Store(hn::BitCast(df, units), df, out);
  } else if constexpr (kDT == DType::kF8E4M3) {
#if HWY_TARGET != HWY_SCALAR  // (SCALAR packs with the scalar loop only)
    // The E4M3 bits as f32 (wload::E4M3UnitBytes: the values times 2^-120,
    // subnormals included), then times 2^120, exactly. (The NaN codes come
    // out as +-480, as decode attention's wload::E4M3Bits reads them: a cache
    // holds them only where k or v was NaN already.)
    VF e[4];
    wload::E4M3UnitBytes<0>(units, e[0], e[2]);
    wload::E4M3UnitBytes<1>(units, e[1], e[3]);
    const VF unit = hn::Set(df, 1.0f / wload::kFp8WUnit);
    for (int i = 0; i < 4; ++i) hn::Store(hn::Mul(e[i], unit), df, out + size_t(i) * NW);
#endif
  } else if constexpr (kDT == DType::kBF16) {
    hn::Store(hn::BitCast(df, hn::ShiftLeft<16>(units)), df, out);
    hn::Store(hn::BitCast(df, hn::And(units, hn::Set(du, 0xFFFF0000u))), df, out + NW);
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto lo = hn::BitCast(di, hn::And(units, hn::Set(du, 0xFFFFu)));
    const auto hi = hn::BitCast(di, hn::ShiftRight<16>(units));
    hn::Store(hn::PromoteTo(df, hn::BitCast(dh, hn::DemoteTo(du16, lo))), df, out);
    hn::Store(hn::PromoteTo(df, hn::BitCast(dh, hn::DemoteTo(du16, hi))), df, out + NW);
  }
}

// Element k of a row in dtype kDT, as f32.
template <DType kDT>
HWY_INLINE float ElementAsF32(const uint8_t* row, size_t k) {
  if constexpr (kDT == DType::kF8E4M3) {
    return E4M3ToF32(row[k]);
  } else if constexpr (kDT == DType::kF32) {
    float f;
    std::memcpy(&f, row + 4 * k, 4);
    return f;
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, 2);
    return kDT == DType::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
  }
}

// Packs NW rows (rows[j] points at element 0 of row j, in dtype kDT) over
// columns [k0, k1) into panel[(k - k0) * NW + j] as f32. When next_rows is
// not null, also prefetches next_rows[j] from column next_k0 on, as far as
// this call reads (the caller passes what it packs next, so that W, usually
// coming from memory, arrives before it is needed).
//
// The transpose works on 32-bit units (a pair of bf16/f16 columns, or one f32
// column): 16 bytes = 4 units from each of 4 rows per 128-bit block, then a
// 4x4 transpose inside every block (two rounds of interleaves) leaves vector q
// holding unit q of L consecutive rows, in order.
template <DType kDT>
void PackPanel(const uint8_t* const* rows, size_t k0, size_t k1, float* HWY_RESTRICT panel,
               const uint8_t* const* next_rows = nullptr, size_t next_k0 = 0) {
  const size_t NW = PanelWidth();

  size_t k = k0;
#if HWY_TARGET != HWY_SCALAR
  const DU du;
  const hn::Repartition<uint64_t, DF> du64;
  const size_t L = hn::Lanes(DF()), blocks = L / 4;
  constexpr size_t kUnitCols = kDT == DType::kF32 ? 1 : kDT == DType::kF8E4M3 ? 4 : 2;  // columns per 32-bit unit
  for (; k + 4 * kUnitCols <= k1; k += 4 * kUnitCols) {
    const size_t byte = k * DTypeSize(kDT);
    float* out = panel + (k - k0) * NW;
    if (next_rows != nullptr && byte % 64 == 0) {
      const size_t next_byte = (next_k0 + k - k0) * DTypeSize(kDT);
      for (size_t j = 0; j < NW; ++j) hwy::Prefetch(next_rows[j] + next_byte);
    }
    for (int v = 0; v < kNV; ++v) {
      // a[r], block b: 4 units of row v*L + 4b + r.
      hn::Vec<DU> a[4];
      for (size_t r = 0; r < 4; ++r) {
        const uint8_t* src[4];
        for (size_t b = 0; b < blocks; ++b) src[b] = rows[v * L + 4 * b + r] + byte;
        a[r] = LoadBlocks(src);
      }
      const auto t0 = hn::BitCast(du64, hn::InterleaveLower(du, a[0], a[1]));  // r0u0 r1u0 r0u1 r1u1
      const auto t1 = hn::BitCast(du64, hn::InterleaveLower(du, a[2], a[3]));  // r2u0 r3u0 r2u1 r3u1
      const auto t2 = hn::BitCast(du64, hn::InterleaveUpper(du, a[0], a[1]));  // r0u2 r1u2 r0u3 r1u3
      const auto t3 = hn::BitCast(du64, hn::InterleaveUpper(du, a[2], a[3]));  // r2u2 r3u2 r2u3 r3u3
      float* o = out + v * L;
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveLower(du64, t0, t1)), o, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveUpper(du64, t0, t1)), o + kUnitCols * NW, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveLower(du64, t2, t3)), o + 2 * kUnitCols * NW, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveUpper(du64, t2, t3)), o + 3 * kUnitCols * NW, NW);
    }
  }
#endif
  for (; k < k1; ++k) {  // the last few columns (or all, on SCALAR)
    for (size_t j = 0; j < NW; ++j) panel[(k - k0) * NW + j] = ElementAsF32<kDT>(rows[j], k);
  }
}

// y tile (MR x cols_valid, at y with stride ldy) = or += the sum over k < kc
// of xs[k * kMR + i] * panel[k * panel_stride + j]: xs is a packed sliver of
// x (kMR rows interleaved per k), panel NW columns of a k-major matrix (a
// packed W panel, or V rows in attention). panel and panel_stride keep
// vector alignment.
template <int MR>
HWY_NOINLINE void MicroKernel(const float* HWY_RESTRICT xs, const float* HWY_RESTRICT panel, size_t panel_stride,
                              size_t kc, float* y, size_t ldy, size_t cols_valid, bool accumulate) {
  const DF df;
  const size_t L = hn::Lanes(df), NW = PanelWidth();
  VF acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = hn::Zero(df);
  // The y tile is read back at the end; fetch it now, behind the FMAs.
  if (accumulate) {
    for (int i = 0; i < MR; ++i) {
      hwy::Prefetch(y + i * ldy);
      hwy::Prefetch(y + i * ldy + NW - 1);
    }
  }

  for (size_t k = 0; k < kc; ++k) {
    VF b[kNV];
    HWY_UNROLL(8)
    for (int v = 0; v < kNV; ++v) b[v] = hn::Load(df, panel + k * panel_stride + v * L);
    HWY_UNROLL(8)
    for (int i = 0; i < MR; ++i) {
      const VF a = hn::Set(df, xs[k * kMR + i]);
      HWY_UNROLL(8)
      for (int v = 0; v < kNV; ++v) acc[i][v] = hn::MulAdd(a, b[v], acc[i][v]);
    }
  }

  for (int i = 0; i < MR; ++i) {
    float* yi = y + i * ldy;
    if (cols_valid == NW) {
      for (int v = 0; v < kNV; ++v) {
        VF r = acc[i][v];
        if (accumulate) r = hn::Add(r, hn::LoadU(df, yi + v * L));
        hn::StoreU(r, df, yi + v * L);
      }
    } else {
      HWY_ALIGN float tile[kNV * HWY_MAX_BYTES / sizeof(float)] = {};
      for (int v = 0; v < kNV; ++v) hn::Store(acc[i][v], df, tile + v * L);
      for (size_t j = 0; j < cols_valid; ++j) yi[j] = accumulate ? yi[j] + tile[j] : tile[j];
    }
  }
}

// MicroKernel<mr> for a run-time mr in [1, kMR] (the last, partial row tile).
template <int MR = kMR>
void MicroKernelFor(size_t mr, const float* xs, const float* panel, size_t panel_stride, size_t kc, float* y,
                    size_t ldy, size_t cols_valid, bool accumulate) {
  if constexpr (MR >= 1) {
    if (mr == MR) return MicroKernel<MR>(xs, panel, panel_stride, kc, y, ldy, cols_valid, accumulate);
    if constexpr (MR > 1) MicroKernelFor<MR - 1>(mr, xs, panel, panel_stride, kc, y, ldy, cols_valid, accumulate);
  }
}

// Packs row tiles [t0, t1) of x: xs[t * K * kMR + k * kMR + i] = x[t * kMR + i][k],
// zero for rows past M.
inline void PackX(const float* x, size_t M, size_t ldx, size_t K, size_t t0, size_t t1, float* HWY_RESTRICT xs) {
  for (size_t t = t0; t < t1; ++t) {
    float* out = xs + t * K * kMR;
    for (size_t i = 0; i < size_t(kMR); ++i) {
      const size_t m = t * kMR + i;
      if (m < M) {
        const float* row = x + m * ldx;
        for (size_t k = 0; k < K; ++k) out[k * kMR + i] = row[k];
      } else {
        for (size_t k = 0; k < K; ++k) out[k * kMR + i] = 0.0f;
      }
    }
  }
}

}  // namespace gemm
}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
