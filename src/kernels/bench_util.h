// Helpers shared by the tern_benchmark sources.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace tern::kernels {

// TERN_BENCH_THREADS=n runs the kernels on n threads (default: all cores).
// With n = 1 rates are computed from CPU time, which is steadier than wall
// time on a machine shared with other work.
inline size_t BenchThreads() {
  const char* env = std::getenv("TERN_BENCH_THREADS");
  return env != nullptr ? size_t(std::atoi(env)) : 0;
}

inline ThreadPool& BenchPool() {
  static ThreadPool pool(BenchThreads());
  return pool;
}

// Wall-clock rates (CPU time with one thread). With --benchmark_repetitions=n,
// "_min" of a time and "_max" of a rate are the least disturbed runs.
inline void BenchTiming(benchmark::internal::Benchmark* b) {
  if (BenchThreads() != 1) b->UseRealTime();
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
  b->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

// Fills n elements of dtype (F32, BF16 or F16) with values in about [-1, 1) from a cheap LCG.
inline void FillRandom(DType dtype, void* data, size_t n) {
  uint32_t s = 12345;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float f = float(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    if (dtype == DType::kF32) {
      static_cast<float*>(data)[i] = f;
    } else if (dtype == DType::kBF16) {
      static_cast<uint16_t*>(data)[i] = F32ToBf16(f);
    } else {
      static_cast<uint16_t*>(data)[i] = F32ToF16(f);
    }
  }
}

}  // namespace tern::kernels
