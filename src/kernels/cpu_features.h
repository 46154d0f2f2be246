// The CPU's instruction-set extensions beyond the Highway targets the kernels
// dispatch on (simd_target.h), and the path the kernels take.
//
// A path names the best code the kernels may run:
//   baseline      Highway's portable target (EMU128 / SCALAR)
//   avx2          Highway AVX2
//   avx512        Highway AVX3 (AVX-512 F/BW/DQ/VL)
//   avx512-vnni   avx512, and the kernels written for AVX-512 VNNI where the
//                 CPU has it (NVFP4 decode: nvfp4_gemv_vnni.h)
//   amx           avx512-vnni, and the AMX BF16 tile GEMM (matmul_amx.h) for
//                 MatMuls of kAmxMinRows* rows of x or more: BF16 activations
//                 there (the numerics mode of matmul_amx.h); needs AMX-BF16
//                 and AVX512-BF16, the OS's XCR0 bits for the tile state, the
//                 kernel's grant (arch_prctl ARCH_REQ_XCOMP_PERM, asked for at
//                 startup) and a tile product that runs and is right
//                 (amx::SelfTest, SIGILL caught); otherwise the path is not
//                 offered and CpuPathDescription() says why.
// The default is the best the CPU has. TERN_CPU_PATH=avx2 (etc.) forces a
// lower one for A/B runs; asking for more than the CPU has is an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::kernels {

struct CpuExtensions {
  bool avx512 = false;       // F, BW, DQ, VL with the OS saving ZMM state (XCR0)
  bool avx512_vnni = false;  // vpdpbusd
  bool avx512_bf16 = false;  // vdpbf16ps
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // CPUID
  bool os_amx = false;  // XCR0 enables the tile state (the kernel's grant is asked for separately)
};

// CPUID and XGETBV, once.
const CpuExtensions& DetectedCpuExtensions();

// Paths this CPU can run, best first.
std::vector<std::string> AvailableCpuPaths();

// Restricts the kernels to `path` (one of AvailableCpuPaths(), or "auto" for the
// best). Call before kernels run (startup, or between kernel calls in tests).
Status SetCpuPath(std::string_view path);

// SetCpuPath(getenv("TERN_CPU_PATH")) and SetActivations(getenv("TERN_ACTIVATIONS")) when set.
Status SetCpuPathFromEnvironment();

// The path in effect and what it runs, e.g. "avx512-vnni (Highway AVX3; AVX-512 VNNI NVFP4 decode)".
std::string CpuPathName();
std::string CpuPathDescription();

// Whether the VNNI kernels may run: the CPU has VNNI and the path allows it.
// Asked only by code compiled for Highway's AVX3 target (so a test forcing
// AVX2 through simd_target.h never reaches them).
bool UseAvx512Vnni();

// Whether MatMul may take the AMX GEMM (the amx path). Like UseAvx512Vnni,
// asked only on Highway's AVX3 target.
bool UseAmx();

// Rows of x from which MatMul takes the AMX GEMM on the amx path, where it
// beats the AVX-512 kernels (Sapphire Rapids, 2 threads, medians of 3; each
// AMX / f32 pair from runs of the same hour, TERN_AMX_MIN_ROWS=1 against
// TERN_ACTIVATIONS=f32):
// BF16 W 3072 x 1024: 4 rows GEMV 244 us / AMX 394, 6 rows small-batch 642 /
// AMX 380, 16 rows 730 / 414; NVFP4 W 2048 x 2048: 6 rows GEMV 298 / AMX
// 348, 8 rows 558 / 356, 16 rows 976 / 358. Below, f32 activations.
inline constexpr int64_t kAmxMinRowsDense = 5, kAmxMinRowsQuantized = 8;
// TERN_AMX_MIN_ROWS (>= 1) when set, else 0 (the defaults above): the
// reference tests set 1 so that every MatMul of the BF16-activation mode
// rounds x, which the float64 reference then reproduces (tests/reference).
int64_t AmxMinRowsOverride();

// The activation numerics (TERN_ACTIVATIONS or SetActivations): "bf16" (the
// default) lets the amx path round GEMM inputs to BF16; "f32" keeps every
// activation in f32 on any path (the amx path then runs as avx512-vnni).
Status SetActivations(std::string_view mode);

}  // namespace tern::kernels
