// The Gated DeltaNet steps around the delta rule and the sigmoid gates of
// ops.h, compiled per SIMD target: vector loops over channels (conv), over a
// row (norms) or over heads (gates), scalar tails; pointers need no alignment.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/linear_attention_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// exp(-x) overflows for x < -88.7; clamping there changes the result ~1e-36.
VF Sigmoid(DF df, VF x) {
  return hn::Div(hn::Set(df, 1.0f), hn::Add(hn::Set(df, 1.0f), hn::Exp(df, hn::Min(hn::Neg(x), hn::Set(df, 88.0f)))));
}
VF Silu(DF df, VF x) { return hn::Mul(x, Sigmoid(df, x)); }
float SigmoidScalar(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float SoftplusScalar(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Sum of squares of v[0, n) in f32.
float SumSquares(const float* v, size_t n) {
  const DF df;
  const size_t L = hn::Lanes(df);
  VF s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const VF a = hn::LoadU(df, v + i), b = hn::LoadU(df, v + i + L);
    s0 = hn::MulAdd(a, a, s0);
    s1 = hn::MulAdd(b, b, s1);
  }
  float ss = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) ss += v[i] * v[i];
  return ss;
}

}  // namespace

void CausalConvSiluImpl(const CausalConvArgs& a) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const int64_t C = a.channels, K = a.kernel, n = a.n;
  // Row i of [state | x] (i < K-1: state; else x row i - (K-1)).
  auto in = [&](int64_t i) -> const float* { return i < K - 1 ? a.state + i * a.state_stride : a.x + (i - K + 1) * a.x_stride; };
  // One block of channels at a time: its next state (rows n .. n+K-2 of
  // [state | x]) is kept before x is overwritten, then its outputs from the
  // last token back (token t reads x rows t-K+1 .. t, none overwritten yet).
  // No heap: the decode step allocates nothing.
  HWY_ALIGN float next[(kMaxConvKernel - 1) * HWY_LANES(float)];
  size_t c = 0;
  for (; c + L <= size_t(C); c += L) {
    for (int64_t j = 0; j < K - 1; ++j) hn::Store(hn::LoadU(df, in(n + j) + c), df, next + size_t(j) * L);
    for (int64_t t = n - 1; t >= 0; --t) {
      VF acc = hn::Zero(df);
      for (int64_t j = 0; j < K; ++j)
        acc = hn::MulAdd(hn::LoadU(df, a.w + j * a.w_stride + int64_t(c)), hn::LoadU(df, in(t + j) + c), acc);
      hn::StoreU(Silu(df, acc), df, a.x + t * a.x_stride + int64_t(c));
    }
    for (int64_t j = 0; j < K - 1; ++j)
      hn::StoreU(hn::Load(df, next + size_t(j) * L), df, a.state + j * a.state_stride + int64_t(c));
  }
  for (; c < size_t(C); ++c) {
    for (int64_t j = 0; j < K - 1; ++j) next[j] = in(n + j)[c];
    for (int64_t t = n - 1; t >= 0; --t) {
      float acc = 0.0f;
      for (int64_t j = 0; j < K; ++j) acc += a.w[j * a.w_stride + int64_t(c)] * in(t + j)[c];
      a.x[t * a.x_stride + int64_t(c)] = acc / (1.0f + std::exp(-acc));
    }
    for (int64_t j = 0; j < K - 1; ++j) a.state[j * a.state_stride + int64_t(c)] = next[j];
  }
}

void L2NormRowsImpl(float* x, int64_t rows, int64_t dim, int64_t stride, float eps, float scale) {
  const DF df;
  const size_t L = hn::Lanes(df);
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x + r * stride;
    const float inv = scale / std::sqrt(SumSquares(v, size_t(dim)) + eps);
    const VF vinv = hn::Set(df, inv);
    size_t i = 0;
    for (; i + L <= size_t(dim); i += L) hn::StoreU(hn::Mul(hn::LoadU(df, v + i), vinv), df, v + i);
    for (; i < size_t(dim); ++i) v[i] *= inv;
  }
}

