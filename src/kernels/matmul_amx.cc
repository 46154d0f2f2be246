// AMX BF16 GEMM (matmul_amx.h).
//
// Layout. The tile product C[16, 16] += A[16, 32] · B[32, 16] (TDPBF16PS)
// takes A as 16 rows of 32 BF16 and B in pairs: B's row r holds, for each of
// its 16 columns j, the two elements (2r, 2r + 1) of column j. With W as A
// and x as B, C[i][j] = sum_k W[n + i][k] * x[m + j][k] = y[m + j][n + i]:
// * A comes from a panel each task copies (BF16) or decodes (NVFP4, FP8) once:
//   [K / 32][32 rows][32] BF16, so each 16-row tile is 1 KiB contiguous
//   (tile loads straight from W's rows, 2 KiB apart at K = 1024, fall into a
//   few L1 sets and evict each other: 1.2x slower at 512 x 2048 x 1024).
// * B is x rounded to BF16 and transposed in 32-bit pairs, packed once per
//   call: for each block of 16 rows of x and each step of 32 along K, a
//   1 KiB tile (rows of x past M and K past the end are zeros).
// * C is transposed on the way out (one 16x16 transpose per C tile per call,
//   after K / 32 products), times the global scale.
// Blocking. A task is 32 rows of W (two A tiles); for every 32 rows of x (two
// B tiles) it keeps four C tiles: four products per two A and two B loads.
// K runs in blocks of 256 so the A slice (16 KiB) stays in L1 while B streams
// from L2 (C is stored and reloaded between blocks, 8 tile moves per 32
// products); x runs in superblocks of rows whose packed x (512 KiB) stays in
// L2 for every task that re-reads it. Measured on Sapphire Rapids, one core,
// 512 x 1024 x K: all of K at once 1.8 TFLOP/s (A from L2), K blocks 2.3;
// K = 3072 without superblocks 0.9 (x from L3). Tasks are claimed dynamically.
//
// Tile state. Every task loads the tile configuration on the thread that runs
// it (a worker may never have used the tiles, and LDTILECFG is cheap beside a
// task) and releases the tiles when done, so no thread runs a tile instruction
// without a valid configuration and none keeps the 8 KiB of tile state live.
//
// The functions are compiled for AMX and AVX-512 by a target pragma, not -m
// flags on the file (see nvfp4_gemv_vnni.cc for why).
#include "kernels/matmul_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "kernels/scratch.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")
#include "kernels/bf16_pack-inl.h"  // (under the pragma: its functions are AVX-512 code)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialized (Highway silences the same).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tern::kernels::amx {
namespace {

using bf16pack::DecodeRowStep;
using bf16pack::RowToBf16;
using bf16pack::Transpose16x16;

constexpr size_t kTileRows = 16;   // rows of every tile
constexpr size_t kKStep = 32;      // BF16 elements of K per tile product
constexpr size_t kTileElems = kTileRows * kKStep;  // BF16 per A or B tile (1 KiB)
constexpr size_t kTaskRows = 32;   // rows of W per task (two A tiles)
constexpr size_t kBlockRows = 32;  // rows of x per C block (two B tiles)

inline size_t RoundUpRows(size_t m) { return (m + kBlockRows - 1) / kBlockRows * kBlockRows; }

// Tiles 0-3: C[a][b] = tile 2a + b; 4, 5: A (rows 0-15, 16-31 of the task);
// 6, 7: B (rows 0-15, 16-31 of the x block). All 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

const TileConfig& Config() {
  static const TileConfig c = [] {
    TileConfig t;
    for (int i = 0; i < 8; ++i) {
      t.colsb[i] = 64;
      t.rows[i] = kTileRows;
    }
    return t;
  }();
  return c;
}

// Loads the configuration on this thread; the destructor releases the tiles.
struct TileScope {
  TileScope() { _tile_loadconfig(&Config()); }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// B tiles of x rows [16 t, 16 t + 16) for t in [t0, t1): xb + (t * steps + s) * kTileElems.
void PackX(const float* x, size_t M, size_t ldx, size_t K, size_t t0, size_t t1, uint16_t* xb) {
  const size_t steps = (K + kKStep - 1) / kKStep;
  __m512i r[16];
  for (size_t t = t0; t < t1; ++t) {
    const size_t m0 = t * kTileRows, rows = std::min(kTileRows, M - m0);
    for (size_t s = 0; s < steps; ++s) {
      const size_t k0 = s * kKStep, n = std::min(kKStep, K - k0);
      for (size_t i = 0; i < 16; ++i) r[i] = i < rows ? RowToBf16(x + (m0 + i) * ldx + k0, n) : _mm512_setzero_si512();
      Transpose16x16(r);
      uint16_t* out = xb + (t * steps + s) * kTileElems;
      for (size_t i = 0; i < 16; ++i) _mm512_store_si512(out + i * 32, r[i]);
    }
  }
}

// The task's panel: rows [n0, n0 + 32) of W over all steps. NVFP4 and FP8
// rows are decoded row by row (each row of codes read front to back: at 8 to
// 32 rows of x, 1.3-1.37x faster than 16 bytes of every row per step, where
// the decode is most of the work); BF16 rows are copied step by step (row by
// row, the panel's stores 2 KiB apart land in a few L1 sets: 1.2x slower).
void DecodePanel(const MatrixView& w, size_t n0, size_t steps, uint16_t* panel) {
  const size_t N = size_t(w.rows), K = size_t(w.cols);
  const float* e4m3 = E4M3Values();
  const auto one = [&](size_t i, size_t s) {
    const size_t n = std::min(n0 + i, N - 1), k0 = s * kKStep;
    _mm512_store_si512(panel + (s * kTaskRows + i) * kKStep, DecodeRowStep(w, n, k0, std::min(kKStep, K - k0), e4m3));
  };
  if (w.format == WeightFormat::kDense) {
    for (size_t s = 0; s < steps; ++s)
      for (size_t i = 0; i < kTaskRows; ++i) one(i, s);
  } else {
    for (size_t i = 0; i < kTaskRows; ++i)
      for (size_t s = 0; s < steps; ++s) one(i, s);
  }
}

// y[m0 + j][n0 + i] = C[i][j] * gs for the valid i < n_valid, j < m_valid.
inline void StoreC(const float* c, size_t n_valid, size_t m_valid, float gs, float* y, size_t ldy) {
  __m512i r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(c + i * 16);
  Transpose16x16(r);
  const __mmask16 mask = n_valid >= 16 ? 0xffff : __mmask16((1u << n_valid) - 1);
  const __m512 s = _mm512_set1_ps(gs);
  for (size_t j = 0; j < m_valid; ++j) _mm512_mask_storeu_ps(y + j * ldy, mask, _mm512_mul_ps(_mm512_castsi512_ps(r[j]), s));
}

// Steps of K per block (KC = 256 elements): the A slice of a block (32 x KC
// BF16, 16 KiB) stays in L1 while the block's B tiles stream from L2.
constexpr size_t kStepsPerBlock = 8;
// Rows of x per superblock: its packed x (rows x K BF16) stays in L2 while
// every task of W rows re-reads it; at least one C block.
size_t SuperblockRows(size_t K) {
  constexpr size_t kBytes = size_t(512) << 10;
  return std::max(kBlockRows, kBytes / (2 * K) / kBlockRows * kBlockRows);
}

void RunTask(const uint16_t* xb, size_t M, size_t steps, const MatrixView& w, size_t n0, float* y, size_t ldy) {
  const size_t N = size_t(w.rows), K = size_t(w.cols);
  const size_t sb_rows = std::min(RoundUpRows(M), SuperblockRows(K));
  // Scratch: the panel, then C of one superblock, [block][tile][16 x 16] f32.
  const size_t panel_elems = steps * kTaskRows * kKStep;
  float* scratch = ThreadScratch(ScratchSlot::kGemmPanels, panel_elems / 2 + sb_rows / kBlockRows * 4 * 256);
  uint16_t* panel = reinterpret_cast<uint16_t*>(scratch);
  float* cbuf = scratch + panel_elems / 2;
  DecodePanel(w, n0, steps, panel);
  const float gs = w.format == WeightFormat::kDense ? 1.0f : w.global_scale;
  const size_t n_valid = std::min(kTaskRows, N - n0);
  // FP8 with 128x128 block scales: the task's 32 rows share one row of scales
  // (n0 is a multiple of 32); each K block is one scale block, its products
  // summed on the tiles from zero and added to C times the block's scale.
  const bool block_scaled = w.format == WeightFormat::kFp8 && w.scales != nullptr;
  const float* scale_row =
      block_scaled ? static_cast<const float*>(w.scales) + n0 / size_t(kFp8Block) * size_t(w.scale_stride) : nullptr;
  const size_t steps_per_block = block_scaled ? size_t(kFp8Block) / kKStep : kStepsPerBlock;
  alignas(64) float part[4 * 256];
  TileScope tiles;
  for (size_t sb = 0; sb < M; sb += sb_rows) {
    const size_t sb_end = std::min(M, sb + sb_rows);
    for (size_t k0 = 0; k0 < steps; k0 += steps_per_block) {
      const size_t k1 = std::min(steps, k0 + steps_per_block);
      for (size_t m0 = sb; m0 < sb_end; m0 += kBlockRows) {
        const bool two = m0 + kTileRows < M;  // a second B tile holds rows of x
        const uint16_t* b0 = xb + (m0 / kTileRows) * steps * kTileElems;
        const uint16_t* b1 = b0 + steps * kTileElems;
        float* c = cbuf + (m0 - sb) / kBlockRows * 4 * 256;
        if (k0 == 0 || block_scaled) {
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
        } else {
          _tile_loadd(0, c, 64);
          _tile_loadd(1, c + 256, 64);
          _tile_loadd(2, c + 512, 64);
          _tile_loadd(3, c + 768, 64);
        }
        for (size_t s = k0; s < k1; ++s) {
          const uint16_t* a = panel + s * kTaskRows * kKStep;
          _tile_loadd(4, a, 64);
          _tile_loadd(6, b0 + s * kTileElems, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_loadd(5, a + kTileElems, 64);
          _tile_dpbf16ps(2, 5, 6);
          if (two) {
            _tile_loadd(7, b1 + s * kTileElems, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
        if (!block_scaled) {
          _tile_stored(0, c, 64);
          _tile_stored(1, c + 256, 64);
          _tile_stored(2, c + 512, 64);
          _tile_stored(3, c + 768, 64);
          continue;
        }
        _tile_stored(0, part, 64);
        _tile_stored(1, part + 256, 64);
        _tile_stored(2, part + 512, 64);
        _tile_stored(3, part + 768, 64);
        const __m512 scale = _mm512_set1_ps(scale_row[k0 / steps_per_block]);
        for (size_t i = 0; i < 4 * 256; i += 16) {
          const __m512 p16 = _mm512_load_ps(part + i);
          _mm512_store_ps(c + i, k0 == 0 ? _mm512_mul_ps(p16, scale) : _mm512_fmadd_ps(p16, scale, _mm512_load_ps(c + i)));
        }
      }
    }
    for (size_t m0 = sb; m0 < sb_end; m0 += kBlockRows) {
      const float* c = cbuf + (m0 - sb) / kBlockRows * 4 * 256;
      const bool two = m0 + kTileRows < M;
      const size_t m_lo = std::min(kTileRows, M - m0), m_hi = two ? std::min(kTileRows, M - m0 - kTileRows) : 0;
      float* yb = y + m0 * ldy + n0;
      StoreC(c, std::min<size_t>(16, n_valid), m_lo, gs, yb, ldy);
      if (n_valid > 16) StoreC(c + 512, n_valid - 16, m_lo, gs, yb + 16, ldy);
      if (two) {
        StoreC(c + 256, std::min<size_t>(16, n_valid), m_hi, gs, yb + kTileRows * ldy, ldy);
        if (n_valid > 16) StoreC(c + 768, n_valid - 16, m_hi, gs, yb + kTileRows * ldy + 16, ldy);
      }
    }
  }
}

}  // namespace

bool Supports(const MatrixView& w) { return WeightsExactInBf16(w); }  // (ops.h)

void Gemm(const float* x, int64_t M_, int64_t ldx, const MatrixView& w, float* y, int64_t ldy_, ThreadPool& pool) {
  const size_t M = size_t(M_), N = size_t(w.rows), K = size_t(w.cols), ldy = size_t(ldy_);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (size_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + N, 0.0f);
    return;
  }
  const size_t steps = (K + kKStep - 1) / kKStep;
  // Whole blocks of 32 rows of x, so a block's second B tile is always inside the buffer.
  const size_t x_tiles = (M + kBlockRows - 1) / kBlockRows * 2;
  uint16_t* xb = reinterpret_cast<uint16_t*>(ThreadScratch(ScratchSlot::kMatMulX, x_tiles * steps * kTileElems / 2));
  const size_t used_tiles = (M + kTileRows - 1) / kTileRows;
  if (M * K >= (size_t(1) << 15)) {
    pool.ParallelFor(used_tiles, 1, [&](size_t t0, size_t t1, size_t) { PackX(x, M, size_t(ldx), K, t0, t1, xb); });
  } else {
    PackX(x, M, size_t(ldx), K, 0, used_tiles, xb);
  }
  const size_t tasks = (N + kTaskRows - 1) / kTaskRows;
  pool.Run(tasks, [&](size_t task, size_t) { RunTask(xb, M, steps, w, task * kTaskRows, y, ldy); });
}

bool SelfTest() {
  // x: 16 rows, x[m][k] = m + 1 for k < 32; W: 32 rows, W[n][k] = (n + 1) / 8 as BF16.
  // y[m][n] = 32 * (m + 1) * (n + 1) / 8, exact.
  alignas(64) float x[16 * 32];
  alignas(64) uint16_t wbits[32 * 32];
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 32; ++k) x[m * 32 + k] = float(m + 1);
  for (int n = 0; n < 32; ++n)
    for (int k = 0; k < 32; ++k) wbits[n * 32 + k] = F32ToBf16(float(n + 1) / 8.0f);
  alignas(64) uint16_t xb[2 * kTileElems] = {};
  PackX(x, 16, 32, 32, 0, 1, xb);
  MatrixView w;
  w.dtype = DType::kBF16;
  w.data = wbits;
  w.rows = 32;
  w.cols = 32;
  w.row_stride = 32;
  float y[16 * 32];
  RunTask(xb, 16, 1, w, 0, y, 32);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 32; ++n)
      if (y[m * 32 + n] != 4.0f * float((m + 1) * (n + 1))) return false;
  return true;
}

double PeakLoopForBenchmark(int64_t iters) {
  alignas(64) uint16_t a[kTileElems] = {};
  TileScope tiles;
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, a, 64);
  _tile_loadd(7, a, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  return 4.0 * 2.0 * 16 * 16 * 32 * double(iters);
}

}  // namespace tern::kernels::amx

#pragma GCC diagnostic pop
#pragma GCC pop_options
