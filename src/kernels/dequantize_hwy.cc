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
  wload::VisitFmt(wload::FmtOf(w), [&](auto f) {
    wload::DequantRows<decltype(f)::value>(w, size_t(n0), size_t(rows), size_t(k0), size_t(k1), out, size_t(ldo));
  });
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
