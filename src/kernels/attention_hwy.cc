// PagedAttention and KvWrite (ops.h), compiled per SIMD target.
//
// Work is split into tasks claimed by the pool's threads, largest first:
//
// * Decode (a job with at most kDecodeMaxQueries queries): one task per (job,
//   kv head). The G = q_heads / kv_heads query heads sharing the kv head are
//   processed together, so each K and V row is read once per step. Keys go in
//   chunks of kDecodeChunk positions: scores are dot products along head_dim,
//   then an online-softmax update (running max m, sum l, rescaled output),
//   then the output accumulates P * V with a register block of output
//   vectors. Bandwidth-bound on the KV cache, as decode is.
//
// * Prefill (more queries): one task per (job, kv head, block of queries), a
//   flash-attention loop over key blocks of kKeyBlock positions: the block's
//   rows of Q (every query of the block times the G heads, scaled) against
//   the key block, S = Q K^T, with the GEMM tile of gemm_tile-inl.h (K packed
//   as panels like W in MatMul); the online-softmax update turns S into P;
//   then O += P V with the same micro-kernel (V rows converted to f32 form the
//   panel). Causality only trims the key range and masks the diagonal block.
//
// Masked or not-yet-seen scores use kNegBig instead of -inf so that
// exp(m_old - m_new) and exp(s - m) are 0, never NaN.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/gemm_tile-inl.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using namespace gemm;  // NOLINT: DF, VF, the micro-kernel and the panel packer

constexpr float kNegBig = -1e30f;
constexpr int64_t kDecodeMaxQueries = 2;
constexpr size_t kDecodeChunk = 64;
// Rows of Q (queries x heads of a group) per prefill task.
constexpr size_t kPrefillRows = 96;

size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

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
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const DU du;
    return hn::BitCast(
        df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(row) + d))));
  }
}

// Row-wise online softmax update for one row of scores s[0, n) (n a multiple
// of L; entries at or past `valid` are masked). Replaces s by exp(s - m_new),
// and returns alpha = exp(m_old - m_new) after updating m and l.
HWY_INLINE float SoftmaxUpdate(float* HWY_RESTRICT s, size_t n, size_t valid, float& m, float& l) {
  const DF df;
  const DI di;
  const size_t L = hn::Lanes(df);
  const VF neg = hn::Set(df, kNegBig);
  VF vmax = neg;
  for (size_t j = 0; j < n; j += L) {
    const auto mask = hn::RebindMask(df, hn::Iota(di, int32_t(j)) < hn::Set(di, int32_t(valid)));
    const VF v = hn::IfThenElse(mask, hn::LoadU(df, s + j), neg);
    hn::StoreU(v, df, s + j);
    vmax = hn::Max(vmax, v);
  }
  const float m_new = std::max(m, hn::GetLane(hn::MaxOfLanes(df, vmax)));
  const VF vm = hn::Set(df, m_new);
  VF vsum = hn::Zero(df);
  for (size_t j = 0; j < n; j += L) {
    const VF p = hn::Exp(df, hn::Sub(hn::LoadU(df, s + j), vm));
    hn::StoreU(p, df, s + j);
    vsum = hn::Add(vsum, p);
  }
  const float alpha = std::exp(m - m_new);
  l = l * alpha + hn::GetLane(hn::SumOfLanes(df, vsum));
  m = m_new;
  return alpha;
}

HWY_INLINE void ScaleRow(float* HWY_RESTRICT row, size_t n, float alpha) {
  const DF df;
  const size_t L = hn::Lanes(df);
  const VF a = hn::Set(df, alpha);
  for (size_t d = 0; d < n; d += L) hn::StoreU(hn::Mul(hn::LoadU(df, row + d), a), df, row + d);
}

