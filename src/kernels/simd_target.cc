// Reports the dispatched target by asking a function compiled once per target
// which target it was compiled for: this is exactly what HWY_DYNAMIC_DISPATCH
// in the other kernel files picks, since they share the compile definitions.
#include "kernels/simd_target.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_target.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {

int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(CompiledTarget);

const char* SimdTargetName() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)()); }

const char* SimdTargetNameOf(int64_t target) { return hwy::TargetName(target); }

std::vector<int64_t> SimdTargetsForTest() {
  // Computed before any test mock is installed, so it lists what the CPU has.
  static const std::vector<int64_t> targets = [] {
    std::vector<int64_t> out;
    const int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
    // Highway's bit order: lower bits are better targets on x86.
    for (int64_t bits = supported; bits != 0; bits &= bits - 1) out.push_back(bits & ~(bits - 1));
    return out;
  }();
  return targets;
}

void SetSimdTargetForTest(int64_t target) {
  (void)SimdTargetsForTest();  // capture the real list first
  hwy::SetSupportedTargetsForTest(target);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
