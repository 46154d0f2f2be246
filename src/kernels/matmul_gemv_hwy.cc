// MatMul (ops.h): y[M, N] = x[M, K] · W[N, K]^T with W in F32, BF16 or F16,
// written once with Highway and compiled per SIMD target.
//
// Design
// * Tile kernel: an MR x NR block of y as MR*NR dot products along K, with
//   vectors along K. One step consumes S = 2 f32 vectors' worth of K from NR
//   rows of W (converted to f32 in registers) and from MR rows of x, and issues
//   2*MR*NR FMAs. W is never transposed or packed: it is read from the
//   checkpoint's memory, converted on the fly, and each W vector feeds MR rows
//   of x.
// * BF16: a 32-bit lane holds two bf16 (elements 2i and 2i+1, little endian);
//   `lane << 16` and `lane & 0xffff0000` are those two as f32. A step thus
//   costs one load and two integer ops for two vectors of W. The order this
//   yields (even elements, then odd ones) is matched by permuting x once per
//   call (PrepareRows), M*K work against M*N*K.
// * FP8 (wload-inl.h): on AMD CPUs a 32-bit lane holds four E4M3 bytes and a
//   block of two steps yields elements 4i, 4i+2 (first step) and 4i+1, 4i+3
//   (second) with 16-bit shifts and ANDs alone, x permuted and scaled by 2^64
//   to match (XOrder::kQuads); elsewhere by way of F16 as BF16 pairs.
// * x is copied to per-thread scratch, zero-padded to a multiple of 2S, so the
//   K tail only needs W's last partial step (FP8: block of two) copied to a
//   zero-filled buffer.
// * Decode with one row of x and dense W: each thread reads its rows of W
//   one after the other (RowStream), one sequential stream.
// * Decode (M <= kMaxMR): one row block of M rows with a wide NR, so each x
//   vector feeds several W rows; threads split N into chunks, and a chunk
//   into NR lanes of consecutive rows read side by side (RowBlock), so W is
//   streamed as NR long sequential runs.
// * Prefill and batched decode (M > kMaxMR): threads take chunks of NC rows of
//   W; inside a chunk K is cut into KC blocks so that the chunk (NC*KC
//   elements) stays in L2 while each row block of x (MR*KC floats, L1) passes
//   over it. W is therefore read from memory once per call whatever M is.
// * Quantized W with more than kQuantDirectRows rows of x: decoding NVFP4/FP8
//   in registers costs several instructions per vector and leaves room for one
//   or two W rows per tile (NRFor), so each chunk block is instead dequantized
//   once into an f32 buffer in L2 (DequantRows) and every row block of x runs
//   the F32 tile over it: one decode per W element per call instead of one
//   per row block, and the wider F32 tile.
// * NVFP4 with one row of x on x86 (decode) leaves this file for
//   nvfp4_gemv_int-inl.h: integer dot products over the E2M1 codes, about
//   1.5x this tile's rate (the tile is compute-bound there).
//
// Register budget (16 vector registers on AVX2, 32 on AVX-512): MR*NR
// accumulators (block FP8: twice, with the block sums) + 2*NR converted W
// vectors + 2 x vectors, see NRFor.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_gemv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cstring>
#include <span>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_int-inl.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"
#include "kernels/wload-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // every AVX-512 target (AVX3, AVX3_DL, and newer Highways' AVX3_ZEN4 / SPR)
constexpr int kMaxMR = 6;
constexpr bool kWideRegs = true;  // 32 vector registers
#else
constexpr int kMaxMR = 5;
constexpr bool kWideRegs = false;  // 16 vector registers
#endif

using wload::Fmt;
using wload::WLoad;

// Quantized W is decoded in registers for at most this many rows of x; more
// rows go through a dequantized chunk (see Design). BM_Gemv<NVFP4> on AVX2
// (2048 x 2048): in registers is 2.4x faster at 3 rows, even at 4-8, and the
// chunk 1.1x faster at 16 rows and 1.9x at 32.
constexpr size_t kQuantDirectRows = 8;

template <Fmt kF>
constexpr bool kQuantFmt = wload::kIsQuantized<kF>;

