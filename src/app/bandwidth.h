// Memory read bandwidth as the model sees it: all pool threads streaming a
// buffer far larger than the last-level cache.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace tern::app {

struct BandwidthResult {
  double median_gbps = 0;  // 1e9 bytes per second
  double best_gbps = 0;
  double slowest_gbps = 0;  // (a shared or throttled host's runs can differ by 2x: see cmd_bench.cc)
  bool huge_pages = false;  // the kernel accepted MADV_HUGEPAGE for the buffer
};

// Reads `bytes` (default 512 MiB) `reps` times with every thread of `pool`,
// from huge pages when `huge_pages` (as the weights are held with
// --huge-pages, or mapped from a page cache of 2 MiB folios), else from 4 KiB
// pages (MADV_NOHUGEPAGE: as a file mapping of a page cache of small pages).
BandwidthResult MeasureReadBandwidth(ThreadPool& pool, int64_t bytes = int64_t(512) << 20, int reps = 7,
                                     bool huge_pages = false);

// The compute ceilings with every thread of `pool` (best of a few runs, 1e9
// floating-point operations per second): independent f32 FMA chains on the
// kernels' SIMD target, back-to-back AMX BF16 tile products (0 off the amx
// path) and independent VDPBF16PS chains (0 off the avx512-bf16 path).
struct ComputePeaks {
  double fma_gflops = 0;
  double amx_gflops = 0;
  double bf16dot_gflops = 0;
  // The ceiling of prefill's matrix products on the path in use, and its name.
  double GemmPeak() const { return amx_gflops > 0 ? amx_gflops : bf16dot_gflops > 0 ? bf16dot_gflops : fma_gflops; }
  const char* GemmPeakName() const { return amx_gflops > 0 ? "AMX" : bf16dot_gflops > 0 ? "VDPBF16PS" : "FMA"; }
};
ComputePeaks MeasureComputePeaks(ThreadPool& pool);

}  // namespace tern::app
