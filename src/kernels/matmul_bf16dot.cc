// AVX512-BF16 GEMM (matmul_bf16dot.h).
//
// The classic blocked GEMM of matmul_gemm_hwy.cc, on BF16 pairs:
// * Micro-kernel: an 8 x 48 tile of y in 24 f32 accumulators. Per pair of K
//   it loads 3 panel vectors (48 rows of W; each lane holds one row's pair
//   (k, k + 1) as two BF16) and broadcasts one pair of each of 8 rows of x:
//   24 VDPBF16PS (768 multiply-adds) for 3 loads and 8 broadcasts, 24
//   independent chains.
// * W panel: 48 rows over a block of KC columns, pair-major:
//   panel[p * 48 + j] = the BF16 pair (2p, 2p + 1) of row j (32 bits). Each
//   group of 16 rows is decoded step by step (32 columns of 16 rows:
//   bf16pack::DecodeRowStep, exact for every format) and turned pair-major
//   by one 16x16 transpose of 32-bit units. Packed once per call, reused by
//   every row tile of x.
// * x: rounded to BF16 once per call (RNE), packed per row tile of 8 rows,
//   pair-major: xs[p * 8 + i] = pair p of row i, so the broadcasts read one
//   contiguous stream. Rows past M are zeros.
// * Blocking and threads as matmul_gemm_hwy.cc: a task is a chunk of panels;
//   per K block it packs its panels' slices (L2), then every row tile of a
//   block of 16 reuses each panel slice. Partial sums of a K block are added
//   into y (f32, unscaled); the last block multiplies by the global scale.
//   FP8 with 128x128 block scales uses KC = 128 (one scale block): its sum
//   times the scale of each 16-row vector's block row is added into y.
// Measured (AMD Zen 5, 2 threads, 512 x {1024..3072} x {1024..3072}, BF16
// and NVFP4 W, interleaved runs): KC = 1024 against 256 1.1-1.2x (fewer
// passes of y, which is larger than L2, through the cache; 512 and 768 in
// between); about 16 tasks per thread instead of 3 1.2-1.5x (the f32 GEMM's
// split left 7 tasks of 2048 columns for 2 threads), which the f32 GEMM does
// not gain from (0.9-1.0x there: its panels cost 4x the packing).
// Compiled for AVX-512 BF16 by a target pragma (see nvfp4_gemv_vnni.cc).
#include "kernels/matmul_bf16dot.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "kernels/scratch.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "kernels/bf16_pack-inl.h"  // (under the pragma: its functions are AVX-512 code)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialized (Highway silences the same).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tern::kernels::bf16dot {
namespace {

using bf16pack::DecodeRowStep;
using bf16pack::RowToBf16;
using bf16pack::Transpose16x16;

constexpr int kMR = 8;                 // rows of x per micro tile
constexpr int kNV = 3;                 // vectors of W rows per micro tile
constexpr size_t kNW = 16 * kNV;       // W rows per panel
constexpr size_t kStep = 32;           // columns per decode step (16 pairs)
constexpr size_t kKC = 1024;            // columns per K block
constexpr size_t kTilesPerBlock = 16;  // row tiles of x per M block (their x slices stay in L2)

// Row tiles [2u, 2u + 2) for u in [u0, u1): xs[t * K2 * kMR + p * kMR + i] =
// pair p of row 8t + i of x in BF16, zero past M (K2 pairs cover K; a last
// odd column pairs with zero). Sixteen rows at a time: one 16x16 transpose
// per 32 columns leaves pair p of the 16 rows in one vector, whose halves
// belong to the two tiles.
void PackX(const float* x, size_t M, size_t ldx, size_t K, size_t tiles, size_t u0, size_t u1, uint32_t* xs) {
  const size_t K2 = (K + 1) / 2;
  __m512i r[16];
  for (size_t u = u0; u < u1; ++u) {
    const size_t m0 = 16 * u;
    uint32_t* out0 = xs + 2 * u * K2 * kMR;
    uint32_t* out1 = out0 + K2 * kMR;
    const bool second = 2 * u + 1 < tiles;
    for (size_t k0 = 0; k0 < K; k0 += kStep) {
      const size_t n = std::min(kStep, K - k0), pairs = (n + 1) / 2;
      for (size_t i = 0; i < 16; ++i) r[i] = m0 + i < M ? RowToBf16(x + (m0 + i) * ldx + k0, n) : _mm512_setzero_si512();
      Transpose16x16(r);
      const size_t p0 = k0 / 2;
      for (size_t p = 0; p < pairs; ++p) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0 + (p0 + p) * kMR), _mm512_castsi512_si256(r[p]));
        if (second)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1 + (p0 + p) * kMR), _mm512_extracti64x4_epi64(r[p], 1));
      }
    }
  }
}

