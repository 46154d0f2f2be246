// Decode attention (attention_internal.h): one task is one query of a job
// over a range of key positions, for every query head. attention.cc splits
// long contexts into several ranges (run in parallel) and merges their
// partial results.
//
// Memory order: the cache stores a position's keys for all kv heads together
// ([block][slot][kv_head][head_dim]), so a task walks positions and, for each,
// every kv head's K row: one contiguous run per position, which the hardware
// prefetchers follow (one head at a time would touch a 256-byte row every
// 2 KiB, with a TLB miss every other position on long contexts). Positions go
// in chunks of kDecodeChunk:
//   1. scores for all heads (dot products along head_dim; the G query heads
//      sharing a kv head use each K row once), prefetching the chunk's V;
//   2. per query head, the online-softmax update (running max m, sum l,
//      output rescaled);
//   3. per kv head, the output accumulates P * V with a register block of
//      output vectors (V now in cache).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_decode_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/attention-inl.h"
#include "kernels/attention_internal.h"
#include "kernels/gemm_tile-inl.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using namespace gemm;       // NOLINT: DF, VF, ElementAsF32
using namespace attention;  // NOLINT: KvRow, LoadRow, SoftmaxUpdate, ...

// 16 positions (a vector of scores on AVX-512): the chunk's V (2 KiB a
// position on Qwen3-0.6B) is then still in L1/L2 when step 3 reads it. With
// 64, step 3 stalled on its V loads (41% of the kernel's samples): vs 64,
// BM_AttentionDecode/1/4096 1.34x, /8/1024 1.46x, /32/512 1.27x (AVX2,
// medians of 5 interleaved runs), and q06 NVFP4 decode after a 1024-token
// prompt 13.5 -> 15.5 tokens/s; the extra softmax rescaling is ~3% of the
// multiply-adds. At least one vector of scores, so that SoftmaxUpdate's
// RoundUp(nc, L) stays within a head's row (16 on every x86 target).
constexpr size_t kDecodeChunk = std::max<size_t>(16, HWY_MAX_BYTES / sizeof(float));
// Positions whose K is prefetched ahead of the score loop (block order in the
// pool is arbitrary, so the hardware prefetchers lose the stream at every
// block boundary).
constexpr size_t kPrefetchAhead = 4;

// FP8 KV rows decode to the E4M3 bits placed as f32 (wload::E4M3Bits,
// E4M3Load without its multiply: the value times 2^-120, E4M3's subnormals
// as f32's),
// so that q and the probabilities are taken times 2^64 (kInUnit) and the
// sums times 2^56 back (kOutUnit, exact: powers of two). Products then stay
// normal down to 2^-70 in plain units. BM_AttentionDecode<FP8> (Zen 4, see
// the kernels README): the multiply was 1 of 4 decode operations per vector.
template <DType kDT>
constexpr float kInUnit = kDT == DType::kF8E4M3 ? 0x1p64f : 1.0f;
template <DType kDT>
constexpr float kOutUnit = kDT == DType::kF8E4M3 ? 0x1p56f : 1.0f;
template <DType kDT>
constexpr float kRowUnit = kDT == DType::kF8E4M3 ? 0x1p-120f : 1.0f;  // = 1 / (kInUnit * kOutUnit)

// L elements of a KV row from element d, as f32 times kRowUnit.
template <DType kDT>
HWY_INLINE VF DecodeRow(const uint8_t* row, size_t d) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kDT == DType::kF8E4M3) return wload::E4M3Bits(row + d);
#endif
  if constexpr (kDT == DType::kF8E4M3) return hn::Mul(LoadRow<kDT>(row, d), hn::Set(DF(), kRowUnit<kDT>));
  return LoadRow<kDT>(row, d);
}
// Element d of a KV row as f32 times kRowUnit (exact).
template <DType kDT>
HWY_INLINE float DecodeElement(const uint8_t* row, size_t d) {
  return ElementAsF32<kDT>(row, d) * kRowUnit<kDT>;
}

// scores[g * kDecodeChunk + j] = scale * q[g] . krow, for the GN heads g0.. (q: rows of D).
// kChains partial sums per head so that the FMA chains do not wait on each
// other's latency (a dot product of 128 is only 16 vector steps).
template <DType kDT, int GN>
HWY_INLINE void ScoreHeads(const float* HWY_RESTRICT q, size_t g0, size_t D, const uint8_t* krow, size_t j, float scale,
                           float* HWY_RESTRICT scores) {
  constexpr int kChains = GN <= 2 ? 4 : 2;
  const DF df;
  const size_t L = hn::Lanes(df);
  VF a[GN][kChains];
  for (int gi = 0; gi < GN; ++gi)
    for (int c = 0; c < kChains; ++c) a[gi][c] = hn::Zero(df);
  size_t d = 0;
  for (; d + kChains * L <= D; d += kChains * L) {
    for (int c = 0; c < kChains; ++c) {
      const VF k = DecodeRow<kDT>(krow, d + c * L);
      for (int gi = 0; gi < GN; ++gi) a[gi][c] = hn::MulAdd(hn::LoadU(df, q + (g0 + gi) * D + d + c * L), k, a[gi][c]);
    }
  }
  for (; d + L <= D; d += L) {
    const VF k = DecodeRow<kDT>(krow, d);
    for (int gi = 0; gi < GN; ++gi) a[gi][0] = hn::MulAdd(hn::LoadU(df, q + (g0 + gi) * D + d), k, a[gi][0]);
  }
  for (int gi = 0; gi < GN; ++gi) {
    VF sum = a[gi][0];
    for (int c = 1; c < kChains; ++c) sum = hn::Add(sum, a[gi][c]);
    float s = hn::GetLane(hn::SumOfLanes(df, sum));
    for (size_t dd = d; dd < D; ++dd) s += q[(g0 + gi) * D + dd] * DecodeElement<kDT>(krow, dd);
    scores[(g0 + gi) * kDecodeChunk + j] = s * scale;
  }
}

