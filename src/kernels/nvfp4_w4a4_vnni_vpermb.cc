// nvfp4_w4a4_vnni.cc compiled a second time for CPUs with AVX512-VBMI: W's
// E2M1 codes become bytes by vpermb instead of a mask and vpshufb
// (nvfp4_vnni_w-inl.h DecodeCodes), the only difference; its entry points are
// vnni::vpermb's (nvfp4_gemv_vnni.h), which the plain build's entry points
// call where UseNvfp4Vpermb() (cpu_features.h). A second file rather than a second
// target pragma in one: the pragma covers every function the file compiles,
// and the plain build must run on VNNI CPUs without VBMI (Cascade Lake).
#define TERN_VNNI_VPERMB 1
#include "kernels/nvfp4_w4a4_vnni.cc"  // NOLINT(bugprone-suspicious-include)
