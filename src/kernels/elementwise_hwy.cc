// Row-wise and elementwise ops of ops.h, compiled per SIMD target: RmsNorm,
// RopeNeox, SiluMul, AddInPlace, ConvertToF32. Each is a single pass over
// memory; vector loops with scalar tails (sizes need not be multiples of the
// vector width, pointers need no alignment).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/elementwise_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <cmath>
#include <cstring>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/reference.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

}  // namespace

void RmsNormImpl(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  const DF df;
  const size_t L = hn::Lanes(df), n = size_t(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* outr = out + r * dim;
    VF s0 = hn::Zero(df), s1 = hn::Zero(df);
    size_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      const VF a = hn::LoadU(df, xr + i), b = hn::LoadU(df, xr + i + L);
      s0 = hn::MulAdd(a, a, s0);
      s1 = hn::MulAdd(b, b, s1);
    }
    float ss = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
    for (; i < n; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
    // Same order of operations as the reference: (x * inv) * weight.
    const VF vinv = hn::Set(df, inv);
    i = 0;
    for (; i + L <= n; i += L)
      hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(df, xr + i), vinv), hn::LoadU(df, weight + i)), df, outr + i);
    for (; i < n; ++i) outr[i] = xr[i] * inv * weight[i];
  }
}

void RopeNeoxImpl(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos,
                  const float* sin) {
  const DF df;
  const size_t L = hn::Lanes(df), half = size_t(rotary_dim / 2);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = cos + t * int64_t(half);
    const float* s = sin + t * int64_t(half);
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      size_t i = 0;
      for (; i + L <= half; i += L) {
        const VF a = hn::LoadU(df, v + i), b = hn::LoadU(df, v + i + half);
        const VF vc = hn::LoadU(df, c + i), vs = hn::LoadU(df, s + i);
        hn::StoreU(hn::MulSub(a, vc, hn::Mul(b, vs)), df, v + i);         // a c - b s
        hn::StoreU(hn::MulAdd(b, vc, hn::Mul(a, vs)), df, v + i + half);  // b c + a s
      }
      for (; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

void SiluMulImpl(const float* gate, const float* up, int64_t n, float* out) {
  const DF df;
  const size_t L = hn::Lanes(df);
  // exp(-g) overflows for g < -88.7; clamping there changes silu(g) ~ 1e-36.
  const VF one = hn::Set(df, 1.0f), limit = hn::Set(df, 88.0f);
  size_t i = 0;
  for (; i + L <= size_t(n); i += L) {
    const VF g = hn::LoadU(df, gate + i);
    const VF e = hn::Exp(df, hn::Min(hn::Neg(g), limit));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(df, up + i)), df, out + i);
  }
  for (; i < size_t(n); ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void AddInPlaceImpl(float* a, const float* b, int64_t n) {
  const DF df;
  const size_t L = hn::Lanes(df);
  size_t i = 0;
  for (; i + L <= size_t(n); i += L) hn::StoreU(hn::Add(hn::LoadU(df, a + i), hn::LoadU(df, b + i)), df, a + i);
  for (; i < size_t(n); ++i) a[i] += b[i];
}

// Two passes, each a plain stream: the largest non-NaN value with NaN read as
// -inf (several accumulators), then the first index holding it. The scalar
// `if (v[i] > v[best]) best = i` ran at ~10 cycles an element (a
// load-dependent branch) and was 5% of qwen3-0.6b's greedy decode.
int64_t ArgMaxImpl(const float* v, int64_t n) {
  if (n <= 1 || std::isnan(v[0])) return 0;  // (a NaN first: no later value compares greater)
  const DF df;
  const size_t L = hn::Lanes(df), N = size_t(n);
  const VF ninf = hn::Set(df, -std::numeric_limits<float>::infinity());
  VF m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  const auto clean = [&](VF x) { return hn::IfThenElse(hn::IsNaN(x), ninf, x); };
  size_t i = 0;
  for (; i + 4 * L <= N; i += 4 * L) {
    m0 = hn::Max(m0, clean(hn::LoadU(df, v + i)));
    m1 = hn::Max(m1, clean(hn::LoadU(df, v + i + L)));
    m2 = hn::Max(m2, clean(hn::LoadU(df, v + i + 2 * L)));
    m3 = hn::Max(m3, clean(hn::LoadU(df, v + i + 3 * L)));
  }
  for (; i + L <= N; i += L) m0 = hn::Max(m0, clean(hn::LoadU(df, v + i)));
  float m = hn::GetLane(hn::MaxOfLanes(df, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < N; ++i)
    if (v[i] > m) m = v[i];
  const VF vm = hn::Set(df, m);
  for (i = 0; i + L <= N; i += L) {
    const auto eq = hn::Eq(hn::LoadU(df, v + i), vm);
    if (!hn::AllFalse(df, eq)) return int64_t(i) + int64_t(hn::FindFirstTrue(df, eq));
  }
  for (; i < N; ++i)
    if (v[i] == m) return int64_t(i);
  return 0;  // (unreachable: m is one of the values)
}

void ConvertToF32Impl(DType dtype, const void* src, int64_t n, float* out) {
  const DF df;
  const size_t L = hn::Lanes(df), count = size_t(n);
  size_t i = 0;
  if (dtype == DType::kF32) {
    std::memcpy(out, src, count * sizeof(float));
    return;
  }
  if (dtype == DType::kBF16) {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::RebindToUnsigned<DF> du32;
    const auto* p = static_cast<const uint16_t*>(src);
    for (; i + L <= count; i += L)
      hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p + i)))), df, out + i);
  } else if (dtype == DType::kF16) {
#if HWY_TARGET != HWY_SCALAR  // (Highway 1.0.3's scalar f16 conversion mishandles NaN)
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* p = static_cast<const hwy::float16_t*>(src);
    for (; i + L <= count; i += L) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, p + i)), df, out + i);
#endif
  } else if (dtype == DType::kF8E4M3) {
    // 256-entry table from the scalar reference conversion.
    static const auto* table = [] {
      auto* t = new float[256];
      for (int v = 0; v < 256; ++v) t[v] = E4M3ToF32(uint8_t(v));
      return t;
    }();
    const auto* p = static_cast<const uint8_t*>(src);
    for (; i < count; ++i) out[i] = table[p[i]];
    return;
  }
  // Tails, and any other dtype, through the reference.
  if (i < count) {
    const auto* bytes = static_cast<const uint8_t*>(src) + i * DTypeSize(dtype);
    ref::ConvertToF32(dtype, bytes, int64_t(count - i), out + i);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(RmsNormImpl);
HWY_EXPORT(RopeNeoxImpl);
HWY_EXPORT(SiluMulImpl);
HWY_EXPORT(AddInPlaceImpl);
HWY_EXPORT(ConvertToF32Impl);
HWY_EXPORT(ArgMaxImpl);

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  HWY_DYNAMIC_DISPATCH(RmsNormImpl)(x, weight, rows, dim, eps, out);
}
void RopeNeox(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos,
              const float* sin) {
  HWY_DYNAMIC_DISPATCH(RopeNeoxImpl)(x, tokens, heads, head_dim, rotary_dim, cos, sin);
}
void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMulImpl)(gate, up, n, out);
}
void AddInPlace(float* a, const float* b, int64_t n) { HWY_DYNAMIC_DISPATCH(AddInPlaceImpl)(a, b, n); }
int64_t ArgMax(const float* v, int64_t n) { return HWY_DYNAMIC_DISPATCH(ArgMaxImpl)(v, n); }

void ConvertToF32(DType dtype, const void* src, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ConvertToF32Impl)(dtype, src, n, out);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
