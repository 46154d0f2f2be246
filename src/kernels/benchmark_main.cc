// tern_benchmark's entry point; the benchmarks register themselves from
// matmul_benchmark.cc and attention_benchmark.cc. TERN_CPU_PATH=avx512 (etc.)
// runs the kernels of a lower path, as for tern (kernels/cpu_features.h).
#include <benchmark/benchmark.h>

#include <cstdio>

#include "kernels/cpu_features.h"

int main(int argc, char** argv) {
  if (tern::Status s = tern::kernels::SetCpuPathFromEnvironment(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 2;
  }
  benchmark::AddCustomContext("cpu_path", tern::kernels::CpuPathDescription());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
