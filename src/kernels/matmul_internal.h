// The three MatMul implementations behind ops.h's MatMul, exposed for tests and
// benchmarks. Each has MatMul's contract for every M; matmul.cc picks one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace tern::kernels {

// Dot products along K over the unpacked weights, several rows of W per x
// load and several rows of x per W load (matmul_gemv_hwy.cc). Bandwidth-bound
// decode and small batches.
void MatMulGemv(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);
// MatMulGemv for several matrices sharing x (same format and K): one
// parallel region per kMaxGemvTargets of them.
inline constexpr size_t kMaxGemvTargets = 8;
void MatMulGemvMany(const float* x, int64_t M, int64_t ldx, std::span<const MatMulTarget> targets, ThreadPool& pool);

// A call of the NVFP4 integer kernels whose W (codes and scales, all
// targets) is under threads x kMinChunkBytes runs in chunks of at least
// kMinChunkBytes: a thread is better off doing a small matrix alone than
// handing x, y and W's lines between cores. Zen 5, 2 threads, tern bench
// decode (3 interleaved runs): 32 KiB against none, models/demo 4464-4637 ->
// 5537-5879 tok/s, demo-qwen35 3305-3990 -> 5292-5469 (K = 192: 21 KiB a
// matrix); 64 KiB the same. Larger calls (every matrix of a real model) are
// split as before, so many threads still share a 1 MB matrix.
inline constexpr size_t kMinChunkBytes = 32 * 1024;

// The tasks of the NVFP4 integer kernels (nvfp4_gemv_int-inl.h and
// nvfp4_gemv_vnni.cc): chunks of W rows, ~2 per thread over all targets' rows
// (the last one is read by one thread alone) and at least 16 rows, or
// kMinChunkBytes for a small call (above); target i's are [first[i],
// first[i + 1]). An array, not a vector: no allocation in the decode step.
// Two, not eight: each chunk is one stream whose first lines wait on memory
// (the read-ahead starts with it) and whose last ones are not read ahead, so
// fewer, longer chunks stream better. AMD Zen 5, 2 threads, two interleaved
// rounds: BM_MatMul<NVFP4>/1 2048x1024 44.2 / 43.8 -> 38.3 / 39.9 us,
// 1024x3072 69.7 / 71.0 -> 66.9 / 67.7; tern bench decode (three rounds)
// qwen3-0.6b NVFP4 with an NVFP4 head 77.1 / 78.5 / 72.7 -> 83.9 / 73.4 /
// 82.8 tokens/s, with its BF16 head 61.7 / 57.7 / 61.9 -> 64.7 / 60.8 / 61.9;
// moe-small and the demo models unchanged within noise. (Four: in between.)
struct Nvfp4Chunks {
  size_t rows = 0;                         // W rows per chunk (a target's last may have fewer)
  size_t first[kMaxGemvTargets + 1] = {};  // first chunk of each target; first[targets] = the count
  // Chunk c of a plan over `targets`: its target and W rows [n0, n1).
  const MatMulTarget& Locate(std::span<const MatMulTarget> targets, size_t c, size_t& n0, size_t& n1) const {
    size_t i = 0;
    while (c >= first[i + 1]) ++i;
    n0 = (c - first[i]) * rows;
    n1 = std::min(size_t(targets[i].w.rows), n0 + rows);
    return targets[i];
  }
};
// passes: how many times each chunk's W is read (the W4A4 / W4A8 VNNI
// kernels' groups of rows of x past their 8); the kMinChunkBytes rule counts
// them all.
inline Nvfp4Chunks PlanNvfp4Chunks(std::span<const MatMulTarget> targets, size_t threads, size_t passes = 1) {
  size_t total = 0;
  for (const MatMulTarget& t : targets) total += size_t(t.w.rows);
  const size_t K = size_t(targets[0].w.cols), row_bytes = K / 2 + K / size_t(kNvfp4Block);
  Nvfp4Chunks c;
  c.rows = std::max<size_t>(16, (total + 2 * threads - 1) / (2 * threads));
  if (total * row_bytes * passes < threads * kMinChunkBytes)
    c.rows = std::max(c.rows, (kMinChunkBytes + row_bytes - 1) / row_bytes);
  for (size_t i = 0; i < targets.size(); ++i)
    c.first[i + 1] = c.first[i] + (size_t(targets[i].w.rows) + c.rows - 1) / c.rows;
  return c;
}

