// Scalar references of the Gated DeltaNet steps and gates (ops.h): plain
// loops, double sums, the C library's exp / log1p.
#include <cmath>
#include <vector>

#include "kernels/reference.h"

namespace tern::kernels::ref {
namespace {
double Silu(double x) { return x / (1.0 + std::exp(-x)); }
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
}  // namespace

void CausalConvSilu(const CausalConvArgs& a) {
  const int64_t C = a.channels, K = a.kernel, n = a.n;
  std::vector<float> in(size_t((K - 1 + n) * C));
  for (int64_t j = 0; j < K - 1; ++j)
    for (int64_t c = 0; c < C; ++c) in[size_t(j * C + c)] = a.state[j * a.state_stride + c];
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) in[size_t((K - 1 + t) * C + c)] = a.x[t * a.x_stride + c];
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < K; ++j) acc += double(a.w[j * a.w_stride + c]) * in[size_t((t + j) * C + c)];
      a.x[t * a.x_stride + c] = float(Silu(acc));
    }
  for (int64_t j = 0; j < K - 1; ++j)
    for (int64_t c = 0; c < C; ++c) a.state[j * a.state_stride + c] = in[size_t((n + j) * C + c)];
}

void L2NormRows(float* x, int64_t rows, int64_t dim, int64_t stride, float eps, float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x + r * stride;
    double ss = 0;
    for (int64_t d = 0; d < dim; ++d) ss += double(v[d]) * v[d];
    const double inv = double(scale) / std::sqrt(ss + double(eps));
    for (int64_t d = 0; d < dim; ++d) v[d] = float(v[d] * inv);
  }
}

void DeltaGates(float* b, float* a, const float* neg_exp_a, const float* dt_bias, int64_t rows, int64_t heads) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i = r * heads + h;
      b[i] = float(Sigmoid(b[i]));
      a[i] = float(double(neg_exp_a[h]) * Softplus(double(a[i]) + dt_bias[h]));
    }
}

void GatedRmsNorm(float* o, const float* z, const float* w, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = o + r * dim;
    const float* g = z + r * dim;
    double ss = 0;
    for (int64_t d = 0; d < dim; ++d) ss += double(v[d]) * v[d];
    const double inv = 1.0 / std::sqrt(ss / double(dim) + double(eps));
    for (int64_t d = 0; d < dim; ++d) v[d] = float(double(w[d]) * (v[d] * inv) * Silu(g[d]));
  }
}

void SigmoidMul(float* x, const float* gate, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = float(x[i] * Sigmoid(gate[i]));
}

void Axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(double(y[i]) + double(alpha) * x[i]);
}

}  // namespace tern::kernels::ref
