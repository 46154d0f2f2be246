// MatMulSmallBatch (matmul_internal.h): y[M, N] = x[M, K] · W[N, K]^T for a
// few rows of x (batched decode; MatMul sends it dense BF16 or F32 W from
// the rows past what the GEMV reads W once for to 16, BF16 only below the
// BF16 GEMMs' thresholds on the amx and avx512-bf16 paths), written once with
// Highway and compiled per SIMD target.
//
// Why a third implementation. With 8-40 rows of x, each W element feeds
// 16-80 flops, so the product is compute-bound on a 2-core AVX2 machine
// (~175 GFLOP/s of FMA against ~20 GB/s), yet neither neighbour computes
// well there: the GEMV's dot-product tile makes one pass over each L2 chunk
// of W per 4 rows of x, and the GEMM packs (transposes) every W element into
// an f32 panel, which at 16 rows costs as much as the multiply-adds
// (PackPanel 16% and the micro-kernel 19% of a moe-small c=16 decode step,
// whose 151936-row BF16 lm_head runs at ~60 GFLOP/s either way).
//
// Design: the roles of the packed GEMM swapped. x is transposed once per call
// into xt[k][Mp] (Mp = MV vectors of rows of x, zero-padded; K * Mp floats,
// 128 KiB for K = 2048 and 16 rows: it stays in L2 for every tile). W is not
// packed at all: a tile is NR rows of W times the MV vectors, and for every k
// each W element is broadcast from its row (read where it lies, one
// sequential stream per row) and multiplied with the vectors of xt[k]:
//   acc[r][v] += W[n + r][k] * xt[k][v*L .. v*L + L)
// BF16: one 32-bit broadcast holds W[k] and W[k+1]; `<< 16` and
// `& 0xffff0000` make each an f32 broadcast, so a step of 2 k costs NR
// broadcast loads, 2*NR integer ops and 2*NR*MV FMAs (F32 W: NR broadcast
// loads per k; F16 W: a scalar conversion per element, correct but slow —
// no checkpoint tern serves keeps F16 weights in its large matrices).
// acc[r][v] is a vector over rows of x, so the tile's results are written
// to y transposed (NR * Mp scalar stores per tile, ~1% of its work at K=1024).
//
// Measured (AVX2, 2 threads, medians of 5 interleaved runs): 8 rows 1.35x
// (3072x1024) and 1.43x (151936x1024) faster than the better of the GEMV and
// the GEMM, 16 rows 1.03x / 1.21x; q06 BF16 served at concurrency 8: ITL
// 247 -> 189 ms. In isolation (W in cache) the 4x2 tile runs at ~1.8 FMAs per
// cycle; streaming W from memory halves that, prefetch or not — the next lever.
// From 17 rows the AVX2 tile is down to 1-2 W rows and the GEMM is faster
// (the 16-row cutoff in matmul.cc was measured on AVX2 only; AVX-512's
// register file would keep wider tiles to 32 rows).
//
// Numerics: every y element is one f32 FMA chain along k (f32 products and
// sums, within MatMul's contract).
// Quantized W is not handled here: it goes to MatMulGemv, so the function
// still has MatMul's contract for every W.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_small_batch_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/gemm_tile-inl.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;

// Rows of x per call of the tile: at most kMaxMV vectors.
constexpr int kMaxMV = 4;

// NR (rows of W per tile) for MV vectors of x: NR * MV accumulators, the 2 * MV
// x vectors of a step and ~3 temporaries within the register file (16
// vectors on AVX2 and older, 32 on AVX-512). Holding all NR broadcast pairs
// at once instead made GCC spill the accumulators.
template <int MV>
constexpr int NRFor() {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  constexpr int kRegs = 32;
#else
  constexpr int kRegs = 16;
#endif
  constexpr int nr = (kRegs - 2 * MV - 3) / MV;
  return nr > 12 ? 12 : nr < 1 ? 1 : nr;
}

// xt[k * Mp + i] = x[m0 + i][k] for i < rows, 0 for rows <= i < Mp.
void TransposeX(const float* x, size_t ldx, size_t m0, size_t rows, size_t Mp, size_t k0, size_t k1,
                float* HWY_RESTRICT xt) {
  for (size_t k = k0; k < k1; ++k) {
    float* out = xt + k * Mp;
    for (size_t i = 0; i < rows; ++i) out[i] = x[(m0 + i) * ldx + k];
    for (size_t i = rows; i < Mp; ++i) out[i] = 0.0f;
  }
}