// W rows per tile for a row block of MR rows of x (see the register budget).
// Quantized rows need more registers to decode, so they take fewer rows.
template <Fmt kF>
constexpr int NRFor(int mr) {
  constexpr bool kQuant = kQuantFmt<kF>;
  // Block FP8 keeps a block sum beside each accumulator.
  if (kWideRegs && wload::kIsFp8Block<kF>) return mr <= 2 ? 4 : mr == 3 ? 3 : 2;
  if (kWideRegs) return mr == 1 ? (kQuant ? 4 : 8) : mr == 2 ? (kQuant ? 4 : 6) : mr <= 4 ? (kQuant ? 3 : 4) : 3;
  if (kQuant) return mr <= 2 ? 2 : 1;
  return mr == 1 ? 4 : mr == 2 ? 3 : 2;
}

// W's step at kw: FP8 (XOrder::kQuads) as step kStep of the block at kw.
template <Fmt kF, int kStep>
HWY_INLINE void LoadW(const uint8_t* row, const uint8_t* srow, size_t kw, VF& lo, VF& hi) {
  if constexpr (wload::kXOrder<kF> == wload::XOrder::kQuads) {
    WLoad<kF>::template LoadStep<kStep>(row, srow, kw, lo, hi);
  } else {
    WLoad<kF>::Load(row, srow, kw, lo, hi);
  }
}

// One step of the tile: acc[i][j] += W[j][k..k+S) · x[i][k..k+S). For FP8,
// kStep says which step of W's block at kw this is (kx is the step's own).
template <Fmt kF, int MR, int NR, int kStep = 0>
HWY_INLINE void TileStep(const float* HWY_RESTRICT x, size_t ldxs, size_t kx, const uint8_t* const* rows,
                         const uint8_t* const* srows, size_t kw, VF (&acc)[MR][NR]) {
  const DF df;
  const size_t L = hn::Lanes(df);
  if constexpr (kF == Fmt::kNvfp4 && MR == 1) {
    // One x row: scale the step's dot product once (a mul and an FMA per
    // row) instead of both decoded W vectors.
    const VF xl = hn::LoadU(df, x + kx), xh = hn::LoadU(df, x + kx + L);
    HWY_UNROLL(8)
    for (int j = 0; j < NR; ++j) {
      VF lo, hi;
      WLoad<kF>::Codes(rows[j], kw, lo, hi);
      const VF t = hn::MulAdd(hi, xh, hn::Mul(lo, xl));
      acc[0][j] = hn::MulAdd(t, WLoad<kF>::Scale(srows[j], kw), acc[0][j]);
    }
    return;
  }
  VF lo[NR], hi[NR];
  HWY_UNROLL(8)
  for (int j = 0; j < NR; ++j) LoadW<kF, kStep>(rows[j], srows[j], kw, lo[j], hi[j]);
  HWY_UNROLL(8)
  for (int i = 0; i < MR; ++i) {
    const VF xl = hn::LoadU(df, x + i * ldxs + kx);
    const VF xh = hn::LoadU(df, x + i * ldxs + kx + L);
    HWY_UNROLL(8)
    for (int j = 0; j < NR; ++j) {
      acc[i][j] = hn::MulAdd(lo[j], xl, acc[i][j]);
      acc[i][j] = hn::MulAdd(hi[j], xh, acc[i][j]);
    }
  }
}

// A step of the tile, or for FP8 both steps of W's block at kw (x's at kx).
template <Fmt kF, int MR, int NR>
HWY_INLINE void TileSteps(const float* HWY_RESTRICT x, size_t ldxs, size_t kx, const uint8_t* const* rows,
                          const uint8_t* const* srows, size_t kw, VF (&acc)[MR][NR]) {
  if constexpr (wload::kXOrder<kF> == wload::XOrder::kQuads) {
    TileStep<kF, MR, NR, 0>(x, ldxs, kx, rows, srows, kw, acc);
    TileStep<kF, MR, NR, 1>(x, ldxs, kx + 2 * hn::Lanes(DF()), rows, srows, kw, acc);
  } else {
    TileStep<kF, MR, NR>(x, ldxs, kx, rows, srows, kw, acc);
  }
}

