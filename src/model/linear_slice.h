// Slices of Linear layers for tensor parallelism: the rows a rank keeps of a
// column-parallel layer (q/k/v, gate/up: output features split) and the
// columns it keeps of a row-parallel one (o_proj, down_proj: input features
// split), in every weight format, with NVFP4 and FP8 block scales sliced to
// match.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "model/linear.h"

namespace tern {

struct IndexRange {
  int64_t begin = 0, end = 0;  // [begin, end)
  int64_t size() const { return end - begin; }
};

// The Linear whose weight is rows `rows` of `l` (concatenated in order) and
// columns `cols`, with the bias rows that go with them (`keep_bias` false
// drops the bias: a row-parallel layer adds it on one rank only). A single
// row range over every column stays a view of the same memory unless
// `copy`; anything else is copied into memory the result owns, so a rank
// holds only its part. (Views of a mapped checkpoint keep more of it
// resident than the rows they cover -- the kernel maps page-cache pages
// around each fault -- so tensor parallelism copies.)
// Errors name the layer: a column range of an NVFP4 layer must start and end
// on 16-element blocks, and an FP8 block-scaled layer's ranges on 128-element
// blocks (or the matrix's end).
Result<Linear> SliceLinear(const Linear& l, std::span<const IndexRange> rows, IndexRange cols, bool keep_bias = true,
                           bool copy = false);

// Rows [begin, end) of every column.
inline Result<Linear> SliceRows(const Linear& l, int64_t begin, int64_t end, bool copy = false) {
  const IndexRange r{begin, end};
  return SliceLinear(l, std::span(&r, 1), IndexRange{0, l.in()}, /*keep_bias=*/true, copy);
}
// Columns [begin, end) of every row; the bias on `keep_bias` only.
inline Result<Linear> SliceCols(const Linear& l, int64_t begin, int64_t end, bool keep_bias) {
  const IndexRange r{0, l.out()};
  return SliceLinear(l, std::span(&r, 1), IndexRange{begin, end}, keep_bias);
}

}  // namespace tern
