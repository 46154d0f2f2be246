// DequantizeRows (ops.h): rows of any WeightFormat to f32, per SIMD target,
// with the loaders of wload-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dequantize_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/wload-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {

void DequantizeRowsImpl(const MatrixView& w, int64_t n0, int64_t rows, int64_t k0, int64_t k1, float* out,
                        int64_t ldo) {
  using wload::Fmt;
  const auto run = [&]<Fmt F>() {
    wload::DequantRows<F>(w, size_t(n0), size_t(rows), size_t(k0), size_t(k1), out, size_t(ldo));
  };
  switch (wload::FmtOf(w)) {
    case Fmt::kF32:
      return run.template operator()<Fmt::kF32>();
    case Fmt::kBF16:
      return run.template operator()<Fmt::kBF16>();
    case Fmt::kF16:
      return run.template operator()<Fmt::kF16>();
    case Fmt::kNvfp4:
      return run.template operator()<Fmt::kNvfp4>();
    case Fmt::kFp8:
      return run.template operator()<Fmt::kFp8>();
    case Fmt::kFp8Block:
      return run.template operator()<Fmt::kFp8Block>();
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(DequantizeRowsImpl);

void DequantizeRows(const MatrixView& w, int64_t n0, int64_t rows, int64_t k0, int64_t k1, float* out, int64_t ldo) {
  if (rows <= 0 || k1 <= k0) return;
  HWY_DYNAMIC_DISPATCH(DequantizeRowsImpl)(w, n0, rows, k0, k1, out, ldo);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
