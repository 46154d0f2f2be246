#include "model/linear_slice.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace tern {
namespace {

// Bytes of `elems` elements of a row: elems * num / den.
struct ElemBytes {
  int64_t num = 1, den = 1;
  int64_t of(int64_t elems) const { return elems * num / den; }
};

ElemBytes BytesPerElement(const kernels::MatrixView& w) {
  switch (w.format) {
    case kernels::WeightFormat::kNvfp4: return {1, 2};
    case kernels::WeightFormat::kFp8: return {1, 1};
    case kernels::WeightFormat::kDense: break;
  }
  return {int64_t(DTypeSize(w.dtype)), 1};
}

std::shared_ptr<uint8_t> AllocateAligned(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Result<Linear> SliceLinear(const Linear& l, std::span<const IndexRange> rows, IndexRange cols, bool keep_bias,
                           bool copy) {
  const kernels::MatrixView& w = l.w;
  const int64_t N = w.rows, K = w.cols;
  int64_t R = 0;
  for (const IndexRange& r : rows) {
    if (r.begin < 0 || r.end > N || r.begin >= r.end)
      return Status::Errorf("{}: rows [{}, {}) are not inside its {} rows", l.name, r.begin, r.end, N);
    R += r.size();
  }
  if (cols.begin < 0 || cols.end > K || cols.begin >= cols.end)
    return Status::Errorf("{}: columns [{}, {}) are not inside its {} columns", l.name, cols.begin, cols.end, K);
  const int64_t C = cols.size();
  const bool nvfp4 = w.format == kernels::WeightFormat::kNvfp4;
  const bool fp8_blocks = w.format == kernels::WeightFormat::kFp8 && w.scales != nullptr;
  if (nvfp4 && (cols.begin % kernels::kNvfp4Block != 0 || C % kernels::kNvfp4Block != 0))
    return Status::Errorf("{}: NVFP4 columns [{}, {}) do not fall on its {}-element scale blocks (choose a --tp "
                          "that splits {} into multiples of {})",
                          l.name, cols.begin, cols.end, kernels::kNvfp4Block, K, kernels::kNvfp4Block);
  if (fp8_blocks) {
    const int64_t B = kernels::kFp8Block;
    auto on_blocks = [&](IndexRange r, int64_t total, bool last) {
      return r.begin % B == 0 && (r.end % B == 0 || (last && r.end == total));
    };
    bool ok = on_blocks(cols, K, true);
    for (size_t i = 0; i < rows.size(); ++i) ok = ok && on_blocks(rows[i], N, i + 1 == rows.size());
    if (!ok)
      return Status::Errorf("{}: FP8 128x128 block scales cannot be split at these rows/columns (a --tp whose "
                            "slices of {} x {} are multiples of {} is needed, as in SGLang and vLLM)",
                            l.name, N, K, B);
  }
  Linear out = l;
  out.w.rows = R;
  out.w.cols = C;
  out.bias.clear();
  if (keep_bias && !l.bias.empty())
    for (const IndexRange& r : rows) out.bias.insert(out.bias.end(), l.bias.begin() + r.begin, l.bias.begin() + r.end);

  const ElemBytes eb = BytesPerElement(w);
  const auto* src = static_cast<const uint8_t*>(w.data);
  const auto* scales = static_cast<const uint8_t*>(w.scales);
  if (!copy && rows.size() == 1 && cols.begin == 0 && cols.end == K) {  // contiguous rows: a view
    const int64_t r0 = rows[0].begin;
    out.w.data = src + eb.of(r0 * w.row_stride);
    if (nvfp4) out.w.scales = scales + r0 * w.scale_stride;
    if (fp8_blocks) out.w.scales = scales + (r0 / kernels::kFp8Block) * w.scale_stride * int64_t(sizeof(float));
    return out;
  }
  // A copy: the weight rows, then the scales, in one allocation.
  const int64_t row_bytes = eb.of(C);
  const int64_t weight_bytes = (R * row_bytes + 63) / 64 * 64;
  int64_t scale_cols = 0, scale_rows = 0, scale_elem = 0;
  if (nvfp4) scale_cols = C / kernels::kNvfp4Block, scale_rows = R, scale_elem = 1;
  if (fp8_blocks)
    scale_cols = CeilDiv(C, kernels::kFp8Block), scale_rows = CeilDiv(R, kernels::kFp8Block),
    scale_elem = int64_t(sizeof(float));
  std::shared_ptr<uint8_t> buf = AllocateAligned(size_t(weight_bytes + scale_rows * scale_cols * scale_elem));
  uint8_t* dst = buf.get();
  for (const IndexRange& r : rows)
    for (int64_t n = r.begin; n < r.end; ++n, dst += row_bytes)
      std::memcpy(dst, src + eb.of(n * w.row_stride + cols.begin), size_t(row_bytes));
  uint8_t* sdst = buf.get() + weight_bytes;
  if (nvfp4) {
    for (const IndexRange& r : rows)
      for (int64_t n = r.begin; n < r.end; ++n, sdst += scale_cols)
        std::memcpy(sdst, scales + n * w.scale_stride + cols.begin / kernels::kNvfp4Block, size_t(scale_cols));
  }
  if (fp8_blocks) {
    const int64_t B = kernels::kFp8Block, es = int64_t(sizeof(float));
    for (const IndexRange& r : rows)
      for (int64_t b = r.begin / B; b < CeilDiv(r.end, B); ++b, sdst += scale_cols * es)
        std::memcpy(sdst, scales + (b * w.scale_stride + cols.begin / B) * es, size_t(scale_cols * es));
  }
  out.w.data = buf.get();
  out.w.row_stride = C;
  if (nvfp4 || fp8_blocks) {
    out.w.scales = buf.get() + weight_bytes;
    out.w.scale_stride = scale_cols;
  }
  out.owned = std::shared_ptr<const void>(buf, buf.get());
  return out;
}

}  // namespace tern
