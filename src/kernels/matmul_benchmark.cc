// tern_benchmark: kernel timings at Qwen3-0.6B shapes, next to the machine's
// ceilings measured in the same run.
//
//   BM_FmaPeak/threads        GFLOP/s of pure FMA chains (the compute ceiling)
//   BM_MemoryRead             GB/s reading a 512 MiB buffer with all threads
//   BM_MatMul<dtype>/M/N/K    GB/s of weights read and GFLOP/s. For M <= 64 the
//                             weights are cycled through copies totalling
//                             >= 256 MiB, so they come from memory as in a real
//                             forward pass, not from the 32 MiB L3.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "kernels/bench_peak.h"
#include "kernels/bench_util.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tern::kernels {
namespace {

// Runs flops_on(thread) on state.range(0) threads per iteration (each returns
// the floating-point operations it did) and reports GFLOP/s.
template <class Loop>
void TimePeak(benchmark::State& state, Loop flops_on) {
  const size_t threads = size_t(state.range(0));
  ThreadPool pool(threads);
  double flops = 0;
  for (auto _ : state) {
    pool.Run(threads, [&](size_t t, size_t) {
      const double f = flops_on(t);
      if (t == 0) flops += f;
    });
  }
  state.counters["GFLOP/s"] = benchmark::Counter(flops * double(threads) * 1e-9, benchmark::Counter::kIsRate);
}

void BM_FmaPeak(benchmark::State& state) {
  constexpr int64_t kIters = 1 << 22;
  TimePeak(state, [](size_t t) {
    benchmark::DoNotOptimize(FmaLoopForBenchmark(kIters, float(t)));
    return double(kIters) * double(FmaFlopsPerIteration());
  });
  state.SetLabel(SimdTargetName());
}
BENCHMARK(BM_FmaPeak)->Arg(1)->Arg(2)->Apply(BenchTiming)->Unit(benchmark::kMillisecond);

// GFLOP/s of back-to-back BF16 tile products (the AMX ceiling), on the amx path only.
void BM_AmxPeak(benchmark::State& state) {
  if (!UseAmx()) {
    state.SkipWithError(("no amx path (" + CpuPathDescription() + ")").c_str());
    return;
  }
  TimePeak(state, [](size_t) { return amx::PeakLoopForBenchmark(int64_t(1) << 16); });
}
BENCHMARK(BM_AmxPeak)->Arg(1)->Arg(2)->Apply(BenchTiming)->Unit(benchmark::kMillisecond);

// GFLOP/s of independent VDPBF16PS chains (the avx512-bf16 GEMM's ceiling), where the CPU has AVX512-BF16.
void BM_Bf16DotPeak(benchmark::State& state) {
  if (!DetectedCpuExtensions().avx512_bf16) {
    state.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  TimePeak(state, [](size_t) { return bf16dot::PeakLoopForBenchmark(int64_t(1) << 20); });
}
BENCHMARK(BM_Bf16DotPeak)->Arg(1)->Arg(2)->Apply(BenchTiming)->Unit(benchmark::kMillisecond);

void BM_MemoryRead(benchmark::State& state) {
  const size_t n = (size_t(512) << 20) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  ThreadPool& pool = BenchPool();
  float sink = 0;
  // 4 MiB slices claimed dynamically, as `tern bench --bandwidth` reads: long
  // contiguous runs per thread, like the GEMV's chunks of W.
  constexpr size_t kSlice = (size_t(4) << 20) / sizeof(float);
  for (auto _ : state) {
    pool.Run(n / kSlice, [&](size_t s, size_t t) {
      const float v = SumFloatsForBenchmark(buf.data() + s * kSlice, kSlice);
      if (t == 0) sink += v;
    });
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GB/s"] =
      benchmark::Counter(double(n * sizeof(float)) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemoryRead)->Apply(BenchTiming)->Unit(benchmark::kMillisecond);

using MatMulFn = void (*)(const float*, int64_t, int64_t, const MatrixView&, float*, int64_t, ThreadPool&);

// Copies of a weight matrix of `bytes` cycled through so that, for decode and
// batch sizes (M <= 64), every call reads W from memory as a real forward pass
// does, not from the 32 MiB L3.
size_t CopiesFor(int64_t M, size_t bytes) {
  return M <= 64 ? std::max<size_t>(1, ((size_t(256) << 20) + bytes - 1) / bytes) : 1;
}

// Times fn on x [M, K] against view_at(c), the c-th copy of W [N, K] (c
// cycling over `copies`), and reports GB/s of `bytes` per call and GFLOP/s.
template <class ViewAt>
void TimeMatMul(benchmark::State& state, MatMulFn fn, size_t bytes, size_t copies, ViewAt view_at) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  std::vector<float> x(size_t(M * K)), y(size_t(M * N));
  FillRandom(DType::kF32, x.data(), x.size());
  ThreadPool& pool = BenchPool();
  size_t c = 0;
  for (auto _ : state) {
    fn(x.data(), M, K, view_at(c), y.data(), N, pool);
    benchmark::ClobberMemory();
    c = (c + 1) % copies;
  }
  const double iters = double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(double(bytes) * iters * 1e-9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(M * N) * double(K) * iters * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(SimdTargetName());
}

// With kHuge, W in 2 MiB pages (as tern maps weights: MADV_HUGEPAGE, or
// --huge-pages): on a VM, reads from 4 KiB pages can run at half the
// bandwidth (nested page walks), which the plain variant then measures.
// With kCached, one copy of W only, for shapes that fit in L2: the kernel's
// arithmetic rate, without memory.
template <DType kDT, MatMulFn kFn = MatMul, bool kHuge = false, bool kCached = false, bool kFp8Blocks = false>
void BM_MatMul(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const size_t wbytes = size_t(N * K) * DTypeSize(kDT), copies = kCached ? 1 : CopiesFor(M, wbytes);
  std::vector<uint8_t> plain;
  std::shared_ptr<uint8_t> pages;
  uint8_t* weights = nullptr;
  if constexpr (kHuge) {
    auto p = AllocatePages(wbytes * copies, true);
    if (!p.ok()) return state.SkipWithError(p.status().message().c_str());
    pages = *p;
    weights = pages.get();
  } else {
    plain.resize(wbytes * copies);
    weights = plain.data();
  }
  if constexpr (kDT == DType::kF8E4M3) {  // per-tensor FP8 (E4M3 codes, no NaN), as checkpoints store it
    uint32_t lcg = 12345;
    for (size_t i = 0; i < wbytes * copies; ++i) weights[i] = uint8_t((lcg = lcg * 1664525u + 1013904223u) >> 24) & 0xBF;
  } else {
    FillRandom(kDT, weights, size_t(N * K) * copies);
  }
  // kFp8Blocks: 128 x 128 block scales (as Qwen3's FP8 checkpoints), one
  // set shared by the copies.
  const int64_t kblocks = (K + kFp8Block - 1) / kFp8Block;
  std::vector<float> block_scales(kFp8Blocks ? size_t((N + kFp8Block - 1) / kFp8Block * kblocks) : 0);
  for (size_t i = 0; i < block_scales.size(); ++i) block_scales[i] = 0.001f * float(1 + i % 7);
  TimeMatMul(state, kFn, wbytes, copies, [&](size_t c) {
    MatrixView w{.dtype = kDT, .data = weights + c * wbytes, .rows = N, .cols = K, .row_stride = K};
    if constexpr (kDT == DType::kF8E4M3) {
      w.format = WeightFormat::kFp8;
      w.global_scale = kFp8Blocks ? 1.0f : 0.01f;
      if constexpr (kFp8Blocks) {
        w.scales = block_scales.data();
        w.scale_stride = kblocks;
      }
    }
    return w;
  });
}

// Qwen3-0.6B projections: q, k/v, o, gate/up, down, and the tied lm_head.
void DecodeShapes(benchmark::internal::Benchmark* b) {
  for (auto nk : std::vector<std::pair<int64_t, int64_t>>{
           {2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {1024, 3072}, {151936, 1024}})
    b->Args({1, nk.first, nk.second});
  BenchTiming(b);
  b->Unit(benchmark::kMicrosecond);
}
void BatchShapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {2, 4, 5, 6, 7, 8, 10, 12, 16, 24, 32, 64}) b->Args({m, 3072, 1024});
  BenchTiming(b);
  b->Unit(benchmark::kMicrosecond);
}
// Batched decode through a vocabulary-sized lm_head (Qwen3-0.6B's, 311 MB):
// W streams from memory once per call while M rows of x reuse it.
void LmHeadBatchShapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {4, 6, 8, 12, 16, 32}) b->Args({m, 151936, 1024});
  BenchTiming(b);
  b->Unit(benchmark::kMillisecond);
}
void PrefillShapes(benchmark::internal::Benchmark* b) {
  for (auto nk :
       std::vector<std::pair<int64_t, int64_t>>{{2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {1024, 3072}})
    b->Args({512, nk.first, nk.second});
  BenchTiming(b);
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_MatMul<DType::kBF16>)->Apply(DecodeShapes);
BENCHMARK(BM_MatMul<DType::kBF16, MatMul, true>)->Apply(DecodeShapes)->Name("BM_MatMul<BF16,huge>");
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMul, true>)->Apply(DecodeShapes)->Name("BM_MatMul<FP8,huge>");
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMul, true, false, true>)
    ->Apply(DecodeShapes)
    ->Name("BM_MatMul<FP8block,huge>");  // 128 x 128 block scales, as Qwen3's FP8 checkpoints
