// Prefill attention (attention_internal.h): one task is one job's block of
// queries with the G heads sharing one kv head, a flash-attention loop over
// key blocks: the block's rows of Q (queries x heads, pre-scaled) against a
// key block, S = Q K^T, with the GEMM tile of gemm_tile-inl.h (K packed as
// panels like W in MatMul); the online-softmax update turns S into P; then
// O += P V with the same micro-kernel (V rows converted to f32 form the
// panel). Causality only trims the key range and masks the diagonal block.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_prefill_hwy.cc"
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

struct PrefillLayout {
  size_t D, Dp, G, rows, tiles, key_block;
  size_t qs, o, s, ps, kt, vp, m, l, total;  // offsets into scratch, in floats

  PrefillLayout(size_t head_dim, size_t group, size_t queries) {
    const size_t NW = PanelWidth();
    D = head_dim;
    Dp = RoundUp(D, NW);
    G = group;
    rows = queries * G;
    tiles = (rows + kMR - 1) / kMR;
    key_block = RoundUp(64, NW);
    size_t at = 0;
    const auto take = [&](size_t floats) {
      const size_t here = at;
      at += RoundUp(floats, 16);  // 64-byte aligned pieces
      return here;
    };
    qs = take(tiles * kMR * D);          // packed Q tiles: [tile][d][kMR]
    o = take(tiles * kMR * Dp);          // O: [row][Dp]
    s = take(tiles * kMR * key_block);   // S, then P: [row][key_block]
    ps = take(tiles * key_block * kMR);  // P packed as row tiles: [tile][key][kMR]
    kt = take(key_block * D);            // K panels: [panel][d][NW]
    vp = take(key_block * Dp);           // V rows as f32: [key][Dp]
    m = take(rows);
    l = take(rows);
    total = at;
  }
};