// acc[g][0, D) += sum_j p[g][j] * V row j, for the GN heads g0.. of a group
// (acc rows Dp apart, p rows kDecodeChunk apart), 4 output vectors per head
// held in registers over the chunk.
template <DType kDT, int GN>
HWY_INLINE void AccumulateHeads(const float* HWY_RESTRICT p, size_t g0, const uint8_t* const* vrows, size_t nc,
                                size_t D, float* HWY_RESTRICT acc, size_t acc_stride) {
  const DF df;
  const size_t L = hn::Lanes(df);
  size_t d = 0;
  for (; d + 4 * L <= D; d += 4 * L) {
    VF a[GN][4];
    for (int gi = 0; gi < GN; ++gi)
      for (int i = 0; i < 4; ++i) a[gi][i] = hn::LoadU(df, acc + (g0 + gi) * acc_stride + d + i * L);
    for (size_t j = 0; j < nc; ++j) {
      VF v[4];
      for (int i = 0; i < 4; ++i) v[i] = DecodeRow<kDT>(vrows[j], d + i * L);
      for (int gi = 0; gi < GN; ++gi) {
        const VF w = hn::Set(df, p[(g0 + gi) * kDecodeChunk + j] * kInUnit<kDT>);
        for (int i = 0; i < 4; ++i) a[gi][i] = hn::MulAdd(w, v[i], a[gi][i]);
      }
    }
    for (int gi = 0; gi < GN; ++gi)
      for (int i = 0; i < 4; ++i) hn::StoreU(a[gi][i], df, acc + (g0 + gi) * acc_stride + d + i * L);
  }
  // A head_dim that is not a multiple of 4 vectors (32 on AVX-512: the demo
  // models): one vector at a time, then scalar.
  for (; d + L <= D; d += L) {
    VF a[GN];
    for (int gi = 0; gi < GN; ++gi) a[gi] = hn::LoadU(df, acc + (g0 + gi) * acc_stride + d);
    for (size_t j = 0; j < nc; ++j) {
      const VF v = DecodeRow<kDT>(vrows[j], d);
      for (int gi = 0; gi < GN; ++gi)
        a[gi] = hn::MulAdd(hn::Set(df, p[(g0 + gi) * kDecodeChunk + j] * kInUnit<kDT>), v, a[gi]);
    }
    for (int gi = 0; gi < GN; ++gi) hn::StoreU(a[gi], df, acc + (g0 + gi) * acc_stride + d);
  }
  for (; d < D; ++d) {
    for (int gi = 0; gi < GN; ++gi) {
      float s = 0;
      for (size_t j = 0; j < nc; ++j)
        s += p[(g0 + gi) * kDecodeChunk + j] * kInUnit<kDT> * DecodeElement<kDT>(vrows[j], d);
      acc[(g0 + gi) * acc_stride + d] += s;
    }
  }
}

