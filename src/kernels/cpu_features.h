// The CPU's instruction-set extensions beyond the Highway targets the kernels
// dispatch on (simd_target.h), and the path the kernels take.
//
// A path names the best code the kernels may run:
//   baseline      Highway's portable target (EMU128 / SCALAR)
//   avx2          Highway AVX2
//   avx512        Highway AVX3 (AVX-512 F/BW/DQ/VL)
//   avx512-vnni   avx512, and the kernels written for AVX-512 VNNI where the
//                 CPU has it (NVFP4 decode: nvfp4_gemv_vnni.h)
//   avx512-bf16   avx512-vnni, and the AVX512-BF16 GEMM (matmul_bf16dot.h,
//                 VDPBF16PS) for MatMuls of kBf16DotMinRows* rows of x or
//                 more: BF16 activations there (the numerics mode of
//                 matmul_amx.h); needs AVX512-BF16
//   amx           avx512-vnni, and the AMX BF16 tile GEMM (matmul_amx.h) for
//                 MatMuls of kAmxMinRows* rows of x or more: BF16 activations
//                 there (the same numerics mode); needs AMX-BF16
//                 and AVX512-BF16, the OS's XCR0 bits for the tile state, the
//                 kernel's grant (arch_prctl ARCH_REQ_XCOMP_PERM, asked for at
//                 startup) and a tile product that runs and is right
//                 (amx::SelfTest, SIGILL caught); otherwise the path is not
//                 offered and CpuPathDescription() says why.
// The default is the best the CPU has, except that avx512-bf16 is the default
// only on AMD CPUs: on AMD Zen 4 / Zen 5 a VDPBF16PS retires at the rate of
// an f32 FMA with twice its multiply-adds; on the Intel Xeon (Emerald Rapids)
// measured it retired at a quarter of that rate, half the FMA's multiply-adds
// (src/kernels/README.md), so there avx512-vnni stays the default.
// TERN_CPU_PATH=avx2 (etc.) forces another one for A/B runs; asking for more
// than the CPU has is an error.
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
  bool avx512_vbmi = false;  // vpermb
  bool avx512_bf16 = false;  // vdpbf16ps
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // CPUID
  bool os_amx = false;  // XCR0 enables the tile state (the kernel's grant is asked for separately)
  bool amd = false;     // CPUID vendor AuthenticAMD
};

// CPUID and XGETBV, once.
const CpuExtensions& DetectedCpuExtensions();

// Paths this CPU can run, best first (the default, DefaultCpuPath(), may be
// below the first: see the top).
std::vector<std::string> AvailableCpuPaths();
std::string DefaultCpuPath();

// Restricts the kernels to `path` (one of AvailableCpuPaths(), or "auto" for the
// best). Call before kernels run (startup, or between kernel calls in tests).
Status SetCpuPath(std::string_view path);

// SetCpuPath(getenv("TERN_CPU_PATH")), SetActivations(getenv("TERN_ACTIVATIONS")),
// SetFp8Decode(getenv("TERN_FP8_DECODE")) and SetNvfp4CodeDecode(getenv("TERN_NVFP4_CODES"))
// when set.
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

// Whether MatMul may take the AVX512-BF16 GEMM (the avx512-bf16 path). Like
// UseAvx512Vnni, asked only on Highway's AVX3 target.
bool UseBf16Dot();

// Whether the VNNI NVFP4 decode (nvfp4_gemv_vnni.h, 1 to 8 rows of x) rounds
// x per block of 16 to 16-bit fixed point (true) instead of 24-bit: where
// BF16 activations are in effect (UseAmx() or UseBf16Dot()), except on a
// thread inside MatMulF32Activations (F32ActivationsScope below);
// TERN_ACTIVATIONS=f32 and the avx512-vnni path keep 24 bits. Each element
// is then off by at most (1 + 2^-8) / 65278 of its block's largest magnitude
// (the rounding to the step, and the step's own rounding to f32), against
// the BF16 rounding of 2^-9 of each element that the mode allows; one of
// x's three digits goes, two of the six vpdpbusd a step (one-row decode with
// W in L2 1.15-1.2x, qwen3-0.6b NVFP4 decode 1.01-1.11x, AMD Zen 4:
// src/kernels/README.md). Asked by the thread that calls MatMul, once per
// call.
bool Nvfp4DecodeX16();