// Queries [t0, t1) of `job` with the G heads of kv head kvh.
template <DType kDT>
void PrefillBlock(const AttentionJob& job, int64_t kvh, int64_t t0, int64_t t1, int64_t q_heads, float scale) {
  const DF df;
  const size_t L = hn::Lanes(df), NW = PanelWidth();
  const KvPages& kv = job.kv;
  const PrefillLayout lay(size_t(kv.head_dim), size_t(q_heads / kv.kv_heads), size_t(t1 - t0));
  const size_t D = lay.D, Dp = lay.Dp, G = lay.G, R = lay.rows, Bk = lay.key_block;
  float* scratch = ThreadScratch(ScratchSlot::kAttention, lay.total);
  float *qs = scratch + lay.qs, *O = scratch + lay.o, *S = scratch + lay.s, *ps = scratch + lay.ps;
  float *kt = scratch + lay.kt, *vp = scratch + lay.vp, *m = scratch + lay.m, *l = scratch + lay.l;

  const int64_t pos0 = job.ctx_len - job.num_queries + t0;  // position of query t0
  // Row r is query t0 + r / G, head kvh * G + r % G.
  const auto q_row = [&](size_t r) {
    return job.q + ((t0 + int64_t(r / G)) * q_heads + kvh * int64_t(G) + int64_t(r % G)) * int64_t(D);
  };
  for (size_t r = 0; r < lay.tiles * kMR; ++r) {
    float* tile = qs + (r / kMR) * D * kMR + r % kMR;
    if (r < R) {
      const float* q = q_row(r);
      for (size_t d = 0; d < D; ++d) tile[d * kMR] = q[d] * scale;
    } else {
      for (size_t d = 0; d < D; ++d) tile[d * kMR] = 0.0f;
    }
  }
  std::fill(O, O + R * Dp, 0.0f);
  std::fill(m, m + R, kNegBig);
  std::fill(l, l + R, 0.0f);

  const int64_t keys = std::max<int64_t>(0, pos0 + (t1 - t0));  // keys 0 .. last query's position
  for (int64_t kb0 = 0; kb0 < keys; kb0 += int64_t(Bk)) {
    const size_t nk = size_t(std::min<int64_t>(int64_t(Bk), keys - kb0));
    const size_t key_panels = (nk + NW - 1) / NW;
    // One head's K and V rows are scattered (a slice of every position), which
    // hardware prefetchers follow poorly: request this block's V rows now
    // (used after S and the softmax) and the next block's K rows.
    const size_t row_bytes = D * DTypeSize(kDT);
    for (size_t j = 0; j < nk; ++j) PrefetchRow(KvRow<kDT>(kv, kv.v, kb0 + int64_t(j), kvh), row_bytes);
    for (int64_t j = kb0 + int64_t(Bk); j < std::min(keys, kb0 + 2 * int64_t(Bk)); ++j)
      PrefetchRow(KvRow<kDT>(kv, kv.k, j, kvh), row_bytes);
    for (size_t pk = 0; pk < key_panels; ++pk) {
      const uint8_t* rows[kNV * HWY_MAX_BYTES / sizeof(float)];
      for (size_t j = 0; j < NW; ++j) rows[j] = KvRow<kDT>(kv, kv.k, kb0 + int64_t(std::min(pk * NW + j, nk - 1)), kvh);
      PackPanel<kDT>(rows, 0, D, kt + pk * D * NW);
    }
    for (size_t t = 0; t < lay.tiles; ++t) {
      const size_t mr = std::min<size_t>(kMR, R - t * kMR);
      for (size_t pk = 0; pk < key_panels; ++pk)
        MicroKernelFor(mr, qs + t * D * kMR, kt + pk * D * NW, NW, D, S + t * kMR * Bk + pk * NW, Bk, NW, false);
    }
    for (size_t r = 0; r < R; ++r) {
      const int64_t qpos = pos0 + int64_t(r / G);
      const size_t valid = size_t(std::clamp<int64_t>(qpos - kb0 + 1, 0, int64_t(nk)));
      float* srow = S + r * Bk;
      if (valid == 0) {
        std::fill(srow, srow + nk, 0.0f);
      } else {
        const float alpha = SoftmaxUpdate(srow, key_panels * NW, valid, m[r], l[r]);
        if (alpha != 1.0f) ScaleRow(O + r * Dp, Dp, alpha);
      }
      float* prow = ps + (r / kMR) * Bk * kMR + r % kMR;
      for (size_t j = 0; j < nk; ++j) prow[j * kMR] = srow[j];
    }
    for (size_t j = 0; j < nk; ++j) {
      const uint8_t* v = KvRow<kDT>(kv, kv.v, kb0 + int64_t(j), kvh);
      float* dst = vp + j * Dp;
      size_t d = 0;
      for (; d + L <= D; d += L) hn::Store(LoadRow<kDT>(v, d), df, dst + d);
      for (; d < D; ++d) dst[d] = ElementAsF32<kDT>(v, d);
      std::fill(dst + D, dst + Dp, 0.0f);
    }
    for (size_t t = 0; t < lay.tiles; ++t) {
      const size_t mr = std::min<size_t>(kMR, R - t * kMR);
      for (size_t dp = 0; dp < Dp; dp += NW)
        MicroKernelFor(mr, ps + t * Bk * kMR, vp + dp, Dp, nk, O + t * kMR * Dp + dp, Dp, NW, true);
    }
  }
  for (size_t r = 0; r < R; ++r) {
    float* out = job.out + (q_row(r) - job.q);
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (size_t d = 0; d < D; ++d) out[d] = O[r * Dp + d] * inv;
  }
}

}  // namespace

void PrefillTaskImpl(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads, float scale) {
  if (job.kv.dtype == DType::kBF16) {
    PrefillBlock<DType::kBF16>(job, kv_head, t0, t1, q_heads, scale);
  } else if (job.kv.dtype == DType::kF16) {
    PrefillBlock<DType::kF16>(job, kv_head, t0, t1, q_heads, scale);
  } else if (job.kv.dtype == DType::kF8E4M3) {  // v_scale: applied to the output by PagedAttention
    PrefillBlock<DType::kF8E4M3>(job, kv_head, t0, t1, q_heads, scale * job.kv.k_scale);
  } else {
    PrefillBlock<DType::kF32>(job, kv_head, t0, t1, q_heads, scale);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(PrefillTaskImpl);

void AttentionPrefillTask(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads,
                          float scale) {
  HWY_DYNAMIC_DISPATCH(PrefillTaskImpl)(job, t0, t1, kv_head, q_heads, scale);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
