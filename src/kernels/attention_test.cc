// PagedAttention and KvWrite against the scalar reference on every SIMD
// target: scattered block tables, contexts that end mid-block, grouped-query
// heads, batches of jobs of different lengths (decode and prefill mixed),
// f32, bf16 and f16 caches, odd head sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "base/dtype.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;
using testing::RandomFloats;

constexpr double kU = 1.0 / (1 << 24);

// A KV pool shared by several sequences, each with its own shuffled block table.
struct TestCache {
  DType dtype;
  int32_t block_size, kv_heads, head_dim, num_blocks;
  std::vector<uint8_t> k, v;
  std::vector<std::vector<int32_t>> tables;
  int32_t next_free = 0;
  std::vector<int32_t> free_order;

  TestCache(std::mt19937& rng, DType dt, int32_t bs, int32_t heads, int32_t dim, int32_t blocks)
      : dtype(dt), block_size(bs), kv_heads(heads), head_dim(dim), num_blocks(blocks) {
    const size_t bytes = size_t(blocks) * size_t(bs * heads * dim) * DTypeSize(dt);
    k.assign(bytes, 0xFF);  // NaN everywhere: reading an unwritten slot poisons the result
    v.assign(bytes, 0xFF);
    free_order.resize(size_t(blocks));
    std::iota(free_order.begin(), free_order.end(), 0);
    std::shuffle(free_order.begin(), free_order.end(), rng);
  }

  // A new sequence of `len` positions filled with random K/V (through the
  // reference KvWrite); returns its index.
  size_t AddSequence(std::mt19937& rng, int64_t len) {
    std::vector<int32_t> table;
    for (int64_t b = 0; b < (len + block_size - 1) / block_size; ++b)
      table.push_back(free_order.at(size_t(next_free++)));
    tables.push_back(table);
    const size_t n = size_t(len * kv_heads * head_dim);
    const std::vector<float> kk = RandomFloats(rng, n), vv = RandomFloats(rng, n);
    ref::KvWrite(Pages(tables.size() - 1), 0, len, kk.data(), vv.data());
    return tables.size() - 1;
  }

  KvPages Pages(size_t seq) {
    // FP8 stores k / k_scale: scales that spread [-1, 1] over most of E4M3's range.
    const bool fp8 = dtype == DType::kF8E4M3;
    return KvPages{.k = k.data(),
                   .v = v.data(),
                   .dtype = dtype,
                   .k_scale = fp8 ? 1.0f / 200 : 1.0f,
                   .v_scale = fp8 ? 1.0f / 300 : 1.0f,
                   .block_table = tables[seq].data(),
                   .block_size = block_size,
                   .kv_heads = kv_heads,
                   .head_dim = head_dim};
  }
};

struct JobSpec {
  int64_t ctx_len, num_queries;
};

// BF16 of f32 as the BF16-activation mode rounds (RNE, below 2^-126 to zero).
float RoundBf16(float f) { return std::fabs(f) < 0x1p-126f ? 0.0f : Bf16ToF32(F32ToBf16(f)); }

// An F32 cache with the same block tables holding bf16(each stored value):
// what the BF16 mode's products read of `c` (F32, BF16 or F16; an FP8 cache
// keeps f32 attention and has no such copy).
TestCache RoundedCopy(const TestCache& c) {
  if (c.dtype == DType::kF8E4M3) throw std::logic_error("RoundedCopy: an FP8 cache has no BF16 job");
  TestCache r = c;
  r.dtype = DType::kF32;
  const size_t n = c.k.size() / DTypeSize(c.dtype);
  r.k.assign(n * 4, 0);
  r.v.assign(n * 4, 0);
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<uint8_t>& src = pass == 0 ? c.k : c.v;
    float* dst = reinterpret_cast<float*>((pass == 0 ? r.k : r.v).data());
    for (size_t i = 0; i < n; ++i) {
      float f;
      if (c.dtype == DType::kF32) {
        std::memcpy(&f, src.data() + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, src.data() + 2 * i, 2);
        f = c.dtype == DType::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
      }
      dst[i] = std::isnan(f) ? f : RoundBf16(f);
    }
  }
  return r;
}

