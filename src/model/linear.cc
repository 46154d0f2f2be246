#include "model/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace tern {
namespace {

bool IsFloatWeight(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

bool ValidScale(float s) { return std::isfinite(s) && s > 0.0f; }

// Per-thread buffer for a quantized layer's fake-quantized input.
std::vector<float>& InputCopy() {
  thread_local std::vector<float> buf;
  return buf;
}

}  // namespace

int64_t Linear::bytes() const {
  switch (w.format) {
    case kernels::WeightFormat::kDense:
      return w.rows * w.row_stride * int64_t(DTypeSize(w.dtype));
    case kernels::WeightFormat::kNvfp4:
      return w.rows * w.row_stride / 2 + w.rows * w.scale_stride;
    case kernels::WeightFormat::kFp8:
      return w.rows * w.row_stride +
             (w.scales ? (w.rows + kernels::kFp8Block - 1) / kernels::kFp8Block * w.scale_stride * 4 : 0);
  }
  return 0;
}

namespace {

// A layer ForwardLinears may run with others through one kernel call.
bool PlainLayer(const Linear& l) {
  return l.bias.empty() && l.observer == nullptr && !l.quantize_input && !l.int8_input && !l.f32_activations;
}
bool W4A4Layer(const Linear& l) {
  return l.bias.empty() && l.observer == nullptr && l.quantize_input && l.format == QuantFormat::kNvfp4;
}
bool W4A8Layer(const Linear& l) {
  return l.bias.empty() && l.observer == nullptr && l.int8_input && !l.f32_activations;
}

}  // namespace

void Linear::Forward(const float* x, int64_t M, float* y, ThreadPool& pool) const {
  const int64_t K = w.cols;
  if (observer != nullptr) {
    float amax = observer->amax;
    for (int64_t i = 0; i < M * K; ++i) amax = std::max(amax, std::fabs(x[i]));
    observer->amax = amax;
  }
  if (quantize_input && format == QuantFormat::kNvfp4) {
    // (Its quantized values are exact in BF16: f32_activations changes nothing.)
    const kernels::MatMulTarget t{.w = w, .y = y, .ldy = w.rows};
    kernels::MatMulW4A4(x, M, K, input_scale, {&t, 1}, pool);
  } else if (int8_input && !f32_activations) {
    const kernels::MatMulTarget t{.w = w, .y = y, .ldy = w.rows};
    kernels::MatMulW4A8(x, M, K, {&t, 1}, pool);
  } else {
    if (quantize_input) {
      std::vector<float>& q = InputCopy();
      q.assign(x, x + M * K);
      FakeQuantizeFp8Activations(q.data(), M * K, input_scale);
      x = q.data();
    }
    if (f32_activations) {
      kernels::MatMulF32Activations(x, M, K, w, y, w.rows, pool);
    } else {
      kernels::MatMul(x, M, K, w, y, w.rows, pool);
    }
  }
  if (!bias.empty())
    for (int64_t m = 0; m < M; ++m) kernels::AddInPlace(y + m * w.rows, bias.data(), w.rows);
}

void ForwardLinears(std::span<const Linear* const> layers, const float* x, int64_t M, std::span<float* const> ys,
                    ThreadPool& pool) {
  // Plain layers in groups of up to kGroup, on the stack (a decode hot path);
  // W4A4 layers likewise, a group per input_scale (in order of appearance);
  // W4A8 layers in groups of their own.
  constexpr size_t kGroup = 8;
  kernels::MatMulTarget plain[kGroup], w4a4[kGroup], w4a8[kGroup];
  size_t n = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Linear& l = *layers[i];
    if (PlainLayer(l)) {
      plain[n++] = {.w = l.w, .y = ys[i], .ldy = l.w.rows};
      if (n == kGroup) {
        kernels::MatMulMany(x, M, l.in(), {plain, n}, pool);
        n = 0;
      }
    } else if (!W4A4Layer(l) && !W4A8Layer(l)) {
      l.Forward(x, M, ys[i], pool);
    }
  }
  size_t n8 = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!W4A8Layer(*layers[i])) continue;
    w4a8[n8++] = {.w = layers[i]->w, .y = ys[i], .ldy = layers[i]->w.rows};
    if (n8 == kGroup) {
      kernels::MatMulW4A8(x, M, layers[0]->in(), {w4a8, n8}, pool);
      n8 = 0;
    }
  }
  if (n8 > 0) kernels::MatMulW4A8(x, M, layers[0]->in(), {w4a8, n8}, pool);
  if (n > 0) kernels::MatMulMany(x, M, layers[0]->in(), {plain, n}, pool);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!W4A4Layer(*layers[i])) continue;
    const float scale = layers[i]->input_scale;
    bool seen = false;  // an earlier layer with this scale ran layer i with its group
    for (size_t j = 0; j < i && !seen; ++j) seen = W4A4Layer(*layers[j]) && layers[j]->input_scale == scale;
    if (seen) continue;
    size_t m = 0;
    for (size_t j = i; j < layers.size(); ++j) {
      if (!W4A4Layer(*layers[j]) || layers[j]->input_scale != scale) continue;
      w4a4[m++] = {.w = layers[j]->w, .y = ys[j], .ldy = layers[j]->w.rows};
      if (m == kGroup) {
        kernels::MatMulW4A4(x, M, layers[0]->in(), scale, {w4a4, m}, pool);
        m = 0;
      }
    }
    if (m > 0) kernels::MatMulW4A4(x, M, layers[0]->in(), scale, {w4a4, m}, pool);
  }
}