// Packed, register-blocked GEMM (matmul_gemm_hwy.cc). Compute-bound prefill.
void MatMulGemm(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool);

// W as the broadcast operand and x transposed once (matmul_small_batch_hwy.cc):
// no packing of W, for a few rows of x with dense W (batched decode). Quantized
// W goes to MatMulGemv.
void MatMulSmallBatch(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy,
                      ThreadPool& pool);

// Where MatMul switches implementation, from BM_Gemv / BM_SmallBatch /
// BM_Gemm in tern_benchmark (AVX2, 2 threads, weights from memory, medians of
// 5 interleaved runs, 3072x1024 and the 151936x1024 lm_head shape; an older
// GEMV, Zen 2-3 class EPYC):
// * Dense BF16 and F32 W: the GEMV up to 4 rows of x (one streaming row
//   block: 4 rows 553 us against 917-933 for the others; now up to
//   GemvStreamRows(), below); MatMulSmallBatch
//   to 16 rows (6: 914 us against GEMV 1185 / GEMM 1016; 8: 842 / 1254
//   / 1140, lm_head 41 / 66 / 59 ms; 12: 1360 / 1537 / 1391; 16: 1534 / 2414 /
//   1580, lm_head 68 / 96 / 82 ms); the GEMM from 17 (24: 2260 / 2345 / 1873;
//   32: 3702 / 2871 / 2527: MatMulSmallBatch's tile is down to one W row).
// * Dense F16 W: the GEMV converts W in registers per row block, which stays
//   cheaper than packing up to ~12 rows (8 rows: GEMV 1.08x faster; 16: GEMM
//   1.07x).
// * Quantized W: the GEMV decodes in registers or dequantizes each chunk once
//   (matmul_gemv_hwy.cc), ahead of the GEMM's dequantize-then-pack up to ~24
//   rows (16: GEMV 1.15x; 32: GEMM 1.05x).
//
// Since the GEMV streams W once for up to kMaxMR rows of x (6 on AVX-512, 5
// on AVX2), dense W takes it up to that many rows (GemvStreamRows), and
// MatMulSmallBatch only above. AMD Zen 4, 2 threads, BF16 W 3072 x 1024,
// medians of 3, BM_Gemv / BM_SmallBatch: avx512 5 rows 288 / 732 us, 6 rows
// 343 / 667, 7 rows (two passes of the GEMV) 490 / 679; avx2 5 rows 253 /
// 439, 6 rows (two passes) 542 / 442; the 151936 x 1024 lm_head at 6 rows,
// avx512, 15.9 / 31.5 ms. (Those avx512 small-batch figures are from before
// its 256-bit rows, matmul_small_batch_hwy.cc; with them, 461 us at 4-6
// rows, 541 at 7: the GEMV still leads at 5-6.)
inline constexpr int64_t kSmallBatchMaxRows = 16;
// Rows of x the GEMV reads W once for on the current Highway target (its
// kMaxMR): MatMul's GEMV limit for dense W.
int64_t GemvStreamRows();

// Rows of x from which MatMul takes the BF16-activation GEMM of the current
// path (cpu_features.h: kAmxMinRows* on amx, kBf16DotMinRows* on avx512-bf16,
// or TERN_BF16_MIN_ROWS).
int64_t Bf16MinRowsFor(const MatrixView& w);
// Which BF16-activation GEMM MatMul takes for M rows of x and w now: the amx
// path's tiles or the avx512-bf16 path's VDPBF16PS, on Highway's AVX3 target,
// for a format exact in BF16 and M >= Bf16MinRowsFor(w); else none (f32
// activations).
enum class Bf16Gemm { kNone, kAmx, kDot };
Bf16Gemm MatMulBf16Gemm(int64_t M, const MatrixView& w);
inline constexpr int64_t kGemmMinRows = 12;  // F16
inline constexpr int64_t kGemmMinRowsQuantized = 24;

}  // namespace tern::kernels