// While one lives, Nvfp4DecodeX16() is false on the thread that made it
// (MatMulF32Activations: routers and gates keep every activation in f32).
class F32ActivationsScope {
 public:
  F32ActivationsScope();
  ~F32ActivationsScope();
  F32ActivationsScope(const F32ActivationsScope&) = delete;
  F32ActivationsScope& operator=(const F32ActivationsScope&) = delete;

 private:
  bool outer_;
};

// Which FP8 decode the GEMV uses (wload-inl.h, every SIMD target): integer
// ops only, E4M3's subnormal codes then being subnormal f32 FMA operands
// (true), or by way of F16 and VCVTPH2PS (false). The default is the
// integer decode on AMD CPUs, whose FMAs take subnormal operands at full
// rate (Zen 4, one-row FP8 decode with W in L2 and a subnormal in most
// vectors: 1.38x the F16 route, see the kernels README), unless the calling
// thread's MXCSR has DAZ set (tern never sets it; an embedding process
// might, and DAZ would read the subnormal codes as 0), and the F16 route
// elsewhere (Intel documents subnormal operands as microcode assists).
// TERN_FP8_DECODE=int|f16 (read with SetCpuPathFromEnvironment) or
// SetFp8Decode forces one, for A/B runs and for the tests, which run both.
// Both decode every weight exactly and sum in f32 (in different orders); the
// integer decode holds x times 2^64 and its products times 2^-56, so
// products below 2^-70 in magnitude lose precision as subnormals (the F16
// route: below 2^-118), and |x| must stay below 2^64 (ops.h's MatMul).
bool UseFp8IntegerDecode();
Status SetFp8Decode(std::string_view mode);  // "auto", "int" or "f16"

// How the VNNI NVFP4 kernels (nvfp4_gemv_vnni.h) turn W's E2M1 codes into
// bytes: by AVX512-VBMI's vpermb, whose 64-entry table needs no mask on the
// nibbles (true), or by vpshufb after an AND (false). The same bytes either
// way, so the same results bit for bit; vpermb is the default where the CPU
// has VBMI (AMD Zen 4 and later, Intel Ice Lake and later; not Cascade
// Lake), four fewer operations in 33 per 256 weights (one-row decode with W
// in L2 1.1x on AMD Zen 4: src/kernels/README.md). TERN_NVFP4_CODES=vpermb|vpshufb
// (read with SetCpuPathFromEnvironment) or SetNvfp4CodeDecode forces one,
// for A/B runs and for the tests, which run both where the CPU has VBMI;
// asking for vpermb on a CPU without VBMI is an error.
bool UseNvfp4Vpermb();
Status SetNvfp4CodeDecode(std::string_view mode);  // "auto", "vpermb" or "vpshufb"

