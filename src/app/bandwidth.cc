#include "app/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace tern::app {

BandwidthResult MeasureReadBandwidth(ThreadPool& pool, int64_t bytes, int reps) {
  const size_t n = size_t(bytes) / sizeof(uint64_t);
  std::vector<uint64_t> buf(n);
  // Touch every page (first-touch by the threads that will read it).
  pool.ParallelFor(n, 4096, [&](size_t b, size_t e, size_t) {
    for (size_t i = b; i < e; ++i) buf[i] = i;
  });
  std::vector<uint64_t> sums(pool.size() * 8, 0);  // one cache line per thread
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.ParallelFor(n, 4096, [&](size_t b, size_t e, size_t thread) {
      // Four independent accumulators so the adds vectorize and do not chain.
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      size_t i = b;
      for (; i + 4 <= e; i += 4) {
        a0 += buf[i];
        a1 += buf[i + 1];
        a2 += buf[i + 2];
        a3 += buf[i + 3];
      }
      for (; i < e; ++i) a0 += buf[i];
      sums[thread * 8] += a0 + a1 + a2 + a3;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(double(n * sizeof(uint64_t)) / s / 1e9);
  }
  // Keep the sums observable so the reads are not optimised away.
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  std::sort(gbps.begin(), gbps.end());
  return {gbps[gbps.size() / 2], gbps.back()};
}

}  // namespace tern::app
