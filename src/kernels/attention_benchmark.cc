// PagedAttention timings at Qwen3-0.6B's attention shape (16 query heads, 8 KV
// heads, head_dim 128, bf16 cache in blocks of 16), part of tern_benchmark.
//
//   BM_AttentionDecode/batch/ctx    one query per sequence; GB/s of K and V read
//   BM_AttentionPrefill/queries/ctx one sequence, causal; GFLOP/s (QK and PV)
#include <benchmark/benchmark.h>

#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/bench_util.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tern::kernels {
namespace {

constexpr int32_t kQHeads = 16, kKvHeads = 8, kHeadDim = 128, kBlockSize = 16;

// A KV pool: 2 MiB-aligned and, where TERN_BENCH_HUGEPAGES=1, madvised for
// transparent huge pages (one head's rows are scattered, one 256-byte row
// every 2 KiB, so with 4 KiB pages a long context misses the TLB on every
// other position).
struct PoolBuffer {
  uint16_t* p = nullptr;
  explicit PoolBuffer(size_t elems) {
    const size_t bytes = (elems * 2 + (2 << 20) - 1) / (2 << 20) * (2 << 20);
    p = static_cast<uint16_t*>(std::aligned_alloc(2 << 20, bytes));
    const char* env = std::getenv("TERN_BENCH_HUGEPAGES");
    if (env != nullptr && env[0] == '1') madvise(p, bytes, MADV_HUGEPAGE);
  }
  ~PoolBuffer() { std::free(p); }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  uint16_t* data() { return p; }
};

struct Batch {
  explicit Batch(size_t pool_elems) : k(pool_elems), v(pool_elems) {}
  PoolBuffer k, v;
  std::vector<std::vector<int32_t>> tables;
  std::vector<float> q, out;
  std::vector<AttentionJob> jobs;
};

// `batch` sequences of ctx_len positions each (the last num_queries of them queried).
std::unique_ptr<Batch> MakeBatch(int64_t batch, int64_t ctx_len, int64_t num_queries, DType kv_dtype = DType::kBF16) {
  const int64_t blocks_per_seq = (ctx_len + kBlockSize - 1) / kBlockSize;
  const size_t pool_elems = size_t(batch * blocks_per_seq * kBlockSize * kKvHeads * kHeadDim);
  auto owner = std::make_unique<Batch>(pool_elems);
  Batch& b = *owner;
  FillRandom(DType::kBF16, b.k.data(), pool_elems);
  FillRandom(DType::kBF16, b.v.data(), pool_elems);
  if (kv_dtype == DType::kF8E4M3) {  // E4M3 codes without the NaN codes (bit 6 clear)
    for (uint16_t* buf : {b.k.data(), b.v.data()}) {
      auto* bytes = reinterpret_cast<uint8_t*>(buf);
      for (size_t i = 0; i < pool_elems; ++i) bytes[i] &= 0xBF;
    }
  }
  const size_t q_elems = size_t(num_queries * kQHeads * kHeadDim);
  b.q.resize(size_t(batch) * q_elems);
  b.out.resize(b.q.size());
  FillRandom(DType::kF32, b.q.data(), b.q.size());
  // Interleave the sequences' blocks in the pool, as a running server would.
  for (int64_t s = 0; s < batch; ++s) {
    std::vector<int32_t> table(static_cast<size_t>(blocks_per_seq));
    for (int64_t i = 0; i < blocks_per_seq; ++i) table[size_t(i)] = int32_t(i * batch + s);
    b.tables.push_back(std::move(table));
  }
  for (int64_t s = 0; s < batch; ++s) {
    b.jobs.push_back({.q = b.q.data() + s * int64_t(q_elems),
                      .out = b.out.data() + s * int64_t(q_elems),
                      .num_queries = num_queries,
                      .ctx_len = ctx_len,
                      .kv = {.k = b.k.data(),
                             .v = b.v.data(),
                             .dtype = kv_dtype,
                             .k_scale = kv_dtype == DType::kF8E4M3 ? 0.05f : 1.0f,
                             .v_scale = kv_dtype == DType::kF8E4M3 ? 0.05f : 1.0f,
                             .block_table = b.tables[size_t(s)].data(),
                             .block_size = kBlockSize,
                             .kv_heads = kKvHeads,
                             .head_dim = kHeadDim}});
  }
  return owner;
}

// KV in BF16, or with kFp8 in FP8 E4M3 (--kv-cache-dtype fp8_e4m3).
template <bool kFp8 = false>
void BM_AttentionDecode(benchmark::State& state) {
  const int64_t batch = state.range(0), ctx = state.range(1);
  const std::unique_ptr<Batch> owner = MakeBatch(batch, ctx, 1, kFp8 ? DType::kF8E4M3 : DType::kBF16);
  Batch& b = *owner;
  ThreadPool& pool = BenchPool();
  const float scale = 0.08838834764f;
  for (auto _ : state) {
    PagedAttention(b.jobs, kQHeads, scale, pool, /*bf16_ok=*/true);
    benchmark::ClobberMemory();
  }
  const double kv_bytes = double(batch * ctx) * kKvHeads * kHeadDim * 2 * (kFp8 ? 1 : 2);
  state.counters["GB/s"] =
      benchmark::Counter(kv_bytes * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(SimdTargetName());
}
BENCHMARK(BM_AttentionDecode<>)
    ->Name("BM_AttentionDecode")
    ->Args({1, 128})
    ->Args({1, 256})
    ->Args({1, 512})
    ->Args({1, 4096})
    ->Args({8, 1024})
    ->Args({32, 512})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecode<true>)
    ->Name("BM_AttentionDecode<FP8>")
    ->Args({1, 4096})
    ->Args({8, 1024})
    ->Args({32, 512})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMicrosecond);

template <bool kFp8 = false>
void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t queries = state.range(0), ctx = state.range(1);
  const std::unique_ptr<Batch> owner = MakeBatch(1, ctx, queries, kFp8 ? DType::kF8E4M3 : DType::kBF16);
  Batch& b = *owner;
  ThreadPool& pool = BenchPool();
  for (auto _ : state) {
    PagedAttention(b.jobs, kQHeads, 0.08838834764f, pool, /*bf16_ok=*/true);
    benchmark::ClobberMemory();
  }
  // Keys attended per query: its position + 1; 2 flops per multiply-add, QK and PV.
  double keys = 0;
  for (int64_t t = 0; t < queries; ++t) keys += double(ctx - queries + t + 1);
  const double flops = keys * kQHeads * kHeadDim * 2 * 2;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(SimdTargetName());
}
BENCHMARK(BM_AttentionPrefill<>)
    ->Name("BM_AttentionPrefill")
    ->Args({512, 512})
    ->Args({128, 2048})
    ->Args({2048, 2048})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionPrefill<true>)
    ->Name("BM_AttentionPrefill<FP8>")
    ->Args({512, 512})
    ->Args({128, 2048})
    ->Apply(BenchTiming)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tern::kernels
