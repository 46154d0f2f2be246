// Memory read bandwidth as the model sees it: all pool threads streaming a
// buffer far larger than the last-level cache.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace tern::app {

struct BandwidthResult {
  double median_gbps = 0;  // 1e9 bytes per second
  double best_gbps = 0;
};

// Reads `bytes` (default 512 MiB) `reps` times with every thread of `pool`.
BandwidthResult MeasureReadBandwidth(ThreadPool& pool, int64_t bytes = int64_t(512) << 20, int reps = 7);

// The compute ceilings with every thread of `pool` (best of a few runs, 1e9
// floating-point operations per second): independent f32 FMA chains on the
// kernels' SIMD target, and back-to-back AMX BF16 tile products (0 off the
// amx path).
struct ComputePeaks {
  double fma_gflops = 0;
  double amx_gflops = 0;
};
ComputePeaks MeasureComputePeaks(ThreadPool& pool);

}  // namespace tern::app