// The BF16 mode's arithmetic exactly as ops.h states it, in double: key
// blocks of 2 * bf16dot::kPanelCols, the running max m, p = bf16(f32(exp(s -
// m))) added to l as rounded, O rescaled by exp(m_old - m_new); s from
// bf16(q * scale) and bf16(k). `pages` holds bf16(k), bf16(v) as F32
// (RoundedCopy), `q` is bf16(q * scale) / scale. -> out [num_queries, q_heads, D].
std::vector<double> EmulateBf16(const AttentionJob& job, const KvPages& pages, int64_t q_heads, float scale) {
  const int64_t D = pages.head_dim, G = q_heads / pages.kv_heads, Bk = 2 * int64_t(bf16dot::kPanelCols);
  const auto at = [&](const void* pool, int64_t pos, int64_t head, int64_t d) {
    const int64_t block = pages.block_table[pos / pages.block_size], slot = pos % pages.block_size;
    return double(static_cast<const float*>(pool)[((block * pages.block_size + slot) * pages.kv_heads + head) * D + d]);
  };
  std::vector<double> out(size_t(job.num_queries * q_heads * D));
  for (int64_t t = 0; t < job.num_queries; ++t)
    for (int64_t h = 0; h < q_heads; ++h) {
      const float* q = job.q + (t * q_heads + h) * D;
      const int64_t keys = job.ctx_len - job.num_queries + t + 1, kvh = h / G;
      double m = -1e300, l = 0;
      std::vector<double> o(size_t(D), 0.0), s;
      for (int64_t b0 = 0; b0 < keys; b0 += Bk) {
        const int64_t b1 = std::min(keys, b0 + Bk);
        s.assign(size_t(b1 - b0), 0.0);
        double bm = -1e300;
        for (int64_t j = b0; j < b1; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += double(q[d] * scale) * at(pages.k, j, kvh, d);
          s[size_t(j - b0)] = acc;
          bm = std::max(bm, acc);
        }
        const double m_new = std::max(m, bm), alpha = std::exp(m - m_new);
        l *= alpha;
        for (double& x : o) x *= alpha;
        for (int64_t j = b0; j < b1; ++j) {
          const double p = RoundBf16(float(std::exp(s[size_t(j - b0)] - m_new)));
          l += p;
          for (int64_t d = 0; d < D; ++d) o[size_t(d)] += p * at(pages.v, j, kvh, d);
        }
        m = m_new;
      }
      for (int64_t d = 0; d < D; ++d) out[size_t((t * q_heads + h) * D + d)] = o[size_t(d)] / l;
    }
  return out;
}

