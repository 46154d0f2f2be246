// AVX512-BF16 GEMM (matmul_bf16dot.cc): y[M, N] = bf16(x)[M, K] · W[N, K]^T
// on VDPBF16PS, for prefill and batched decode on CPUs with AVX512-BF16 and
// no AMX tiles (AMD Zen 4 and Zen 5, where one VDPBF16PS retires at the rate
// of an f32 FMA and does two multiply-adds per lane: twice the f32 GEMM's
// ceiling). Called only on the "avx512-bf16" path (cpu_features.h:
// UseBf16Dot()).
//
// Numerics: exactly the BF16-activation mode of matmul_amx.h, with its bound
// (x rounded to BF16 by RNE, W exact in BF16 without its global scale,
// products exact, summed in f32 in some order, inputs and sums below 2^-126
// flushed; the global scale multiplies the f32 sum once; FP8 128x128 block
// scales multiply each 128-column block's f32 sum, added in f32).
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels::bf16dot {

// Whether Gemm takes w: the formats exact in BF16 (dense BF16, NVFP4, FP8).
bool Supports(const MatrixView& w);

// MatMul's contract (ops.h) with the numerics above, for any M >= 0; w must
// be Supports(). Needs AVX512-BF16 (the caller's path check).
void Gemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);
// The packed-panel GEMM alone (Gemm's kernel past RowsGemmMaxRows), any M;
// for benchmarks against RowsGemm.
void PackedGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// Gemm for few rows of x (matmul_bf16dot_rows.cc): W read in place, one
// stream per row, no packed panels; the same numerics (another order of the
// f32 sums), any M. Gemm takes it for M <= RowsGemmMaxRows(w) where
// RowsGemmSupports(w) (not FP8 with block scales). Rows of x are taken
// kRowsGemmMaxTile at a time.
inline constexpr size_t kRowsGemmMaxTile = 12;
bool RowsGemmSupports(const MatrixView& w);
// 64 for dense BF16 W, 16 for NVFP4 and FP8 (whose decode the packed panels
// share among more rows): the crossovers measured (matmul_bf16dot_rows.cc).
int64_t RowsGemmMaxRows(const MatrixView& w);
void RowsGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// The pieces of prefill attention's two products in the BF16-activation mode
// (attention_prefill_hwy.cc: S = bf16(Q) bf16(K)^T, O += bf16(P) bf16(V)),
// the GEMM's micro-kernel on operands packed as it reads them:
// * row tiles (A): kTileRows rows, pair-major: pair p of row i of tile t at
//   xs[t * K2 * kTileRows + p * kTileRows + i], K2 = ceil(K / 2), rows past M
//   and a last odd column's partner zero;
// * panels (B): kPanelCols columns, pair-major: panel[p * kPanelCols + j] =
//   the BF16 pair p of column j, zeros past the columns given.
// Every input is rounded to BF16 by RNE (BF16 as stored; below 2^-126 flushed,
// as VCVTNE2PS2BF16 does); products exact, sums in f32. Panels and tiles are
// 64-byte aligned. Need AVX512-BF16 (the caller's path check).
inline constexpr size_t kTileRows = 8, kPanelCols = 48;
// uint32 that PackRowTiles writes for M x K (whole pairs of tiles).
size_t RowTilesSize(size_t M, size_t K);
// x [M, K] f32 (row stride ldx) as row tiles.
void PackRowTiles(const float* x, size_t M, size_t ldx, size_t K, uint32_t* xs);
// A panel whose column j < n is the row rows[j] of D elements stored as dt
// (BF16, F16 or F32), pairs along D: K for S = Q K^T. D2 * kPanelCols uint32.
void PackRowsPanel(const void* const* rows, size_t n, DType dt, size_t D, uint32_t* panel);
// A panel whose column j < cols (<= kPanelCols) is element d0 + j of the n
// rows, pairs along the rows (pair p: rows 2p and 2p + 1; a last odd row's
// partner zero): V for O = P V. ceil(n / 2) * kPanelCols uint32.
void PackPairsPanel(const void* const* rows, size_t n, DType dt, size_t d0, size_t cols, uint32_t* panel);
// c[i, j] = (accumulate ? c[i, j] : 0) + sum over kc2 pairs of a row tile's
// row i (i < mr <= kTileRows) times panel column j (j < cols <= kPanelCols).
void TileProduct(size_t mr, const uint32_t* a, const uint32_t* b, size_t kc2, float* c, size_t ldc, size_t cols,
                 bool accumulate);

// VDPBF16PS's ceiling for tern_benchmark's BM_Bf16DotPeak and tern bench:
// `iters` rounds of 12 independent VDPBF16PS on registers on the calling
// thread. Returns the floating-point operations done (2 per multiply-add).
double PeakLoopForBenchmark(int64_t iters);

}  // namespace tern::kernels::bf16dot
