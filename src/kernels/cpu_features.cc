#include "kernels/cpu_features.h"

#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <fmt/format.h>

#include "hwy/targets.h"
#include "kernels/matmul_amx.h"
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
  if (__get_cpuid(0, &a, &b, &c, &d)) e.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return e;  // OSXSAVE
  const uint64_t xcr0 = Xgetbv0();
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_max(0, nullptr) < 7) return e;
  __cpuid_count(7, 0, a, b, c, d);
  const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  e.avx512 = os_zmm && f && dq && bw && vl;
  e.avx512_vnni = e.avx512 && (c & (1u << 11));
  e.avx512_vbmi = e.avx512 && (c & (1u << 1));
  e.amx_bf16 = d & (1u << 22);
  e.amx_tile = d & (1u << 24);
  e.amx_int8 = d & (1u << 25);
  e.os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  const unsigned max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    e.avx512_bf16 = e.avx512 && (a & (1u << 5));
  }
  return e;
}

// The path's rank: 0 baseline, 1 avx2, 2 avx512, 3 avx512-vnni, 4 avx512-bf16, 5 amx.
constexpr const char* kPaths[] = {"baseline", "avx2", "avx512", "avx512-vnni", "avx512-bf16", "amx"};
constexpr int kNumPaths = 6;
constexpr int kVnni = 3, kBf16Dot = 4, kAmx = 5;

// Linux's grant of the AMX tile data state to this process (all its threads,
// present and future): without it the first tile instruction faults.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

sigjmp_buf g_probe_jump;
void ProbeSigill(int) { siglongjmp(g_probe_jump, 1); }

// Asks for the grant and runs amx::SelfTest with SIGILL caught: a kernel,
// hypervisor or seccomp policy that refuses the state (or faults on it) turns
// the path off instead of killing the process at the first prefill. Runs
// once, at startup, before any thread of ours exists.
bool ProbeAmx(std::string* why) {
  const CpuExtensions& e = DetectedCpuExtensions();
  if (!(e.amx_tile && e.amx_bf16 && e.avx512_bf16 && e.avx512_vnni)) {
    *why = "the CPU has no AMX-BF16 (or no AVX512-BF16)";
    return false;
  }
  if (!e.os_amx) {
    *why = "the OS does not enable the tile state (XCR0)";
    return false;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    *why = "the kernel refused the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM)";
    return false;
  }
  struct sigaction sa = {}, old = {};
  sa.sa_handler = ProbeSigill;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, &old);
  bool ok = false;
  if (sigsetjmp(g_probe_jump, 1) == 0) {
    ok = amx::SelfTest();
    *why = ok ? "" : "a tile product computed a wrong result";
  } else {
    *why = "a tile instruction raised SIGILL";
  }
  sigaction(SIGILL, &old, nullptr);
  return ok;
}

std::string& AmxRefusal() {
  static std::string why;
  return why;
}
std::atomic<int> g_path{-1};  // -1: the best available
std::atomic<bool> g_f32_activations{false};
std::atomic<int> g_fp8_decode{-1};  // -1: by vendor, 0: F16 route, 1: integer
std::atomic<int> g_nvfp4_codes{-1};  // -1: vpermb where the CPU has VBMI, 0: vpshufb, 1: vpermb

// The best path of the CPU itself, computed once (before any test mock of the
// Highway targets: see kBestAtStartup).
int BestPath() {
  static const int best = [] {
    const CpuExtensions& e = DetectedCpuExtensions();
    const int64_t hw = hwy::SupportedTargets();
    if (e.avx512_vnni && (hw & HWY_AVX3)) return ProbeAmx(&AmxRefusal()) ? kAmx : e.avx512_bf16 ? kBf16Dot : kVnni;
    if (hw & HWY_AVX3) return 2;
    if (hw & HWY_AVX2) return 1;
    return 0;
  }();
  return best;
}
[[maybe_unused]] const int kBestAtStartup = BestPath();

// The default: the best, but avx512-bf16 only where VDPBF16PS pays (cpu_features.h).
int DefaultPath() {
  const int best = BestPath();
  return best == kBf16Dot && !DetectedCpuExtensions().amd ? kVnni : best;
}

