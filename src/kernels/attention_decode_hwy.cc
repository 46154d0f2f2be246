// Decode attention (attention_internal.h): one task is one job's few queries
// with the G = q_heads / kv_heads query heads sharing one kv head, processed
// together so each K and V row is read once per step. Keys go in chunks of
// kDecodeChunk positions: scores are dot products along head_dim (K rows
// prefetched ahead: one head's slice of each position is scattered, which the
// hardware prefetchers see little of), then the online-softmax update
// (running max m, sum l, output rescaled), then the output accumulates P * V
// with a register block of output vectors. Bandwidth-bound on the KV cache,
// as decode is.

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
using namespace gemm;       // NOLINT: DF, VF, the micro-kernel and the panel packer
using namespace attention;  // NOLINT: KvRow, LoadRow, SoftmaxUpdate, ...

constexpr size_t kDecodeChunk = 64;

// K rows prefetched ahead of the score loop.
constexpr size_t kPrefetchRows = 8;

// scores[g * kDecodeChunk + j] = scale * q[g] . K row j, for the GN heads g0.. of a group.
template <DType kDT, int GN>
HWY_INLINE void ScoreHeads(const float* HWY_RESTRICT q, size_t g0, size_t D, const uint8_t* krow, size_t j, float scale,
                           float* HWY_RESTRICT scores) {
  const DF df;
  const size_t L = hn::Lanes(df);
  VF a[GN];
  for (int gi = 0; gi < GN; ++gi) a[gi] = hn::Zero(df);
  size_t d = 0;
  for (; d + L <= D; d += L) {
    const VF k = LoadRow<kDT>(krow, d);
    for (int gi = 0; gi < GN; ++gi) a[gi] = hn::MulAdd(hn::LoadU(df, q + (g0 + gi) * D + d), k, a[gi]);
  }
  for (int gi = 0; gi < GN; ++gi) {
    float s = hn::GetLane(hn::SumOfLanes(df, a[gi]));
    for (size_t dd = d; dd < D; ++dd) s += q[(g0 + gi) * D + dd] * ElementAsF32<kDT>(krow, dd);
    scores[(g0 + gi) * kDecodeChunk + j] = s * scale;
  }
}

// Query t of `job`, the G heads of kv head kvh. scratch: >= DecodeScratchFloats.
size_t DecodeScratchFloats(size_t G, size_t D) {
  return 2 * kDecodeChunk * sizeof(void*) / sizeof(float) + G * RoundUp(D, hn::Lanes(DF())) + G * kDecodeChunk + 2 * G;
}