// One tile: y[m0 + i][n0 + r] = sum_k W[n0 + r][k] * x[m0 + i][k] for r < nr
// (rows past nr repeat the last row; their results are dropped) and i < rows.
// `next` (null for the last tile of a chunk): the next tile's rows, requested
// a cache line at a time as this tile reads the same offsets of its own, so
// that each row does not start with a full memory latency.
template <DType kDT, class D, int NR, int MV>
HWY_NOINLINE void Tile(const uint8_t* const* wrows, const uint8_t* const* next, size_t nr,
                       const float* HWY_RESTRICT xt, size_t K, float* y, size_t ldy, size_t rows) {
  using V = hn::Vec<D>;
  const D df;
  const hn::RebindToUnsigned<D> du;
  const size_t L = hn::Lanes(df), Mp = MV * L;
  V acc[NR][MV];
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < MV; ++v) acc[r][v] = hn::Zero(df);

  size_t k = 0;
  if constexpr (kDT == DType::kBF16) {
    const auto hi_mask = hn::Set(du, 0xFFFF0000u);
    for (; k + 2 <= K; k += 2) {
      if (next != nullptr && (2 * k) % 64 == 0)
        for (int r = 0; r < NR; ++r) hwy::Prefetch(next[r] + 2 * k);
      V x0[MV], x1[MV];
      for (int v = 0; v < MV; ++v) {
        x0[v] = hn::Load(df, xt + k * Mp + v * L);
        x1[v] = hn::Load(df, xt + (k + 1) * Mp + v * L);
      }
      for (int r = 0; r < NR; ++r) {
        uint32_t bits;
        std::memcpy(&bits, wrows[r] + 2 * k, 4);
        const auto pair = hn::Set(du, bits);
        const V w0 = hn::BitCast(df, hn::ShiftLeft<16>(pair));
        for (int v = 0; v < MV; ++v) acc[r][v] = hn::MulAdd(w0, x0[v], acc[r][v]);
        const V w1 = hn::BitCast(df, hn::And(pair, hi_mask));
        for (int v = 0; v < MV; ++v) acc[r][v] = hn::MulAdd(w1, x1[v], acc[r][v]);
      }
    }
  }
  for (; k < K; ++k) {
    if (next != nullptr && kDT == DType::kF32 && k % 16 == 0)
      for (int r = 0; r < NR; ++r) hwy::Prefetch(next[r] + 4 * k);
    V x0[MV];
    for (int v = 0; v < MV; ++v) x0[v] = hn::Load(df, xt + k * Mp + v * L);
    for (int r = 0; r < NR; ++r) {
      const V w0 = hn::Set(df, gemm::ElementAsF32<kDT>(wrows[r], k));
      for (int v = 0; v < MV; ++v) acc[r][v] = hn::MulAdd(w0, x0[v], acc[r][v]);
    }
  }

  HWY_ALIGN float out[MV * HWY_MAX_BYTES / sizeof(float)] = {};
  for (size_t r = 0; r < nr; ++r) {
    for (int v = 0; v < MV; ++v) hn::Store(acc[r][v], df, out + v * L);
    for (size_t i = 0; i < rows; ++i) y[i * ldy + r] = out[i];
  }
}