// Rows of x from which MatMul takes the AMX GEMM on the amx path, where it
// beats the AVX-512 kernels (Sapphire Rapids, 2 threads, medians of 3; each
// AMX / f32 pair from runs of the same hour, TERN_BF16_MIN_ROWS=1 against
// TERN_ACTIVATIONS=f32):
// BF16 W 3072 x 1024: 4 rows GEMV 244 us / AMX 394, 6 rows small-batch 642 /
// AMX 380, 16 rows 730 / 414; NVFP4 W 2048 x 2048: 6 rows GEMV 298 / AMX
// 348, 8 rows 558 / 356, 16 rows 976 / 358. Below, f32 activations.
inline constexpr int64_t kAmxMinRowsDense = 5, kAmxMinRowsQuantized = 8;
// The same for the AVX512-BF16 GEMM on the avx512-bf16 path (AMD Zen 5, 2
// threads, W from memory, two interleaved rounds of medians of 3, f32
// kernels with TERN_CPU_PATH=avx512-vnni / BM_Bf16Dot):
// BF16 W 3072 x 1024: 4 rows GEMV 241-261 us / 312-331, 6 rows small-batch
// 439-564 / 340-344, 16 rows 558-670 / 387-450, 32 rows GEMM 1013-1165 /
// 532-622; NVFP4 W 2048 x 2048, the VNNI integer GEMV (nvfp4_gemv_vnni.h, up
// to 8 rows) / this GEMM: 3 rows 187-189 / 417-492, 4 rows 226-234 / 500-517,
// 6 rows 402-456 / 497-542, 8 rows 791-822 / 447-562 (its prepared x, 4 KiB a
// step at 8 rows, no longer stays in L1), 16 rows f32 tile 989-1052 / 530-770
// (the GEMM decodes all of W into BF16 panels, which at these sizes is most
// of its time).
//
// Later, with the GEMV reading W once for up to 6 rows of x on AVX-512 (dense
// W; MatMul took MatMulSmallBatch from 5 rows before) and the VNNI kernel
// pairing W rows once its 8 prepared rows of x outgrow L1, the f32 kernels
// lead further (AMD Zen 4, 2 threads, medians of 3; f32 kernel / this GEMM):
// BF16 W 3072 x 1024 GEMV 5 rows 288 / 478 us, 6 rows 343 / 499, 7 rows
// (two GEMV passes) 490 / 516, 8 rows 517 / 535, 10 rows 649 / 575; NVFP4 W
// 2048 x 2048 VNNI 6 rows 371-397 / 513, 8 rows 428-460 / 564; FP8 W 3072 x
// 1024 (BM_Gemv<FP8>) 6 rows 278 / 418, 7 rows 451 / 451, 8 rows 469 / 528,
// 10 rows 675 / 565. On Zen 5 the GEMV at 5-6 rows was not measured (4
// rows: 241-261 us against this GEMM's 312-331, above); VNNI with the paired
// rows measured 395-489 us at 8 rows there (nvfp4_vnni_w-inl.h) against this
// GEMM's 447-562 above. At 7-8 dense rows f32 takes MatMulSmallBatch (on
// 256-bit vectors there): 450-481 us against this GEMM's 454-542 (Zen 4, two
// rounds), level, so the more exact f32 activations stay. Hence from 9 rows
// for every format; f32 activations below.
//
// Then the GEMM took few rows on a kernel that reads W in place
// (matmul_bf16dot_rows.cc), and dense W at 7-8 rows no longer was level (AMD
// Zen 4, 2 threads, medians of 3, two rounds; f32 kernel / this GEMM): BF16
// 3072 x 1024 7 rows 518-546 / 240-244 us, 8 rows 454-512 / 244-261 (and 10
// rows, already on this GEMM, 256-258); 151936 x 1024 (an lm_head) 8 rows
// 23.6 / 10-15 ms. At 5-6 rows the GEMV is within 1.1-1.3x (296-348 /
// 226-302 us) and keeps f32; NVFP4 2048 x 2048 at 6-8 rows (VNNI 365 / 543 us
// against 347 / 472) and FP8 3072 x 1024 at 7-8 (467 / 471 against 373 / 442)
// are within 1.25x and keep theirs. Hence dense BF16 W from 7 rows.
inline constexpr int64_t kBf16DotMinRowsDense = 7, kBf16DotMinRowsQuantized = 9;
// Queries from which prefill attention runs on VDPBF16PS on the avx512-bf16
// path (attention.cc; unchanged when the GEMM's crossovers moved above).
inline constexpr int64_t kBf16DotMinAttentionQueries = 5;
// TERN_BF16_MIN_ROWS (>= 1) when set, else 0 (the defaults above): the
// reference tests set 1 so that every MatMul of the BF16-activation mode
// rounds x, which the float64 reference then reproduces (tests/reference).
int64_t Bf16MinRowsOverride();

// The activation numerics (TERN_ACTIVATIONS or SetActivations): "bf16" (the
// default) lets the amx and avx512-bf16 paths round GEMM inputs to BF16;
// "f32" keeps every activation in f32 on any path (those paths then run as
// avx512-vnni).
Status SetActivations(std::string_view mode);

}  // namespace tern::kernels
