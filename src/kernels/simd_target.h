// The SIMD target the kernels run on.
//
// Every optimized kernel is compiled once per SIMD target (AVX3 = AVX-512,
// AVX2, and the portable baseline, SCALAR or EMU128; see CMakeLists.txt) and the best one
// the CPU supports is chosen at run time. Tests use the *ForTest hooks to run
// every target this CPU can execute.
#pragma once

#include <cstdint>
#include <vector>

namespace tern::kernels {

// Name of the target the kernels dispatch to right now ("AVX2", "AVX3", "SCALAR" or "EMU128").
const char* SimdTargetName();

// Name of one target bit as returned by SimdTargetsForTest.
const char* SimdTargetNameOf(int64_t target);

// Targets compiled into the kernels that this CPU can run, best first. Each is
// a single bit in Highway's target encoding.
std::vector<int64_t> SimdTargetsForTest();

// Makes every kernel dispatch to `target` (one of SimdTargetsForTest()) until
// the next call; 0 restores the normal choice. Not thread-safe with respect to
// running kernels: call it between kernel calls.
void SetSimdTargetForTest(int64_t target);

}  // namespace tern::kernels
