// SliceLinear against the unsliced matrix, element by element, through the
// scalar reference's MatrixAt (kernels/reference.h), in every weight format.
#include "model/linear_slice.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/reference.h"

namespace tern {
namespace {

struct Matrix {
  std::vector<uint8_t> data, scales;
  Linear l;
};

// A random N x K matrix in `format` (no NaN codes), with a bias.
Matrix Random(kernels::WeightFormat format, DType dtype, int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  auto byte = [&] {
    uint8_t b = uint8_t(rng());
    return (b & 0x7F) == 0x7F ? uint8_t(b ^ 1) : b;  // E4M3 NaN is S.1111.111
  };
  Matrix m;
  m.l.name = "test.proj";
  m.l.w = {.dtype = dtype, .rows = N, .cols = K, .row_stride = K, .format = format, .global_scale = 0.5f};
  if (format == kernels::WeightFormat::kNvfp4) {
    m.data.resize(size_t(N * K / 2));
    m.scales.resize(size_t(N * K / 16));
    for (auto& b : m.scales) b = byte() & 0x7F;  // positive scales
    m.l.w.scale_stride = K / 16;
  } else if (format == kernels::WeightFormat::kFp8) {
    m.data.resize(size_t(N * K));
    const int64_t br = (N + 127) / 128, bc = (K + 127) / 128;
    std::vector<float> s(size_t(br * bc));
    for (auto& v : s) v = 0.25f + float(rng() % 100) / 50.0f;
    m.scales.resize(s.size() * sizeof(float));
    std::memcpy(m.scales.data(), s.data(), m.scales.size());
    m.l.w.scale_stride = bc;
  } else {
    m.data.resize(size_t(N * K) * DTypeSize(dtype));
  }
  for (auto& b : m.data) b = byte();
  if (format == kernels::WeightFormat::kDense && dtype == DType::kBF16)
    for (size_t i = 1; i < m.data.size(); i += 2) m.data[i] &= 0x7E;  // no Inf/NaN exponents
  m.l.w.data = m.data.data();
  if (!m.scales.empty()) m.l.w.scales = m.scales.data();
  for (int64_t n = 0; n < N; ++n) m.l.bias.push_back(float(n));
  return m;
}

void ExpectSlice(const Linear& full, const Linear& s, std::span<const IndexRange> rows, IndexRange cols) {
  int64_t i = 0;
  for (const IndexRange& r : rows)
    for (int64_t n = r.begin; n < r.end; ++n, ++i)
      for (int64_t k = cols.begin; k < cols.end; ++k)
        ASSERT_EQ(kernels::ref::MatrixAt(s.w, i, k - cols.begin), kernels::ref::MatrixAt(full.w, n, k))
            << "row " << n << " col " << k;
  EXPECT_EQ(s.out(), i);
  EXPECT_EQ(s.in(), cols.size());
}

struct Case {
  kernels::WeightFormat format;
  DType dtype;
  int64_t N, K;
};

class SliceLinearTest : public ::testing::TestWithParam<Case> {};

TEST_P(SliceLinearTest, RowsAndColumnsMatchTheWholeMatrix) {
  const Case c = GetParam();
  Matrix m = Random(c.format, c.dtype, c.N, c.K, 7);
  // Row ranges as tensor parallelism cuts them (q | k | v by head: several ranges).
  const int64_t B = c.format == kernels::WeightFormat::kFp8 ? 128 : 16;
  const IndexRange rows[] = {{0, B}, {2 * B, 3 * B}, {c.N - B, c.N}};
  auto three = SliceLinear(m.l, rows, IndexRange{0, c.K});
  ASSERT_TRUE(three.ok()) << three.status().message();
  ExpectSlice(m.l, *three, rows, {0, c.K});
  ASSERT_EQ(three->bias.size(), size_t(3 * B));
  EXPECT_EQ(three->bias[size_t(B)], float(2 * B));
  EXPECT_NE(three->owned, nullptr);

  auto half = SliceCols(m.l, c.K / 2, c.K, /*keep_bias=*/false);
  ASSERT_TRUE(half.ok()) << half.status().message();
  const IndexRange all{0, c.N};
  ExpectSlice(m.l, *half, std::span(&all, 1), {c.K / 2, c.K});
  EXPECT_TRUE(half->bias.empty());

  // One row range over every column: a view of the same memory, no copy.
  auto view = SliceRows(m.l, 2 * B, c.N);
  ASSERT_TRUE(view.ok()) << view.status().message();
  const IndexRange tail{2 * B, c.N};
  ExpectSlice(m.l, *view, std::span(&tail, 1), {0, c.K});
  EXPECT_EQ(view->owned, nullptr);
  const auto* p = static_cast<const uint8_t*>(view->w.data);
  EXPECT_TRUE(p >= m.data.data() && p < m.data.data() + m.data.size());
}

INSTANTIATE_TEST_SUITE_P(Formats, SliceLinearTest,
                         ::testing::Values(Case{kernels::WeightFormat::kDense, DType::kBF16, 96, 48},
                                           Case{kernels::WeightFormat::kDense, DType::kF32, 64, 40},
                                           Case{kernels::WeightFormat::kNvfp4, DType::kU8, 96, 64},
                                           Case{kernels::WeightFormat::kFp8, DType::kF8E4M3, 512, 256}));

TEST(SliceLinear, RefusesCutsThroughScaleBlocks) {
  Matrix nv = Random(kernels::WeightFormat::kNvfp4, DType::kU8, 32, 64, 1);
  auto bad = SliceCols(nv.l, 8, 64, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("test.proj"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("16-element"), std::string::npos) << bad.status().message();
  EXPECT_TRUE(SliceCols(nv.l, 16, 48, true).ok());

  Matrix f8 = Random(kernels::WeightFormat::kFp8, DType::kF8E4M3, 256, 256, 2);
  EXPECT_FALSE(SliceRows(f8.l, 64, 256).ok());
  EXPECT_FALSE(SliceCols(f8.l, 0, 64, true).ok());
  EXPECT_TRUE(SliceCols(f8.l, 128, 256, true).ok());
  const IndexRange uneven[] = {{0, 200}, {128, 256}};  // a range not ending on a block, then another
  EXPECT_FALSE(SliceLinear(f8.l, uneven, IndexRange{0, 256}).ok());
}

TEST(SliceLinear, RefusesRangesOutsideTheMatrix) {
  Matrix m = Random(kernels::WeightFormat::kDense, DType::kBF16, 8, 8, 3);
  EXPECT_FALSE(SliceRows(m.l, 4, 9).ok());
  EXPECT_FALSE(SliceRows(m.l, 4, 4).ok());
  EXPECT_FALSE(SliceCols(m.l, -1, 4, true).ok());
}

}  // namespace
}  // namespace tern
