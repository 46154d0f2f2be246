// MatMul for many rows of x (prefill, large batches): a packed GEMM,
// y[M, N] = x[M, K] · W[N, K]^T with W in F32, BF16 or F16, compiled per SIMD
// target. Small M goes to matmul_gemv_hwy.cc instead (see matmul.cc).
//
// Design (the classic blocked GEMM):
// * Micro-kernel: an MR x NW tile of y (NW = NV vectors of columns) kept in
//   MR*NV accumulators; per k it loads NV vectors of a packed W panel and
//   broadcasts MR values of x: MR*NV FMAs for NV + MR loads, with MR*NV
//   independent dependency chains. No horizontal sums.
// * Packing: a panel is NW rows of W over a block of KC columns, stored
//   k-major as f32 (panel[k][j] = W[n + j][k]), so the micro-kernel's loads are
//   contiguous. Packing converts each W element once per call (in-register
//   4x4 transposes of 32-bit units, see PackPanel); the panel is then reused
//   by every row tile of x, which amortizes it over M.
// * x is packed once per call into row tiles, k-major (MR values per k), so
//   the micro-kernel's broadcasts read one contiguous stream.
// * Blocking and threads: a task is a chunk of NC columns of y (whole panels)
//   and packs its panels first, reading each W row sequentially over all of K.
//   Then, per K block of KC columns and per block of row tiles (x block in
//   L2), each panel slice (KC*NW floats, L1) is reused by all the block's row
//   tiles. Tasks are claimed dynamically by the pool's threads.
//
// Register budget: MR*NV accumulators + NV panel vectors + 1 broadcast
// (AVX2: 6*2 + 2 + 1 = 15 of 16; AVX-512: 8*3 + 3 + 1 = 28 of 32).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_gemm_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kMR = 8, kNV = 3;
#elif HWY_TARGET == HWY_SCALAR
constexpr int kMR = 4, kNV = 4;
#else
constexpr int kMR = 6, kNV = 2;
#endif

// Columns of K per block: an x sliver (kMR * kKC floats) fits L1 with room
// for the panel vectors streaming past it.
constexpr size_t kKC = 256;

HWY_INLINE size_t PanelWidth() { return kNV * hn::Lanes(DF()); }

#if HWY_TARGET != HWY_SCALAR  // (SCALAR packs with the scalar loop only)
// Loads 16 bytes from each of `blocks` (one pointer per 128-bit block of a
// vector) into one vector of u32: block b of the result comes from blocks[b].
HWY_INLINE hn::Vec<DU> LoadBlocks(const uint8_t* const* blocks) {
  const DU du;
  const hn::Full128<uint32_t> d128;
  const auto load = [&](int b) { return hn::LoadU(d128, reinterpret_cast<const uint32_t*>(blocks[b])); };
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::Full256<uint32_t> d256;
  return hn::Combine(du, hn::Combine(d256, load(3), load(2)), hn::Combine(d256, load(1), load(0)));
#elif HWY_TARGET == HWY_AVX2
  return hn::Combine(du, load(1), load(0));
#else
  static_assert(HWY_MAX_BYTES == 16, "one block per vector");
  return load(0);
#endif
}
#endif  // HWY_TARGET != HWY_SCALAR

// Stores the f32 values of a vector of 32-bit units (a pair of 16-bit values,
// or one f32) as panel rows: unit `pair` goes to out (and out + NW for its
// second element).
template <DType kDT>
HWY_INLINE void StoreUnits(hn::Vec<DU> units, float* HWY_RESTRICT out, size_t NW) {
  const DF df;
  const DU du;
  const DI di;
  if constexpr (kDT == DType::kF32) {
    hn::Store(hn::BitCast(df, units), df, out);
  } else if constexpr (kDT == DType::kBF16) {
    hn::Store(hn::BitCast(df, hn::ShiftLeft<16>(units)), df, out);
    hn::Store(hn::BitCast(df, hn::And(units, hn::Set(du, 0xFFFF0000u))), df, out + NW);
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto lo = hn::BitCast(di, hn::And(units, hn::Set(du, 0xFFFFu)));
    const auto hi = hn::BitCast(di, hn::ShiftRight<16>(units));
    hn::Store(hn::PromoteTo(df, hn::BitCast(dh, hn::DemoteTo(du16, lo))), df, out);
    hn::Store(hn::PromoteTo(df, hn::BitCast(dh, hn::DemoteTo(du16, hi))), df, out + NW);
  }
}

// Packs W rows [n0, n0 + NW) over columns [k0, k1) into panel[(k - k0) * NW + j]
// as f32. Rows at or past n_end repeat row n_end - 1 (their results are
// dropped), so every load stays inside W.
//
// The transpose works on 32-bit units (a pair of bf16/f16 columns, or one f32
// column): 16 bytes = 4 units from each of 4 rows per 128-bit block, then a
// 4x4 transpose inside every block (two rounds of interleaves) leaves vector q
// holding unit q of L consecutive rows, in order.
constexpr size_t kPackPrefetchBytes = 512;

