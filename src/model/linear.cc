#include "model/linear.h"

namespace tern {
namespace {
bool IsFloatWeight(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }
}  // namespace

void Linear::Forward(const float* x, int64_t M, float* y, ThreadPool& pool) const {
  kernels::MatMul(x, M, w.cols, w, y, w.rows, pool);
  if (!bias.empty())
    for (int64_t m = 0; m < M; ++m) kernels::AddInPlace(y + m * w.rows, bias.data(), w.rows);
}

Result<Linear> LoadLinear(const TensorStore& store, const std::string& prefix, int64_t out, int64_t in,
                          bool with_bias) {
  TERN_ASSIGN_OR_RETURN(const TensorView* t, store.Get(prefix + ".weight", {out, in}));
  if (!IsFloatWeight(t->dtype))
    return Status::Errorf("{}: tensor '{}' has dtype {}; expected F32, BF16 or F16", *t->file, t->name,
                          DTypeName(t->dtype));
  Linear l;
  l.w = kernels::MatrixView{.dtype = t->dtype, .data = t->data, .rows = out, .cols = in, .row_stride = in};
  if (with_bias) {
    TERN_ASSIGN_OR_RETURN(l.bias, LoadVector(store, prefix + ".bias", out));
  }
  return l;
}

Result<std::vector<float>> LoadVector(const TensorStore& store, const std::string& name, int64_t dim) {
  TERN_ASSIGN_OR_RETURN(const TensorView* t, store.Get(name, {dim}));
  if (!IsFloatWeight(t->dtype) && t->dtype != DType::kF8E4M3)
    return Status::Errorf("{}: tensor '{}' has dtype {}; expected a float type", *t->file, name, DTypeName(t->dtype));
  std::vector<float> v(static_cast<size_t>(dim));
  kernels::ConvertToF32(t->dtype, t->data, dim, v.data());
  return v;
}

}  // namespace tern
