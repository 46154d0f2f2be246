// tern_benchmark's entry point; the benchmarks register themselves from
// matmul_benchmark.cc and attention_benchmark.cc.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