// One-row decode with W in L2 (256 KiB of FP8, 512 KiB of BF16; with 2
// threads each reads half): the decode kernels' arithmetic rate.
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMul, true, true>)
    ->Args({1, 256, 1024})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond)
    ->Name("BM_MatMul<FP8,L2>");
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMul, true, true, true>)
    ->Args({1, 256, 1024})
    ->Args({2, 256, 1024})
    ->Args({4, 256, 1024})
    ->Args({6, 256, 1024})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond)
    ->Name("BM_MatMul<FP8block,L2>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMul, true, true>)
    ->Args({1, 256, 1024})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond)
    ->Name("BM_MatMul<BF16,L2>");
// A speculative verify (2-4 rows) or a small batch on FP8 W, one decoded W
// vector feeding every row.
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMul, true>)
    ->Args({2, 3072, 1024})
    ->Args({4, 3072, 1024})
    ->Args({4, 151936, 1024})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond)
    ->Name("BM_MatMul<FP8,huge>");
BENCHMARK(BM_MatMul<DType::kBF16>)->Apply(BatchShapes);
BENCHMARK(BM_MatMul<DType::kBF16>)->Apply(PrefillShapes);
// The three implementations MatMul chooses between, around the crossovers.
BENCHMARK(BM_MatMul<DType::kBF16, MatMulGemv>)->Apply(BatchShapes)->Name("BM_Gemv<BF16>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulGemm>)->Apply(BatchShapes)->Name("BM_Gemm<BF16>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulGemv>)->Apply(LmHeadBatchShapes)->Name("BM_Gemv<BF16>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulGemm>)->Apply(LmHeadBatchShapes)->Name("BM_Gemm<BF16>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulSmallBatch>)->Apply(BatchShapes)->Name("BM_SmallBatch<BF16>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulSmallBatch>)->Apply(LmHeadBatchShapes)->Name("BM_SmallBatch<BF16>");
// NVFP4 weights (random codes and E4M3 block scales), cycled through copies
// like BM_MatMul. GB/s counts codes and scales.
// With kCached, one copy only: a W that fits in L2 (N * K / 2 bytes <= 256
// KiB or so) then measures the kernel's arithmetic alone, not memory.
template <MatMulFn kFn = MatMul, bool kCached = false, bool kPlaced = false>
void BM_Nvfp4(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const size_t code_bytes = size_t(N * K / 2), scale_bytes = size_t(N * K / kNvfp4Block);
  const size_t copies = kCached ? 1 : CopiesFor(M, code_bytes + scale_bytes);
  // With kPlaced, the codes start state.range(3) bytes past a 64-byte
  // boundary (safetensors places tensors 8-byte aligned); else where the
  // allocator puts them (glibc: 16 bytes past a page for large blocks).
  std::vector<uint8_t> storage(code_bytes * copies + (kPlaced ? 64 : 0)), scales(scale_bytes * copies);
  uint8_t* codes = storage.data();
  if constexpr (kPlaced) codes += (64 - reinterpret_cast<uintptr_t>(codes) % 64) % 64 + size_t(state.range(3));
  uint32_t lcg = 12345;
  for (size_t i = 0; i < code_bytes * copies; ++i) codes[i] = uint8_t((lcg = lcg * 1664525u + 1013904223u) >> 24);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = uint8_t(0x30 + i % 16);  // E4M3 0.5 .. 1.0
  TimeMatMul(state, kFn, code_bytes + scale_bytes, copies, [&](size_t c) {
    return MatrixView{.dtype = DType::kU8, .data = codes + c * code_bytes, .rows = N, .cols = K,
                      .row_stride = K, .format = WeightFormat::kNvfp4, .scales = scales.data() + c * scale_bytes,
                      .scale_stride = K / kNvfp4Block, .global_scale = 0.01f};
  });
}
void Nvfp4BatchShapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64}) b->Args({m, 2048, 2048});
  BenchTiming(b);
  b->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_Nvfp4<MatMul>)->Apply(DecodeShapes)->Name("BM_MatMul<NVFP4>");