// Runs PagedAttention on a batch of jobs (one sequence each) and compares
// with ref::PagedAttention. Tolerance: a score s = scale * q.k carries
// |err| <= eps = (D + 8) u scale sum_d |q_d k_d|, which moves each softmax
// weight by a relative 2 eps; the weighted sum of n values adds (n + 8) u:
//   |out - want| <= (2 eps + (n + 8) u) max|v|.
// A wrong key, a missed mask or a misplaced row is off by ~max|v| / n.
// A job the BF16-activation mode takes (ops.h: AttentionBf16MinQueries, not
// an FP8 cache) is compared with the reference fed its rounded inputs:
// bf16(q * scale) / scale (exact: the scale is a power of two here) and
// bf16 of every cached value; what is left is the rounding of each
// probability (relative 2^-9, renormalised by their rounded sum: the weights
// move by a relative 2 * 2^-9 / (1 - 2^-9)) besides the f32 terms above:
//   |out - want| <= (2 eps + 2^-8 * 1.002 + (n + 8) u) max|v|.
void CheckAttention(DType dtype, int32_t block_size, int32_t kv_heads, int32_t group, int32_t head_dim,
                    const std::vector<JobSpec>& specs, ThreadPool& pool, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " block_size=" << block_size << " kv_heads=" << kv_heads
                                    << " group=" << group << " head_dim=" << head_dim << " threads=" << pool.size());
  std::mt19937 rng(seed);
  int32_t blocks = 0;
  for (const JobSpec& s : specs) blocks += int32_t((s.ctx_len + block_size - 1) / block_size);
  TestCache cache(rng, dtype, block_size, kv_heads, head_dim, blocks + 3);
  const int64_t q_heads = int64_t(kv_heads) * group;
  // 1 / sqrt(D) rounded down to a power of two (any scale is valid; this one
  // keeps bf16(q * scale) / scale exact for the BF16 mode's reference).
  const float scale = std::exp2(-std::ceil(std::log2(std::sqrt(float(head_dim)))));
  std::vector<std::vector<float>> qs, q_rounded;
  for (const JobSpec& s : specs) {
    cache.AddSequence(rng, s.ctx_len);  // sequence j of the cache
    const size_t n = size_t(s.num_queries * q_heads * head_dim);
    qs.push_back(RandomFloats(rng, n + 1));  // +1: misaligned q
    q_rounded.push_back(qs.back());
    for (float& x : q_rounded.back()) x = RoundBf16(x * scale) / scale;
  }
  // FP8 jobs never take the BF16 kernel (bf16_job below): no rounded copy.
  TestCache rounded = dtype == DType::kF8E4M3 ? cache : RoundedCopy(cache);
  // Both ways: a model in the BF16-activation mode (bf16_ok), and one that is not.
  for (const bool bf16_ok : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "bf16_ok=" << bf16_ok);
    const int64_t bf16_min = bf16_ok ? AttentionBf16MinQueries() : 0;
    const auto bf16_job = [&](const JobSpec& s) {
      return bf16_min > 0 && s.num_queries >= bf16_min && dtype != DType::kF8E4M3;
    };
    std::vector<std::vector<float>> outs, wants;
    std::vector<AttentionJob> jobs, ref_jobs;
    for (size_t j = 0; j < specs.size(); ++j) {
      const size_t n = qs[j].size() - 1;
      outs.push_back(std::vector<float>(n + 1, -7.0f));  // +1: misaligned out
      wants.push_back(std::vector<float>(n, -7.0f));
    }
    for (size_t j = 0; j < specs.size(); ++j) {
      const bool b = bf16_job(specs[j]);
      jobs.push_back({.q = qs[j].data() + 1,
                      .out = outs[j].data() + 1,
                      .num_queries = specs[j].num_queries,
                      .ctx_len = specs[j].ctx_len,
                      .kv = cache.Pages(j)});
      ref_jobs.push_back({.q = (b ? q_rounded[j] : qs[j]).data() + 1,
                          .out = wants[j].data(),
                          .num_queries = specs[j].num_queries,
                          .ctx_len = specs[j].ctx_len,
                          .kv = b ? rounded.Pages(j) : cache.Pages(j)});
    }
    PagedAttention(jobs, q_heads, scale, pool, bf16_ok);
    ref::PagedAttention(ref_jobs, q_heads, scale);

    // |q| <= 1 and |k|, |v| <= 1 (random in [-1, 1], bf16 rounding keeps that).
    const double eps = double(head_dim + 8) * kU * double(scale) * double(head_dim);
    for (size_t j = 0; j < specs.size(); ++j) {
      SCOPED_TRACE(::testing::Message() << "job " << j << " ctx_len=" << specs[j].ctx_len
                                        << " num_queries=" << specs[j].num_queries << " bf16=" << bf16_job(specs[j]));
      const double tol =
          2 * eps + double(specs[j].ctx_len + 8) * kU + (bf16_job(specs[j]) ? 0x1p-8 * 1.002 : 0.0);
      int failures = 0;
      for (size_t i = 0; i < wants[j].size() && failures < 5; ++i) {
        const double got = outs[j][i + 1], want = wants[j][i];
        if (!(std::fabs(got - want) <= tol)) {
          ADD_FAILURE() << "out[" << i << "] = " << got << ", want " << want << " (tol " << tol << ")";
          ++failures;
        }
      }
      EXPECT_EQ(outs[j][0], -7.0f) << "wrote before out";
      if (!bf16_job(specs[j])) continue;
      // Tight: against the emulation of ops.h's arithmetic. f32 sums and
      // Highway's f32 exp leave ~1e-6; an exp landing a p on the other side of
      // a BF16 rounding boundary moves its row by up to 2^-8 max|v|: at most
      // 3% of the rows (and one) may, within that.
      const std::vector<double> emu = EmulateBf16(ref_jobs[j], ref_jobs[j].kv, q_heads, scale);
      const int64_t D = head_dim, rows = specs[j].num_queries * q_heads;
      int64_t loose_rows = 0;
      for (int64_t r = 0; r < rows; ++r) {
        double worst = 0;
        for (int64_t d = 0; d < D; ++d)
          worst = std::max(worst, std::fabs(double(outs[j][size_t(r * D + d) + 1]) - emu[size_t(r * D + d)]));
        if (worst > 2e-5) {
          ++loose_rows;
          EXPECT_LE(worst, 0x1p-8 * 1.002) << "row " << r << " against the emulation";
        }
      }
      EXPECT_LE(loose_rows, std::max<int64_t>(1, rows * 3 / 100)) << "rows off the emulation by more than 2e-5";
    }
  }
}

