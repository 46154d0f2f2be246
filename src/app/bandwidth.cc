#include "app/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/bench_peak.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_bf16dot.h"

namespace tern::app {

BandwidthResult MeasureReadBandwidth(ThreadPool& pool, int64_t bytes, int reps, bool huge_pages) {
  const size_t n = size_t(bytes) / sizeof(float);
  // 2 MiB-aligned (AllocatePages): a std::vector this size starts 16 bytes
  // into a page, every 64-byte load then straddles two cache lines, and the
  // probe read 46-51 GB/s where this one reads 60-75 (AMD Zen 5, 2 threads).
  std::vector<float> plain;
  bool advised = false;
  auto pages = AllocatePages(n * sizeof(float), huge_pages, &advised);
  if (!pages.ok()) plain.resize(n);  // (no mmap: the allocator's pages, whatever they are)
  float* const data = pages.ok() ? reinterpret_cast<float*>(pages->get()) : plain.data();
  // Slices of 4 MiB, taken dynamically: each thread streams long contiguous
  // runs (as the GEMV does with its W chunks), and a thread the OS does not
  // schedule in time leaves its slices to the others.
  constexpr size_t kSlice = (size_t(4) << 20) / sizeof(float);
  const size_t slices = (n + kSlice - 1) / kSlice;
  // Touch every page (first-touch by the threads that will read it).
  pool.Run(slices, [&](size_t s, size_t) {
    std::fill(data + s * kSlice, data + std::min(n, (s + 1) * kSlice), 1.0f);
  });
  std::vector<float> sums(pool.size() * 16, 0.0f);  // one cache line per thread
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    // Vector loads with several accumulators (kernels' SumFloatsForBenchmark):
    // a scalar loop is compute-bound on one core and under-reports the bandwidth.
    pool.Run(slices, [&](size_t s, size_t thread) {
      const size_t b = s * kSlice, e = std::min(n, b + kSlice);
      sums[thread * 16] += kernels::SumFloatsForBenchmark(data + b, e - b);
    });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(double(n * sizeof(float)) / sec / 1e9);
  }
  // Keep the sums observable so the reads are not optimised away.
  volatile float sink = 0;
  for (float v : sums) sink = sink + v;
  std::sort(gbps.begin(), gbps.end());
  return {.median_gbps = gbps[gbps.size() / 2],
          .best_gbps = gbps.back(),
          .slowest_gbps = gbps.front(),
          .huge_pages = pages.ok() && huge_pages && advised};
}

ComputePeaks MeasureComputePeaks(ThreadPool& pool) {
  // Every thread runs flops_on(thread), which returns the operations it did;
  // the rate is thread 0's count times the threads over the wall time.
  const auto best_rate = [&](auto&& flops_on) {
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      double flops = 0;
      const auto t0 = std::chrono::steady_clock::now();
      pool.Run(pool.size(), [&](size_t t, size_t) {
        const double f = flops_on(t);
        if (t == 0) flops = f;
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, flops * double(pool.size()) / s * 1e-9);
    }
    return best;
  };
  ComputePeaks p;
  p.fma_gflops = best_rate([](size_t t) {
    constexpr int64_t kIters = int64_t(1) << 22;
    volatile double keep = kernels::FmaLoopForBenchmark(kIters, float(t));
    (void)keep;
    return double(kIters) * double(kernels::FmaFlopsPerIteration());
  });
  if (kernels::UseAmx()) p.amx_gflops = best_rate([](size_t) { return kernels::amx::PeakLoopForBenchmark(int64_t(1) << 16); });
  if (kernels::UseBf16Dot())
    p.bf16dot_gflops = best_rate([](size_t) { return kernels::bf16dot::PeakLoopForBenchmark(int64_t(1) << 20); });
  return p;
}

}  // namespace tern::app