// The panel of rows [n, n + 48) over columns [k0, k1) (k0 a multiple of 32),
// pair-major (see the top). Rows past N repeat the last row (their outputs
// are dropped); pairs past k1 are zero.
// W is read 16 rows at a time, a step of each (16 streams at the row stride):
// the loads of every step are prefetched kPrefetchBytes ahead in each row
// (without it the decode waited on them: at 8 rows of x, NVFP4 2048 x 2048,
// over half of the time on the code loads).
constexpr size_t kPrefetchBytes = 256;
void PackPanel(const MatrixView& w, size_t n, size_t k0, size_t k1, const float* e4m3, uint32_t* panel) {
  const size_t N = size_t(w.rows);
  const size_t pairs = (k1 - k0 + 1) / 2;
  // The rows' bases.
  const size_t bytes2 = bf16pack::BytesPer2(w);
  const size_t row_bytes = size_t(w.row_stride) * bytes2 / 2;
  const auto* base = static_cast<const char*>(w.data);
  const auto* scales = static_cast<const char*>(w.scales);
  __m512i r[16];
  const auto prefetch_start = [&](size_t g) {  // group g's scales for the block, and its first code lines
    for (size_t i = 0; i < 16; ++i) {
      const size_t row = std::min(n + 16 * g + i, N - 1);
      if (w.format == WeightFormat::kNvfp4)
        for (size_t b = k0 / 16; b < k1 / 16; b += 64) _mm_prefetch(scales + row * size_t(w.scale_stride) + b, _MM_HINT_T0);
      for (size_t b = 0; b < kPrefetchBytes; b += 64) _mm_prefetch(base + row * row_bytes + k0 * bytes2 / 2 + b, _MM_HINT_T1);
    }
  };
  prefetch_start(0);
  for (size_t g = 0; g < size_t(kNV); ++g) {
    if (g + 1 < size_t(kNV)) prefetch_start(g + 1);
    for (size_t s = k0; s < k1; s += kStep) {
      const size_t n_k = std::min(kStep, k1 - s);
      const size_t at = s * bytes2 / 2 + kPrefetchBytes;  // a new line every 64 / (32 * bytes2 / 2) steps
      const bool line = at % 64 < kStep * bytes2 / 2;
      for (size_t i = 0; i < 16; ++i) {
        const size_t row = std::min(n + 16 * g + i, N - 1);
        if (line) _mm_prefetch(base + row * row_bytes + at, _MM_HINT_T0);
        r[i] = DecodeRowStep(w, row, s, n_k, e4m3);
      }
      Transpose16x16(r);
      const size_t p0 = (s - k0) / 2;
      for (size_t p = 0; p < 16 && p0 + p < pairs; ++p) _mm512_store_si512(panel + (p0 + p) * kNW + 16 * g, r[p]);
    }
  }
}

// How a micro tile's sums reach y: y = (sum * vscale[v] + (accumulate ? y : 0)) * final_scale.
struct Epilogue {
  bool accumulate = false;   // add into y (a later K block)
  const float* vscale = nullptr;  // per vector of 16 rows (FP8 block scales), or null for 1
  float final_scale = 1.0f;  // the global scale on the last K block, else 1
};

// y tile (MR x cols, at y with stride ldy) from kc2 pairs of xs (a packed row
// tile) and panel. cols <= 48.
template <int MR>
__attribute__((noinline)) void MicroKernel(const uint32_t* __restrict xs, const uint32_t* __restrict panel, size_t kc2,
                                           float* y, size_t ldy, size_t cols, const Epilogue& e) {
  __m512 acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = _mm512_setzero_ps();
  if (e.accumulate) {
    for (int i = 0; i < MR; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + kNW - 1), _MM_HINT_T0);
    }
  }
  for (size_t p = 0; p < kc2; ++p) {
    __m512bh b[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) b[v] = (__m512bh)_mm512_load_si512(panel + p * kNW + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(int(xs[p * kMR + i]));
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], b[v], a);
    }
  }
  const __m512 fs = _mm512_set1_ps(e.final_scale);
  for (int i = 0; i < MR; ++i) {
    float* yi = y + i * ldy;
    for (int v = 0; v < kNV; ++v) {
      const size_t c0 = size_t(16 * v);
      if (c0 >= cols) break;
      const __mmask16 mask = cols - c0 >= 16 ? 0xffff : __mmask16((1u << (cols - c0)) - 1);
      const __m512 prev = e.accumulate ? _mm512_maskz_loadu_ps(mask, yi + c0) : _mm512_setzero_ps();
      __m512 r = e.vscale != nullptr ? _mm512_fmadd_ps(acc[i][v], _mm512_set1_ps(e.vscale[v]), prev)
                                     : _mm512_add_ps(acc[i][v], prev);
      if (e.final_scale != 1.0f) r = _mm512_mul_ps(r, fs);
      _mm512_mask_storeu_ps(yi + c0, mask, r);
    }
  }
}

