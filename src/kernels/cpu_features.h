// The CPU's instruction-set extensions beyond the Highway targets the kernels
// dispatch on (simd_target.h), and the path the kernels take.
//
// A path names the best code the kernels may run:
//   baseline      Highway's portable target (EMU128 / SCALAR)
//   avx2          Highway AVX2
//   avx512        Highway AVX3 (AVX-512 F/BW/DQ/VL)
//   avx512-vnni   avx512, and the kernels written for AVX-512 VNNI where the
//                 CPU has it (NVFP4 decode: nvfp4_gemv_vnni.h)
// The default is the best the CPU has. TERN_CPU_PATH=avx2 (etc.) forces a
// lower one for A/B runs; asking for more than the CPU has is an error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::kernels {

struct CpuExtensions {
  bool avx512 = false;       // F, BW, DQ, VL with the OS saving ZMM state (XCR0)
  bool avx512_vnni = false;  // vpdpbusd
  bool avx512_bf16 = false;  // vdpbf16ps
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // CPUID only (the OS grant is asked for on use)
};

// CPUID and XGETBV, once.
const CpuExtensions& DetectedCpuExtensions();

// Paths this CPU can run, best first.
std::vector<std::string> AvailableCpuPaths();

// Restricts the kernels to `path` (one of AvailableCpuPaths(), or "auto" for the
// best). Call before kernels run (startup, or between kernel calls in tests).
Status SetCpuPath(std::string_view path);

// SetCpuPath(getenv("TERN_CPU_PATH")) when it is set.
Status SetCpuPathFromEnvironment();

// The path in effect and what it runs, e.g. "avx512-vnni (Highway AVX3; AVX-512 VNNI NVFP4 decode)".
std::string CpuPathName();
std::string CpuPathDescription();

// Whether the VNNI kernels may run: the CPU has VNNI and the path allows it.
// Asked only by code compiled for Highway's AVX3 target (so a test forcing
// AVX2 through simd_target.h never reaches them).
bool UseAvx512Vnni();

}  // namespace tern::kernels