// sums[i * NR + j] = sum over k in [k0, k1) of x[i][k] * W[j][k], where x has
// row stride ldxs (prepared, zero-padded), rows[j] points at W row j and
// srows[j] at its block scales (formats with block scales), both at k = 0,
// in the units of wload::kSumUnit (FP8). k0 is a multiple of 2S; k1 is too
// unless it equals K (the tail).
// Prefetch kNextTile with next_rows not null (streaming ranges too short for
// RowBlock's lanes) requests the rows of the next tile
// at the same column: a tile's rows are then already in cache when it starts,
// instead of each row starting with a full memory latency (rows are only 1-6
// KiB long). With kNextTile the rows being read are left to the hardware
// prefetcher: without a request ~1 KiB ahead, BM_MatMul<BF16>/1/* read
// 0.95-1.33x as fast (median 1.07x) and BM_Gemv<NVFP4>/1 1.04x (AVX2, medians
// of 3 interleaved runs, before the lanes below), as a software prefetch 2
// KiB ahead slows a plain streaming read by 15-20% (Zen 2-3 class EPYC).
// kAhead (RowBlock's lanes, each a long stream of whole rows) requests each
// row's line kStreamAheadBytes ahead instead.
enum class Prefetch { kNone, kNextTile, kAhead };

// How far ahead kAhead requests a lane's stream: BM_MatMul<BF16>/1 (2048 x
// 1024, 1024 x 3072, 151936 x 1024), 2 threads, AMD Zen 5, medians of 3 in
// 2 interleaved rounds: avx3 1.0-1.25x with 2 KiB (35-42 -> 42-46 GB/s; 1
// KiB and 4 KiB less), avx2 1.04-1.25x; qwen3-0.6b FP8 decode 1.05x. (The
// plain-read slowdown above had no compute between the loads.) Every format
// of the lanes takes it; F32's 128-byte steps request every other line.
constexpr size_t kStreamAheadBytes = 2048;

// acc[i][j] += the products of x[i] and W[j] over k in [k0, k1) (see Tile).
template <Fmt kF, int MR, int NR>
HWY_INLINE void TileRange(const float* HWY_RESTRICT x, size_t ldxs, const uint8_t* const* rows,
                          const uint8_t* const* srows, const uint8_t* const* next_rows, size_t k0, size_t k1,
                          Prefetch prefetch, VF (&acc)[MR][NR]) {
  const size_t S = 2 * hn::Lanes(DF());
  // FP8 steps go in pairs, the two steps of one W block (XOrder::kQuads).
  constexpr bool kQuads = wload::kXOrder<kF> == wload::XOrder::kQuads;
  const size_t step = kQuads ? 2 * S : S;
  const size_t kmain = k0 + (k1 - k0) / step * step;
  size_t k = k0;
  if (prefetch != Prefetch::kNone) {
    for (; k < kmain; k += step) {
      const size_t byte = wload::RowBytes<kF>(k);
      if ((byte & 63) < wload::RowBytes<kF>(step)) {  // once per cache line of the rows
        // (kAhead past a lane's last row requests the next lane's or past W's
        // end: a prefetch never faults.)
        if (prefetch == Prefetch::kAhead) {
          for (int j = 0; j < NR; ++j) hwy::Prefetch(rows[j] + byte + kStreamAheadBytes);
        } else if (next_rows != nullptr) {
          for (int j = 0; j < NR; ++j) hwy::Prefetch(next_rows[j] + byte);
        }
      }
      TileSteps<kF, MR, NR>(x, ldxs, k, rows, srows, k, acc);
    }
  } else {
    for (; k < kmain; k += step) TileSteps<kF, MR, NR>(x, ldxs, k, rows, srows, k, acc);
  }
  if (k < k1) {
    // Tail: the last partial step (FP8: block) of each W row, zero-padded (x
    // is padded too), with the scales that cover it (k is a multiple of the
    // step, which divides both block sizes, so they start at element k's
    // scale).
    alignas(64) uint8_t buf[NR][2 * HWY_MAX_BYTES];
    alignas(64) uint8_t sbuf[NR][16];
    const uint8_t* tail_rows[NR];
    const uint8_t* tail_srows[NR];
    for (int j = 0; j < NR; ++j) {
      std::memset(buf[j], 0, sizeof(buf[j]));
      std::memcpy(buf[j], rows[j] + wload::RowBytes<kF>(k), wload::RowBytes<kF>(k1 - k));
      tail_rows[j] = buf[j];
      std::memset(sbuf[j], 0, sizeof(sbuf[j]));
      if (srows[j] != nullptr)
        std::memcpy(sbuf[j], srows[j] + wload::ScaleBytes<kF>(k),
                    wload::ScaleBytes<kF>(k1 - 1) - wload::ScaleBytes<kF>(k) + (wload::kIsFp8Block<kF> ? 4 : 1));
      tail_srows[j] = sbuf[j];
    }
    TileSteps<kF, MR, NR>(x, ldxs, k, tail_rows, tail_srows, 0, acc);
  }
}