// ... and the bundled demo models' shapes (hidden 192: a K that is not a
// multiple of the 128-element step), where per-call and per-row costs show.
BENCHMARK(BM_Nvfp4<MatMul, true>)->Args({1, 256, 2048})->Args({1, 512, 1024})->Args({1, 192, 192})
    ->Args({1, 768, 192})->Args({4, 192, 192})->Apply(BenchTiming)->Name("BM_MatMul<NVFP4,L2>");
// Codes at 0 and 16 bytes past a 64-byte boundary (the fourth argument).
BENCHMARK(BM_Nvfp4<MatMul, false, true>)
    ->ArgsProduct({{1}, {2048, 151936}, {1024}, {0, 16}})
    ->ArgsProduct({{1}, {1024}, {3072}, {0, 16}})
    ->Apply(BenchTiming)->Unit(benchmark::kMicrosecond)->Name("BM_MatMul<NVFP4,placed>");
BENCHMARK(BM_Nvfp4<MatMul, true, true>)
    ->ArgsProduct({{1}, {256}, {2048}, {0, 16}})
    ->ArgsProduct({{1}, {512}, {1024}, {0, 16}})
    ->Apply(BenchTiming)->Name("BM_MatMul<NVFP4,L2,placed>");
BENCHMARK(BM_Nvfp4<MatMul>)->Apply(Nvfp4BatchShapes)->Name("BM_MatMul<NVFP4>");
BENCHMARK(BM_Nvfp4<MatMulGemv>)->Apply(Nvfp4BatchShapes)->Name("BM_Gemv<NVFP4>");
// W4A4 (NVFP4 activations, ops.h MatMulW4A4) against the W4A16 GEMV above:
// decode shapes, and 1-8 rows of x at qwen3-0.6b's gate/up shape (K = 1024,
// where 8 rows of W4A16's prepared x still fit in L1) and at 2048 x 2048.
void W4A4Fn(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  const MatMulTarget t{.w = w, .y = y, .ldy = ldy};
  MatMulW4A4(x, M, ldx, 0.05f, {&t, 1}, pool);
}
void Nvfp4SmallBatchShapes(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{1, 2, 4, 6, 8}, {3072}, {1024}})->ArgsProduct({{4, 6, 8}, {2048}, {2048}})->ArgsProduct({{6, 8}, {1024}, {3072}});
  BenchTiming(b);
  b->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_Nvfp4<MatMulGemv>)->Apply(Nvfp4SmallBatchShapes)->Name("BM_Gemv<NVFP4>");