const char* ActivationNumericsName(ActivationNumerics n) {
  switch (n) {
    case ActivationNumerics::kFull:
      return "w4a16";
    case ActivationNumerics::kGpuQuantized:
      return "w4a4";
    case ActivationNumerics::kInt8:
      return "w4a8";
  }
  return "?";
}

void FakeQuantizeFp8Activations(float* x, int64_t n, float input_scale) {
  for (int64_t i = 0; i < n; ++i) x[i] = E4M3ToF32(F32ToE4M3(x[i] / input_scale)) * input_scale;
}

Result<std::optional<float>> WeightLoader::Scalar(const std::string& name) const {
  const TensorView* t = store_.Find(name);
  if (t == nullptr) return std::optional<float>();
  if (t->dtype != DType::kF32 || t->numel() != 1 || t->shape.size() > 1)
    return Status::Errorf("{}: tensor '{}' is {} {}; expected an F32 scalar", *t->file, name, DTypeName(t->dtype),
                          t->ShapeString());
  store_.MarkUsed(name);
  float v;
  std::memcpy(&v, t->data, 4);
  return std::optional<float>(v);
}

Result<Linear> WeightLoader::LoadNvfp4(const std::string& prefix, const TensorView& w, int64_t out,
                                       int64_t in) const {
  const std::string& file = *w.file;
  if (in % kernels::kNvfp4Block != 0)
    return Status::Errorf("{}: '{}.weight' is NVFP4 but its input dimension {} is not a multiple of 16", file, prefix,
                          in);
  TERN_ASSIGN_OR_RETURN(const TensorView* packed, store_.Get(prefix + ".weight", {out, in / 2}));
  const TensorView* s = store_.Find(prefix + ".weight_scale");
  if (s == nullptr || s->dtype != DType::kF8E4M3)
    return Status::Errorf("{}: NVFP4 '{}.weight' needs '{}.weight_scale' F8_E4M3 [{}, {}]", file, prefix, prefix, out,
                          in / kernels::kNvfp4Block);
  TERN_ASSIGN_OR_RETURN(const TensorView* scales,
                        store_.Get(prefix + ".weight_scale", {out, in / kernels::kNvfp4Block}));
  TERN_ASSIGN_OR_RETURN(std::optional<float> global, Scalar(prefix + ".weight_scale_2"));
  if (!global) return Status::Errorf("{}: NVFP4 '{}.weight' needs the F32 scalar '{}.weight_scale_2'", file, prefix, prefix);
  if (!ValidScale(*global))
    return Status::Errorf("{}: '{}.weight_scale_2' is {}; expected a positive finite scale", file, prefix, *global);
  TERN_ASSIGN_OR_RETURN(std::optional<float> input_scale, Scalar(prefix + ".input_scale"));
  Linear l;
  l.format = QuantFormat::kNvfp4;
  l.w = kernels::MatrixView{.dtype = DType::kU8, .data = packed->data, .rows = out, .cols = in, .row_stride = in,
                            .format = kernels::WeightFormat::kNvfp4, .scales = scales->data,
                            .scale_stride = in / kernels::kNvfp4Block, .global_scale = *global};
  if (input_scale) {
    // (W4A4 divides by it: a subnormal scale would make 1 / input_scale infinite.)
    if (!ValidScale(*input_scale) || !std::isfinite(1.0f / *input_scale))
      return Status::Errorf("{}: '{}.input_scale' is {}; expected a positive finite scale with a finite reciprocal",
                            file, prefix, *input_scale);
    l.input_scale = *input_scale;
  }
  if (numerics_ == ActivationNumerics::kGpuQuantized) {
    if (!input_scale)
      return Status::Errorf("{}: W4A4 numerics need '{}.input_scale', which the checkpoint lacks", file, prefix);
    l.quantize_input = true;
  }
  l.int8_input = numerics_ == ActivationNumerics::kInt8;
  return l;
}