template <Fmt kF, int MR, int NR>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT x, size_t ldxs, const uint8_t* const* rows, const uint8_t* const* srows,
                       const uint8_t* const* next_rows, size_t k0, size_t k1, Prefetch prefetch,
                       float* HWY_RESTRICT sums) {
  const DF df;
  VF acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = hn::Zero(df);
  if constexpr (wload::kIsFp8Block<kF>) {
    // Block FP8: each 128-column block's products summed unscaled (the
    // per-tensor format's steps, the same decode), times that format's
    // kSumUnit (its sums are the plain ones over kSumUnit; see wload's
    // units), then one FMA by the block scale, instead of two multiplies per
    // step.
    // BM_MatMul<FP8block,L2> (see the kernels README): 1.2-1.5x on AVX-512,
    // 1.8-2.2x on AVX2 (its 16 registers).
    constexpr Fmt kPlain = kF == Fmt::kFp8Block ? Fmt::kFp8 : Fmt::kFp8F16;
    // (A quads block of 4 * Lanes elements must not straddle two scales.)
    static_assert(HWY_MAX_BYTES <= kFp8Block, "FP8 blocks of two steps wider than a block scale");
    const uint8_t* const no_scales[NR] = {};
    for (size_t kb = k0; kb < k1; kb += kFp8Block) {
      VF t[MR][NR];
      for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) t[i][j] = hn::Zero(df);
      TileRange<kPlain, MR, NR>(x, ldxs, rows, no_scales, next_rows, kb, std::min(k1, kb + kFp8Block), prefetch, t);
      const VF unit = hn::Set(df, wload::kSumUnit<kPlain>);
      for (int j = 0; j < NR; ++j) {
        float s;
        std::memcpy(&s, srows[j] + wload::ScaleBytes<Fmt::kFp8Block>(kb), sizeof(float));
        const VF scale = hn::Set(df, s);
        // (t * kSumUnit is exact, a power of two; folding it into s instead
        // overflowed for block scales of 2^72 and more.)
        for (int i = 0; i < MR; ++i) acc[i][j] = hn::MulAdd(hn::Mul(t[i][j], unit), scale, acc[i][j]);
      }
    }
  } else {
    TileRange<kF, MR, NR>(x, ldxs, rows, srows, next_rows, k0, k1, prefetch, acc);
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) sums[i * NR + j] = hn::GetLane(hn::SumOfLanes(df, acc[i][j]));
}

// Decode with one row of x and dense W (BF16, F16, F32): rows [n0, n1) of W
// read front to back, one row after the other (a chunk's rows are
// contiguous), so each thread reads one sequential stream, the pattern the
// hardware prefetchers follow best; x is re-read from L1 for every row. No
// software prefetch: on a stream this plain it only costs issue slots.
// Against RowBlock's NR lanes (Zen 5, W in 2 MiB pages, medians of three
// interleaved rounds): BF16 1.1-1.33x on qwen3-0.6b's shapes with 2
// threads; qwen3-0.6b BF16 decode (tern bench --huge-pages, interleaved
// pairs) 26.9 / 26.4 -> 38.3 / 37.2 tokens/s. (Four accumulators per row,
// as measured there, read 1.17-1.2x faster on one thread and the same on
// two, and broke the bit-identity below; not kept.)
template <Fmt kF>
HWY_NOINLINE void RowStream(const float* HWY_RESTRICT x, const MatrixView& w, size_t n0, size_t n1, size_t k0,
                            size_t k1, float* HWY_RESTRICT y, bool accumulate) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = wload::RowBytes<kF>(size_t(w.row_stride));
  const size_t k0_bytes = wload::RowBytes<kF>(k0);
  const float g = w.global_scale;
  const uint8_t* const srows[1] = {nullptr};
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t* const rows[1] = {base + n * row_bytes + k0_bytes};
    // The tile's own steps, one accumulator in order: each sum is
    // bit-identical to that row's in a batch of 2 to kMaxMR rows of x (a
    // speculative verify of up to kMaxMR - 1 drafts scores its rows as
    // one-row decode would; MatMulTest.OneRowEqualsItsRowInASmallBatch).
    float dot = 0;
    Tile<kF, 1, 1>(x + k0, 0, rows, srows, nullptr, 0, k1 - k0, Prefetch::kNone, &dot);
    y[n] = accumulate ? y[n] + dot * g : dot * g;
  }
}