void DeltaGatesImpl(float* b, float* a, const float* neg_exp_a, const float* dt_bias, int64_t rows, int64_t heads) {
  const DF df;
  const size_t L = hn::Lanes(df), H = size_t(heads);
  const VF twenty = hn::Set(df, 20.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* br = b + r * heads;
    float* ar = a + r * heads;
    size_t h = 0;
    for (; h + L <= H; h += L) {
      hn::StoreU(Sigmoid(df, hn::LoadU(df, br + h)), df, br + h);
      const VF u = hn::Add(hn::LoadU(df, ar + h), hn::LoadU(df, dt_bias + h));
      // softplus(u) = log1p(exp(u)), = u past 20 (as torch's threshold).
      const VF sp = hn::IfThenElse(hn::Gt(u, twenty), u, hn::Log1p(df, hn::Exp(df, hn::Min(u, twenty))));
      hn::StoreU(hn::Mul(hn::LoadU(df, neg_exp_a + h), sp), df, ar + h);
    }
    for (; h < H; ++h) {
      br[h] = SigmoidScalar(br[h]);
      ar[h] = neg_exp_a[h] * SoftplusScalar(ar[h] + dt_bias[h]);
    }
  }
}

void GatedRmsNormImpl(float* o, const float* z, const float* w, int64_t rows, int64_t dim, float eps) {
  const DF df;
  const size_t L = hn::Lanes(df), n = size_t(dim);
  for (int64_t r = 0; r < rows; ++r) {
    float* v = o + r * dim;
    const float* g = z + r * dim;
    const float inv = 1.0f / std::sqrt(SumSquares(v, n) / float(dim) + eps);
    const VF vinv = hn::Set(df, inv);
    size_t i = 0;
    for (; i + L <= n; i += L)
      hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(df, w + i), hn::Mul(hn::LoadU(df, v + i), vinv)), Silu(df, hn::LoadU(df, g + i))),
                 df, v + i);
    for (; i < n; ++i) v[i] = w[i] * (v[i] * inv) * (g[i] * SigmoidScalar(g[i]));
  }
}

void SigmoidMulImpl(float* x, const float* gate, int64_t n) {
  const DF df;
  const size_t L = hn::Lanes(df);
  size_t i = 0;
  for (; i + L <= size_t(n); i += L)
    hn::StoreU(hn::Mul(hn::LoadU(df, x + i), Sigmoid(df, hn::LoadU(df, gate + i))), df, x + i);
  for (; i < size_t(n); ++i) x[i] *= SigmoidScalar(gate[i]);
}

void AxpyImpl(float alpha, const float* x, float* y, int64_t n) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const VF va = hn::Set(df, alpha);
  size_t i = 0;
  for (; i + L <= size_t(n); i += L) hn::StoreU(hn::MulAdd(va, hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, y + i);
  for (; i < size_t(n); ++i) y[i] += alpha * x[i];
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(CausalConvSiluImpl);
HWY_EXPORT(L2NormRowsImpl);
HWY_EXPORT(DeltaGatesImpl);
HWY_EXPORT(GatedRmsNormImpl);
HWY_EXPORT(SigmoidMulImpl);
HWY_EXPORT(AxpyImpl);

void CausalConvSilu(const CausalConvArgs& a) { HWY_DYNAMIC_DISPATCH(CausalConvSiluImpl)(a); }
void L2NormRows(float* x, int64_t rows, int64_t dim, int64_t stride, float eps, float scale) {
  HWY_DYNAMIC_DISPATCH(L2NormRowsImpl)(x, rows, dim, stride, eps, scale);
}
void DeltaGates(float* b, float* a, const float* neg_exp_a, const float* dt_bias, int64_t rows, int64_t heads) {
  HWY_DYNAMIC_DISPATCH(DeltaGatesImpl)(b, a, neg_exp_a, dt_bias, rows, heads);
}
void GatedRmsNorm(float* o, const float* z, const float* w, int64_t rows, int64_t dim, float eps) {
  HWY_DYNAMIC_DISPATCH(GatedRmsNormImpl)(o, z, w, rows, dim, eps);
}
void SigmoidMul(float* x, const float* gate, int64_t n) { HWY_DYNAMIC_DISPATCH(SigmoidMulImpl)(x, gate, n); }
void Axpy(float alpha, const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(AxpyImpl)(alpha, x, y, n); }

}  // namespace tern::kernels
#endif  // HWY_ONCE