Result<Linear> WeightLoader::LoadFp8(const std::string& prefix, const TensorView& w, int64_t out, int64_t in) const {
  const std::string& file = *w.file;
  TERN_ASSIGN_OR_RETURN(const TensorView* t, store_.Get(prefix + ".weight", {out, in}));
  Linear l;
  l.format = QuantFormat::kFp8;
  l.w = kernels::MatrixView{.dtype = DType::kF8E4M3, .data = t->data, .rows = out, .cols = in, .row_stride = in,
                            .format = kernels::WeightFormat::kFp8};
  if (const TensorView* inv = store_.Find(prefix + ".weight_scale_inv")) {
    const int64_t br = (out + kernels::kFp8Block - 1) / kernels::kFp8Block;
    const int64_t bc = (in + kernels::kFp8Block - 1) / kernels::kFp8Block;
    if (inv->dtype != DType::kF32)
      return Status::Errorf("{}: '{}' is {}; expected F32 [{}, {}] (128x128 block scales)", *inv->file, inv->name,
                            DTypeName(inv->dtype), br, bc);
    TERN_ASSIGN_OR_RETURN(const TensorView* sc, store_.Get(prefix + ".weight_scale_inv", {br, bc}));
    l.w.scales = sc->data;  // (kernels read it with memcpy: no alignment needed)
    l.w.scale_stride = bc;
  } else {
    TERN_ASSIGN_OR_RETURN(std::optional<float> scale, Scalar(prefix + ".weight_scale"));
    if (!scale)
      return Status::Errorf("{}: FP8 '{}.weight' needs an F32 scalar '{}.weight_scale' or block scales '{}.weight_scale_inv'",
                            file, prefix, prefix, prefix);
    if (!ValidScale(*scale))
      return Status::Errorf("{}: '{}.weight_scale' is {}; expected a positive finite scale", file, prefix, *scale);
    l.w.global_scale = *scale;
  }
  TERN_ASSIGN_OR_RETURN(std::optional<float> input_scale, Scalar(prefix + ".input_scale"));
  if (input_scale) {
    // (W4A4 divides by it: a subnormal scale would make 1 / input_scale infinite.)
    if (!ValidScale(*input_scale) || !std::isfinite(1.0f / *input_scale))
      return Status::Errorf("{}: '{}.input_scale' is {}; expected a positive finite scale with a finite reciprocal",
                            file, prefix, *input_scale);
    l.input_scale = *input_scale;
    l.quantize_input = numerics_ == ActivationNumerics::kGpuQuantized;
  }
  return l;
}

Result<Linear> WeightLoader::Load(const std::string& prefix, int64_t out, int64_t in, bool with_bias) const {
  const TensorView* w = store_.Find(prefix + ".weight");
  if (w == nullptr) return Status::Errorf("missing tensor '{}.weight' (expected shape [{}, {}])", prefix, out, in);
  Linear l;
  if (w->dtype == DType::kU8) {
    TERN_ASSIGN_OR_RETURN(l, LoadNvfp4(prefix, *w, out, in));
  } else if (w->dtype == DType::kF8E4M3) {
    TERN_ASSIGN_OR_RETURN(l, LoadFp8(prefix, *w, out, in));
  } else if (IsFloatWeight(w->dtype)) {
    TERN_ASSIGN_OR_RETURN(const TensorView* t, store_.Get(prefix + ".weight", {out, in}));
    l.w = kernels::MatrixView{.dtype = t->dtype, .data = t->data, .rows = out, .cols = in, .row_stride = in};
    for (const char* extra : {".weight_scale", ".weight_scale_2", ".weight_scale_inv"})
      if (store_.Find(prefix + extra))
        return Status::Errorf("{}: '{}{}' is present but '{}.weight' is {}, not a quantized type", *w->file, prefix,
                              extra, prefix, DTypeName(w->dtype));
  } else {
    return Status::Errorf("{}: tensor '{}' has dtype {}; expected F32, BF16, F16, U8 (NVFP4) or F8_E4M3 (FP8)",
                          *w->file, w->name, DTypeName(w->dtype));
  }
  l.name = prefix;
  Status s = quant_.CheckLinear(prefix, l.format);
  if (!s.ok()) return s.WithContext(*w->file);
  if (with_bias) {
    TERN_ASSIGN_OR_RETURN(l.bias, Vector(prefix + ".bias", out));
  }
  return l;
}

Result<std::vector<float>> WeightLoader::Vector(const std::string& name, int64_t dim) const {
  TERN_ASSIGN_OR_RETURN(const TensorView* t, store_.Get(name, {dim}));
  if (!IsFloatWeight(t->dtype) && t->dtype != DType::kF8E4M3)
    return Status::Errorf("{}: tensor '{}' has dtype {}; expected a float type", *t->file, name, DTypeName(t->dtype));
  std::vector<float> v(static_cast<size_t>(dim));
  kernels::ConvertToF32(t->dtype, t->data, dim, v.data());
  return v;
}

Result<std::vector<float>> WeightLoader::Norm(const std::string& name, int64_t dim, NormStyle style) const {
  TERN_ASSIGN_OR_RETURN(std::vector<float> v, Vector(name, dim));
  if (style == NormStyle::kZeroCentred)
    for (float& x : v) x += 1.0f;
  return v;
}

}  // namespace tern
