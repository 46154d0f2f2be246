// Pieces shared by the decode and prefill attention kernels: KV addressing,
// row loads, the online-softmax update. A per-target header: included after
// foreach_target.h and re-read once per target.
//
// Masked or not-yet-seen scores use kNegBig instead of -inf so that
// exp(m_old - m_new) and exp(s - m) are 0, never NaN.

// Per-target include guard (Highway's convention).
#if defined(TERN_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TERN_KERNELS_ATTENTION_INL_H_
#undef TERN_KERNELS_ATTENTION_INL_H_
#else
#define TERN_KERNELS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/wload-inl.h"
#include "kernels/gemm_tile-inl.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace attention {

namespace hn = hwy::HWY_NAMESPACE;
using namespace gemm;  // NOLINT: DF, VF, DI, DU

constexpr float kNegBig = -1e30f;

inline size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Address of element (pos, head, 0) of a KV pool in dtype kDT.
template <DType kDT>
HWY_INLINE const uint8_t* KvRow(const KvPages& kv, const void* pool, int64_t pos, int64_t head) {
  const int64_t block = kv.block_table[pos / kv.block_size];
  const int64_t slot = pos % kv.block_size;
  const int64_t elem = ((block * kv.block_size + slot) * kv.kv_heads + head) * kv.head_dim;
  return static_cast<const uint8_t*>(pool) + elem * int64_t(DTypeSize(kDT));
}

// L elements of a KV row from element d, as f32.
template <DType kDT>
HWY_INLINE VF LoadRow(const uint8_t* row, size_t d) {
  const DF df;
  if constexpr (kDT == DType::kF32) {
    return hn::LoadU(df, reinterpret_cast<const float*>(row) + d);
  } else if constexpr (kDT == DType::kF8E4M3) {
#if HWY_TARGET == HWY_SCALAR
    return hn::Set(df, E4M3ToF32(row[d]));
#else
    // Unscaled: the KV scales are applied by the caller.
    return wload::E4M3Load(row + d, hn::Set(df, wload::kE4M3Unit));
#endif
  } else if constexpr (kDT == DType::kF16) {
#if HWY_TARGET == HWY_SCALAR  // (Highway 1.0.3's scalar f16 conversion mishandles NaN)
    return hn::Set(df, ElementAsF32<kDT>(row, d));
#else
    return hn::PromoteTo(df,
                         hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), reinterpret_cast<const hwy::float16_t*>(row) + d));
#endif
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const DU du;
    return hn::BitCast(
        df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(row) + d))));
  }
}

// Row-wise online softmax update for one row of scores s[0, n) (n a multiple
// of L; entries at or past `valid` are masked). Replaces s by exp(s - m_new),
// and returns alpha = exp(m_old - m_new) after updating m and l. With
// kRoundBf16, each exp(s - m_new) is rounded to BF16 (RNE, below 2^-126 to
// zero) before it is stored and summed into l: the probabilities that the
// BF16 P V product takes are the ones it is normalised by.
template <bool kRoundBf16 = false>
HWY_INLINE float SoftmaxUpdate(float* HWY_RESTRICT s, size_t n, size_t valid, float& m, float& l) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const VF neg = hn::Set(df, kNegBig);
  VF vmax = neg;
  for (size_t j = 0; j < n; j += L) {
    // (FirstN, not Iota < valid: Highway 1.0.3's Iota goes through memory,
    // a store-forwarding stall per vector that was a fifth of prefill
    // attention's time.)
    const auto mask = hn::FirstN(df, valid > j ? valid - j : 0);
    const VF v = hn::IfThenElse(mask, hn::LoadU(df, s + j), neg);
    hn::StoreU(v, df, s + j);
    vmax = hn::Max(vmax, v);
  }
  const float m_new = std::max(m, hn::GetLane(hn::MaxOfLanes(df, vmax)));
  const VF vm = hn::Set(df, m_new);
  VF vsum = hn::Zero(df);
  for (size_t j = 0; j < n; j += L) {
    VF p = hn::Exp(df, hn::Sub(hn::LoadU(df, s + j), vm));
    if constexpr (kRoundBf16) {
      const DU du;
      const auto u = hn::BitCast(du, p);
      const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
      const auto r = hn::And(hn::Add(hn::Add(u, hn::Set(du, 0x7FFFu)), odd), hn::Set(du, 0xFFFF0000u));
      p = hn::IfThenZeroElse(hn::Lt(p, hn::Set(df, 0x1p-126f)), hn::BitCast(df, r));
    }
    hn::StoreU(p, df, s + j);
    vsum = hn::Add(vsum, p);
  }
  const float alpha = std::exp(m - m_new);
  l = l * alpha + hn::GetLane(hn::SumOfLanes(df, vsum));
  m = m_new;
  return alpha;
}

// Requests every cache line of a KV row.
HWY_INLINE void PrefetchRow(const uint8_t* row, size_t bytes) {
  for (size_t b = 0; b < bytes; b += 64) hwy::Prefetch(row + b);
}

HWY_INLINE void ScaleRow(float* HWY_RESTRICT row, size_t n, float alpha) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const VF a = hn::Set(df, alpha);
  for (size_t d = 0; d < n; d += L) hn::StoreU(hn::Mul(hn::LoadU(df, row + d), a), df, row + d);
}

}  // namespace attention
}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