// Computes (or, with `accumulate`, adds to) y[0..MR)[n0..n1) the partial
// products over k in [k0, k1) of MR prepared x rows and W rows n0..n1.
// k0 is a multiple of the format's block size along K (16 for NVFP4, 128 for
// block FP8). The per-tensor global_scale is applied here, to the sums,
// after wload::kSumUnit.
template <Fmt kF, int MR>
void RowBlock(const float* xs, size_t ldxs, const MatrixView& w, size_t n0, size_t n1, size_t k0, size_t k1, float* y,
              size_t ldy, bool accumulate, bool prefetch) {
  constexpr int NR = NRFor<kF>(MR);
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = wload::RowBytes<kF>(size_t(w.row_stride));
  const size_t k0_bytes = wload::RowBytes<kF>(k0), k0_scale = wload::ScaleBytes<kF>(k0);
  const auto scale_row = [&](size_t n) {
    const uint8_t* s = wload::ScaleRow<kF>(w, n);
    return s == nullptr ? s : s + k0_scale;
  };
  const float g = wload::FmtGlobalScale<kF>(w);
  constexpr float su = wload::kSumUnit<kF>;  // (a power of two: exact)
  if constexpr (MR == 1 && (kF == Fmt::kBF16 || kF == Fmt::kF32 || kF == Fmt::kF16)) {
    if (prefetch) return RowStream<kF>(xs, w, n0, n1, k0, k1, y, accumulate);
  }
  if (prefetch && NR > 1 && n1 - n0 >= 2 * size_t(NR)) {
    // Streaming (decode): the range is cut into NR lanes of consecutive rows
    // and tile t takes row t of every lane, so each of the NR rows a tile
    // reads continues where the previous tile's left off: NR long
    // sequential streams for the hardware prefetchers instead of NR new
    // ones per tile. Rows are only 1-6 KiB, so tiles of adjacent rows
    // restarted every stream after 16-96 cache lines, next-tile prefetch or
    // not. Against that (AVX2, 2 threads, medians of 5 interleaved runs):
    // BM_MatMul<BF16>/1 151936x1024 24.0 -> 17.2 ms (the read bandwidth),
    // 2048x1024 326 -> 221 us, 3072x1024 458 -> 337 us, K >= 2048 1.03-1.07x,
    // 2 rows of x 1.21x; q06 decode BF16 11.0 -> 14.6 and NVFP4 (its BF16
    // lm_head) 17.5 -> 21.0 tokens/s. Each lane is also prefetched ahead
    // (kStreamAheadBytes).
    const size_t lane = (n1 - n0 + NR - 1) / NR;
    for (size_t t = 0; t < lane; ++t) {
      const uint8_t* rows[NR];
      const uint8_t* srows[NR];
      size_t r_of[NR];
      for (int j = 0; j < NR; ++j) {
        // Past the range (a short last lane), read the last row; dropped below.
        r_of[j] = n0 + size_t(j) * lane + t;
        const size_t r = std::min(r_of[j], n1 - 1);
        rows[j] = base + r * row_bytes + k0_bytes;
        srows[j] = scale_row(r);
      }
      float sums[MR * NR];
      Tile<kF, MR, NR>(xs + k0, ldxs, rows, srows, nullptr, 0, k1 - k0, Prefetch::kAhead, sums);
      for (int j = 0; j < NR; ++j) {
        if (r_of[j] >= n1) continue;
        for (int i = 0; i < MR; ++i) {
          float* yi = y + i * ldy + r_of[j];
          *yi = accumulate ? *yi + sums[i * NR + j] * su * g : sums[i * NR + j] * su * g;
        }
      }
    }
    return;
  }
  for (size_t n = n0; n < n1; n += NR) {
    // Past the end of the range, repeat the last row: its results are dropped.
    const uint8_t* rows[NR];
    const uint8_t* srows[NR];
    const uint8_t* next[NR];
    for (int j = 0; j < NR; ++j) {
      const size_t r = std::min(n + j, n1 - 1);
      rows[j] = base + r * row_bytes + k0_bytes;
      srows[j] = scale_row(r);
      next[j] = base + std::min(n + NR + j, n1 - 1) * row_bytes + k0_bytes;
    }
    float sums[MR * NR];
    Tile<kF, MR, NR>(xs + k0, ldxs, rows, srows, n + NR < n1 ? next : nullptr, 0, k1 - k0,
                     prefetch ? Prefetch::kNextTile : Prefetch::kNone, sums);
    const size_t valid = std::min<size_t>(NR, n1 - n);
    for (int i = 0; i < MR; ++i) {
      float* yi = y + i * ldy + n;
      if (accumulate) {
        for (size_t j = 0; j < valid; ++j) yi[j] += sums[i * NR + j] * su * g;
      } else {
        for (size_t j = 0; j < valid; ++j) yi[j] = sums[i * NR + j] * su * g;
      }
    }
  }
}

