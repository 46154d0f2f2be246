#include "kernels/reference.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

namespace tern::kernels::ref {
namespace {

// Element access through memcpy: checkpoint data (and test data) need not be
// aligned to the element size.
template <typename T>
T LoadRaw(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + i * int64_t(sizeof(T)), sizeof(T));
  return v;
}
template <typename T>
void StoreRaw(void* base, int64_t i, T v) {
  std::memcpy(static_cast<uint8_t*>(base) + i * int64_t(sizeof(T)), &v, sizeof(T));
}

float LoadAs(DType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case DType::kF32: return LoadRaw<float>(base, i);
    case DType::kBF16: return Bf16ToF32(LoadRaw<uint16_t>(base, i));
    case DType::kF16: return F16ToF32(LoadRaw<uint16_t>(base, i));
    case DType::kF8E4M3: return E4M3ToF32(LoadRaw<uint8_t>(base, i));
    default: assert(false && "unsupported dtype"); return 0.0f;
  }
}

void StoreAs(DType dtype, void* base, int64_t i, float v) {
  switch (dtype) {
    case DType::kF32: StoreRaw<float>(base, i, v); break;
    case DType::kBF16: StoreRaw<uint16_t>(base, i, F32ToBf16(v)); break;
    case DType::kF16: StoreRaw<uint16_t>(base, i, F32ToF16(v)); break;
    case DType::kF8E4M3: StoreRaw<uint8_t>(base, i, F32ToE4M3(v)); break;
    default: assert(false && "unsupported KV dtype");
  }
}

// Offset in elements of (pos, head, 0) in a KV pool.
int64_t KvOffset(const KvPages& kv, int64_t pos, int64_t head) {
  const int64_t block = kv.block_table[pos / kv.block_size];
  const int64_t slot = pos % kv.block_size;
  return ((block * kv.block_size + slot) * kv.kv_heads + head) * kv.head_dim;
}

}  // namespace

float MatrixAt(const MatrixView& w, int64_t n, int64_t k) {
  switch (w.format) {
    case WeightFormat::kDense:
      return LoadAs(w.dtype, w.data, n * w.row_stride + k);
    case WeightFormat::kNvfp4: {
      const uint8_t byte = LoadRaw<uint8_t>(w.data, (n * w.row_stride + k) / 2);
      const uint8_t code = k % 2 == 0 ? byte & 0xf : byte >> 4;
      const float scale = E4M3ToF32(LoadRaw<uint8_t>(w.scales, n * w.scale_stride + k / kNvfp4Block));
      return E2M1ToF32(code) * scale * w.global_scale;
    }
    case WeightFormat::kFp8: {
      float v = E4M3ToF32(LoadRaw<uint8_t>(w.data, n * w.row_stride + k));
      if (w.scales != nullptr) v *= LoadRaw<float>(w.scales, (n / kFp8Block) * w.scale_stride + k / kFp8Block);
      return v * w.global_scale;
    }
  }
  return 0.0f;
}

void DequantizeRows(const MatrixView& w, int64_t n0, int64_t rows, int64_t k0, int64_t k1, float* out, int64_t ldo) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = k0; k < k1; ++k) out[r * ldo + k - k0] = MatrixAt(w, n0 + r, k);
}

void MatMul(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < w.rows; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) acc += double(x[m * ldx + k]) * double(MatrixAt(w, n, k));
      y[m * ldy + n] = float(acc);
    }
}

void QuantizeNvfp4Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float input_scale, float* out,
                              int64_t ldo) {
  const float g = 1.0f / input_scale;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b < K; b += kNvfp4Block) {
      const float* xb = x + m * ldx + b;
      float* ob = out + m * ldo + b;
      float amax = 0.0f;
      bool finite = true;
      for (int64_t i = 0; i < kNvfp4Block; ++i) {
        finite = finite && std::isfinite(xb[i]);
        amax = std::max(amax, std::fabs(xb[i]));
      }
      const float s = E4M3ToF32(F32ToE4M3(std::min(g * amax / 6.0f, 448.0f)));
      for (int64_t i = 0; i < kNvfp4Block; ++i) {
        if (!finite) {
          ob[i] = NAN;
        } else if (s == 0.0f) {
          ob[i] = 0.0f;
        } else {
          ob[i] = E2M1ToF32(F32ToE2M1(xb[i] * g / s)) * s;
        }
      }
    }
}