int PathNow() {
  const int p = g_path.load(std::memory_order_relaxed);
  return p < 0 ? DefaultPath() : p;
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

std::string DefaultCpuPath() { return kPaths[DefaultPath()]; }

Status SetCpuPath(std::string_view path) {
  int want = -1;
  if (path != "auto") {
    for (int p = 0; p < kNumPaths; ++p)
      if (path == kPaths[p]) want = p;
    if (want < 0)
      return Status::Errorf("cpu path \"{}\": expected auto, amx, avx512-bf16, avx512-vnni, avx512, avx2 or baseline",
                            path);
    if (want > BestPath()) {
      std::string why = want == kAmx && !AmxRefusal().empty() ? fmt::format(" (amx: {})", AmxRefusal()) : "";
      return Status::Errorf("cpu path \"{}\": this CPU runs at most \"{}\"{}", path, kPaths[BestPath()], why);
    }
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
  if (const char* env = std::getenv("TERN_ACTIVATIONS"); env != nullptr && *env != '\0') {
    Status s = SetActivations(env);
    if (!s.ok()) return Status::Errorf("TERN_ACTIVATIONS: {}", s.message());
  }
  if (const char* env = std::getenv("TERN_FP8_DECODE"); env != nullptr && *env != '\0') {
    Status s = SetFp8Decode(env);
    if (!s.ok()) return Status::Errorf("TERN_FP8_DECODE: {}", s.message());
  }
  if (const char* env = std::getenv("TERN_NVFP4_CODES"); env != nullptr && *env != '\0') {
    Status s = SetNvfp4CodeDecode(env);
    if (!s.ok()) return Status::Errorf("TERN_NVFP4_CODES: {}", s.message());
  }
  const char* env = std::getenv("TERN_CPU_PATH");
  if (env == nullptr || *env == '\0') return Status::Ok();
  Status s = SetCpuPath(env);
  if (!s.ok()) return Status::Errorf("TERN_CPU_PATH: {}", s.message());
  return s;
}

Status SetActivations(std::string_view mode) {
  if (mode != "bf16" && mode != "f32") return Status::Errorf("activations \"{}\": expected bf16 or f32", mode);
  g_f32_activations.store(mode == "f32", std::memory_order_relaxed);
  return Status::Ok();
}

int64_t Bf16MinRowsOverride() {
  static const int64_t rows = [] {
    const char* env = std::getenv("TERN_BF16_MIN_ROWS");
    const long v = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
    return v >= 1 ? int64_t(v) : int64_t(0);
  }();
  return rows;
}

std::string CpuPathName() { return kPaths[PathNow()]; }

std::string CpuPathDescription() {
  const int p = PathNow();
  std::string d = fmt::format("{} (Highway {}", kPaths[p], SimdTargetName());
  const int64_t o = Bf16MinRowsOverride();
  if (UseAmx()) {
    d += o > 0 ? fmt::format("; AMX BF16 GEMM, BF16 activations from {} rows", o)
               : fmt::format("; AMX BF16 GEMM, BF16 activations from {} rows ({} for NVFP4/FP8 weights)",
                             kAmxMinRowsDense, kAmxMinRowsQuantized);
  }
  if (UseBf16Dot()) {
    d += o > 0 ? fmt::format("; AVX512-BF16 GEMM, BF16 activations from {} rows", o)
               : fmt::format("; AVX512-BF16 GEMM, BF16 activations from {} rows ({} for NVFP4/FP8 weights)",
                             kBf16DotMinRowsDense, kBf16DotMinRowsQuantized);
    d += fmt::format(", prefill attention from {} queries", o > 0 ? o : kBf16DotMinAttentionQueries);  // (ops.h)
  }
  if (p >= kBf16Dot && !UseAmx() && !UseBf16Dot()) d += "; activations f32";
  if (UseAvx512Vnni()) {
    d += UseNvfp4Vpermb() ? "; AVX-512 VNNI NVFP4 decode (codes by vpermb)" : "; AVX-512 VNNI NVFP4 decode";
    if (Nvfp4DecodeX16()) d += ", x 16-bit";
  }
  d += UseFp8IntegerDecode() ? "; FP8 decode integer" : "; FP8 decode by way of F16";
  d += ")";
  if (p < kAmx && !AmxRefusal().empty() && DetectedCpuExtensions().amx_tile) d += "; amx off: " + AmxRefusal();
  if (p < BestPath()) d += fmt::format("; the CPU has {}", kPaths[BestPath()]);
  return d;
}

bool UseAvx512Vnni() { return PathNow() >= kVnni; }

bool UseAmx() { return PathNow() >= kAmx && !g_f32_activations.load(std::memory_order_relaxed); }

bool UseBf16Dot() { return PathNow() == kBf16Dot && !g_f32_activations.load(std::memory_order_relaxed); }

namespace {
thread_local bool t_f32_activations = false;  // inside an F32ActivationsScope on this thread
}  // namespace

bool Nvfp4DecodeX16() { return !t_f32_activations && (UseAmx() || UseBf16Dot()); }

F32ActivationsScope::F32ActivationsScope() : outer_(t_f32_activations) { t_f32_activations = true; }
F32ActivationsScope::~F32ActivationsScope() { t_f32_activations = outer_; }

bool UseFp8IntegerDecode() {
  const int m = g_fp8_decode.load(std::memory_order_relaxed);
  if (m >= 0) return m == 1;
  if (!DetectedCpuExtensions().amd) return false;
#if defined(__x86_64__) || defined(__i386__)
  constexpr unsigned kDaz = 1u << 6;  // MXCSR's denormals-are-zero
  if ((_mm_getcsr() & kDaz) != 0) return false;
#endif
  return true;
}

Status SetFp8Decode(std::string_view mode) {
  if (mode != "auto" && mode != "int" && mode != "f16")
    return Status::Errorf("fp8 decode \"{}\": expected auto, int or f16", mode);
  g_fp8_decode.store(mode == "auto" ? -1 : mode == "int" ? 1 : 0, std::memory_order_relaxed);
  return Status::Ok();
}

bool UseNvfp4Vpermb() {
  const int m = g_nvfp4_codes.load(std::memory_order_relaxed);
  return m >= 0 ? m == 1 : DetectedCpuExtensions().avx512_vbmi;
}

Status SetNvfp4CodeDecode(std::string_view mode) {
  if (mode != "auto" && mode != "vpermb" && mode != "vpshufb")
    return Status::Errorf("nvfp4 code decode \"{}\": expected auto, vpermb or vpshufb", mode);
  if (mode == "vpermb" && !DetectedCpuExtensions().avx512_vbmi)
    return Status::Errorf("nvfp4 code decode \"vpermb\": this CPU has no AVX512-VBMI");
  g_nvfp4_codes.store(mode == "auto" ? -1 : mode == "vpermb" ? 1 : 0, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace tern::kernels