template <Fmt kF, int MR = kMaxMR>
void RowBlockFor(size_t mr, const float* xs, size_t ldxs, const MatrixView& w, size_t n0, size_t n1, size_t k0,
                 size_t k1, float* y, size_t ldy, bool accumulate, bool prefetch) {
  if constexpr (MR >= 1) {
    if (mr == MR) return RowBlock<kF, MR>(xs, ldxs, w, n0, n1, k0, k1, y, ldy, accumulate, prefetch);
    if constexpr (MR > 1) RowBlockFor<kF, MR - 1>(mr, xs, ldxs, w, n0, n1, k0, k1, y, ldy, accumulate, prefetch);
  }
}

// Copies rows [m0, m1) of x into xs (row stride kp, zero-padded; kp a
// multiple of 2 steps), in the order of the tile's W vectors (wload::XOrder)
// and times `unit` (wload::kXUnit, a power of two: exact).
void PrepareRows(const float* x, size_t ldx, size_t m0, size_t m1, size_t K, size_t kp, wload::XOrder order,
                 float unit, float* xs) {
  const DF df;
  const size_t L = hn::Lanes(df), S = 2 * L;
  const VF u = hn::Set(df, unit);
  for (size_t m = m0; m < m1; ++m) {
    const float* src = x + m * ldx;
    float* dst = xs + m * kp;
    size_t k = 0;
    switch (order) {
      case wload::XOrder::kNatural:  // (F32, F16, and dequantized chunks: unit 1)
        if (unit == 1.0f) {
          std::memcpy(dst, src, K * sizeof(float));
          k = K;
        }
        for (; k < K; ++k) dst[k] = src[k] * unit;
        break;
      case wload::XOrder::kPairs:  // per step: even elements, odd elements
#if HWY_TARGET != HWY_SCALAR       // (no ConcatEven there)
        for (; k + S <= K; k += S) {
          const VF a = hn::Mul(hn::LoadU(df, src + k), u), b = hn::Mul(hn::LoadU(df, src + k + L), u);
          hn::StoreU(hn::ConcatEven(df, b, a), df, dst + k);
          hn::StoreU(hn::ConcatOdd(df, b, a), df, dst + k + L);
        }
#endif
        for (; k < K; k += S) {
          for (size_t i = 0; i < L; ++i) {
            dst[k + i] = k + 2 * i < K ? src[k + 2 * i] * unit : 0.0f;
            dst[k + L + i] = k + 2 * i + 1 < K ? src[k + 2 * i + 1] * unit : 0.0f;
          }
        }
        break;
      case wload::XOrder::kQuads:  // per block of 2 steps: elements 4i, 4i+2, 4i+1, 4i+3
        for (; k + 2 * S <= K; k += 2 * S) {
          VF e0, e1, e2, e3;
          hn::LoadInterleaved4(df, src + k, e0, e1, e2, e3);
          hn::StoreU(hn::Mul(e0, u), df, dst + k);
          hn::StoreU(hn::Mul(e2, u), df, dst + k + L);
          hn::StoreU(hn::Mul(e1, u), df, dst + k + 2 * L);
          hn::StoreU(hn::Mul(e3, u), df, dst + k + 3 * L);
        }
        for (; k < K; k += 2 * S) {
          for (size_t i = 0; i < L; ++i) {
            for (size_t j = 0; j < 4; ++j) {  // element 4i + j goes to step j % 2, vector j / 2
              const size_t e = k + 4 * i + j;
              dst[k + (j % 2) * S + (j / 2) * L + i] = e < K ? src[e] * unit : 0.0f;
            }
          }
        }
        break;
    }
    std::fill(dst + k, dst + kp, 0.0f);
  }
}

