// KvWrite (ops.h): new keys and values into the paged cache, as f32, as bf16
// rounded to nearest even (bit-identical to base/dtype.h's F32ToBf16), or as
// f16 with the x86 conversion (VCVTPS2PH, round to nearest even under the
// default MXCSR: bit-identical to F32ToF16; a vector holding a NaN takes the
// scalar F32ToF16, which fixes the NaN's bits). FP8 and f16 on the portable
// target go through the reference. (With AMX prefill the f16 write through
// the reference was 4.8% of a qwen3-0.6b prefill.)

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kv_write_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/reference.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;

void KvWriteImpl(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  const DF df;
  const DI di;
  const DU du;
  const hn::Rebind<uint16_t, DF> du16;
  const size_t L = hn::Lanes(df), D = size_t(kv.head_dim);
  const size_t esize = DTypeSize(kv.dtype);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  const bool f16 = kv.dtype == DType::kF16;
#else
  constexpr bool f16 = false;
#endif
  if (kv.dtype != DType::kF32 && kv.dtype != DType::kBF16 && !f16) return ref::KvWrite(kv, start, tokens, k, v);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t pos = start + t;
    const int64_t block = kv.block_table[pos / kv.block_size];
    const int64_t slot = pos % kv.block_size;
    for (int64_t h = 0; h < kv.kv_heads; ++h) {
      const int64_t elem = ((block * kv.block_size + slot) * kv.kv_heads + h) * kv.head_dim;
      const int64_t src = (t * kv.kv_heads + h) * kv.head_dim;
      for (int which = 0; which < 2; ++which) {
        const float* from = (which == 0 ? k : v) + src;
        uint8_t* to = static_cast<uint8_t*>(which == 0 ? kv.k : kv.v) + elem * int64_t(esize);
        if (kv.dtype == DType::kF32) {
          std::memcpy(to, from, D * sizeof(float));
          continue;
        }
        if (f16) {
          auto* out = reinterpret_cast<uint16_t*>(to);
          const hn::Rebind<hwy::float16_t, DF> df16;
          size_t d = 0;
          for (; d + L <= D; d += L) {
            const auto x = hn::LoadU(df, from + d);
            if (!hn::AllFalse(df, hn::IsNaN(x))) break;
            hn::StoreU(hn::DemoteTo(df16, x), df16, reinterpret_cast<hwy::float16_t*>(out + d));
          }
          for (; d < D; ++d) out[d] = F32ToF16(from[d]);
          continue;
        }
        // Round to nearest even, NaN stays a quiet NaN (as F32ToBf16).
        auto* out = reinterpret_cast<uint16_t*>(to);
        size_t d = 0;
        for (; d + L <= D; d += L) {
          const auto u = hn::BitCast(du, hn::LoadU(df, from + d));
          const auto is_nan = hn::BitCast(di, hn::And(u, hn::Set(du, 0x7fffffffu))) > hn::Set(di, 0x7f800000);
          const auto rounded = hn::ShiftRight<16>(
              hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u)))));
          const auto quiet = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40u));
          const auto bits = hn::IfThenElse(hn::RebindMask(du, is_nan), quiet, rounded);
          hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, bits)), du16, out + d);
        }
        for (; d < D; ++d) {
          const uint16_t b = F32ToBf16(from[d]);
          std::memcpy(out + d, &b, 2);
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(KvWriteImpl);

void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  HWY_DYNAMIC_DISPATCH(KvWriteImpl)(kv, start, tokens, k, v);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
