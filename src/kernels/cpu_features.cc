#include "kernels/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "hwy/targets.h"
#include "kernels/simd_target.h"

namespace tern::kernels {
namespace {

uint64_t Xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuExtensions Detect() {
  CpuExtensions e;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return e;  // OSXSAVE
  const uint64_t xcr0 = Xgetbv0();
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_max(0, nullptr) < 7) return e;
  __cpuid_count(7, 0, a, b, c, d);
  const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  e.avx512 = os_zmm && f && dq && bw && vl;
  e.avx512_vnni = e.avx512 && (c & (1u << 11));
  e.amx_bf16 = d & (1u << 22);
  e.amx_tile = d & (1u << 24);
  e.amx_int8 = d & (1u << 25);
  const unsigned max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    e.avx512_bf16 = e.avx512 && (a & (1u << 5));
  }
  return e;
}

// The path's rank: 0 baseline, 1 avx2, 2 avx512, 3 avx512-vnni.
constexpr const char* kPaths[] = {"baseline", "avx2", "avx512", "avx512-vnni"};
std::atomic<int> g_path{-1};  // -1: the best available

// The best path of the CPU itself, computed once (before any test mock of the
// Highway targets: see kBestAtStartup).
int BestPath() {
  static const int best = [] {
    const CpuExtensions& e = DetectedCpuExtensions();
    const int64_t hw = hwy::SupportedTargets();
    if (e.avx512_vnni && (hw & HWY_AVX3)) return 3;
    if (hw & HWY_AVX3) return 2;
    if (hw & HWY_AVX2) return 1;
    return 0;
  }();
  return best;
}
[[maybe_unused]] const int kBestAtStartup = BestPath();

int PathNow() {
  const int p = g_path.load(std::memory_order_relaxed);
  return p < 0 ? BestPath() : p;
}

}  // namespace

const CpuExtensions& DetectedCpuExtensions() {
  static const CpuExtensions e = Detect();
  return e;
}

std::vector<std::string> AvailableCpuPaths() {
  std::vector<std::string> out;
  for (int p = BestPath(); p >= 0; --p) out.push_back(kPaths[p]);
  return out;
}

Status SetCpuPath(std::string_view path) {
  int want = -1;
  if (path != "auto") {
    for (int p = 0; p < 4; ++p)
      if (path == kPaths[p]) want = p;
    if (want < 0) return Status::Errorf("cpu path \"{}\": expected auto, avx512-vnni, avx512, avx2 or baseline", path);
    if (want > BestPath())
      return Status::Errorf("cpu path \"{}\": this CPU runs at most \"{}\"", path, kPaths[BestPath()]);
  }
  // Highway: disable the targets above the path (AVX3 for avx2, AVX3 and AVX2 for baseline).
  int64_t disabled = 0;
  if (want >= 0 && want < 2) disabled |= HWY_AVX3 | HWY_AVX3_DL;
  if (want >= 0 && want < 1) disabled |= HWY_AVX2;
  hwy::DisableTargets(disabled);
  g_path.store(want, std::memory_order_relaxed);
  return Status::Ok();
}

Status SetCpuPathFromEnvironment() {
  const char* env = std::getenv("TERN_CPU_PATH");
  if (env == nullptr || *env == '\0') return Status::Ok();
  Status s = SetCpuPath(env);
  if (!s.ok()) return Status::Errorf("TERN_CPU_PATH: {}", s.message());
  return s;
}

std::string CpuPathName() { return kPaths[PathNow()]; }

std::string CpuPathDescription() {
  const int p = PathNow();
  std::string d = fmt::format("{} (Highway {}", kPaths[p], SimdTargetName());
  if (UseAvx512Vnni()) d += "; AVX-512 VNNI NVFP4 decode";
  return d + ")";
}

bool UseAvx512Vnni() { return PathNow() >= 3; }

}  // namespace tern::kernels
