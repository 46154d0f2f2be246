// MatMul for many rows of x (prefill, large batches): a packed GEMM,
// y[M, N] = x[M, K] · W[N, K]^T with W in any WeightFormat, compiled per SIMD
// target. Quantized W (NVFP4, FP8) is dequantized exactly to f32 rows on its
// way into the panels (once per call, amortized over M like the packing). Small M goes to matmul_gemv_hwy.cc instead (see matmul.cc).
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
// * Blocking and threads: a task is a chunk of NC columns of y (whole panels).
//   Per K block of KC columns it packs its panels' slices (NC*KC floats, L2),
//   then, per block of row tiles (x block in L2), each panel slice (KC*NW
//   floats, L1) is reused by all the block's row tiles. Packing prefetches
//   the W rows it reads next. Tasks are claimed dynamically by the threads.
// The tile pieces (packing, micro-kernel) live in gemm_tile-inl.h, shared
// with attention.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_gemm_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/gemm_tile-inl.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"
#include "kernels/wload-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using namespace gemm;  // NOLINT: the tile's pieces are this file's vocabulary

// Columns of K per block: an x sliver (kMR * kKC floats) fits L1 with room
// for the panel vectors streaming past it.
constexpr size_t kKC = 256;

using wload::Fmt;

// The dtype PackPanel reads for format kF: dense weights are packed straight
// from W; quantized ones are first dequantized to f32 rows (DequantRows).
template <Fmt kF>
constexpr DType kPackDType = kF == Fmt::kBF16 ? DType::kBF16 : kF == Fmt::kF16 ? DType::kF16 : DType::kF32;
template <Fmt kF>
constexpr bool kQuantized = wload::kIsQuantized<kF>;

template <Fmt kF>
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
    // Per K block, the chunk's panels are packed into packed[p * kc * NW + k * NW + j]
    // (a slice that stays in L2), each packing call prefetching what the next
    // one reads: the next panel's rows, or the first panel's next K block.
    float* packed = ThreadScratch(ScratchSlot::kGemmPanels, panels * kKC * NW);
    constexpr DType kDT = kPackDType<kF>;
    const size_t row_bytes = size_t(w.row_stride) * DTypeSize(kDT);
    // Quantized W: one panel's rows over one K block, dequantized, row-major.
    float* dequant = kQuantized<kF> ? ThreadScratch(ScratchSlot::kGemmDequant, NW * kKC) : nullptr;
    const auto panel_rows = [&](size_t p, const uint8_t** rows) {
      // Rows past n1 repeat the last one (their results are dropped): every load stays inside W.
      for (size_t j = 0; j < NW; ++j)
        rows[j] = static_cast<const uint8_t*>(w.data) + std::min(n0 + p * NW + j, n1 - 1) * row_bytes;
    };
    const uint8_t* rows[kNV * HWY_MAX_BYTES / sizeof(float)];
    const uint8_t* next[kNV * HWY_MAX_BYTES / sizeof(float)];
    for (size_t k0 = 0; k0 < K; k0 += kKC) {
      const size_t k1 = std::min(K, k0 + kKC), kc = k1 - k0;
      for (size_t p = 0; p < panels; ++p) {
        if constexpr (kQuantized<kF>) {
          const size_t n = n0 + p * NW, valid = std::min(NW, n1 - n);
          wload::DequantRows<kF>(w, n, valid, k0, k1, dequant, kKC);
          for (size_t j = 0; j < NW; ++j) rows[j] = reinterpret_cast<const uint8_t*>(dequant + std::min(j, valid - 1) * kKC);
          PackPanel<DType::kF32>(rows, 0, kc, packed + p * kc * NW);
          continue;
        }
        panel_rows(p, rows);
        const bool last = p + 1 == panels;
        panel_rows(last ? 0 : p + 1, next);
        const bool prefetch = !last || k1 < K;
        PackPanel<kDT>(rows, k0, k1, packed + p * kc * NW, prefetch ? next : nullptr, last ? k1 : k0);
      }
      for (size_t tb = 0; tb < tiles; tb += kTilesPerBlock) {
        const size_t te = std::min(tiles, tb + kTilesPerBlock);
        for (size_t p = 0; p < panels; ++p) {
          const size_t n = n0 + p * NW, cols = std::min(NW, n1 - n);
          const float* panel = packed + p * kc * NW;
          for (size_t t = tb; t < te; ++t) {
            const size_t m0 = t * kMR, mr = std::min<size_t>(kMR, M - m0);
            MicroKernelFor(mr, xs + t * K * kMR + k0 * kMR, panel, NW, kc, y + m0 * ldy + n, ldy, cols, k0 > 0);
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
  wload::VisitFmt(wload::FmtOf(w), [&](auto f) {
    GemmTyped<decltype(f)::value>(x, size_t(M), size_t(ldx), w, y, size_t(ldy), pool);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(GemmImpl);

void MatMulGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(GemmImpl)(x, M, ldx, w, y, ldy, pool);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