template <int MR = kMR>
void MicroKernelFor(size_t mr, const uint32_t* xs, const uint32_t* panel, size_t kc2, float* y, size_t ldy,
                    size_t cols, const Epilogue& e) {
  if constexpr (MR >= 1) {
    if (mr == MR) return MicroKernel<MR>(xs, panel, kc2, y, ldy, cols, e);
    if constexpr (MR > 1) MicroKernelFor<MR - 1>(mr, xs, panel, kc2, y, ldy, cols, e);
  }
}

}  // namespace

bool Supports(const MatrixView& w) { return WeightsExactInBf16(w); }  // (ops.h)

void Gemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (M <= RowsGemmMaxRows(w) && RowsGemmSupports(w)) return RowsGemm(x, M, ldx, w, y, ldy, pool);
  PackedGemm(x, M, ldx, w, y, ldy, pool);
}

void PackedGemm(const float* x, int64_t M_, int64_t ldx, const MatrixView& w, float* y, int64_t ldy_,
                ThreadPool& pool) {
  const size_t M = size_t(M_), N = size_t(w.rows), K = size_t(w.cols), ldy = size_t(ldy_);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (size_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + N, 0.0f);
    return;
  }
  const size_t K2 = (K + 1) / 2;
  // x, packed once per call in whole pairs of tiles (PackX writes 16 rows at a time).
  const size_t tiles = (M + kMR - 1) / kMR, units = (tiles + 1) / 2;
  uint32_t* xs = reinterpret_cast<uint32_t*>(ThreadScratch(ScratchSlot::kMatMulX, 2 * units * K2 * kMR));
  if (M * K >= (size_t(1) << 15)) {
    pool.ParallelFor(units, 1, [&](size_t u0, size_t u1, size_t) { PackX(x, M, size_t(ldx), K, tiles, u0, u1, xs); });
  } else {
    PackX(x, M, size_t(ldx), K, tiles, 0, units, xs);
  }

  const bool block_scaled = w.format == WeightFormat::kFp8 && w.scales != nullptr;
  const size_t kc_max = block_scaled ? size_t(kFp8Block) : kKC;
  const float gs = w.format == WeightFormat::kDense ? 1.0f : w.global_scale;
  constexpr size_t kPanelsPerTask = 8;
  const size_t total_panels = (N + kNW - 1) / kNW;
  const size_t panels_per_task = std::clamp<size_t>(total_panels / (8 * pool.size()), 1, kPanelsPerTask);
  const size_t nc = panels_per_task * kNW;
  const size_t num_tasks = (N + nc - 1) / nc;
  const float* e4m3 = E4M3Values();

  pool.Run(num_tasks, [&](size_t task, size_t) {
    const size_t n0 = task * nc, n1 = std::min(N, n0 + nc);
    const size_t panels = (n1 - n0 + kNW - 1) / kNW;
    const size_t slice = kc_max / 2 * kNW;  // uint32 per panel slice
    uint32_t* packed = reinterpret_cast<uint32_t*>(ThreadScratch(ScratchSlot::kGemmPanels, panels * slice));
    for (size_t k0 = 0; k0 < K; k0 += kc_max) {
      const size_t k1 = std::min(K, k0 + kc_max), kc2 = (k1 - k0 + 1) / 2;
      for (size_t p = 0; p < panels; ++p) PackPanel(w, n0 + p * kNW, k0, k1, e4m3, packed + p * slice);
      float vscale[kNV * kPanelsPerTask];
      if (block_scaled) {
        const float* sc = static_cast<const float*>(w.scales);
        for (size_t v = 0; v < panels * kNV; ++v) {
          const size_t row = std::min(n0 + 16 * v, N - 1);
          vscale[v] = sc[row / size_t(kFp8Block) * size_t(w.scale_stride) + k0 / size_t(kFp8Block)];
        }
      }
      Epilogue e;
      e.accumulate = k0 > 0;
      e.final_scale = k1 == K ? gs : 1.0f;
      for (size_t tb = 0; tb < tiles; tb += kTilesPerBlock) {
        const size_t te = std::min(tiles, tb + kTilesPerBlock);
        for (size_t p = 0; p < panels; ++p) {
          const size_t n = n0 + p * kNW, cols = std::min(kNW, n1 - n);
          e.vscale = block_scaled ? vscale + p * kNV : nullptr;
          for (size_t t = tb; t < te; ++t) {
            const size_t m0 = t * kMR;
            MicroKernelFor(std::min<size_t>(kMR, M - m0), xs + t * K2 * kMR + k0 / 2 * kMR, packed + p * slice, kc2,
                           y + m0 * ldy + n, ldy, cols, e);
          }
        }
      }
    }
  });
}