// The exponent by search, not by frexp as the kernels find it: the least e
// from -133 up with amax <= 127 * 2^e (both sides exact in double).
void QuantizeInt8Activations(const float* x, int64_t M, int64_t ldx, int64_t K, float* out, int64_t ldo) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b < K; b += kNvfp4Block) {
      const float* xb = x + m * ldx + b;
      float* ob = out + m * ldo + b;
      double amax = 0.0;
      bool finite = true;
      for (int64_t i = 0; i < kNvfp4Block; ++i) {
        finite = finite && std::isfinite(xb[i]);
        amax = std::max(amax, std::fabs(double(xb[i])));
      }
      int e = -133;
      while (finite && std::ldexp(127.0, e) < amax) ++e;
      for (int64_t i = 0; i < kNvfp4Block; ++i) {
        const double q = std::nearbyint(double(xb[i]) / std::ldexp(1.0, e));  // ties to even (the default mode)
        const double v = q * std::ldexp(1.0, e);  // (2^128 past FLT_MAX: infinity, ops.h)
        ob[i] = !finite ? NAN : std::fabs(v) > double(FLT_MAX) ? std::copysign(INFINITY, v) : float(v);
      }
    }
}

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const float inv = float(1.0 / std::sqrt(ss / double(dim) + double(eps)));
    for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = x[r * dim + i] * inv * weight[i];
  }
}

void RopeNeox(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim,
              const float* cos, const float* sin) {
  const int64_t half = rotary_dim / 2;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float c = cos[t * half + i], s = sin[t * half + i];
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void AddInPlace(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void ConvertToF32(DType dtype, const void* src, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = LoadAs(dtype, src, i);
}

void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  const bool fp8 = kv.dtype == DType::kF8E4M3;
  const float ks = fp8 ? kv.k_scale : 1.0f, vs = fp8 ? kv.v_scale : 1.0f;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < kv.kv_heads; ++h) {
      const int64_t off = KvOffset(kv, start + t, h);
      for (int64_t d = 0; d < kv.head_dim; ++d) {
        StoreAs(kv.dtype, kv.k, off + d, k[(t * kv.kv_heads + h) * kv.head_dim + d] / ks);
        StoreAs(kv.dtype, kv.v, off + d, v[(t * kv.kv_heads + h) * kv.head_dim + d] / vs);
      }
    }
}

void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale) {
  for (const AttentionJob& job : jobs) {
    const KvPages& kv = job.kv;
    const int64_t D = kv.head_dim, group = q_heads / kv.kv_heads;
    const bool fp8 = kv.dtype == DType::kF8E4M3;
    const double ks = fp8 ? kv.k_scale : 1.0, vs = fp8 ? kv.v_scale : 1.0;
    std::vector<double> scores(size_t(job.ctx_len));
    for (int64_t t = 0; t < job.num_queries; ++t) {
      const int64_t pos = job.ctx_len - job.num_queries + t;
      for (int64_t h = 0; h < q_heads; ++h) {
        const float* q = job.q + (t * q_heads + h) * D;
        const int64_t kvh = h / group;
        double mx = -INFINITY;
        for (int64_t p = 0; p <= pos; ++p) {
          const int64_t off = KvOffset(kv, p, kvh);
          double s = 0;
          for (int64_t d = 0; d < D; ++d) s += double(q[d]) * LoadAs(kv.dtype, kv.k, off + d) * ks;
          scores[p] = s * scale;
          mx = std::max(mx, scores[p]);
        }
        double sum = 0;
        for (int64_t p = 0; p <= pos; ++p) sum += (scores[p] = std::exp(scores[p] - mx));
        float* o = job.out + (t * q_heads + h) * D;
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t p = 0; p <= pos; ++p)
            acc += scores[p] * LoadAs(kv.dtype, kv.v, KvOffset(kv, p, kvh) + d) * vs;
          o[d] = float(acc / sum);
        }
      }
    }
  }
}

}  // namespace tern::kernels::ref