template <DType kDT>
void DecodeRange(const AttentionJob& job, int64_t t, int64_t p0, int64_t p1, int64_t q_heads, float scale,
                 float* partial) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const KvPages& kv = job.kv;
  const size_t D = size_t(kv.head_dim), H = size_t(kv.kv_heads), G = size_t(q_heads) / H;
  const size_t stride = AttentionPartialStride(kv.head_dim);
  const size_t row_bytes = D * DTypeSize(kDT);
  const float* q = job.q + t * q_heads * int64_t(D);  // q_heads rows of D

  // Scratch: K/V position pointers (all heads of a position), then scores,
  // then (FP8) q times kInUnit.
  constexpr bool kScaled = kInUnit<kDT> != 1.0f;
  const size_t q_floats = kScaled ? size_t(q_heads) * D : 0;
  float* scratch = ThreadScratch(ScratchSlot::kAttention, 2 * kDecodeChunk * sizeof(void*) / sizeof(float) +
                                                              size_t(q_heads) * kDecodeChunk + q_floats);
  auto** kpos = reinterpret_cast<const uint8_t**>(scratch);
  const uint8_t** vpos = kpos + kDecodeChunk;
  float* scores = scratch + 2 * kDecodeChunk * sizeof(void*) / sizeof(float);  // [q_heads][kDecodeChunk]
  const uint8_t* vrows[kDecodeChunk];
  if constexpr (kScaled) {
    float* qs = scores + size_t(q_heads) * kDecodeChunk;
    for (size_t i = 0; i < q_floats; ++i) qs[i] = q[i] * kInUnit<kDT>;
    q = qs;
    scale *= kOutUnit<kDT>;
  }

  for (size_t h = 0; h < size_t(q_heads); ++h) {
    float* acc = partial + h * stride;
    std::fill(acc, acc + stride, 0.0f);
    acc[stride - 2] = kNegBig;  // m; l = acc[stride - 1] = 0
  }

  for (int64_t c0 = p0; c0 < p1; c0 += int64_t(kDecodeChunk)) {
    const size_t nc = size_t(std::min<int64_t>(int64_t(kDecodeChunk), p1 - c0));
    for (size_t j = 0; j < nc; ++j) {
      kpos[j] = KvRow<kDT>(kv, kv.k, c0 + int64_t(j), 0);
      vpos[j] = KvRow<kDT>(kv, kv.v, c0 + int64_t(j), 0);
    }
    // 1. Scores; every kv head's K row of a position in turn (one contiguous run).
    for (size_t j = 0; j < nc; ++j) {
      if (c0 + int64_t(j + kPrefetchAhead) < p1)
        PrefetchRow(KvRow<kDT>(kv, kv.k, c0 + int64_t(j + kPrefetchAhead), 0), H * row_bytes);
      PrefetchRow(vpos[j], H * row_bytes);
      for (size_t h = 0; h < H; ++h) {
        const uint8_t* krow = kpos[j] + h * row_bytes;
        const float* qh = q + h * G * D;
        float* sh = scores + h * G * kDecodeChunk;
        for (size_t g0 = 0; g0 < G; g0 += 4) {
          switch (std::min<size_t>(4, G - g0)) {
            case 4:
              ScoreHeads<kDT, 4>(qh, g0, D, krow, j, scale, sh);
              break;
            case 3:
              ScoreHeads<kDT, 3>(qh, g0, D, krow, j, scale, sh);
              break;
            case 2:
              ScoreHeads<kDT, 2>(qh, g0, D, krow, j, scale, sh);
              break;
            default:
              ScoreHeads<kDT, 1>(qh, g0, D, krow, j, scale, sh);
              break;
          }
        }
      }
    }
    // 2. Online softmax per query head.
    for (size_t h = 0; h < size_t(q_heads); ++h) {
      float* acc = partial + h * stride;
      const float alpha =
          SoftmaxUpdate(scores + h * kDecodeChunk, RoundUp(nc, L), nc, acc[stride - 2], acc[stride - 1]);
      if (alpha != 1.0f) ScaleRow(acc, stride - 16, alpha);
    }
    // 3. acc += P V, per kv head (its G query heads at once, 2 per register block).
    for (size_t h = 0; h < H; ++h) {
      for (size_t j = 0; j < nc; ++j) vrows[j] = vpos[j] + h * row_bytes;
      const float* ph = scores + h * G * kDecodeChunk;
      float* acc = partial + h * G * stride;
      for (size_t g0 = 0; g0 < G; g0 += 2) {
        if (G - g0 >= 2) {
          AccumulateHeads<kDT, 2>(ph, g0, vrows, nc, D, acc, stride);
        } else {
          AccumulateHeads<kDT, 1>(ph, g0, vrows, nc, D, acc, stride);
        }
      }
    }
  }
  if constexpr (kScaled) {
    for (size_t h = 0; h < size_t(q_heads); ++h) ScaleRow(partial + h * stride, stride - 16, kOutUnit<kDT>);
  }
}

}  // namespace

void DecodeRangeImpl(const AttentionJob& job, int64_t t, int64_t p0, int64_t p1, int64_t q_heads, float scale,
                     float* partial) {
  switch (job.kv.dtype) {
    case DType::kBF16:
      return DecodeRange<DType::kBF16>(job, t, p0, p1, q_heads, scale, partial);
    case DType::kF16:
      return DecodeRange<DType::kF16>(job, t, p0, p1, q_heads, scale, partial);
    case DType::kF8E4M3:  // k = e4m3 * k_scale; v_scale is applied to the output by PagedAttention
      return DecodeRange<DType::kF8E4M3>(job, t, p0, p1, q_heads, scale * job.kv.k_scale, partial);
    default:
      return DecodeRange<DType::kF32>(job, t, p0, p1, q_heads, scale, partial);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(DecodeRangeImpl);

void AttentionDecodeRange(const AttentionJob& job, int64_t t, int64_t p0, int64_t p1, int64_t q_heads, float scale,
                          float* partial) {
  HWY_DYNAMIC_DISPATCH(DecodeRangeImpl)(job, t, p0, p1, q_heads, scale, partial);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