// One W's chunks in MatMulTyped: `chunks` of them, the first numbered
// `first` among all matrices' chunks.
struct ChunkPlan {
  size_t chunks = 0, first = 0;
};

// y_i = x · W_i^T for every target (all in format kF, all with K columns),
// in one parallel region: threads claim chunks of rows across all matrices,
// so q/k/v (or gate/up) share one barrier and one tail instead of three.
// Each y element is computed exactly as a single MatMul computes it.
template <Fmt kF>
void MatMulTyped(const float* xs, size_t kp, size_t M, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  const size_t K = size_t(targets[0].w.cols);
  const size_t S = 2 * hn::Lanes(DF());
  // Quantized W through a dequantized f32 chunk: size the chunks for f32.
  const bool dequant = kQuantFmt<kF> && M > kQuantDirectRows;
  const size_t kBytes = dequant ? 4 : std::max<size_t>(1, wload::RowBytes<kF>(S) / S);  // (NVFP4 counts as 1)
  // Decode streams W from memory; larger M reuses each chunk of W from L2.
  const bool streaming = M <= size_t(kMaxMR);
  // KC: x rows of a block (kMaxMR * KC floats) stay in L1 next to NR rows of W.
  constexpr size_t kKcElements = 1024;
  const size_t kc = streaming ? K : std::min(K, kKcElements / S * S);
  // NC: a chunk of W (NC * KC elements) fills about a quarter of L2 ...
  constexpr size_t kChunkBytes = 256 * 1024, kRowQuantum = 24;  // 24: a multiple of every NR
  const size_t nc_max = std::max(kRowQuantum, kChunkBytes / (kc * kBytes) / kRowQuantum * kRowQuantum);
  static_assert(kKcElements % kFp8Block == 0, "K blocks must hold whole scale blocks");
  // ... but there are at least ~4 chunks per thread for balance (~8 when
  // streaming: the last chunk is read by one thread alone, at less than the
  // machine's bandwidth), counted over all the matrices.
  size_t total_rows = 0;
  for (const MatMulTarget& t : targets) total_rows += size_t(t.w.rows);
  const size_t chunks_per_thread = streaming ? 8 : 4;
  const size_t per_thread = (total_rows + chunks_per_thread * pool.size() - 1) / (chunks_per_thread * pool.size());
  const size_t nc = std::min(nc_max, std::max(kRowQuantum, (per_thread + kRowQuantum - 1) / kRowQuantum * kRowQuantum));
  ChunkPlan plans[kMaxGemvTargets];
  size_t num_chunks = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    plans[i] = {.chunks = (size_t(targets[i].w.rows) + nc - 1) / nc, .first = num_chunks};
    num_chunks += plans[i].chunks;
  }
  const size_t num_blocks = (M + kMaxMR - 1) / kMaxMR;  // row blocks of balanced size <= kMaxMR

  pool.Run(num_chunks, [&](size_t chunk, size_t) {
    size_t i = 0;
    while (chunk >= plans[i].first + plans[i].chunks) ++i;
    const MatrixView& w = targets[i].w;
    float* y = targets[i].y;
    const size_t ldy = size_t(targets[i].ldy), N = size_t(w.rows);
    const size_t n0 = (chunk - plans[i].first) * nc, n1 = std::min(N, n0 + nc);
    if constexpr (kQuantFmt<kF>) {
      if (dequant) {
        // buf[r * ldb + k]: rows n0.. of W over one K block, as f32 (the
        // global scale included), read by the F32 tile like any dense W.
        const size_t ldb = (kc + S - 1) / S * S;
        float* buf = ThreadScratch(ScratchSlot::kGemvDequant, nc * ldb);
        for (size_t k0 = 0; k0 < K; k0 += kc) {
          const size_t k1 = std::min(K, k0 + kc);
          wload::DequantRows<kF>(w, n0, n1 - n0, k0, k1, buf, ldb);
          const MatrixView chunk_w{.dtype = DType::kF32, .data = buf, .rows = int64_t(n1 - n0),
                                   .cols = int64_t(k1 - k0), .row_stride = int64_t(ldb)};
          for (size_t b = 0; b < num_blocks; ++b) {
            const size_t m0 = b * M / num_blocks, m1 = (b + 1) * M / num_blocks;
            RowBlockFor<Fmt::kF32>(m1 - m0, xs + m0 * kp + k0, kp, chunk_w, 0, n1 - n0, 0, k1 - k0, y + m0 * ldy + n0,
                                   ldy, k0 > 0, false);
          }
        }
        return;
      }
    }
    for (size_t k0 = 0; k0 < K; k0 += kc) {
      const size_t k1 = std::min(K, k0 + kc);
      for (size_t b = 0; b < num_blocks; ++b) {
        const size_t m0 = b * M / num_blocks, m1 = (b + 1) * M / num_blocks;
        RowBlockFor<kF>(m1 - m0, xs + m0 * kp, kp, w, n0, n1, k0, k1, y + m0 * ldy, ldy, k0 > 0, streaming);
      }
    }
  });
}

}  // namespace