// Rows [m0, m0 + rows) of x (rows <= MV * L, L the lanes of D) against every row of W.
template <DType kDT, int MV, class D = DF>
void RowGroup(const float* x, size_t ldx, size_t m0, size_t rows, const MatrixView& w, float* y, size_t ldy,
              ThreadPool& pool) {
  constexpr int NR = NRFor<MV>();
  const size_t L = hn::Lanes(D()), Mp = MV * L;
  const size_t K = size_t(w.cols), N = size_t(w.rows);
  float* xt = ThreadScratch(ScratchSlot::kMatMulX, K * Mp);
  if (K * rows >= (size_t(1) << 15)) {
    pool.ParallelFor(K, 64, [&](size_t b, size_t e, size_t) { TransposeX(x, ldx, m0, rows, Mp, b, e, xt); });
  } else {
    TransposeX(x, ldx, m0, rows, Mp, 0, K, xt);
  }
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = size_t(w.row_stride) * DTypeSize(kDT);
  // Chunks of whole tiles, ~8 per thread (the last one runs alone).
  const size_t tiles = (N + NR - 1) / NR;
  const size_t per_chunk = std::max<size_t>(1, (tiles + 8 * pool.size() - 1) / (8 * pool.size()));
  const size_t chunks = (tiles + per_chunk - 1) / per_chunk;
  pool.Run(chunks, [&](size_t c, size_t) {
    const size_t t1 = std::min(tiles, (c + 1) * per_chunk);
    for (size_t t = c * per_chunk; t < t1; ++t) {
      const size_t n0 = t * NR, nr = std::min<size_t>(NR, N - n0);
      const uint8_t* wrows[NR];
      const uint8_t* next[NR];
      for (int r = 0; r < NR; ++r) {
        wrows[r] = base + (n0 + std::min<size_t>(size_t(r), nr - 1)) * row_bytes;
        next[r] = base + std::min(n0 + NR + size_t(r), N - 1) * row_bytes;
      }
      Tile<kDT, D, NR, MV>(wrows, t + 1 < t1 ? next : nullptr, nr, xt, K, y + m0 * ldy + n0, ldy, rows);
    }
  });
}

template <DType kDT>
void Typed(const float* x, size_t M, size_t ldx, const MatrixView& w, float* y, size_t ldy, ThreadPool& pool) {
  const size_t L = hn::Lanes(DF());
  // Groups of at most kMaxMV vectors of rows, balanced (W is read once per group).
  const size_t max_rows = kMaxMV * L;
  const size_t groups = (M + max_rows - 1) / max_rows;
  for (size_t g = 0; g < groups; ++g) {
    const size_t m0 = g * M / groups, m1 = (g + 1) * M / groups, rows = m1 - m0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    // Half a 512-bit vector holds these rows: a 256-bit one does the same
    // work at the rate of 256-bit FMAs, twice the 512-bit rate on AMD Zen 4
    // (which runs a 512-bit FMA as two halves), and where 512-bit FMAs are
    // full rate (Intel; not measured) the same useful FMAs per cycle. AMD Zen 4, 2 threads, medians of 3, two interleaved
    // rounds, BM_SmallBatch<BF16> 8 rows: 3072 x 1024 661-726 -> 446-473 us
    // (avx2 439-453), 151936 x 1024 31.7-32.3 -> 21.2-21.4 ms (avx2 20.1).
    if (2 * rows <= L) {
      RowGroup<kDT, 1, hn::Half<DF>>(x, ldx, m0, rows, w, y, ldy, pool);
      continue;
    }
#endif
    switch ((rows + L - 1) / L) {
      case 1:
        RowGroup<kDT, 1>(x, ldx, m0, rows, w, y, ldy, pool);
        break;
      case 2:
        RowGroup<kDT, 2>(x, ldx, m0, rows, w, y, ldy, pool);
        break;
      case 3:
        RowGroup<kDT, 3>(x, ldx, m0, rows, w, y, ldy, pool);
        break;
      default:
        RowGroup<kDT, 4>(x, ldx, m0, rows, w, y, ldy, pool);
        break;
    }
  }
}

}  // namespace

void MatMulSmallBatchImpl(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                          ThreadPool& pool) {
  switch (w.dtype) {
    case DType::kBF16:
      return Typed<DType::kBF16>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
    case DType::kF16:
      return Typed<DType::kF16>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
    default:
      return Typed<DType::kF32>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(MatMulSmallBatchImpl);

void MatMulSmallBatch(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                      ThreadPool& pool) {
  if (M <= 0 || w.rows <= 0) return;
  if (w.format != WeightFormat::kDense) return MatMulGemv(x, M, ldx, w, y, ldy, pool);
  if (w.cols == 0) {
    for (int64_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + w.rows, 0.0f);
    return;
  }
  HWY_DYNAMIC_DISPATCH(MatMulSmallBatchImpl)(x, M, ldx, w, y, ldy, pool);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