BENCHMARK(BM_Nvfp4<W4A4Fn>)->Apply(DecodeShapes)->Name("BM_W4A4<NVFP4>");
BENCHMARK(BM_Nvfp4<W4A4Fn>)->Apply(Nvfp4SmallBatchShapes)->Name("BM_W4A4<NVFP4>");
BENCHMARK(BM_Nvfp4<W4A4Fn, true>)->Args({1, 256, 2048})->Args({1, 512, 1024})->Apply(BenchTiming)
    ->Name("BM_W4A4<NVFP4,L2>");
// W4A8 (8-bit activations, ops.h MatMulW4A8): the same shapes.
void W4A8Fn(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  const MatMulTarget t{.w = w, .y = y, .ldy = ldy};
  MatMulW4A8(x, M, ldx, {&t, 1}, pool);
}
BENCHMARK(BM_Nvfp4<W4A8Fn>)->Apply(DecodeShapes)->Name("BM_W4A8<NVFP4>");
BENCHMARK(BM_Nvfp4<W4A8Fn>)->Apply(Nvfp4SmallBatchShapes)->Name("BM_W4A8<NVFP4>");
BENCHMARK(BM_Nvfp4<W4A8Fn, true>)->Args({1, 256, 2048})->Args({1, 512, 1024})->Apply(BenchTiming)
    ->Name("BM_W4A8<NVFP4,L2>");
