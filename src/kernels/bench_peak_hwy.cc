// Machine ceilings the kernel benchmarks are compared against: the FMA peak of
// the best SIMD target (one core) and the read bandwidth of memory.
#include "kernels/bench_peak.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/bench_peak_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 independent FMA chains: enough to cover FMA latency x throughput on
// current x86 cores (4 cycles x 2 per cycle = 8).
double FmaLoop(int64_t iters, float seed) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  V a[12];
  for (int i = 0; i < 12; ++i) a[i] = hn::Set(df, seed + float(i));
  const V m = hn::Set(df, 0.999999f), c = hn::Set(df, 1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) a[i] = hn::MulAdd(a[i], m, c);
  }
  V s = a[0];
  for (int i = 1; i < 12; ++i) s = hn::Add(s, a[i]);
  return double(hn::GetLane(s));
}

size_t FloatLanes() { return hn::Lanes(hn::ScalableTag<float>()); }

// Sum of n floats with 4 vector accumulators (read bandwidth). No software
// prefetch: the hardware prefetcher streams faster alone (a prefetch 2 KiB
// ahead cost ~20% on AVX2 EPYC).
float SumFloats(const float* p, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t L = hn::Lanes(df);
  auto s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::Add(s0, hn::LoadU(df, p + i));
    s1 = hn::Add(s1, hn::LoadU(df, p + i + L));
    s2 = hn::Add(s2, hn::LoadU(df, p + i + 2 * L));
    s3 = hn::Add(s3, hn::LoadU(df, p + i + 3 * L));
  }
  float r = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) r += p[i];
  return r;
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {
HWY_EXPORT(FmaLoop);
HWY_EXPORT(FloatLanes);
HWY_EXPORT(SumFloats);

double FmaLoopForBenchmark(int64_t iters, float seed) { return HWY_DYNAMIC_DISPATCH(FmaLoop)(iters, seed); }
size_t FmaFlopsPerIteration() { return 12 * 2 * HWY_DYNAMIC_DISPATCH(FloatLanes)(); }
float SumFloatsForBenchmark(const float* p, size_t n) { return HWY_DYNAMIC_DISPATCH(SumFloats)(p, n); }
}  // namespace tern::kernels
#endif