// ---------------------------------------------------------------- decode

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
    // Scores, up to 4 heads per pass over a K row.
    for (size_t j = 0; j < nc; ++j) {
      for (size_t g0 = 0; g0 < G; g0 += 4) {
        const size_t gn = std::min<size_t>(4, G - g0);
        VF a[4] = {hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
        size_t d = 0;
        for (; d + L <= D; d += L) {
          const VF k = LoadRow<kDT>(krows[j], d);
          for (size_t gi = 0; gi < gn; ++gi) a[gi] = hn::MulAdd(hn::LoadU(df, q + (g0 + gi) * D + d), k, a[gi]);
        }
        for (size_t gi = 0; gi < gn; ++gi) {
          float s = hn::GetLane(hn::SumOfLanes(df, a[gi]));
          for (size_t dd = d; dd < D; ++dd) s += q[(g0 + gi) * D + dd] * ElementAsF32<kDT>(krows[j], dd);
          scores[(g0 + gi) * kDecodeChunk + j] = s * scale;
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

// ---------------------------------------------------------------- prefill

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

// ---------------------------------------------------------------- tasks

struct Task {
  uint32_t job;
  int32_t kv_head;
  int64_t t0, t1;  // queries [t0, t1)
  bool decode;
  double cost;
};

template <DType kDT>
void RunTask(const Task& task, std::span<const AttentionJob> jobs, int64_t q_heads, float scale) {
  const AttentionJob& job = jobs[task.job];
  if (task.decode) {
    const size_t G = size_t(q_heads / job.kv.kv_heads);
    float* scratch = ThreadScratch(ScratchSlot::kAttention, DecodeScratchFloats(G, size_t(job.kv.head_dim)));
    for (int64_t t = task.t0; t < task.t1; ++t) DecodeGroup<kDT>(job, t, task.kv_head, q_heads, scale, scratch);
  } else {
    PrefillBlock<kDT>(job, task.kv_head, task.t0, task.t1, q_heads, scale);
  }
}

}  // namespace

void PagedAttentionImpl(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool) {
  thread_local std::vector<Task> tasks;
  tasks.clear();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const AttentionJob& job = jobs[j];
    if (job.num_queries <= 0) continue;
    if (job.kv.dtype != DType::kF32 && job.kv.dtype != DType::kBF16) {
      ref::PagedAttention(jobs.subspan(j, 1), q_heads, scale);  // outside the contract: slow but right
      continue;
    }
    const int64_t G = q_heads / job.kv.kv_heads;
    const int64_t block =
        job.num_queries <= kDecodeMaxQueries ? job.num_queries : std::max<int64_t>(1, int64_t(kPrefillRows) / G);
    for (int64_t t0 = 0; t0 < job.num_queries; t0 += block) {
      const int64_t t1 = std::min(job.num_queries, t0 + block);
      const int64_t last_pos = job.ctx_len - job.num_queries + t1;
      for (int32_t h = 0; h < job.kv.kv_heads; ++h)
        tasks.push_back(
            {uint32_t(j), h, t0, t1, job.num_queries <= kDecodeMaxQueries, double(t1 - t0) * double(last_pos)});
    }
  }
  // Largest first, so the long causal blocks do not finish last.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.cost > b.cost; });
  const std::vector<Task>& all = tasks;
  pool.Run(all.size(), [&](size_t i, size_t) {
    const Task& task = all[i];
    if (jobs[task.job].kv.dtype == DType::kBF16) {
      RunTask<DType::kBF16>(task, jobs, q_heads, scale);
    } else {
      RunTask<DType::kF32>(task, jobs, q_heads, scale);
    }
  });
}

void KvWriteImpl(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  const DF df;
  const DI di;
  const DU du;
  const hn::Rebind<uint16_t, DF> du16;
  const size_t L = hn::Lanes(df), D = size_t(kv.head_dim);
  const size_t esize = DTypeSize(kv.dtype);
  if (kv.dtype != DType::kF32 && kv.dtype != DType::kBF16) return ref::KvWrite(kv, start, tokens, k, v);
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

HWY_EXPORT(PagedAttentionImpl);
HWY_EXPORT(KvWriteImpl);

void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(PagedAttentionImpl)(jobs, q_heads, scale, pool);
}

void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  HWY_DYNAMIC_DISPATCH(KvWriteImpl)(kv, start, tokens, k, v);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