template <DType kDT>
void PackPanel(const MatrixView& w, size_t n0, size_t n_end, size_t k0, size_t k1, float* HWY_RESTRICT panel) {
  const size_t NW = PanelWidth();
  const size_t row_bytes = size_t(w.row_stride) * DTypeSize(kDT);
  const auto* base = static_cast<const uint8_t*>(w.data);
  [[maybe_unused]] const uint8_t* rows[kNV * HWY_MAX_BYTES / 4];
  for (size_t j = 0; j < NW; ++j) rows[j] = base + std::min(n0 + j, n_end - 1) * row_bytes;

  size_t k = k0;
#if HWY_TARGET != HWY_SCALAR
  const DU du;
  const hn::Repartition<uint64_t, DF> du64;
  const size_t L = hn::Lanes(DF()), blocks = L / 4;
  constexpr size_t kUnitCols = kDT == DType::kF32 ? 1 : 2;  // columns per 32-bit unit
  for (; k + 4 * kUnitCols <= k1; k += 4 * kUnitCols) {
    const size_t byte = k * DTypeSize(kDT);
    float* out = panel + (k - k0) * NW;
    // W usually comes from memory: keep a few cache lines of every row in flight.
    if (byte % 64 == 0)
      for (size_t j = 0; j < NW; ++j) hwy::Prefetch(rows[j] + byte + kPackPrefetchBytes);
    for (int v = 0; v < kNV; ++v) {
      // a[r], block b: 4 units of row v*L + 4b + r.
      hn::Vec<DU> a[4];
      for (size_t r = 0; r < 4; ++r) {
        const uint8_t* src[4];
        for (size_t b = 0; b < blocks; ++b) src[b] = rows[v * L + 4 * b + r] + byte;
        a[r] = LoadBlocks(src);
      }
      const auto t0 = hn::BitCast(du64, hn::InterleaveLower(du, a[0], a[1]));  // r0u0 r1u0 r0u1 r1u1
      const auto t1 = hn::BitCast(du64, hn::InterleaveLower(du, a[2], a[3]));  // r2u0 r3u0 r2u1 r3u1
      const auto t2 = hn::BitCast(du64, hn::InterleaveUpper(du, a[0], a[1]));  // r0u2 r1u2 r0u3 r1u3
      const auto t3 = hn::BitCast(du64, hn::InterleaveUpper(du, a[2], a[3]));  // r2u2 r3u2 r2u3 r3u3
      float* o = out + v * L;
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveLower(du64, t0, t1)), o, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveUpper(du64, t0, t1)), o + kUnitCols * NW, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveLower(du64, t2, t3)), o + 2 * kUnitCols * NW, NW);
      StoreUnits<kDT>(hn::BitCast(du, hn::InterleaveUpper(du64, t2, t3)), o + 3 * kUnitCols * NW, NW);
    }
  }
#endif
  for (; k < k1; ++k) {  // the last few columns (or all, on SCALAR)
    for (size_t j = 0; j < NW; ++j) {
      const int64_t n = int64_t(std::min(n0 + j, n_end - 1));
      panel[(k - k0) * NW + j] = ref::MatrixAt(w, n, int64_t(k));
    }
  }
}

// y tile (MR x cols_valid, at y with stride ldy) = or += the sum over k < kc
// of xs[k * kMR + i] * panel[k * NW + j]: xs is a packed sliver of x (kMR
// rows interleaved per k), panel a packed slice of W.
template <int MR>
HWY_NOINLINE void MicroKernel(const float* HWY_RESTRICT xs, const float* HWY_RESTRICT panel, size_t kc, float* y,
                              size_t ldy, size_t cols_valid, bool accumulate) {
  const DF df;
  const size_t L = hn::Lanes(df), NW = PanelWidth();
  VF acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = hn::Zero(df);

  for (size_t k = 0; k < kc; ++k) {
    VF b[kNV];
    HWY_UNROLL(8)
    for (int v = 0; v < kNV; ++v) b[v] = hn::Load(df, panel + k * NW + v * L);
    HWY_UNROLL(8)
    for (int i = 0; i < MR; ++i) {
      const VF a = hn::Set(df, xs[k * kMR + i]);
      HWY_UNROLL(8)
      for (int v = 0; v < kNV; ++v) acc[i][v] = hn::MulAdd(a, b[v], acc[i][v]);
    }
  }

  for (int i = 0; i < MR; ++i) {
    float* yi = y + i * ldy;
    if (cols_valid == NW) {
      for (int v = 0; v < kNV; ++v) {
        VF r = acc[i][v];
        if (accumulate) r = hn::Add(r, hn::LoadU(df, yi + v * L));
        hn::StoreU(r, df, yi + v * L);
      }
    } else {
      HWY_ALIGN float tile[kNV * HWY_MAX_BYTES / sizeof(float)] = {};
      for (int v = 0; v < kNV; ++v) hn::Store(acc[i][v], df, tile + v * L);
      for (size_t j = 0; j < cols_valid; ++j) yi[j] = accumulate ? yi[j] + tile[j] : tile[j];
    }
  }
}