// targets: 1 to kMaxGemvTargets matrices, all with the same format and K.
void MatMulManyImpl(const float* x, int64_t M, int64_t ldx, const MatMulTarget* targets, size_t count,
                    ThreadPool& pool) {
  std::span<const MatMulTarget> all(targets, count);
  const size_t K = size_t(all[0].w.cols);
  if (M <= 0) return;
  if (K == 0) {
    for (const MatMulTarget& t : all)
      for (int64_t m = 0; m < M; ++m) std::fill(t.y + m * t.ldy, t.y + m * t.ldy + t.w.rows, 0.0f);
    return;
  }
  const Fmt fmt = wload::FmtOf(all[0].w);
  if (size_t(M) <= nvfp4_int::kMaxRows && fmt == Fmt::kNvfp4 && nvfp4_int::kAvailable &&
      std::all_of(all.begin(), all.end(), [](const MatMulTarget& t) { return nvfp4_int::Supports(t.w); })) {
    return nvfp4_int::MatMul(x, size_t(M), size_t(ldx), all, pool);
  }
  // x in the order the tile's W vectors come in (wload::XOrder), except
  // quantized W through a dequantized chunk (natural order, plain x).
  const bool quant = wload::IsQuantized(fmt);
  const bool direct = !quant || size_t(M) <= kQuantDirectRows;
  wload::XOrder order = wload::XOrder::kNatural;
  float unit = 1.0f;
  if (direct) {
    wload::VisitFmt(fmt, [&](auto f) {
      order = wload::kXOrder<decltype(f)::value>;
      unit = wload::kXUnit<decltype(f)::value>;
    });
  }
  const size_t S2 = 4 * hn::Lanes(DF());  // two steps: FP8's block
  const size_t kp = (K + S2 - 1) / S2 * S2;
  float* xs = ThreadScratch(ScratchSlot::kMatMulX, size_t(M) * kp);
  if (size_t(M) * K >= (size_t(1) << 16)) {
    pool.ParallelFor(size_t(M), 1, [&](size_t b, size_t e, size_t) {
      PrepareRows(x, size_t(ldx), b, e, K, kp, order, unit, xs);
    });
  } else {
    PrepareRows(x, size_t(ldx), 0, size_t(M), K, kp, order, unit, xs);
  }
  wload::VisitFmt(fmt, [&](auto f) { MatMulTyped<decltype(f)::value>(xs, kp, size_t(M), all, pool); });
}

int64_t GemvStreamRowsImpl() { return kMaxMR; }

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(MatMulManyImpl);
HWY_EXPORT(GemvStreamRowsImpl);

int64_t GemvStreamRows() { return HWY_DYNAMIC_DISPATCH(GemvStreamRowsImpl)(); }

void MatMulGemv(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (w.rows <= 0) return;
  const MatMulTarget t{.w = w, .y = y, .ldy = ldy};
  HWY_DYNAMIC_DISPATCH(MatMulManyImpl)(x, M, ldx, &t, 1, pool);
}

void MatMulGemvMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool) {
  // Empty matrices take no part; the rest go in groups of kMaxGemvTargets.
  MatMulTarget group[kMaxGemvTargets];
  size_t n = 0;
  for (const MatMulTarget& t : targets) {
    if (t.w.rows <= 0) continue;
    group[n++] = t;
    if (n == kMaxGemvTargets) {
      HWY_DYNAMIC_DISPATCH(MatMulManyImpl)(x, M, ldx, group, n, pool);
      n = 0;
    }
  }
  if (n > 0) HWY_DYNAMIC_DISPATCH(MatMulManyImpl)(x, M, ldx, group, n, pool);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