template <DType kDT>
void DecodeGroup(const AttentionJob& job, int64_t t, int64_t kvh, int64_t q_heads, float scale, float* scratch) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const KvPages& kv = job.kv;
  const size_t D = size_t(kv.head_dim), G = size_t(q_heads / kv.kv_heads), Dp = RoundUp(D, L);
  const int64_t qpos = job.ctx_len - job.num_queries + t;
  const float* q = job.q + (t * q_heads + kvh * int64_t(G)) * int64_t(D);  // G rows of D
  float* out = job.out + (t * q_heads + kvh * int64_t(G)) * int64_t(D);
  if (qpos < 0) {  // no context at all: outside the contract; define it as zeros
    std::fill(out, out + G * D, 0.0f);
    return;
  }
  // scratch (64-byte aligned): row pointers first, then floats.
  auto** krows = reinterpret_cast<const uint8_t**>(scratch);                // [kDecodeChunk]
  const uint8_t** vrows = krows + kDecodeChunk;                             // [kDecodeChunk]
  float* acc = scratch + 2 * kDecodeChunk * sizeof(void*) / sizeof(float);  // [G][Dp]
  float* scores = acc + G * Dp;                                             // [G][kDecodeChunk]
  float* m = scores + G * kDecodeChunk;                                     // [G]
  float* l = m + G;                                                         // [G]
  std::fill(acc, acc + G * Dp, 0.0f);
  std::fill(m, m + G, kNegBig);
  std::fill(l, l + G, 0.0f);

  const size_t n = size_t(qpos) + 1;
  for (size_t p0 = 0; p0 < n; p0 += kDecodeChunk) {
    const size_t nc = std::min(kDecodeChunk, n - p0);
    for (size_t j = 0; j < nc; ++j) {
      krows[j] = KvRow<kDT>(kv, kv.k, int64_t(p0 + j), kvh);
      vrows[j] = KvRow<kDT>(kv, kv.v, int64_t(p0 + j), kvh);
    }
    // Scores, up to 4 heads per pass over a K row. The rows are scattered
    // (one head's slice of each position), so the hardware prefetchers see
    // little: fetch K a few rows ahead, and this chunk's V for the pass below.
    const size_t row_bytes = D * DTypeSize(kDT);
    for (size_t j = 0; j < std::min(nc, kPrefetchRows); ++j) PrefetchRow(krows[j], row_bytes);
    for (size_t j = 0; j < nc; ++j) {
      if (j + kPrefetchRows < nc) PrefetchRow(krows[j + kPrefetchRows], row_bytes);
      PrefetchRow(vrows[j], row_bytes);
      for (size_t g0 = 0; g0 < G; g0 += 4) {
        switch (std::min<size_t>(4, G - g0)) {
          case 4:
            ScoreHeads<kDT, 4>(q, g0, D, krows[j], j, scale, scores);
            break;
          case 3:
            ScoreHeads<kDT, 3>(q, g0, D, krows[j], j, scale, scores);
            break;
          case 2:
            ScoreHeads<kDT, 2>(q, g0, D, krows[j], j, scale, scores);
            break;
          default:
            ScoreHeads<kDT, 1>(q, g0, D, krows[j], j, scale, scores);
            break;
        }
      }
    }
    for (size_t g = 0; g < G; ++g) {
      const float alpha = SoftmaxUpdate(scores + g * kDecodeChunk, RoundUp(nc, L), nc, m[g], l[g]);
      if (alpha != 1.0f) ScaleRow(acc + g * Dp, Dp, alpha);
    }
    // acc[g] += sum_j P[g][j] * V[j]: blocks of 2 heads x 4 vectors in registers.
    for (size_t g0 = 0; g0 < G; g0 += 2) {
      const size_t gn = std::min<size_t>(2, G - g0);
      const float* p0row = scores + g0 * kDecodeChunk;
      const float* p1row = scores + (g0 + gn - 1) * kDecodeChunk;
      float* acc0 = acc + g0 * Dp;
      float* acc1 = acc + (g0 + gn - 1) * Dp;
      size_t d = 0;
      for (; d + 4 * L <= D; d += 4 * L) {
        VF a0[4], a1[4];
        for (int i = 0; i < 4; ++i) {
          a0[i] = hn::LoadU(df, acc0 + d + i * L);
          a1[i] = hn::LoadU(df, acc1 + d + i * L);
        }
        for (size_t j = 0; j < nc; ++j) {
          const VF w0 = hn::Set(df, p0row[j]), w1 = hn::Set(df, p1row[j]);
          for (int i = 0; i < 4; ++i) {
            const VF v = LoadRow<kDT>(vrows[j], d + i * L);
            a0[i] = hn::MulAdd(w0, v, a0[i]);
            a1[i] = hn::MulAdd(w1, v, a1[i]);
          }
        }
        for (int i = 0; i < 4; ++i) {
          hn::StoreU(a0[i], df, acc0 + d + i * L);
          if (gn == 2) hn::StoreU(a1[i], df, acc1 + d + i * L);
        }
      }
      for (; d < D; ++d) {  // a head_dim that is not a multiple of 4 vectors
        for (size_t gi = 0; gi < gn; ++gi) {
          const float* prow = scores + (g0 + gi) * kDecodeChunk;
          float s = 0;
          for (size_t j = 0; j < nc; ++j) s += prow[j] * ElementAsF32<kDT>(vrows[j], d);
          acc[(g0 + gi) * Dp + d] += s;
        }
      }
    }
  }
  for (size_t g = 0; g < G; ++g)
    for (size_t d = 0; d < D; ++d) out[g * D + d] = acc[g * Dp + d] / l[g];
}

}  // namespace

void DecodeTaskImpl(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads, float scale) {
  const size_t G = size_t(q_heads / job.kv.kv_heads);
  float* scratch = ThreadScratch(ScratchSlot::kAttention, DecodeScratchFloats(G, size_t(job.kv.head_dim)));
  for (int64_t t = t0; t < t1; ++t) {
    if (job.kv.dtype == DType::kBF16) {
      DecodeGroup<DType::kBF16>(job, t, kv_head, q_heads, scale, scratch);
    } else if (job.kv.dtype == DType::kF16) {
      DecodeGroup<DType::kF16>(job, t, kv_head, q_heads, scale, scratch);
    } else {
      DecodeGroup<DType::kF32>(job, t, kv_head, q_heads, scale, scratch);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(DecodeTaskImpl);

void AttentionDecodeTask(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads,
                         float scale) {
  HWY_DYNAMIC_DISPATCH(DecodeTaskImpl)(job, t0, t1, kv_head, q_heads, scale);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