// ---- The pieces of attention's products (matmul_bf16dot.h) ----

namespace {

// Elements [0, n) (n <= 32) of a row stored as `dt` (BF16, F16 or F32) as 32
// BF16 (RNE; BF16 as stored), zeros past n.
__m512i KvRowToBf16(const void* row, DType dt, size_t n) {
  if (dt == DType::kBF16) {
    const __mmask32 m = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
    return _mm512_maskz_loadu_epi16(m, row);
  }
  if (dt == DType::kF32) return RowToBf16(static_cast<const float*>(row), n);
  const auto* h = static_cast<const uint16_t*>(row);
  const __mmask16 lo = n >= 16 ? 0xffff : __mmask16((1u << n) - 1);
  const __mmask16 hi = n >= 32 ? 0xffff : n <= 16 ? 0 : __mmask16((1u << (n - 16)) - 1);
  const __m512 a = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lo, h));
  const __m512 b = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(hi, h + 16));
  return __m512i(_mm512_cvtne2ps_pbh(b, a));
}

// Elements [0, n) (n <= 16) of a row stored as `dt` as 16 BF16 in the low
// halves of 16 32-bit units, zeros past n.
__m512i KvRowToBf16Units(const void* row, DType dt, size_t n) {
  const __mmask16 m = n >= 16 ? 0xffff : __mmask16((1u << n) - 1);
  __m256i h;
  if (dt == DType::kBF16) {
    h = _mm256_maskz_loadu_epi16(m, row);
  } else {
    const __m512 f = dt == DType::kF32 ? _mm512_maskz_loadu_ps(m, row)
                                       : _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row));
    h = __m256i(_mm512_cvtneps_pbh(f));
  }
  return _mm512_cvtepu16_epi32(h);
}

}  // namespace

size_t RowTilesSize(size_t M, size_t K) {
  const size_t tiles = (M + kMR - 1) / kMR, units = (tiles + 1) / 2;
  return 2 * units * ((K + 1) / 2) * kMR;
}

void PackRowTiles(const float* x, size_t M, size_t ldx, size_t K, uint32_t* xs) {
  const size_t tiles = (M + kMR - 1) / kMR, units = (tiles + 1) / 2;
  PackX(x, M, ldx, K, tiles, 0, units, xs);
}

void PackRowsPanel(const void* const* rows, size_t n, DType dt, size_t D, uint32_t* panel) {
  const size_t D2 = (D + 1) / 2;
  __m512i r[16];
  for (size_t g = 0; g < size_t(kNV); ++g)
    for (size_t s = 0; s < D; s += kStep) {
      const size_t n_k = std::min(kStep, D - s);
      for (size_t i = 0; i < 16; ++i) {
        const size_t j = 16 * g + i;
        r[i] = j < n ? KvRowToBf16(static_cast<const char*>(rows[j]) + s * DTypeSize(dt), dt, n_k)
                     : _mm512_setzero_si512();
      }
      Transpose16x16(r);
      for (size_t p = 0; p < 16 && s / 2 + p < D2; ++p) _mm512_store_si512(panel + (s / 2 + p) * kNW + 16 * g, r[p]);
    }
}

void PackPairsPanel(const void* const* rows, size_t n, DType dt, size_t d0, size_t cols, uint32_t* panel) {
  const size_t es = DTypeSize(dt);
  for (size_t p = 0; p < (n + 1) / 2; ++p)
    for (size_t v = 0; v < size_t(kNV); ++v) {
      __m512i u = _mm512_setzero_si512();
      if (16 * v < cols) {
        const size_t c = std::min<size_t>(16, cols - 16 * v), at = (d0 + 16 * v) * es;
        u = KvRowToBf16Units(static_cast<const char*>(rows[2 * p]) + at, dt, c);
        if (2 * p + 1 < n)
          u = _mm512_or_si512(
              u, _mm512_slli_epi32(KvRowToBf16Units(static_cast<const char*>(rows[2 * p + 1]) + at, dt, c), 16));
      }
      _mm512_store_si512(panel + p * kNW + 16 * v, u);
    }
}

void TileProduct(size_t mr, const uint32_t* a, const uint32_t* b, size_t kc2, float* c, size_t ldc, size_t cols,
                 bool accumulate) {
  Epilogue e;
  e.accumulate = accumulate;
  MicroKernelFor(mr, a, b, kc2, c, ldc, cols, e);
}

double PeakLoopForBenchmark(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x3f813f81);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));  // keeps the loop from being folded
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return 12.0 * 2.0 * 32 * double(iters);
}

}  // namespace tern::kernels::bf16dot

#pragma GCC diagnostic pop
#pragma GCC pop_options