BENCHMARK(BM_Nvfp4<MatMulGemm>)->Apply(Nvfp4BatchShapes)->Name("BM_Gemm<NVFP4>");
BENCHMARK(BM_Nvfp4<MatMul>)->Args({512, 2048, 2048})->Apply(BenchTiming)->Unit(benchmark::kMillisecond);

// The AVX512-BF16 GEMM alone (BF16 activations), where the CPU has it:
// against BM_Gemm (f32 activations) and BM_Gemv / BM_SmallBatch above for
// the crossovers (cpu_features.h: kBf16DotMinRows*), and the prefill shapes.
// BM_Bf16Dot: the packed-panel GEMM (bf16dot::PackedGemm, what Gemm runs
// past RowsGemmMaxRows); BM_Bf16Rows: RowsGemm, which Gemm runs below.
template <DType kDT, MatMulFn kFn>
void BM_Bf16(benchmark::State& state) {
  if (!DetectedCpuExtensions().avx512_bf16) return state.SkipWithError("no AVX512-BF16 on this CPU");
  if constexpr (kDT == DType::kU8) {
    BM_Nvfp4<kFn>(state);
  } else {
    BM_MatMul<kDT, kFn>(state);
  }
}
template <DType kDT>
void BM_Bf16Dot(benchmark::State& state) { BM_Bf16<kDT, bf16dot::PackedGemm>(state); }
template <DType kDT>
void BM_Bf16Rows(benchmark::State& state) { BM_Bf16<kDT, bf16dot::RowsGemm>(state); }
BENCHMARK(BM_Bf16Dot<DType::kBF16>)->Apply(BatchShapes)->Name("BM_Bf16Dot<BF16>");
BENCHMARK(BM_Bf16Dot<DType::kBF16>)->Apply(PrefillShapes)->Name("BM_Bf16Dot<BF16>");
BENCHMARK(BM_Bf16Dot<DType::kBF16>)->Apply(LmHeadBatchShapes)->Name("BM_Bf16Dot<BF16>");
BENCHMARK(BM_Bf16Rows<DType::kBF16>)->Apply(BatchShapes)->Name("BM_Bf16Rows<BF16>");
BENCHMARK(BM_Bf16Rows<DType::kBF16>)->Apply(LmHeadBatchShapes)->Name("BM_Bf16Rows<BF16>");
BENCHMARK(BM_Bf16Rows<DType::kU8>)->Apply(Nvfp4BatchShapes)->Name("BM_Bf16Rows<NVFP4>");
BENCHMARK(BM_Bf16Rows<DType::kF8E4M3>)->Apply(BatchShapes)->Name("BM_Bf16Rows<FP8>");
BENCHMARK(BM_Bf16Dot<DType::kU8>)->Apply(Nvfp4BatchShapes)->Name("BM_Bf16Dot<NVFP4>");
// FP8 W (per-tensor) around the same crossover: the F32 tile decoding W in
// registers (up to kQuantDirectRows rows, then a dequantized chunk) against
// the BF16 GEMM.
BENCHMARK(BM_MatMul<DType::kF8E4M3, MatMulGemv, true>)->Apply(BatchShapes)->Name("BM_Gemv<FP8>");
BENCHMARK(BM_Bf16Dot<DType::kF8E4M3>)->Apply(BatchShapes)->Name("BM_Bf16Dot<FP8>");
BENCHMARK(BM_Bf16Dot<DType::kU8>)->Args({512, 2048, 2048})->Apply(BenchTiming)->Unit(benchmark::kMillisecond)
    ->Name("BM_Bf16Dot<NVFP4>");
BENCHMARK(BM_MatMul<DType::kBF16, MatMulGemm>)->Apply(PrefillShapes)->Name("BM_Gemm<BF16>");
BENCHMARK(BM_Nvfp4<MatMulGemm>)->Args({512, 2048, 2048})->Apply(BenchTiming)->Unit(benchmark::kMillisecond)
    ->Name("BM_Gemm<NVFP4>");

BENCHMARK(BM_MatMul<DType::kF16>)->Args({1, 3072, 1024})->Args({512, 3072, 1024})->Apply(BenchTiming);
BENCHMARK(BM_MatMul<DType::kF32>)->Args({1, 3072, 1024})->Args({512, 3072, 1024})->Apply(BenchTiming);

}  // namespace
}  // namespace tern::kernels
