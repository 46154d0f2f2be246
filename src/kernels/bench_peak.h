// Machine ceilings for the benchmarks (bench_peak_hwy.cc): FMA peak and memory
// read bandwidth, measured with the same SIMD target the kernels use. `tern
// bench` measures the bandwidth with SumFloatsForBenchmark too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::kernels {

// Runs `iters` iterations of independent FMA chains; returns a value to keep.
double FmaLoopForBenchmark(int64_t iters, float seed);
// Floating-point operations per iteration of FmaLoopForBenchmark.
size_t FmaFlopsPerIteration();
// Sum of p[0..n), streaming.
float SumFloatsForBenchmark(const float* p, size_t n);

}  // namespace tern::kernels
