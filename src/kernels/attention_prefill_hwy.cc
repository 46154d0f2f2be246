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
#include "kernels/matmul_bf16dot.h"
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

// One row of S over the key block [kb0, kb0 + nk) for a query at qpos: keys
// past qpos masked, the online-softmax step over n columns (a multiple of
// the lanes; kRoundBf16: P rounded, SoftmaxUpdate), and the row of O (od
// floats, a multiple of the lanes) rescaled when the running max moved. A
// query before the whole block gets P = 0 and leaves m, l, O alone.
template <bool kRoundBf16>
void CausalSoftmaxRow(float* srow, size_t n, int64_t qpos, int64_t kb0, size_t nk, float& m, float& l, float* orow,
                      size_t od) {
  const size_t valid = size_t(std::clamp<int64_t>(qpos - kb0 + 1, 0, int64_t(nk)));
  if (valid == 0) {
    std::fill(srow, srow + nk, 0.0f);
    return;
  }
  const float alpha = SoftmaxUpdate<kRoundBf16>(srow, n, valid, m, l);
  if (alpha != 1.0f) ScaleRow(orow, od, alpha);
}

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
      float* srow = S + r * Bk;
      CausalSoftmaxRow<false>(srow, key_panels * NW, pos0 + int64_t(r / G), kb0, nk, m[r], l[r], O + r * Dp, Dp);
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

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// The same in the BF16-activation mode (attention_internal.h), on the
// AVX512-BF16 products of matmul_bf16dot.h: Q (pre-scaled), K, P and V
// rounded to BF16, S and O summed in f32. Key blocks of two 48-key panels;
// P is rounded by the softmax update (so l sums what P V multiplies) and
// packed into row tiles along the keys, V into pair panels of 48 dims.
void PrefillBlockBf16(const AttentionJob& job, int64_t kvh, int64_t t0, int64_t t1, int64_t q_heads, float scale) {
  namespace bd = bf16dot;
  const DF df;
  const size_t L = hn::Lanes(df);
  const KvPages& kv = job.kv;
  const size_t D = size_t(kv.head_dim), G = size_t(q_heads / kv.kv_heads), R = size_t(t1 - t0) * G;
  const size_t PC = bd::kPanelCols, TR = bd::kTileRows, Bk = 2 * PC, D2 = (D + 1) / 2;
  const size_t tiles = (R + TR - 1) / TR, dpanels = (D + PC - 1) / PC, Do = RoundUp(D, 16);  // O's row stride
  size_t at = 0;
  const auto take = [&](size_t floats) {
    const size_t here = at;
    at += RoundUp(floats, 16);  // 64-byte aligned pieces
    return here;
  };
  const size_t o_qf = take(R * D), o_qs = take(bd::RowTilesSize(R, D)), o_o = take(R * Do), o_s = take(R * Bk),
               o_ps = take(bd::RowTilesSize(R, Bk)), o_kp = take(2 * D2 * PC), o_vp = take(dpanels * (Bk / 2) * PC),
               o_m = take(R), o_l = take(R);
  float* scratch = ThreadScratch(ScratchSlot::kAttention, at);
  float *qf = scratch + o_qf, *O = scratch + o_o, *S = scratch + o_s, *m = scratch + o_m, *l = scratch + o_l;
  auto* qs = reinterpret_cast<uint32_t*>(scratch + o_qs);
  auto* ps = reinterpret_cast<uint32_t*>(scratch + o_ps);
  auto* kp = reinterpret_cast<uint32_t*>(scratch + o_kp);
  auto* vp = reinterpret_cast<uint32_t*>(scratch + o_vp);

  const int64_t pos0 = job.ctx_len - job.num_queries + t0;
  const auto q_row = [&](size_t r) {
    return job.q + ((t0 + int64_t(r / G)) * q_heads + kvh * int64_t(G) + int64_t(r % G)) * int64_t(D);
  };
  for (size_t r = 0; r < R; ++r) {
    const float* q = q_row(r);
    for (size_t d = 0; d < D; ++d) qf[r * D + d] = q[d] * scale;
  }
  bd::PackRowTiles(qf, R, D, D, qs);
  std::fill(O, O + R * Do, 0.0f);
  std::fill(m, m + R, kNegBig);
  std::fill(l, l + R, 0.0f);

  const DType dt = kv.dtype;
  const size_t row_bytes = D * DTypeSize(dt);
  const auto kv_row = [&](const void* pool, int64_t pos) -> const void* {  // (KvRow, the dtype known at run time)
    const int64_t block = kv.block_table[pos / kv.block_size], slot = pos % kv.block_size;
    return static_cast<const uint8_t*>(pool) +
           ((block * kv.block_size + slot) * kv.kv_heads + kvh) * kv.head_dim * int64_t(DTypeSize(dt));
  };
  const int64_t keys = std::max<int64_t>(0, pos0 + (t1 - t0));
  const void* rows[2 * bd::kPanelCols];
  for (int64_t kb0 = 0; kb0 < keys; kb0 += int64_t(Bk)) {
    const size_t nk = size_t(std::min<int64_t>(int64_t(Bk), keys - kb0));
    for (size_t j = 0; j < nk; ++j) PrefetchRow(static_cast<const uint8_t*>(kv_row(kv.v, kb0 + int64_t(j))), row_bytes);
    for (int64_t j = kb0 + int64_t(Bk); j < std::min(keys, kb0 + 2 * int64_t(Bk)); ++j)
      PrefetchRow(static_cast<const uint8_t*>(kv_row(kv.k, j)), row_bytes);
    // S = Q K^T over the block's keys (two panels of 48).
    const size_t kpanels = (nk + PC - 1) / PC;
    for (size_t j = 0; j < nk; ++j) rows[j] = kv_row(kv.k, kb0 + int64_t(j));
    for (size_t pk = 0; pk < kpanels; ++pk)
      bd::PackRowsPanel(rows + pk * PC, std::min(PC, nk - pk * PC), dt, D, kp + pk * D2 * PC);
    for (size_t t = 0; t < tiles; ++t) {
      const size_t mr = std::min(TR, R - t * TR);
      for (size_t pk = 0; pk < kpanels; ++pk)
        bd::TileProduct(mr, qs + t * D2 * TR, kp + pk * D2 * PC, D2, S + t * TR * Bk + pk * PC, Bk,
                        std::min(PC, nk - pk * PC), false);
    }
    // P = exp(S - m), rounded; O rescaled where the running max moved.
    const size_t n_soft = RoundUp(nk, L);
    for (size_t r = 0; r < R; ++r)
      CausalSoftmaxRow<true>(S + r * Bk, n_soft, pos0 + int64_t(r / G), kb0, nk, m[r], l[r], O + r * Do, Do);
    // O += P V.
    const size_t K2 = (nk + 1) / 2;
    bd::PackRowTiles(S, R, Bk, nk, ps);
    for (size_t j = 0; j < nk; ++j) rows[j] = kv_row(kv.v, kb0 + int64_t(j));
    for (size_t dp = 0; dp < dpanels; ++dp)
      bd::PackPairsPanel(rows, nk, dt, dp * PC, std::min(PC, D - dp * PC), vp + dp * K2 * PC);
    for (size_t t = 0; t < tiles; ++t) {
      const size_t mr = std::min(TR, R - t * TR);
      for (size_t dp = 0; dp < dpanels; ++dp)
        bd::TileProduct(mr, ps + t * K2 * TR, vp + dp * K2 * PC, K2, O + t * TR * Do + dp * PC, Do,
                        std::min(PC, D - dp * PC), true);
    }
  }
  for (size_t r = 0; r < R; ++r) {
    float* out = job.out + (q_row(r) - job.q);
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (size_t d = 0; d < D; ++d) out[d] = O[r * Do + d] * inv;
  }
}
#endif

}  // namespace

void PrefillTaskImpl(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads, float scale,
                     bool bf16) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (bf16 && job.kv.dtype != DType::kF8E4M3) return PrefillBlockBf16(job, kv_head, t0, t1, q_heads, scale);
#else
  (void)bf16;
#endif
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
                          float scale, bool bf16) {
  HWY_DYNAMIC_DISPATCH(PrefillTaskImpl)(job, t0, t1, kv_head, q_heads, scale, bf16);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