// MicroKernel<mr> for a run-time mr in [1, kMR] (the last, partial row tile).
template <int MR = kMR>
void MicroKernelFor(size_t mr, const float* xs, const float* panel, size_t kc, float* y, size_t ldy,
                    size_t cols_valid, bool accumulate) {
  if constexpr (MR >= 1) {
    if (mr == MR) return MicroKernel<MR>(xs, panel, kc, y, ldy, cols_valid, accumulate);
    if constexpr (MR > 1) MicroKernelFor<MR - 1>(mr, xs, panel, kc, y, ldy, cols_valid, accumulate);
  }
}

// Packs row tiles [t0, t1) of x: xs[t * K * kMR + k * kMR + i] = x[t * kMR + i][k],
// zero for rows past M.
void PackX(const float* x, size_t M, size_t ldx, size_t K, size_t t0, size_t t1, float* HWY_RESTRICT xs) {
  for (size_t t = t0; t < t1; ++t) {
    float* out = xs + t * K * kMR;
    for (size_t i = 0; i < size_t(kMR); ++i) {
      const size_t m = t * kMR + i;
      if (m < M) {
        const float* row = x + m * ldx;
        for (size_t k = 0; k < K; ++k) out[k * kMR + i] = row[k];
      } else {
        for (size_t k = 0; k < K; ++k) out[k * kMR + i] = 0.0f;
      }
    }
  }
}

template <DType kDT>
void GemmTyped(const float* x, size_t M, size_t ldx, const MatrixView& w, float* y, size_t ldy, ThreadPool& pool) {
  const size_t N = size_t(w.rows), K = size_t(w.cols), NW = PanelWidth();
  // x, packed once per call and shared by all tasks.
  const size_t tiles = (M + kMR - 1) / kMR;
  float* xs = ThreadScratch(ScratchSlot::kMatMulX, tiles * K * kMR);
  if (M * K >= (size_t(1) << 16)) {
    pool.ParallelFor(tiles, 1, [&](size_t t0, size_t t1, size_t) { PackX(x, M, ldx, K, t0, t1, xs); });
  } else {
    PackX(x, M, ldx, K, 0, tiles, xs);
  }

  // Columns per task: up to kPanelsPerTask whole panels (fewer when that
  // leaves under ~3 tasks per thread, for balance).
  constexpr size_t kPanelsPerTask = 8;
  const size_t total_panels = (N + NW - 1) / NW;
  const size_t panels_per_task = std::clamp<size_t>(total_panels / (3 * pool.size()), 1, kPanelsPerTask);
  const size_t nc = panels_per_task * NW;
  const size_t num_tasks = (N + nc - 1) / nc;
  // Row tiles per M block: the block's packed x (kTilesPerBlock * kMR * kKC
  // floats) stays in L2 while each panel slice (kKC * NW floats) is reused
  // from L1 by all its tiles.
  constexpr size_t kTilesPerBlock = 128 / kMR;

  pool.Run(num_tasks, [&](size_t task, size_t) {
    const size_t n0 = task * nc, n1 = std::min(N, n0 + nc);
    const size_t panels = (n1 - n0 + NW - 1) / NW;
    // Panel p holds all of K, k-major: packed[p * K * NW + k * NW + j]. Packing
    // whole rows reads W in long sequential runs (prefetch-friendly).
    float* packed = ThreadScratch(ScratchSlot::kGemmPanels, panels * K * NW);
    for (size_t p = 0; p < panels; ++p) PackPanel<kDT>(w, n0 + p * NW, n1, 0, K, packed + p * K * NW);
    for (size_t k0 = 0; k0 < K; k0 += kKC) {
      const size_t kc = std::min(K, k0 + kKC) - k0;
      for (size_t tb = 0; tb < tiles; tb += kTilesPerBlock) {
        const size_t te = std::min(tiles, tb + kTilesPerBlock);
        for (size_t p = 0; p < panels; ++p) {
          const size_t n = n0 + p * NW, cols = std::min(NW, n1 - n);
          const float* panel = packed + p * K * NW + k0 * NW;
          for (size_t t = tb; t < te; ++t) {
            const size_t m0 = t * kMR, mr = std::min<size_t>(kMR, M - m0);
            MicroKernelFor(mr, xs + t * K * kMR + k0 * kMR, panel, kc, y + m0 * ldy + n, ldy, cols, k0 > 0);
          }
        }
      }
    }
  });
}

}  // namespace

void GemmImpl(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (M <= 0 || w.rows <= 0) return;
  if (w.cols == 0) {
    for (int64_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + w.rows, 0.0f);
    return;
  }
  switch (w.dtype) {
    case DType::kBF16: return GemmTyped<DType::kBF16>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
    case DType::kF16: return GemmTyped<DType::kF16>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
    case DType::kF32: return GemmTyped<DType::kF32>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
    default: return ref::MatMul(x, M, ldx, w, y, ldy);  // outside ops.h's contract: slow but right
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(GemmImpl);

void MatMulGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(GemmImpl)(x, M, ldx, w, y, ldy, pool);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