TEST(PagedAttentionTest, DecodeBatchOfMixedLengths) {
  ThreadPool pool(2);
  uint32_t seed = 1;
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
      // Lengths that end mid-block, exactly on a block, and span decode chunks
      // (16 positions on every compiled target: 17, 64 and 65 end just past or on one).
      const std::vector<JobSpec> jobs = {{1, 1}, {17, 1}, {16, 1}, {150, 1}, {64, 1}, {65, 1}};
      CheckAttention(dt, 16, 2, 2, 64, jobs, pool, seed++);
      CheckAttention(dt, 5, 1, 3, 40, {{23, 1}, {7, 1}}, pool, seed++);   // odd block size and head_dim
      CheckAttention(dt, 16, 2, 1, 32, {{40, 2}, {3, 2}}, pool, seed++);  // two queries, no grouping
      CheckAttention(dt, 8, 1, 8, 24, {{70, 1}}, pool, seed++);           // wide group (8 heads share one)
      // Long enough to be split into key ranges whose partials are merged.
      CheckAttention(dt, 16, 2, 2, 32, {{700, 1}}, pool, seed++);
      // A lone short query split once per thread: ranges of 128 keys and of 1.
      CheckAttention(dt, 16, 2, 2, 32, {{129, 1}}, pool, seed++);
      CheckAttention(dt, 16, 1, 2, 16, {{1100, 2}, {5, 1}}, pool, seed++);
    }
  });
}

TEST(PagedAttentionTest, PrefillCausalAndChunked) {
  ThreadPool pool(3);
  uint32_t seed = 100;
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
      // A fresh prompt, a prompt continuing earlier context (chunked prefill),
      // and a decode job, in one call.
      CheckAttention(dt, 16, 2, 2, 64, {{70, 70}, {100, 30}, {33, 1}}, pool, seed++);
      // Small and odd: 3 queries, block size 3, head_dim not a multiple of the panel width.
      CheckAttention(dt, 3, 1, 2, 72, {{3, 3}, {10, 4}}, pool, seed++);
      // Enough queries for several query blocks per head, keys over several key blocks.
      CheckAttention(dt, 32, 1, 4, 32, {{150, 130}}, pool, seed++);
      // The BF16 mode's packers at other shapes: odd key counts per block, head_dim not a
      // multiple of 32 (or odd), three and more 48-wide output panels, odd groups.
      CheckAttention(dt, 16, 2, 3, 72, {{37, 7}, {193, 61}}, pool, seed++);
      CheckAttention(dt, 5, 1, 5, 33, {{101, 101}}, pool, seed++);
      CheckAttention(dt, 16, 1, 2, 128, {{97, 9}}, pool, seed++);
      CheckAttention(dt, 16, 2, 1, 256, {{97, 97}}, pool, seed++);
    }
  });
}

TEST(PagedAttentionTest, SingleThreadAndEmpty) {
  ThreadPool pool(1);
  ForEachSimdTarget([&] {
    CheckAttention(DType::kF32, 16, 2, 2, 16, {{20, 20}, {5, 1}}, pool, 200);
    std::vector<AttentionJob> none;
    PagedAttention(none, 4, 1.0f, pool, true);  // no jobs: nothing to do, no crash
  });
}

TEST(KvWriteTest, MatchesReferenceBitForBit) {
  std::mt19937 rng(7);
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (int32_t head_dim : {8, 20, 64}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " head_dim=" << head_dim);
        TestCache got(rng, dt, 4, 2, head_dim, 6), want(rng, dt, 4, 2, head_dim, 6);
        const std::vector<int32_t> table = {5, 1, 3, 0};  // positions 0..15
        got.tables.push_back(table);
        want.tables.push_back(table);
        const int64_t tokens = 7, start = 3;  // crosses two block boundaries
        std::vector<float> k = RandomFloats(rng, size_t(tokens * 2 * head_dim), -300.0f, 300.0f);
        std::vector<float> v = RandomFloats(rng, size_t(tokens * 2 * head_dim), -1e-39f, 1e-39f);  // subnormals
        k[0] = std::nanf("");
        k[1] = INFINITY;
        v[2] = -INFINITY;
        // F16's edges, in a vector without NaN: the largest finite and the first that
        // rounds to infinity, a tie, the smallest normal and a subnormal.
        const float edges[] = {65519.0f, 65520.0f, -2049.0f, 6.103515625e-05f, -3.0e-6f};
        for (size_t i = 0; i < 5; ++i) k[size_t(head_dim) + i] = edges[i];
        KvWrite(got.Pages(0), start, tokens, k.data(), v.data());
        ref::KvWrite(want.Pages(0), start, tokens, k.data(), v.data());
        EXPECT_TRUE(got.k == want.k);
        EXPECT_TRUE(got.v == want.v);
      }
    }
  });
}

}  // namespace
}  // namespace tern::kernels
